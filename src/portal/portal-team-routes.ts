import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { AppParams, Id, Nullable, Timestamp, Username } from '../core/schemas.js'
import { sessionPrincipal } from '../http/auth.js'
import { errorResponses } from '../http/errors.js'
import { DEVELOPER_ROUTE, PORTAL_SCHEMA } from './portal-route-shared.js'
import type { PortalService } from './portal-service.js'

const KeyParams = Type.Object({ app_id: Id(), key_id: Id() })
const MemberParams = Type.Object({ app_id: Id(), username: Type.String({ minLength: 1, maxLength: 64 }) })
const Key = Type.Object({
  key_id: Type.String(),
  name: Type.String(),
  prefix: Type.String({ description: 'The first 8 characters, to tell keys apart' }),
  created_at: Timestamp(),
  last_used_at: Nullable(Timestamp('To the minute')),
  revoked_at: Nullable(Timestamp()),
})
const Member = Type.Object({
  username: Type.String(),
  role: Type.Union([Type.Literal('owner'), Type.Literal('member')]),
  added_at: Timestamp(),
})

/** Who holds an app: its server API keys, its members, and the hand-over to another owner. */
export function portalTeamRoutes(app: FastifyInstance, portal: PortalService): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>()

  r.get(
    '/portal/apps/:app_id/keys',
    {
      config: DEVELOPER_ROUTE,
      schema: {
        ...PORTAL_SCHEMA,
        operationId: 'portalListKeys',
        summary: "The app's server API keys (never the keys themselves), newest first",
        params: AppParams(),
        response: { 200: Type.Object({ keys: Type.Array(Key) }), ...errorResponses(401, 403, 404) },
      },
    },
    async (request) => ({ keys: await portal.keys(sessionPrincipal(request), request.params.app_id) }),
  )

  r.post(
    '/portal/apps/:app_id/keys',
    {
      config: DEVELOPER_ROUTE,
      schema: {
        ...PORTAL_SCHEMA,
        operationId: 'portalCreateKey',
        summary: 'Make a server API key (the owner): answered once, kept as its hash',
        description: 'An app has at most 20 active keys (409 too_many_keys).',
        params: AppParams(),
        body: Type.Object({ name: Type.Optional(Type.String({ maxLength: 60 })) }, { additionalProperties: false }),
        response: {
          201: Type.Object({ key_id: Type.String(), api_key: Type.String({ description: 'Shown once' }), name: Type.String() }),
          ...errorResponses(401, 403, 404, 409, 415),
        },
      },
    },
    async (request, reply) => {
      const name = request.body.name ?? ''
      const key = await portal.createKey(sessionPrincipal(request), request.params.app_id, name, request.id)
      reply.header('cache-control', 'no-store')
      return reply.code(201).send({ key_id: key.keyId, api_key: key.apiKey, name })
    },
  )

  r.delete(
    '/portal/apps/:app_id/keys/:key_id',
    {
      config: DEVELOPER_ROUTE,
      schema: {
        ...PORTAL_SCHEMA,
        operationId: 'portalRevokeKey',
        summary: 'Revoke a server API key (the owner): refused on every process within a second',
        params: KeyParams,
        response: { 200: Type.Object({ key_id: Type.String(), revoked_at: Timestamp() }), ...errorResponses(401, 403, 404, 415) },
      },
    },
    async (request) => {
      const done = await portal.revokeKey(sessionPrincipal(request), request.params.app_id, request.params.key_id, request.id)
      return { key_id: done.keyId, revoked_at: done.revokedAt.toISOString() }
    },
  )

  r.get(
    '/portal/apps/:app_id/members',
    {
      config: DEVELOPER_ROUTE,
      schema: {
        ...PORTAL_SCHEMA,
        operationId: 'portalListMembers',
        summary: "The app's owner and members",
        params: AppParams(),
        response: { 200: Type.Object({ members: Type.Array(Member) }), ...errorResponses(401, 403, 404) },
      },
    },
    async (request) => ({ members: await portal.members(sessionPrincipal(request), request.params.app_id) }),
  )

  r.post(
    '/portal/apps/:app_id/members',
    {
      config: DEVELOPER_ROUTE,
      schema: {
        ...PORTAL_SCHEMA,
        operationId: 'portalAddMember',
        summary: 'Add a member by username (the owner)',
        description:
          'The user must be a developer (409 not_a_developer), unless PLINTH_DEVELOPER_SIGNUP=invite, where this makes them one. ' +
          'An app has at most 50 members, its owner included (409 too_many_members).',
        params: AppParams(),
        body: Type.Object({ username: Username() }, { additionalProperties: false }),
        response: {
          201: Type.Object({ username: Type.String(), role: Type.Literal('member') }),
          ...errorResponses(401, 403, 404, 409, 415),
        },
      },
    },
    async (request, reply) => {
      const added = await portal.addMember(sessionPrincipal(request), request.params.app_id, request.body.username, request.id)
      return reply.code(201).send(added)
    },
  )

  r.delete(
    '/portal/apps/:app_id/members/:username',
    {
      config: DEVELOPER_ROUTE,
      schema: {
        ...PORTAL_SCHEMA,
        operationId: 'portalRemoveMember',
        summary: 'Remove a member (the owner), or leave the app (a member, naming themselves)',
        params: MemberParams,
        response: { 200: Type.Object({ removed: Type.Boolean() }), ...errorResponses(401, 403, 404, 415) },
      },
    },
    async (request) => portal.removeMember(sessionPrincipal(request), request.params.app_id, request.params.username, request.id),
  )

  r.post(
    '/portal/apps/:app_id/owner',
    {
      config: DEVELOPER_ROUTE,
      schema: {
        ...PORTAL_SCHEMA,
        operationId: 'portalTransferApp',
        summary: 'Hand the app over to a member (the owner), who becomes its owner; the caller stays a member',
        description: 'A hand-over that finds the caller no longer the owner (another hand-over came first) is 409 ownership_changed.',
        params: AppParams(),
        body: Type.Object({ username: Username() }, { additionalProperties: false }),
        response: { 200: Type.Object({ owner: Type.String() }), ...errorResponses(401, 403, 404, 409, 415) },
      },
    },
    async (request) => portal.transferOwnership(sessionPrincipal(request), request.params.app_id, request.body.username, request.id),
  )
}
