import type { Readable } from 'node:stream'
import { errorCodes, type FastifyInstance, type FastifyRequest } from 'fastify'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route also reads its body as form fields (`application/x-www-form-urlencoded`). */
    forms?: boolean
  }
}

/** Form bodies are a few short fields (complete's `txid=…`): anything longer is refused unread past this. */
export const FORM_BODY_LIMIT = 16 * 1024

const unsupported = (request: FastifyRequest) =>
  new errorCodes.FST_ERR_CTP_INVALID_MEDIA_TYPE(String(request.headers['content-type'] ?? '').slice(0, 100))

/**
 * Whether a route reads a `text/plain` body as JSON: the Platform API's, authenticated by an
 * `Authorization: Key` or `Bearer` header. `fetch` sends a string body with no Content-Type as
 * `text/plain;charset=UTF-8`, and the live platform reads it as JSON. No other route does: a
 * text/plain body is what a page of another site may send without asking (a "simple" request),
 * which the credential header rules out here and nothing rules out on a cookie or unauthenticated
 * route (docs/security.md, "Requests from other sites").
 */
const readsTextAsJson = (request: FastifyRequest) => {
  const auth = request.routeOptions.config.auth
  return auth === 'key' || auth === 'token'
}

/**
 * What the routes read from a request body. JSON (with any charset parameter) everywhere; form
 * fields where a route declares `config: { forms: true }`; text/plain, read as JSON, on the
 * Platform API's Key and Bearer routes. An empty body is no body whatever its Content-Type:
 * axios sends a body-less `post(url)` as an empty form, fetch as empty text/plain, and some
 * clients as empty JSON. Any other non-empty body is 415 unsupported_media_type rather than a
 * string the schema then refuses.
 */
export function registerBodyParsers(app: FastifyInstance, options: { bodyLimit: number }): void {
  const parseJson = app.getDefaultJsonParser('error', 'error')
  app.removeContentTypeParser(['application/json', 'text/plain'])
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: options.bodyLimit }, (request, body, done) => {
    if (body === '') return done(null, undefined)
    parseJson(request, body as string, done)
  })

  app.addContentTypeParser('text/plain', { parseAs: 'string', bodyLimit: options.bodyLimit }, (request, body, done) => {
    if (body === '') return done(null, undefined)
    if (!readsTextAsJson(request)) return done(unsupported(request), undefined)
    parseJson(request, body as string, done)
  })

  app.addContentTypeParser(
    'application/x-www-form-urlencoded',
    { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT },
    (request, body, done) => {
      const text = body as string
      if (text === '') return done(null, undefined)
      if (request.routeOptions.config.forms !== true) return done(unsupported(request), undefined)
      // Own properties only (a `__proto__` field is a field); the last of a repeated field wins.
      done(null, Object.fromEntries(new URLSearchParams(text)))
    },
  )

  // Every other type: no body at all is fine; the first byte of one is refused, unread further.
  app.addContentTypeParser('*', (request: FastifyRequest, payload: Readable, done: (error: Error | null, body?: unknown) => void) => {
    if (request.headers['content-length'] === '0') return done(null, undefined)
    if (request.headers['content-length'] !== undefined) return done(unsupported(request), undefined)
    let settled = false
    const settle = (error: Error | null) => {
      if (settled) return
      settled = true
      payload.removeAllListeners('data')
      done(error, undefined)
    }
    payload.on('data', (chunk: Buffer) => {
      if (chunk.length > 0) settle(unsupported(request))
    })
    payload.on('end', () => settle(null))
    payload.on('error', (error) => settle(error))
  })
}
