import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import type { Kysely } from 'kysely'
import { Type } from 'typebox'
import { AppParams, Id, Nullable, PageLimit, Timestamp } from '../core/schemas.js'
import type { DB } from '../db/schema.js'
import { sessionPrincipal } from '../http/auth.js'
import { errorResponses } from '../http/errors.js'
import { PaymentAdviceSchema, PaymentDTOSchema } from '../payments/payment-dto.js'
import type { RequestLog } from '../request-log/request-log.js'
import { requestLogRepo } from '../request-log/request-log-repo.js'
import { getRequest, listRequests, RequestLogEntry, RequestLogPage, RequestLogQuery } from '../request-log/request-log-routes.js'
import type { PaymentViewsService } from '../views/payment-views-service.js'
import { viewsRepo } from '../views/views-repo.js'
import { DEVELOPER_ROUTE, memberCheck, PORTAL_SCHEMA } from './portal-route-shared.js'
import type { PortalService } from './portal-service.js'

/**
 * What an app's users met, for its members to look into: why a user cannot pay, the rewarded ads
 * and notifications the app made, and its request log.
 */
export function portalActivityRoutes(
  app: FastifyInstance,
  deps: { portal: PortalService; db: Kysely<DB>; paymentViews: Pick<PaymentViewsService, 'blocking'>; requestLog: RequestLog | undefined },
): void {
  const { portal, paymentViews } = deps
  const r = app.withTypeProvider<TypeBoxTypeProvider>()
  const member = memberCheck(portal)
  const viewRepo = viewsRepo(deps.db)

  const iso = (at: Date | null) => at?.toISOString() ?? null
  r.get(
    '/portal/apps/:app_id/users/:uid/blocking',
    {
      config: DEVELOPER_ROUTE,
      schema: {
        ...PORTAL_SCHEMA,
        operationId: 'portalUserBlocking',
        summary: "Why a user cannot pay the app now: the user's open payments with it, each with what it waits for",
        params: Type.Object({ app_id: Id(), uid: Id({ description: "The user's uid in the app" }) }),
        response: {
          200: Type.Object({
            uid: Type.String(),
            blocked: Type.Object({ user_to_app: Type.Boolean(), app_to_user: Type.Boolean() }),
            open_payments: Type.Array(Type.Object({ payment: PaymentDTOSchema, advice: PaymentAdviceSchema })),
          }),
          ...errorResponses(401, 403, 404),
        },
      },
    },
    async (request) => {
      const userId = await portal.userOfUid(sessionPrincipal(request), request.params.app_id, request.params.uid)
      const found = await paymentViews.blocking(request.params.app_id, userId)
      return { uid: request.params.uid, blocked: found.blocked, open_payments: found.open_payments }
    },
  )

  r.get(
    '/portal/apps/:app_id/ads',
    {
      config: DEVELOPER_ROUTE,
      schema: {
        ...PORTAL_SCHEMA,
        operationId: 'portalListAds',
        summary: "The app's rewarded ads, newest first, with the mediator's verdicts as GET /v2/ads_network/status/{adId} answers them",
        params: AppParams(),
        querystring: Type.Object({ limit: Type.Optional(PageLimit()) }),
        response: {
          200: Type.Object({
            ads: Type.Array(
              Type.Object({
                identifier: Type.String(),
                uid: Nullable(Type.String()),
                mediator_ack_status: Nullable(Type.String()),
                mediator_granted_at: Nullable(Timestamp()),
                mediator_revoked_at: Nullable(Timestamp()),
                created_at: Timestamp(),
              }),
            ),
          }),
          ...errorResponses(401, 403, 404),
        },
      },
    },
    async (request) => {
      await member(request)
      const rows = await viewRepo.listAds(request.params.app_id, request.query.limit ?? 50)
      return {
        ads: rows.map((a) => ({
          identifier: a.id,
          uid: a.uid,
          mediator_ack_status: a.mediator_ack_status,
          mediator_granted_at: iso(a.mediator_granted_at),
          mediator_revoked_at: iso(a.mediator_revoked_at),
          created_at: a.created_at.toISOString(),
        })),
      }
    },
  )

  r.get(
    '/portal/apps/:app_id/notifications',
    {
      config: DEVELOPER_ROUTE,
      schema: {
        ...PORTAL_SCHEMA,
        operationId: 'portalListNotifications',
        summary: 'The notifications the app sent, newest first, and whether each was seen or dismissed',
        params: AppParams(),
        querystring: Type.Object({ limit: Type.Optional(PageLimit()) }),
        response: {
          200: Type.Object({
            notifications: Type.Array(
              Type.Object({
                id: Type.String(),
                uid: Type.String(),
                title: Type.String(),
                body: Type.String(),
                subroute: Nullable(Type.String()),
                created_at: Timestamp(),
                seen_at: Nullable(Timestamp()),
                dismissed_at: Nullable(Timestamp()),
              }),
            ),
          }),
          ...errorResponses(401, 403, 404),
        },
      },
    },
    async (request) => {
      await member(request)
      const rows = await viewRepo.listNotifications(request.params.app_id, request.query.limit ?? 50)
      return {
        notifications: rows.map((n) => ({
          id: n.id,
          uid: n.user_uid,
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

  const requests = requestLogRepo(deps.db)
  r.get(
    '/portal/apps/:app_id/requests',
    {
      config: DEVELOPER_ROUTE,
      schema: {
        ...PORTAL_SCHEMA,
        operationId: 'portalListRequests',
        summary: "The app's request log: the /v2 calls its keys and its users' tokens made, while the log is on",
        description:
          "As the sandbox's (`GET /sandbox/apps/{app_id}/requests`): newest first, `before` pages back, `after` tails. " +
          'Bodies redacted by shape; kept 7 days, at most 10,000 entries an app (docs/portal.md, "Request log").',
        params: AppParams(),
        querystring: RequestLogQuery,
        response: { 200: RequestLogPage, ...errorResponses(401, 403, 404) },
      },
    },
    async (request) => {
      await member(request)
      return listRequests(requests, deps.requestLog, request.params.app_id, request.query)
    },
  )

  r.get(
    '/portal/apps/:app_id/requests/:id',
    {
      config: DEVELOPER_ROUTE,
      schema: {
        ...PORTAL_SCHEMA,
        operationId: 'portalGetRequest',
        summary: "One entry of the app's request log",
        params: Type.Object({ app_id: Id(), id: Type.String({ minLength: 1, maxLength: 20 }) }),
        response: { 200: RequestLogEntry, ...errorResponses(401, 403, 404) },
      },
    },
    async (request) => {
      await member(request)
      return getRequest(requests, deps.requestLog, request.params.app_id, request.params.id)
    },
  )
}
