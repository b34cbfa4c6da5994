import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { Id, Timestamp } from '../core/schemas.js'
import { sessionPrincipal } from '../http/auth.js'
import { errorResponses } from '../http/errors.js'
import { PORTAL_SECURITY, SESSION_SECURITY } from '../http/openapi.js'
import { MAX_TOKEN_DAYS, MAX_TOKENS, type PersonalTokensService } from './personal-tokens.js'

const Scope = Type.Union([Type.Literal('read'), Type.Literal('write')], {
  description: '`read`: GET and HEAD on /portal only; `write`: everything the portal session may do',
})
const TokenView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  scope: Scope,
  prefix: Type.String({ description: "The token's first characters, to recognise it; never the token" }),
  created_at: Timestamp(),
  expires_at: Timestamp(),
  last_used_at: Type.Union([Timestamp('Recorded to the minute'), Type.Null()]),
})

/**
 * Personal access tokens (docs/portal.md, "The portal from the command line"): made, listed and
 * revoked by a signed-in session under /account (a token itself is refused there), and used as
 * `Authorization: Bearer` on /portal. `GET /portal/me` says whom a token (or a session) acts as.
 */
export function tokenRoutes(app: FastifyInstance, deps: { tokens: PersonalTokensService }): void {
  const { tokens } = deps
  const r = app.withTypeProvider<TypeBoxTypeProvider>()
  const signedIn = { tags: ['Account'], security: SESSION_SECURITY }
  const session = { auth: 'session' } as const

  r.post(
    '/account/tokens',
    {
      config: session,
      schema: {
        ...signedIn,
        operationId: 'accountCreateToken',
        summary: 'Make a personal access token for the /portal API: the token is in this answer only',
        description: `Needs a re-authentication of this session within five minutes (403 reauthentication_required), as adding a passkey does. At most ${MAX_TOKENS} live tokens an account (409 too_many_tokens). Audited.`,
        body: Type.Object(
          {
            name: Type.String({ minLength: 1, maxLength: 60, pattern: '\\S', description: 'What the token is for (trimmed)' }),
            scope: Scope,
            expires_in_days: Type.Integer({ minimum: 1, maximum: MAX_TOKEN_DAYS }),
          },
          { additionalProperties: false },
        ),
        response: {
          201: Type.Object({
            ...TokenView.properties,
            token: Type.String({ description: 'Send as Authorization: Bearer <token>; shown this once, kept only as a hash' }),
          }),
          ...errorResponses(400, 401, 403, 409, 415),
        },
      },
    },
    async (request, reply) => {
      const { name, scope, expires_in_days: expiresInDays } = request.body
      const created = await tokens.create(sessionPrincipal(request), { name: name.trim(), scope, expiresInDays })
      return reply.code(201).send(created)
    },
  )

  r.get(
    '/account/tokens',
    {
      config: session,
      schema: {
        ...signedIn,
        operationId: 'accountTokens',
        summary: "The account's personal access tokens not revoked (expired ones included), newest first, with their last use",
        response: { 200: Type.Object({ tokens: Type.Array(TokenView, { maxItems: 1000 }) }), ...errorResponses(401) },
      },
    },
    async (request) => ({ tokens: await tokens.list(sessionPrincipal(request).userId) }),
  )

  r.delete(
    '/account/tokens/:token_id',
    {
      config: session,
      schema: {
        ...signedIn,
        operationId: 'accountRevokeToken',
        summary: 'Revoke a personal access token: refused from its next request on, on every process',
        params: Type.Object({ token_id: Id() }),
        response: { 200: Type.Object({ revoked: Type.Boolean() }), ...errorResponses(401, 403, 404, 415) },
      },
    },
    async (request) => {
      await tokens.revoke(sessionPrincipal(request), request.params.token_id)
      return { revoked: true }
    },
  )

  r.get(
    '/portal/me',
    {
      config: session,
      schema: {
        tags: ['Portal'],
        security: PORTAL_SECURITY,
        operationId: 'portalMe',
        summary: 'Whom this request acts as: the signed-in person, or the account of its personal access token (`plinth portal login`)',
        response: {
          200: Type.Object({
            username: Type.String(),
            roles: Type.Array(Type.String()),
            token: Type.Union([Type.Object({ id: Type.String(), scope: Scope }), Type.Null()], {
              description: 'The personal access token the request was sent with; null for a session cookie',
            }),
          }),
          ...errorResponses(401, 403),
        },
      },
    },
    async (request) => {
      const { username, roles, token } = sessionPrincipal(request)
      return { username, roles, token: token ?? null }
    },
  )
}
