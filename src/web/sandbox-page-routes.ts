import { readFile } from 'node:fs/promises'
import fastifyStatic from '@fastify/static'
import type { FastifyInstance } from 'fastify'
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
  const dir = `${webDir()}sandbox/`

  app.addHook('onSend', async (_request, reply) => {
    for (const [name, value] of Object.entries(SANDBOX_PAGE_HEADERS)) reply.header(name, value)
  })

  app.get('/sandbox', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/sandbox/', 308))

  app.get('/sandbox/', { schema: { hide: true } }, async (_request, reply) =>
    reply.type('text/html; charset=utf-8').send(await readFile(`${dir}index.html`, 'utf8')),
  )

  app.get('/sandbox/ui/platform.json', { schema: { hide: true } }, async () => ({
    approval_window_seconds: options.approvalWindowSeconds,
    admin_token_required: options.adminTokenRequired,
  }))

  await app.register(fastifyStatic, {
    root: dir,
    prefix: '/sandbox/ui/',
    decorateReply: false,
    index: false,
    list: false,
    dotfiles: 'deny',
    etag: true,
    lastModified: false,
    cacheControl: false,
    allowedPath: (path) => /^\/[a-z0-9-]+\.(js|css|svg)$/.test(path),
  })
}
