import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { type Kysely, sql } from 'kysely'
import { Type } from 'typebox'
import { platformNow } from '../clock/platform-now.js'
import { containsPattern, decodeCursor, encodeCursor, page } from '../core/cursors.js'
import { ApiError } from '../core/errors.js'
import { AppParams, Cursor, Id, PageLimit } from '../core/schemas.js'
import type { DB } from '../db/schema.js'
import { errorResponses } from '../http/errors.js'
import { ADMIN_SECURITY } from '../http/openapi.js'

/**
 * Read-only views of the platform for the sandbox browser and the developer console: apps,
 * users, and each app's payments, ads and notifications. Sandbox mode only; newest first,
 * at most `limit` (≤ 200) rows.
 */
const Limit = Type.Object({ limit: Type.Optional(PageLimit()) })
/** An app's keys and a user's apps are listed whole up to this many (the newest when there are more). */
export const MAX_NESTED_ROWS = 200
/** A row's created_at in microseconds since 1970, exactly: the sort key of the cursors (JavaScript dates keep milliseconds). */
const micros = sql<number>`(extract(epoch from created_at) * 1000000)::bigint`
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
  const { db } = deps
  const r = app.withTypeProvider<TypeBoxTypeProvider>()
  const common = { tags: ['Sandbox'], security: ADMIN_SECURITY }
  const config = { auth: 'admin' as const }

  const requireApp = async (appId: string) => {
    const row = await db.selectFrom('apps').selectAll().where('id', '=', appId).executeTakeFirst()
    if (row === undefined) throw new ApiError('app_not_found', `No app with id ${appId}.`)
    return row
  }
  const appView = (row: Awaited<ReturnType<typeof requireApp>>) => ({
    app_id: row.id,
    name: row.name,
    network: row.network,
    url: row.url,
    wallet_address: row.wallet_address,
    created_at: row.created_at.toISOString(),
  })

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
          200: Type.Object({ apps: Type.Array(AppView), next_cursor: Type.Union([Type.String(), Type.Null()]) }),
          ...errorResponses(401),
        },
      },
    },
    async (request) => {
      const limit = request.query.limit ?? 50
      const cursor = request.query.before === undefined ? undefined : decodeCursor('before', request.query.before, 'apps', '')
      let query = db.selectFrom('apps').selectAll().select(micros.as('created_us'))
      if (cursor !== undefined) query = query.where(sql<boolean>`(${micros}, id) < (${cursor.n}::bigint, ${cursor.id ?? ''}::text)`)
      const rows = await query
        .orderBy(micros, 'desc')
        .orderBy('id', 'desc')
        .limit(limit + 1)
        .execute()
      const listed = page(rows, limit, (last) => encodeCursor('apps', '', { n: Number(last.created_us), id: last.id }))
      return { apps: listed.rows.map(appView), next_cursor: listed.next }
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
      const keys = (
        await db
          .selectFrom('api_keys')
          .selectAll()
          .where('app_id', '=', row.id)
          .orderBy('created_at', 'desc')
          .limit(MAX_NESTED_ROWS)
          .execute()
      ).reverse()
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
      let matching = db.selectFrom('users')
      if (username !== undefined) matching = matching.where('username_key', '=', username.toLowerCase())
      if (q !== undefined) matching = matching.where('username_key', 'like', containsPattern(q))
      let query = matching.select(['id', 'username', 'wallet_address', 'created_at', micros.as('created_us')])
      if (cursor !== undefined) query = query.where(sql<boolean>`(${micros}, id) < (${cursor.n}::bigint, ${cursor.id ?? ''}::text)`)
      const [rows, count] = await Promise.all([
        query
          .orderBy(micros, 'desc')
          .orderBy('id', 'desc')
          .limit(limit + 1)
          .execute(),
        matching.select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow(),
      ])
      const listed = page(rows, limit, (last) => encodeCursor('users', '', { n: Number(last.created_us), id: last.id }))
      return {
        users: listed.rows.map((u) => ({
          user_id: u.id,
          username: u.username,
          wallet_address: u.wallet_address,
          created_at: u.created_at.toISOString(),
        })),
        next_cursor: listed.next,
        total: count.n,
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
      const user = await db
        .selectFrom('users')
        .select(['id', 'username', 'wallet_address', 'created_at'])
        .where('id', '=', request.params.user_id)
        .executeTakeFirst()
      if (user === undefined) throw new ApiError('user_not_found', `No user with id ${request.params.user_id}.`)
      const memberships = await db
        .selectFrom('app_users as au')
        .innerJoin('apps as a', 'a.id', 'au.app_id')
        .select(['au.app_id', 'a.name', 'au.uid', 'au.scopes', 'au.notifications_enabled'])
        .where('au.user_id', '=', user.id)
        .orderBy('au.created_at', 'desc')
        .limit(MAX_NESTED_ROWS)
        .execute()
      memberships.reverse()
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
      // A verdict that fell due is shown as GET /v2/ads_network/status/{adId} would answer it, but
      // not written: no GET changes state (docs/security.md, "Requests from other sites").
      const due = sql<boolean>`(mediator_ack_status is null and settles_at <= ${platformNow})`
      const rows = await db
        .selectFrom('ads')
        .select([
          'id',
          'user_id',
          'mediator_revoked_at',
          'settles_at',
          'created_at',
          sql<string | null>`case when ${due} then settles_to else mediator_ack_status end`.as('mediator_ack_status'),
          sql<Date | null>`case when ${due} and settles_to = 'granted' then settles_at else mediator_granted_at end`.as(
            'mediator_granted_at',
          ),
        ])
        .where('app_id', '=', request.params.app_id)
        .orderBy('created_at', 'desc')
        .limit(request.query.limit ?? 50)
        .execute()
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
      const rows = await db
        .selectFrom('notifications')
        .selectAll()
        .where('app_id', '=', request.params.app_id)
        .orderBy('created_at', 'desc')
        .limit(request.query.limit ?? 50)
        .execute()
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
