import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { decodeCursor, encodeCursor, page } from '../core/cursors.js'
import { AppParams, Cursor, Id, Nullable, PageLimit } from '../core/schemas.js'
import { sessionPrincipal } from '../http/auth.js'
import { errorResponses } from '../http/errors.js'
import { PaymentAdviceSchema, PaymentDTOSchema, PaymentStateSchema } from '../payments/payment-dto.js'
import type { MoveBy } from '../payments/payments-repo.js'
import { paymentFilterQuery } from '../views/payment-filter-query.js'
import type { PaymentViewsService } from '../views/payment-views-service.js'
import { DEVELOPER_ROUTE, memberCheck, PORTAL_SCHEMA } from './portal-route-shared.js'
import type { PortalService } from './portal-service.js'

const PaymentParams = Type.Object({ app_id: Id(), payment_id: Id() })
const StateSchema = PaymentStateSchema

/**
 * An app's payments for its members: search and page them, read one with its timeline, and cancel
 * or complete one as the app would (recorded as the portal's act, by the member).
 */
export function portalPaymentRoutes(app: FastifyInstance, deps: { portal: PortalService; paymentViews: PaymentViewsService }): void {
  const { portal, paymentViews } = deps
  const r = app.withTypeProvider<TypeBoxTypeProvider>()
  const member = memberCheck(portal)
  const byPortal = (request: FastifyRequest): MoveBy => ({
    actor: 'portal',
    actorId: sessionPrincipal(request).username,
    requestId: request.id,
  })

  const ListedPayment = Type.Object({ ...PaymentDTOSchema.properties, state: StateSchema })
  r.get(
    '/portal/apps/:app_id/payments',
    {
      config: DEVELOPER_ROUTE,
      schema: {
        ...PORTAL_SCHEMA,
        operationId: 'portalListPayments',
        summary: "The app's payments, newest first: search, filter and page",
        description:
          '`q` finds a payment by its identifier or txid, its user by uid (never by username: the portal shows what the app ' +
          'was given), or a part of its memo. `before=<next_cursor>` pages back.',
        params: AppParams(),
        querystring: Type.Object({
          ...paymentFilterQuery(),
          before: Type.Optional(Cursor()),
          limit: Type.Optional(PageLimit()),
        }),
        response: {
          200: Type.Object({ payments: Type.Array(ListedPayment), next_cursor: Nullable(Type.String()) }),
          ...errorResponses(401, 403, 404),
        },
      },
    },
    async (request) => {
      await member(request)
      const { app_id: appId } = request.params
      const { q, state, direction } = request.query
      const limit = request.query.limit ?? 50
      const cursor = request.query.before === undefined ? undefined : decodeCursor('before', request.query.before, 'payments', appId)
      const rows = await paymentViews.list(appId, { q, state, direction, usersBy: 'app' }, limit, cursor)
      const listed = page(rows, limit, (last) => encodeCursor('payments', appId, last.position))
      // The portal shows the app's view of its users: the uid, not the platform's id or username.
      const payments = listed.rows.map(({ payment }) => {
        const { user_id: _id, username: _name, ...shown } = payment
        return shown
      })
      return { payments, next_cursor: listed.next }
    },
  )

  r.get(
    '/portal/apps/:app_id/payments/:payment_id',
    {
      config: DEVELOPER_ROUTE,
      schema: {
        ...PORTAL_SCHEMA,
        operationId: 'portalGetPayment',
        summary: 'One payment with its ledger transaction, its timeline and what it waits for',
        params: PaymentParams,
        response: {
          200: Type.Object({
            payment: PaymentDTOSchema,
            state: StateSchema,
            uid: Type.String(),
            ledger_transaction: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()]),
            timeline: Type.Array(Type.Object({}, { additionalProperties: true })),
            advice: PaymentAdviceSchema,
          }),
          ...errorResponses(401, 403, 404),
        },
      },
    },
    async (request) => {
      await member(request)
      const detail = await paymentViews.detail(request.params.app_id, request.params.payment_id)
      return {
        payment: detail.payment,
        state: detail.state,
        uid: detail.user.uid,
        ledger_transaction: detail.ledger_transaction,
        timeline: detail.timeline,
        advice: detail.advice,
      }
    },
  )

  r.post(
    '/portal/apps/:app_id/payments/:payment_id/cancel',
    {
      config: DEVELOPER_ROUTE,
      schema: {
        ...PORTAL_SCHEMA,
        operationId: 'portalCancelPayment',
        summary: 'Cancel a payment as the app (POST /v2/payments/{id}/cancel)',
        params: PaymentParams,
        response: { 200: PaymentDTOSchema, ...errorResponses(401, 403, 404, 409, 415) },
      },
    },
    async (request) => {
      await member(request)
      const recorded = portal.paymentMoveAudit(sessionPrincipal(request), request.params.app_id, request.id)
      return paymentViews.cancel(request.params.app_id, request.params.payment_id, byPortal(request), recorded)
    },
  )

  r.post(
    '/portal/apps/:app_id/payments/:payment_id/complete',
    {
      config: DEVELOPER_ROUTE,
      schema: {
        ...PORTAL_SCHEMA,
        operationId: 'portalCompletePayment',
        summary: 'Complete a payment as the app with its txid (POST /v2/payments/{id}/complete): the ledger transaction is verified',
        params: PaymentParams,
        body: Type.Object(
          { txid: Type.String({ pattern: '^[0-9a-f]{64}$', description: 'The ledger transaction hash: 64 hex digits' }) },
          { additionalProperties: false },
        ),
        response: { 200: PaymentDTOSchema, ...errorResponses(401, 403, 404, 409, 415) },
      },
    },
    async (request) => {
      await member(request)
      return paymentViews.complete(request.params.app_id, request.params.payment_id, request.body.txid, byPortal(request))
    },
  )
}
