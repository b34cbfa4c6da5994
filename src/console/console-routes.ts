import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import fastifyStatic from '@fastify/static'
import type { FastifyInstance } from 'fastify'

/**
 * The console's browser files. They are not compiled, so they stay in the source tree; the path
 * is taken from the package root, which is two levels up from both `src/console/` (tsx) and
 * `dist/console/` (the build).
 */
export const CONSOLE_ROOT = fileURLToPath(new URL('../../src/console/public/', import.meta.url))

/**
 * The console reads secrets (API keys and seeds shown once, the admin token): nothing but its
 * own files may run in it, it may not be framed, and its URLs are not leaked in a Referer.
 */
export const CONSOLE_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cache-control': 'no-cache',
}

/** The developer console at `/console/` (sandbox mode only): static files that call the sandbox API. */
export async function consoleRoutes(app: FastifyInstance): Promise<void> {
  if (!existsSync(`${CONSOLE_ROOT}index.html`)) throw new Error(`The console's files are missing from ${CONSOLE_ROOT}`)
  // Registered as an encapsulated plugin, so this hook covers only the console's routes.
  app.addHook('onSend', async (_request, reply, payload) => {
    reply.headers(CONSOLE_HEADERS)
    return payload
  })
  app.get('/console', { schema: { hide: true } }, (_request, reply) => reply.redirect('/console/', 301))
  await app.register(fastifyStatic, {
    root: CONSOLE_ROOT,
    prefix: '/console/',
    redirect: true,
    // Another part of the app may decorate the reply with sendFile; the console does not need it.
    decorateReply: false,
    dotfiles: 'ignore',
    cacheControl: false,
    index: ['index.html'],
  })
}
