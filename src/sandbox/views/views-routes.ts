import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import type { Kysely } from 'kysely'
import { Type } from 'typebox'
import { decodeCursor, encodeCursor, page } from '../../core/cursors.js'
import { AppParams, Cursor, Id, PageLimit } from '../../core/schemas.js'
import type { DB } from '../../db/schema.js'
import { errorResponses } from '../../http/errors.js'
import { ADMIN_SECURITY } from '../../http/openapi.js'
import { MAX_NESTED_ROWS, viewsRepo } from '../../views/views-repo.js'
import { appView, viewsServiceFactory } from '../../views/views-service.js'

/**
 * Read-only views of the platform for the sandbox browser and the developer console: apps,
 * users, and each app's payments, ads and notifications. Sandbox mode only; newest first,
 * at most `limit` (≤ 200) rows.
 */
const Limit = Type.Object({ limit: Type.Optional(PageLimit()) })
const iso = (date: Date | null) => date?.toISOString() ?? null
const IsoOrNull = Type.Union([Type.String(), Type.Null()])

const AppView = Type.Object({
  app_id: Type.String(),
  name: Type.String(),
  network: Type.String(),
  url: IsoOrNull,
  wallet_address: Type.String(),
  created_at: Type.String(),
})

export function sandboxViews(
  app: FastifyInstance,
  deps: {
    db: Kysely<DB>
  },
): void {
  const repo = viewsRepo(deps.db)
  const { requireApp, requireUser } = viewsServiceFactory({ repo })
  const r = app.withTypeProvider<TypeBoxTypeProvider>()
  const common = { tags: ['Sandbox'], security: ADMIN_SECURITY }
  const config = { auth: 'admin' as const }

  r.get(
    '/sandbox/apps',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxListApps',
        summary: 'List apps, newest first; before=<next_cursor> pages back',
        querystring: Type.Object({ ...Limit.properties, before: Type.Optional(Cursor()) }),
        response: {
          200: Type.Object({
            apps: Type.Array(AppView),
            next_cursor: Type.Union([Type.String(), Type.Null()]),
            total: Type.Integer({ description: 'How many apps there are' }),
          }),
          ...errorResponses(401),
        },
      },
    },
    async (request) => {
      const limit = request.query.limit ?? 50
      const cursor = request.query.before === undefined ? undefined : decodeCursor('before', request.query.before, 'apps', '')
      const [rows, total] = await Promise.all([repo.listApps(limit, cursor), repo.countApps()])
      const listed = page(rows, limit, (last) => encodeCursor('apps', '', { n: Number(last.created_us), id: last.id }))
      return { apps: listed.rows.map(appView), next_cursor: listed.next, total }
    },
  )

  r.get(
    '/sandbox/apps/:app_id',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxGetApp',
        summary: 'An app and its server API keys (never the keys themselves: their ids and first characters)',
        params: AppParams(),
        response: {
          200: Type.Object({
            ...AppView.properties,
            keys: Type.Array(
              Type.Object({ key_id: Type.String(), prefix: Type.String(), created_at: Type.String(), revoked_at: IsoOrNull }),
              { maxItems: MAX_NESTED_ROWS, description: `Oldest first; the newest ${MAX_NESTED_ROWS} when there are more` },
            ),
          }),
          ...errorResponses(401, 404),
        },
      },
    },
    async (request) => {
      const row = await requireApp(request.params.app_id)
      const keys = await repo.listAppKeys(row.id)
      return {
        ...appView(row),
        keys: keys.map((k) => ({
          key_id: k.id,
          prefix: k.key_prefix,
          created_at: k.created_at.toISOString(),
          revoked_at: iso(k.revoked_at),
        })),
      }
    },
  )

  const UserView = Type.Object({
    user_id: Type.String(),
    username: Type.String(),
    wallet_address: Type.String(),
    created_at: Type.String(),
  })
  r.get(
    '/sandbox/users',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxListUsers',
        summary: 'List users, newest first: search by name, page with before=<next_cursor>',
        description:
          '`q` finds usernames that contain it, regardless of case (those that start with it first is not promised: ' +
          'newest first always); `username` finds one user exactly (regardless of case). `total` counts every match.',
        querystring: Type.Object({
          ...Limit.properties,
          username: Type.Optional(Type.String({ minLength: 1, maxLength: 32 })),
          q: Type.Optional(Type.String({ minLength: 1, maxLength: 32, 'x-hint': 'a part of a username' })),
          before: Type.Optional(Cursor()),
        }),
        response: {
          200: Type.Object({
            users: Type.Array(UserView),
            next_cursor: Type.Union([Type.String(), Type.Null()]),
            total: Type.Integer({ description: 'How many users match (all pages)' }),
          }),
          ...errorResponses(401),
        },
      },
    },
    async (request) => {
      const { username, q } = request.query
      const limit = request.query.limit ?? 50
      const cursor = request.query.before === undefined ? undefined : decodeCursor('before', request.query.before, 'users', '')
      const { rows, total } = await repo.listUsers({ username, q }, limit, cursor)
      const listed = page(rows, limit, (last) => encodeCursor('users', '', { n: Number(last.created_us), id: last.id }))
      return {
        users: listed.rows.map((u) => ({
          user_id: u.id,
          username: u.username,
          wallet_address: u.wallet_address,
          created_at: u.created_at.toISOString(),
        })),
        next_cursor: listed.next,
        total,
      }
    },
  )

  r.get(
    '/sandbox/users/:user_id',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxGetUser',
        summary: 'A user and the apps they signed in to, with the consent given to each',
        params: Type.Object({ user_id: Id() }),
        response: {
          200: Type.Object({
            ...UserView.properties,
            apps: Type.Array(
              Type.Object({
                app_id: Type.String(),
                name: Type.String(),
                uid: Type.String(),
                scopes: Type.Array(Type.String()),
                notifications_enabled: Type.Boolean(),
              }),
              { maxItems: MAX_NESTED_ROWS, description: `Oldest first; the newest ${MAX_NESTED_ROWS} when there are more` },
            ),
          }),
          ...errorResponses(401, 404),
        },
      },
    },
    async (request) => {
      const user = await requireUser(request.params.user_id)
      const memberships = await repo.listMemberships(user.id)
      return {
        user_id: user.id,
        username: user.username,
        wallet_address: user.wallet_address,
        created_at: user.created_at.toISOString(),
        apps: memberships,
      }
    },
  )

  r.get(
    '/sandbox/apps/:app_id/ads',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxListAds',
        summary: "An app's rewarded ads and their mediator statuses (as GET /v2/ads_network/status/{adId} answers them)",
        params: AppParams(),
        querystring: Limit,
        response: {
          200: Type.Object({
            ads: Type.Array(
              Type.Object({
                identifier: Type.String(),
                user_id: Type.String(),
                mediator_ack_status: IsoOrNull,
                mediator_granted_at: IsoOrNull,
                mediator_revoked_at: IsoOrNull,
                settles_at: IsoOrNull,
                created_at: Type.String(),
              }),
            ),
          }),
          ...errorResponses(401, 404),
        },
      },
    },
    async (request) => {
      await requireApp(request.params.app_id)
      // Verdicts that fell due read as the ads API answers them, without being written (views-repo.ts).
      const rows = await repo.listAds(request.params.app_id, request.query.limit ?? 50)
      return {
        ads: rows.map((a) => ({
          identifier: a.id,
          user_id: a.user_id,
          mediator_ack_status: a.mediator_ack_status,
          mediator_granted_at: iso(a.mediator_granted_at),
          mediator_revoked_at: iso(a.mediator_revoked_at),
          settles_at: iso(a.settles_at),
          created_at: a.created_at.toISOString(),
        })),
      }
    },
  )

  r.get(
    '/sandbox/apps/:app_id/notifications',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxListSentNotifications',
        summary: 'Notifications an app delivered',
        params: AppParams(),
        querystring: Limit,
        response: {
          200: Type.Object({
            notifications: Type.Array(
              Type.Object({
                id: Type.String(),
                user_id: Type.String(),
                user_uid: Type.String(),
                title: Type.String(),
                body: Type.String(),
                subroute: Type.String(),
                created_at: Type.String(),
                seen_at: IsoOrNull,
                dismissed_at: IsoOrNull,
              }),
            ),
          }),
          ...errorResponses(401, 404),
        },
      },
    },
    async (request) => {
      await requireApp(request.params.app_id)
      const rows = await repo.listNotifications(request.params.app_id, request.query.limit ?? 50)
      return {
        notifications: rows.map((n) => ({
          id: n.id,
          user_id: n.user_id,
          user_uid: n.user_uid,
          title: n.title,
          body: n.body,
          subroute: n.subroute,
          created_at: n.created_at.toISOString(),
          seen_at: iso(n.seen_at),
          dismissed_at: iso(n.dismissed_at),
        })),
      }
    },
  )
}
