import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify'
import { ApiError } from '../core/errors.js'
import { byPersonalToken } from './auth.js'
import { addRouteHook } from './route-hooks.js'
import { isLedgerPath } from './routing.js'

/**
 * What keeps a web page from driving a developer's local Plinth (docs/security.md, "Requests
 * from other sites"). A browser lets any page send "simple" requests to any address, the
 * developer's loopback included: a form POST, `fetch(url, {mode: 'no-cors'})`, an image. The
 * sandbox API has no credential by default, so the request itself must show where it comes from.
 *
 * - Host: only the names this server is known by are served: `localhost`, `127.0.0.1`, `[::1]`,
 *   the host of PLINTH_PUBLIC_URL and PLINTH_ALLOWED_HOSTS, on any port, in any case, with or
 *   without a trailing dot. Any other name is 421 `misdirected_request`: a page of
 *   `attacker.example` whose name was rebound to 127.0.0.1 reads and writes nothing. `/healthz`
 *   and `/readyz` answer whatever the Host (load balancers probe by address; they tell nothing).
 * - Site: a route that no Key or Bearer credential guards (the sandbox API, authenticated by
 *   nothing or by the optional admin token) refuses a request the browser sent for another site:
 *   `Sec-Fetch-Site` other than `same-origin` or `none` (a typed URL), or, from a browser that
 *   sends no fetch metadata, an `Origin` other than this server's own. `same-site` is refused
 *   too: a page on another port of localhost is same-site. 403 `cross_site_request`.
 * - Body: such a route, when it changes state (POST, PUT, PATCH, DELETE), needs
 *   `Content-Type: application/json` or, without a body, the `X-Plinth-Client` header (any
 *   value; clients send their name). No simple request can carry either without the browser
 *   asking first, and these routes answer no CORS preflight. 415 `client_header_required`.
 *
 * Production's account API (`/account`, and every `auth: 'session'` route) is guarded the same
 * way, whatever its method, and takes only `Content-Type: application/json` on a state-changing
 * request (415 `unsupported_media_type`): its session cookie is SameSite=Lax, and this keeps a
 * same-site page or a browser without SameSite from using it.
 *
 * A `/portal` request authenticated by a personal access token (`Authorization: Bearer`, checked
 * by the auth stage before the body rule runs) is exempt from the body rule: the rule stops a
 * simple request, which can carry the cookie but never an Authorization header. The site check
 * still applies to it (docs/security.md, "Personal access tokens").
 *
 * A request with no browser header at all (curl, the CLI, SDKs) passes the site check. The
 * ledger's `POST /ledger/transactions` is left open to every origin, as Horizon's is: a
 * transaction is authenticated by its signatures.
 */
export const CLIENT_HEADER = 'x-plinth-client'

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]']
const UNSAFE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])
/** Probes by address: they read nothing a rebound page could use. */
const ANY_HOST_PATHS = new Set(['/healthz', '/readyz'])
/** `name[:port]` or `[v6][:port]`; the name loses one trailing dot. */
const HOST_HEADER = /^(\[[0-9a-f:.]{2,45}\]|[a-z0-9_-]+(?:\.[a-z0-9_-]+)*)\.?(?::\d{1,5})?$/

/** A Host header's name, lower-cased, without port or trailing dot; undefined when it is not a host. */
export function hostName(header: string): string | undefined {
  if (header.length > 300) return undefined
  return HOST_HEADER.exec(header.toLowerCase())?.[1]
}

/** The names a server of `publicUrl` serves: loopback, the public URL's host, and `allowed`. */
export function servedHostNames(publicUrl: string, allowed: readonly string[]): ReadonlySet<string> {
  const names = new Set(LOOPBACK_NAMES)
  for (const name of [new URL(publicUrl).hostname, ...allowed]) {
    const normalised = hostName(name)
    if (normalised !== undefined) names.add(normalised)
  }
  return names
}

/** Refuses, for every route, a Host this server is not known by (after the missing-Host check). */
export function registerHostCheck(app: FastifyInstance, options: { names: ReadonlySet<string> }): void {
  const { names } = options
  app.addHook('onRequest', (request, reply, done) => {
    const host = request.raw.headers.host
    // Missing: refused by registerProtocolChecks on HTTP/1.1; HTTP/1.0 needs none and no browser sends that.
    if (host === undefined) return done()
    const name = hostName(host)
    if (name !== undefined && names.has(name)) return done()
    if (ANY_HOST_PATHS.has(request.url.split('?')[0] ?? '') && (request.method === 'GET' || request.method === 'HEAD')) return done()
    reply.header('connection', 'close')
    done(
      new ApiError(
        'misdirected_request',
        `This server does not answer to the host name "${host.slice(0, 100)}": it serves localhost, 127.0.0.1, [::1], ` +
          'the host of PLINTH_PUBLIC_URL and the names in PLINTH_ALLOWED_HOSTS.',
      ),
    )
  })
}

const header = (request: FastifyRequest, name: string): string | undefined => {
  const value = request.headers[name]
  return typeof value === 'string' ? value : undefined
}

/** Whether the browser says this request comes from a page of another site (or port) than this server. */
function fromAnotherSite(request: FastifyRequest, publicOrigin: string): boolean {
  const site = header(request, 'sec-fetch-site')
  if (site !== undefined) return site !== 'same-origin' && site !== 'none'
  const origin = header(request, 'origin')?.toLowerCase()
  if (origin === undefined) return false
  const host = header(request, 'host')?.toLowerCase()
  return !(origin === publicOrigin || (host !== undefined && (origin === `http://${host}` || origin === `https://${host}`)))
}

const isJson = (request: FastifyRequest) => header(request, 'content-type')?.split(';', 1)[0]?.trim().toLowerCase() === 'application/json'

/**
 * The routes these checks guard: every route that no Key or Bearer credential protects, the
 * ledger's aside; of those with no authentication, the ones that change state.
 */
function guarded(route: RouteOptions): { unsafe: boolean; jsonOnly: boolean } | undefined {
  const auth = route.config?.auth
  if (auth === 'key' || auth === 'token' || isLedgerPath(route.url)) return undefined
  const methods = Array.isArray(route.method) ? route.method : [route.method]
  const unsafe = methods.some((method) => UNSAFE_METHODS.has(method))
  const account = auth === 'session' || route.url === '/account' || route.url.startsWith('/account/')
  return auth === 'admin' || account || unsafe ? { unsafe, jsonOnly: account } : undefined
}

/**
 * The site check, on every guarded route declared after this call: called before the
 * authentication is registered, it runs before it (a foreign page learns nothing of the admin
 * token either).
 */
export function registerSiteCheck(app: FastifyInstance, options: { publicUrl: string }): void {
  const publicOrigin = new URL(options.publicUrl).origin.toLowerCase()
  const crossSite = () =>
    new ApiError(
      'cross_site_request',
      "This route answers pages of this server's own origin and clients that are not browsers, not a page of another site " +
        '(Sec-Fetch-Site or Origin says it came from one).',
    )
  app.addHook('onRoute', (route: RouteOptions) => {
    if (guarded(route) === undefined) return
    addRouteHook(route, 'onRequest', (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) => {
      done(fromAnotherSite(request, publicOrigin) ? crossSite() : undefined)
    })
  })
}

/**
 * The body rule, on the state-changing methods of every guarded route declared after this call:
 * called after the authentication is registered, so a call without the admin token hears so first.
 */
export function registerClientHeaderRule(app: FastifyInstance): void {
  const notJson = () =>
    new ApiError(
      'client_header_required',
      'A request that changes the sandbox must be sent as Content-Type: application/json or, without a body, carry the ' +
        'X-Plinth-Client header (any value, for example "X-Plinth-Client: curl").',
    )

  const notAccountJson = () =>
    new ApiError(
      'unsupported_media_type',
      'The account API takes requests that change anything as Content-Type: application/json only (a body may be empty).',
    )

  app.addHook('onRoute', (route: RouteOptions) => {
    const rule = guarded(route)
    if (!rule?.unsafe) return
    if (rule.jsonOnly) {
      addRouteHook(route, 'onRequest', (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) => {
        // A personal access token came in an Authorization header, which no simple request carries.
        done(UNSAFE_METHODS.has(request.method) && !isJson(request) && !byPersonalToken(request) ? notAccountJson() : undefined)
      })
      return
    }
    addRouteHook(route, 'onRequest', (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void) => {
      done(UNSAFE_METHODS.has(request.method) && !isJson(request) && !header(request, CLIENT_HEADER) ? notJson() : undefined)
    })
  })
}
