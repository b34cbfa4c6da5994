import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import { addRouteHook } from './route-hooks.js'

/**
 * What the router leaves to us: slashes, wrong methods and CORS.
 *
 * - A doubled slash is one slash everywhere, and a trailing slash is dropped under `/v2/` and
 *   `/ledger/` (the browser pages keep theirs: `/sandbox` redirects to `/sandbox/`).
 * - A known path asked with a method it does not serve is 405 with `Allow`, not 404.
 * - CORS (docs/security.md): the ledger under `/ledger` for any origin, as Horizon; the user's
 *   routes (`Authorization: Bearer`) for any origin, without credentials (a token is sent
 *   explicitly, never as a cookie). Server-key routes get no CORS headers and their preflight
 *   is refused: a server API key has no business in a browser.
 */
export type CorsPolicy = 'ledger' | 'bearer'

const PREFLIGHT_MAX_AGE_SECONDS = '600'
const BEARER_ALLOW_HEADERS = 'Authorization, Content-Type, X-Request-Id'
const EXPOSE_HEADERS: Record<CorsPolicy, string> = {
  // Horizon's (rs/cors with AllowedOrigins and AllowedHeaders "*").
  ledger: 'Date, Latest-Ledger',
  bearer: 'X-Request-Id, Retry-After',
}
/** Requested header names Horizon's "*" echoes back: a bounded list of tokens, else none. */
const HEADER_LIST = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+(?:\s*,\s*[A-Za-z0-9!#$%&'*+.^_`|~-]+)*$/

/** The request URL with doubled slashes collapsed and, under /v2/ and /ledger/, no trailing slash. */
export function normalizeUrl(url: string): string {
  const query = url.indexOf('?')
  let path = query === -1 ? url : url.slice(0, query)
  path = path.replace(/\/{2,}/g, '/')
  if (path.length > 1 && path.endsWith('/') && (path.startsWith('/v2/') || path.startsWith('/ledger/') || path.startsWith('/_horizon/')))
    path = path.slice(0, -1)
  return query === -1 ? path : `${path}${url.slice(query)}`
}

/** A Horizon path: under /ledger, or on a network's own Horizon origin (routed under /_horizon/, src/ledger/horizon/origins.ts). */
export function isLedgerPath(url: string): boolean {
  return url === '/ledger' || url.startsWith('/ledger/') || url.startsWith('/_horizon/')
}

const corsPolicyOf = (url: string, auth: string | undefined): CorsPolicy | undefined =>
  isLedgerPath(url) ? 'ledger' : auth === 'token' ? 'bearer' : undefined

interface RouteEntry {
  method: string
  pattern: RegExp
  cors: CorsPolicy | undefined
}

/** What the not-found handler of a route family does instead of a 404. */
export type Unrouted =
  | { kind: 'preflight'; headers: Record<string, string> }
  | { kind: 'method_not_allowed'; allow: string; message: string }
  | undefined

export interface RouteTable {
  /** For a request no route matched: a CORS preflight to answer, a 405 with Allow, or undefined (a 404). */
  unrouted(request: FastifyRequest): Unrouted
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** `/v2/payments/:payment_id` as a regular expression over concrete paths. */
function patternOf(url: string): RegExp {
  const source = url
    .split('/')
    .map((segment) => (segment.startsWith(':') ? '[^/]+' : segment === '*' ? '.*' : escapeRegExp(segment)))
    .join('/')
  return new RegExp(`^${source}$`)
}

/**
 * Registers the URL normalisation, the route table (every route declared after this call) and the
 * CORS headers of the routes that allow it: the first of each such route's own hooks, so that a
 * 401 from the authentication hook carries them too and the browser lets the page read it.
 */
export function registerRouting(app: FastifyInstance): RouteTable {
  const entries: RouteEntry[] = []
  app.addHook('onRoute', (route: RouteOptions) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method]
    const auth = (route.config as { auth?: string } | undefined)?.auth
    const cors = corsPolicyOf(route.url, auth)
    for (const method of methods) entries.push({ method, pattern: patternOf(route.url), cors })
    // First among the route's own hooks, so that a 401 from the authentication hook carries them too.
    if (cors !== undefined) {
      const expose = EXPOSE_HEADERS[cors]
      addRouteHook(
        route,
        'onRequest',
        (_request: FastifyRequest, reply: FastifyReply, done: () => void) => {
          reply.header('access-control-allow-origin', '*').header('access-control-expose-headers', expose)
          done()
        },
        true,
      )
    }
  })

  return {
    unrouted(request) {
      const path = request.url.split('?')[0] ?? ''
      const served = entries.filter((entry) => entry.pattern.test(path))
      if (served.length === 0) return undefined
      const methods = [...new Set(served.map((entry) => entry.method))]
      const requested = request.headers['access-control-request-method']
      const shared = served.filter((entry) => entry.cors !== undefined)
      const cors = shared[0]?.cors
      if (
        request.method === 'OPTIONS' &&
        cors !== undefined &&
        typeof request.headers.origin === 'string' &&
        typeof requested === 'string'
      ) {
        const asked = request.headers['access-control-request-headers']
        const allowHeaders =
          cors === 'bearer'
            ? BEARER_ALLOW_HEADERS
            : typeof asked === 'string' && asked.length <= 1000 && HEADER_LIST.test(asked)
              ? asked
              : ''
        return {
          kind: 'preflight',
          headers: {
            'access-control-allow-origin': '*',
            'access-control-allow-methods': [...new Set(shared.map((entry) => entry.method))].join(', '),
            ...(allowHeaders === '' ? {} : { 'access-control-allow-headers': allowHeaders }),
            'access-control-max-age': PREFLIGHT_MAX_AGE_SECONDS,
            allow: [...methods, 'OPTIONS'].join(', '),
          },
        }
      }
      if (methods.includes(request.method)) return undefined
      return {
        kind: 'method_not_allowed',
        allow: methods.join(', '),
        message: `${request.method} is not allowed on ${path.slice(0, 200)}; allowed: ${methods.join(', ')}.`,
      }
    },
  }
}
