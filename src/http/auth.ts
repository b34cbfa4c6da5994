import type { FastifyInstance, FastifyRequest } from 'fastify'
import { constantTimeEqual } from '../lib/crypto.js'
import { ApiError } from './errors.js'

/**
 * Authentication, declared per route with `config: { auth: 'key' | 'token' | 'admin' }` and
 * applied by one onRequest hook, before the body is read.
 *
 * - `key`: `Authorization: Key <server API key>`, the app's backend.
 * - `token`: `Authorization: Bearer <access token>`, a user of one app.
 * - `admin`: the sandbox API; `X-Admin-Token: <PLINTH_ADMIN_TOKEN>` when that is configured.
 */
export type AuthKind = 'key' | 'token' | 'admin'

export interface KeyPrincipal {
  kind: 'key'
  appId: string
  keyId: string
}

export interface TokenPrincipal {
  kind: 'token'
  tokenId: string
  appId: string
  userId: string
  uid: string
  username: string
  scopes: string[]
  expiresAt: Date
}

export type TokenCheck = TokenPrincipal | 'expired' | undefined

/** What the hook needs from the identity and apps domains. */
export interface Authenticator {
  verifyApiKey(key: string): Promise<KeyPrincipal | undefined>
  verifyAccessToken(token: string): Promise<TokenCheck>
}

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: AuthKind
  }
  interface FastifyRequest {
    principal: KeyPrincipal | TokenPrincipal | undefined
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

export function registerAuth(app: FastifyInstance, options: { authenticator: Authenticator; adminToken: string | undefined }): void {
  const { authenticator, adminToken } = options
  app.decorateRequest('principal', undefined)

  app.addHook('onRequest', async (request: FastifyRequest) => {
    const kind = request.routeOptions.config.auth
    if (kind === undefined) return
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
      if (principal === undefined) throw new ApiError('invalid_api_key', 'The server API key is unknown or has been revoked.')
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
    request.principal = checked
  })
}

/** The app whose server API key authenticated this request (routes with `auth: 'key'`). */
export function keyPrincipal(request: FastifyRequest): KeyPrincipal {
  const principal = request.principal
  if (principal?.kind !== 'key') throw new Error(`route ${request.routeOptions.url ?? ''} is not declared with auth: 'key'`)
  return principal
}

/** The user and app of the access token that authenticated this request (routes with `auth: 'token'`). */
export function tokenPrincipal(request: FastifyRequest): TokenPrincipal {
  const principal = request.principal
  if (principal?.kind !== 'token') throw new Error(`route ${request.routeOptions.url ?? ''} is not declared with auth: 'token'`)
  return principal
}
