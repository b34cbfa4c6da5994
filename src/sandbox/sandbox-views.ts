import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import type { Kysely } from 'kysely'
import { Type } from 'typebox'
import type { DB } from '../db/schema.js'
import { ApiError, errorResponses } from '../http/errors.js'
import { ADMIN_SECURITY } from '../http/openapi.js'
import { PaymentDTOSchema, toPaymentDTO } from '../payments/payment-dto.js'

/**
 * Read-only views of the platform for the sandbox browser and the developer console: apps,
 * users, and each app's payments, ads and notifications. Sandbox mode only; newest first,
 * at most `limit` (≤ 200) rows.
 */
const Limit = Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })) })
/** An app's keys and a user's apps are listed whole up to this many (the newest when there are more). */
export const MAX_NESTED_ROWS = 200
const AppParams = Type.Object({ app_id: Type.String({ minLength: 1, maxLength: 64 }) })
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
    publicUrl: string
    expireDueApprovals: (appId: string) => Promise<void>
    /** Applies the app's ad verdicts that fell due, as GET /v2/ads_network/status does for one ad. */
    settleDueAds: (appId: string) => Promise<void>
  },
): void {
  const { db, publicUrl } = deps
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
        summary: 'List apps',
        querystring: Limit,
        response: { 200: Type.Object({ apps: Type.Array(AppView) }), ...errorResponses(401) },
      },
    },
    async (request) => {
      const rows = await db
        .selectFrom('apps')
        .selectAll()
        .orderBy('created_at', 'desc')
        .limit(request.query.limit ?? 50)
        .execute()
      return { apps: rows.map(appView) }
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
        params: AppParams,
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
        summary: 'List users (or find one by username)',
        querystring: Type.Object({ ...Limit.properties, username: Type.Optional(Type.String({ minLength: 1, maxLength: 32 })) }),
        response: { 200: Type.Object({ users: Type.Array(UserView) }), ...errorResponses(401) },
      },
    },
    async (request) => {
      let query = db.selectFrom('users').select(['id', 'username', 'wallet_address', 'created_at'])
      if (request.query.username !== undefined) query = query.where('username_key', '=', request.query.username.toLowerCase())
      const rows = await query
        .orderBy('created_at', 'desc')
        .limit(request.query.limit ?? 50)
        .execute()
      return {
        users: rows.map((u) => ({
          user_id: u.id,
          username: u.username,
          wallet_address: u.wallet_address,
          created_at: u.created_at.toISOString(),
        })),
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
        params: Type.Object({ user_id: Type.String({ minLength: 1, maxLength: 64 }) }),
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
    '/sandbox/apps/:app_id/payments',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxListPayments',
        summary: "An app's payments, with the platform user each belongs to",
        params: AppParams,
        querystring: Limit,
        response: {
          200: Type.Object({ payments: Type.Array(Type.Object({ ...PaymentDTOSchema.properties, user_id: Type.String() })) }),
          ...errorResponses(401, 404),
        },
      },
    },
    async (request) => {
      await requireApp(request.params.app_id)
      await deps.expireDueApprovals(request.params.app_id)
      const rows = await db
        .selectFrom('payments')
        .selectAll()
        .where('app_id', '=', request.params.app_id)
        .orderBy('created_at', 'desc')
        .limit(request.query.limit ?? 50)
        .execute()
      return { payments: rows.map((row) => ({ ...toPaymentDTO(row, publicUrl), user_id: row.user_id })) }
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
        params: AppParams,
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
      await deps.settleDueAds(request.params.app_id)
      const rows = await db
        .selectFrom('ads')
        .selectAll()
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
        params: AppParams,
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
