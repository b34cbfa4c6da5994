import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import fastifyStatic from '@fastify/static'
import type { FastifyInstance } from 'fastify'
import type { DeveloperSignup } from '../config.js'
import { webDir } from './web-dir.js'

/**
 * Headers of the sandbox page and its files. The page holds the user's access tokens and the
 * Pay button, so it runs only its own files, talks only to Plinth, and may not be framed
 * (no clickjacking of the consent or payment dialogs); it frames any http(s) app.
 */
export const SANDBOX_PAGE_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    'frame-src http: https:',
    "form-action 'none'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ].join('; '),
  'x-frame-options': 'DENY',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cross-origin-opener-policy': 'same-origin',
  'cache-control': 'no-cache',
}

export interface SandboxPageOptions {
  /** Shown in the payment dialog's countdown. */
  approvalWindowSeconds: number
  /** Whether the page must ask for the admin token before calling the sandbox API. */
  adminTokenRequired: boolean
}

/**
 * The sandbox browser (sandbox mode only): the page at exactly `/sandbox/`, its files under
 * `/sandbox/ui/`, and what the page needs to know of the platform at `/sandbox/ui/platform.json`.
 * None of these paths is a sandbox API route.
 */
export async function sandboxPageRoutes(app: FastifyInstance, options: SandboxPageOptions): Promise<void> {
  app.get('/sandbox', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/sandbox/', 308))
  await platformPage(app, {
    page: '/sandbox/',
    platform: { mode: 'sandbox', approval_window_seconds: options.approvalWindowSeconds, admin_token_required: options.adminTokenRequired },
  })
}

/**
 * The same page in production (docs/accounts.md): the platform people use, at `/`, its files
 * under `/ui/`. It signs people in to their own accounts; nothing of the sandbox is reachable.
 */
export async function productionPageRoutes(
  app: FastifyInstance,
  options: { approvalWindowSeconds: number; paymentStepUpAmount: string | undefined; developerSignup: DeveloperSignup },
): Promise<void> {
  await platformPage(app, {
    page: '/',
    platform: {
      mode: 'production',
      approval_window_seconds: options.approvalWindowSeconds,
      // Above it, the payment dialog asks for the password (the server refuses the pay without it).
      payment_step_up_amount: options.paymentStepUpAmount,
      // Who makes a user a developer (PLINTH_DEVELOPER_SIGNUP): the page offers the button, or says whom to ask.
      developer_signup: options.developerSignup,
    },
  })
}

/** The browser bundle of @simplewebauthn/browser (its package exports only its modules, so it is found beside them). */
const WEBAUTHN_BROWSER = join(
  dirname(createRequire(import.meta.url).resolve('@simplewebauthn/browser')),
  '..',
  'dist',
  'bundle',
  'index.umd.min.js',
)

/** The page at `page`, its files under `${page}ui/`, and `${page}ui/platform.json` (the mode and what the page needs). */
async function platformPage(app: FastifyInstance, options: { page: string; platform: Record<string, unknown> }): Promise<void> {
  const dir = `${webDir()}platform/`
  const { page, platform } = options

  app.addHook('onSend', async (_request, reply) => {
    for (const [name, value] of Object.entries(SANDBOX_PAGE_HEADERS)) reply.header(name, value)
  })

  app.get(page, { schema: { hide: true } }, async (_request, reply) =>
    reply.type('text/html; charset=utf-8').send(await readFile(`${dir}index.html`, 'utf8')),
  )

  app.get(`${page}ui/platform.json`, { schema: { hide: true } }, async () => platform)

  // @simplewebauthn/browser's own bundle (a classic script: window.SimpleWebAuthnBrowser), for passkeys.
  app.get(`${page}ui/vendor/webauthn.js`, { schema: { hide: true } }, async (_request, reply) =>
    reply.type('text/javascript; charset=utf-8').send(await readFile(WEBAUTHN_BROWSER, 'utf8')),
  )

  // The shell's files, and one folder per panel (account/, portal/, operator/, wallet/, payment/).
  await app.register(fastifyStatic, pageFiles(dir, `${page}ui/`, /^\/([a-z]+\/)?[a-z0-9-]+\.(js|css|svg)$/))
}

/** @fastify/static's options for a page's files: only the paths `allowed` matches, no listing, no index, no dotfiles. */
export function pageFiles(root: string, prefix: string, allowed: RegExp) {
  return {
    root,
    prefix,
    decorateReply: false,
    index: false,
    list: false,
    dotfiles: 'deny',
    etag: true,
    lastModified: false,
    cacheControl: false,
    allowedPath: (path: string) => allowed.test(path),
  } as const
}
