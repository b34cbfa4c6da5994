import type { FastifyInstance, FastifyReply, FastifyRequest, FastifySchema, RouteOptions } from 'fastify'
import { ApiError } from '../core/errors.js'
import type {
  Authenticator,
  KeyPrincipal,
  PersonalTokenCheck,
  SessionEnd,
  SessionPrincipal,
  Suspended,
  TokenPrincipal,
} from '../core/principals.js'
import { SCOPES, type Scope } from '../core/scopes.js'
import { constantTimeEqual } from '../lib/crypto.js'
import { scopeDescription, tokenSecurity } from './openapi.js'
import { addRouteHook } from './route-hooks.js'
import { sessionToken } from './session-cookie.js'

/**
 * Authentication, declared per route with `config: { auth: 'key' | 'token' | 'admin' }` and
 * applied by one onRequest hook, before the body is read.
 *
 * - `key`: `Authorization: Key <server API key>`, the app's backend.
 * - `token`: `Authorization: Bearer <access token>`, a user of one app. Such a route also
 *   declares `scope`: the scope the access token must carry, or `'none'` when any token of the
 *   user will do (`config: { auth: 'token', scope: 'payments' }`). A token without it is
 *   refused with 401 `missing_scope`; a token route declared without `scope` fails at start-up.
 * - `admin`: the sandbox API; `X-Admin-Token: <PLINTH_ADMIN_TOKEN>` when that is configured.
 * - `session`: production's account routes, a signed-in person: the session cookie
 *   (src/http/session-cookie.ts), checked against the database on every request. Such a route
 *   may declare `role` (`developer`, `operator`): a person without it is refused with 403 forbidden.
 *   Every answer of a session route, a refusal included, carries `Cache-Control: no-store`: it is
 *   one person's (their account, their apps, the operator's view of everyone), and no browser cache
 *   or proxy may keep it for the next user of the machine.
 *   On the `/portal` routes, `Authorization: Bearer <personal access token>` stands for the
 *   cookie (docs/portal.md, "The portal from the command line"): the token acts as its account,
 *   under the same role and membership checks; a `read` token may only GET or HEAD. The token is
 *   then the request's only credential: a cookie sent beside it is not read. Every other session
 *   route (`/account`, `/operator`) refuses a Bearer credential (401 personal_token_refused): a
 *   token never manages the account or the platform, nor makes another credential.
 */
export type AuthKind = 'key' | 'token' | 'admin' | 'session'
/** A role a session route may require: the developer portal's and the operator's console's. */
export type SessionRole = 'developer' | 'operator'
/** What a token route needs of the access token: one scope, or `'none'` (any token of the user). */
export type RouteScope = Scope | 'none'

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: AuthKind
    /** Token routes only, and required there: the scope the access token must carry, or 'none'. */
    scope?: RouteScope
    /** Session routes only: the role the signed-in person must hold (403 forbidden without it). */
    role?: SessionRole
  }
  interface FastifyRequest {
    principal: KeyPrincipal | TokenPrincipal | SessionPrincipal | undefined
    /** A refused server API key's app and nearest key, for that app's request log only (no principal: nothing runs as it). */
    refusedKey?: { appId: string; keyId: string } | undefined
  }
}

export const ADMIN_TOKEN_HEADER = 'x-admin-token'
const MISSING_MESSAGE = 'This endpoint requires either a Server API Key or Access Token authorization.'
const MAX_CREDENTIAL_LENGTH = 512
const CREDENTIAL = /^[\x21-\x7e]+$/

function parseAuthorization(header: string | undefined): { scheme: 'key' | 'bearer'; credential: string } | undefined {
  if (header === undefined) return undefined
  const match = /^(\S+) +(\S+)\s*$/.exec(header)
  if (match === null) return undefined
  const scheme = (match[1] ?? '').toLowerCase()
  const credential = match[2] ?? ''
  if (scheme !== 'key' && scheme !== 'bearer') return undefined
  if (credential.length > MAX_CREDENTIAL_LENGTH || !CREDENTIAL.test(credential)) return undefined
  return { scheme, credential }
}

/**
 * `X-Plinth-Background: 1` marks a request no person made (the platform page's polls and
 * refreshes): it is answered as any other, but does not count as activity, so it never keeps a
 * session from its idle timeout (docs/accounts.md, "Sessions"). Sending it can only shorten one's
 * own session; leaving it out keeps a session alive no longer than the user's own acts would,
 * and another site's page cannot add a header to a request (nor send the cookie: SameSite=Lax).
 */
const BACKGROUND_HEADER = 'x-plinth-background'
const isBackground = (request: FastifyRequest) => request.headers[BACKGROUND_HEADER] === '1'

/** What a session cookie's browser is told when its session is over (`reason` in the 401's body). */
const SESSION_ENDED: Record<SessionEnd, string> = {
  idle: 'Your session ended after a time without activity: sign in again.',
  expired: 'Your session reached its time limit: sign in again.',
  signed_out: 'This session was signed out (here, from another browser, or by a password change): sign in again.',
  suspended: "The platform's operator has suspended this account: it cannot sign in until they restore it.",
}

/** The session routes a personal access token may call. */
const takesPersonalTokens = (url: string) => url === '/portal' || url.startsWith('/portal/')
const READ_METHODS = new Set(['GET', 'HEAD'])

/** The person a personal access token acts as on a `/portal` route, or the refusal. */
async function personalTokenPrincipal(
  verify: ((token: string) => Promise<PersonalTokenCheck>) | undefined,
  credential: string,
  url: string,
  method: string,
): Promise<SessionPrincipal> {
  if (!takesPersonalTokens(url) || verify === undefined) {
    throw new ApiError(
      'personal_token_refused',
      'A personal access token is accepted on the /portal API only: the account and the operator routes need a signed-in session.',
    )
  }
  const checked = await verify(credential)
  if (checked === 'expired')
    throw new ApiError('token_expired', 'The personal access token has expired: make a new one (POST /account/tokens).')
  if (checked === 'suspended')
    throw new ApiError('user_suspended', "The platform's operator has suspended this account: its tokens are refused.")
  if (checked === undefined) throw new ApiError('invalid_personal_token', 'The personal access token is unknown or has been revoked.')
  if (checked.token?.scope === 'read' && !READ_METHODS.has(method)) {
    throw new ApiError('read_only_token', 'This personal access token has the read scope: it may only GET. Use a write token.')
  }
  return checked
}

const suspended = (code: Suspended) =>
  code === 'app_suspended'
    ? new ApiError('app_suspended', "The platform's operator has suspended this app: its keys and its users' tokens are refused.")
    : new ApiError('user_suspended', "The platform's operator has suspended this user: the user's tokens are refused.")

const routeName = (route: Pick<RouteOptions, 'method' | 'url'>) =>
  `${Array.isArray(route.method) ? route.method.join(',') : route.method} ${route.url}`

/**
 * Every token route says which scope it needs, and only token routes do: a route that does not
 * fails here, when it is registered, so the application does not start. Its OpenAPI operation
 * gets the scope in `security` (`[{ AccessToken: ['payments'] }]`), in `x-scope` and in a line
 * of its description.
 */
function checkScopeDeclaration(route: RouteOptions): void {
  const { auth, scope, role } = route.config ?? {}
  if (role !== undefined && auth !== 'session') throw new Error(`${routeName(route)}: config.role is for auth: 'session' routes only`)
  if (auth !== 'token') {
    if (scope !== undefined) throw new Error(`${routeName(route)}: config.scope is for auth: 'token' routes only`)
    return
  }
  if (scope === undefined) {
    throw new Error(
      `${routeName(route)} is declared with auth: 'token' but no scope: add config.scope, the scope the access token needs (or 'none')`,
    )
  }
  if (scope !== 'none' && !(SCOPES as readonly string[]).includes(scope)) {
    throw new Error(`${routeName(route)}: config.scope ${JSON.stringify(scope)} is no scope (${SCOPES.join(', ')}, or 'none')`)
  }
  if (route.schema !== undefined) {
    const description = [route.schema.description, scopeDescription(scope)].filter((line) => line !== undefined).join('\n\n')
    const documented: FastifySchema & { 'x-scope': RouteScope } = {
      ...route.schema,
      security: tokenSecurity(scope),
      description,
      'x-scope': scope,
    }
    route.schema = documented
  }
}

export function registerAuth(
  app: FastifyInstance,
  options: {
    authenticator: Authenticator
    adminToken: string | undefined
    /** The session of a session cookie's token (production mode); session routes refuse every request without it. */
    verifySession?: ((token: string, background: boolean) => Promise<SessionPrincipal | SessionEnd | undefined>) | undefined
    /** The person of a personal access token (production mode), which `/portal` routes take instead of the cookie. */
    verifyPersonalToken?: ((token: string) => Promise<PersonalTokenCheck>) | undefined
  },
): void {
  const { authenticator, adminToken, verifySession, verifyPersonalToken } = options
  app.decorateRequest('principal', undefined)
  // Routes declared after this call; buildApp declares every route after it.
  app.addHook('onRoute', checkScopeDeclaration)

  /** The live session of the request's cookie, or the refusal (with why the session ended, when it did). */
  const cookieSession = async (request: FastifyRequest): Promise<SessionPrincipal> => {
    const token = sessionToken(request)
    const session = token === undefined || verifySession === undefined ? undefined : await verifySession(token, isBackground(request))
    if (session === undefined) throw new ApiError('session_required', 'Sign in first: this needs a signed-in session.')
    if (typeof session === 'string') throw new ApiError('session_required', SESSION_ENDED[session], { reason: session })
    return session
  }

  /** The route's own check, with its kind and scope read once, when the route is declared. */
  const authenticate =
    (kind: string, scope: RouteScope | undefined, role: SessionRole | undefined, url: string) =>
    async (request: FastifyRequest, reply: FastifyReply) => {
      if (kind === 'admin') {
        if (adminToken === undefined) return
        const given = request.headers[ADMIN_TOKEN_HEADER]
        if (typeof given !== 'string' || !constantTimeEqual(given, adminToken)) {
          throw new ApiError(
            'invalid_admin_token',
            `The sandbox API requires the ${ADMIN_TOKEN_HEADER} header with the platform's admin token.`,
          )
        }
        return
      }

      if (kind === 'session') {
        reply.header('cache-control', 'no-store')
        const bearer = parseAuthorization(request.headers.authorization)
        const person =
          bearer?.scheme === 'bearer'
            ? await personalTokenPrincipal(verifyPersonalToken, bearer.credential, url, request.method)
            : await cookieSession(request)
        request.principal = person
        if (role !== undefined && !person.roles.includes(role)) throw new ApiError('forbidden', `This needs the ${role} role.`)
        return
      }

      const parsed = parseAuthorization(request.headers.authorization)
      if (parsed === undefined) throw new ApiError('missing_authorization', MISSING_MESSAGE)

      if (kind === 'key') {
        if (parsed.scheme !== 'key') {
          throw new ApiError(
            'wrong_authorization_scheme',
            'This endpoint requires a Server API Key: send "Authorization: Key <server API key>".',
          )
        }
        const principal = await authenticator.verifyApiKey(parsed.credential)
        if (principal === undefined) {
          // The answer is the same whoever's key it resembles; only the app's own log is told.
          request.refusedKey = await authenticator.identifyRefusedKey?.(parsed.credential)
          throw new ApiError('invalid_api_key', 'The server API key is unknown or has been revoked.')
        }
        if (principal === 'app_suspended') throw suspended(principal)
        request.principal = principal
        return
      }

      if (parsed.scheme !== 'bearer') {
        throw new ApiError(
          'wrong_authorization_scheme',
          'This endpoint requires a user access token: send "Authorization: Bearer <access token>".',
        )
      }
      const checked = await authenticator.verifyAccessToken(parsed.credential)
      if (checked === 'expired') throw new ApiError('token_expired', 'The access token has expired; authenticate the user again.')
      if (checked === undefined) throw new ApiError('invalid_access_token', 'The access token is invalid or has been revoked.')
      if (checked === 'app_suspended' || checked === 'user_suspended') throw suspended(checked)
      // Set before the scope check: a call refused for its scope still names its app and user (the
      // request log records it); no handler runs after a refusal.
      request.principal = checked
      // Fails closed for a token route that escaped the start-up check.
      if (scope === undefined) throw new Error(`route ${url} declares no scope`)
      if (scope !== 'none' && !checked.scopes.includes(scope)) {
        throw new ApiError('missing_scope', `The access token was not granted the ${scope} scope, which this endpoint needs.`)
      }
    }
  // After routing's (registerRouting comes first): the CORS headers are set before a refusal.
  app.addHook('onRoute', (route: RouteOptions) => {
    const { auth, scope, role } = route.config ?? {}
    if (auth !== undefined) addRouteHook(route, 'onRequest', authenticate(auth, scope, role, route.url))
  })
}

/** The app whose server API key authenticated this request (routes with `auth: 'key'`). */
export function keyPrincipal(request: FastifyRequest): KeyPrincipal {
  const principal = request.principal
  if (principal?.kind !== 'key') throw new Error(`route ${request.routeOptions.url ?? ''} is not declared with auth: 'key'`)
  return principal
}

/** Whether a personal access token, not a session cookie, authenticated this request. */
export const byPersonalToken = (request: FastifyRequest) => request.principal?.kind === 'session' && request.principal.token !== undefined

/** The signed-in person of this request (routes with `auth: 'session'`). */
export function sessionPrincipal(request: FastifyRequest): SessionPrincipal {
  const principal = request.principal
  if (principal?.kind !== 'session') throw new Error(`route ${request.routeOptions.url ?? ''} is not declared with auth: 'session'`)
  return principal
}

/** The user and app of the access token that authenticated this request (routes with `auth: 'token'`). */
export function tokenPrincipal(request: FastifyRequest): TokenPrincipal {
  const principal = request.principal
  if (principal?.kind !== 'token') throw new Error(`route ${request.routeOptions.url ?? ''} is not declared with auth: 'token'`)
  return principal
}
