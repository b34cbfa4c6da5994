import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { decodeCursor, encodeCursor, page } from '../../core/cursors.js'
import { AppParams, Cursor, Id, PageLimit } from '../../core/schemas.js'
import { errorResponses } from '../../http/errors.js'
import { ADMIN_SECURITY } from '../../http/openapi.js'
import { PaymentAdviceSchema, PaymentDTOSchema, PaymentStateSchema } from '../../payments/payment-dto.js'
import type { MoveBy } from '../../payments/payments-repo.js'
import { paymentFilterQuery } from '../../views/payment-filter-query.js'
import { paymentViewsRepo } from '../../views/payment-views-repo.js'
import { type PaymentViewsDeps, paymentViewsServiceFactory } from '../../views/payment-views-service.js'
import { viewsRepo } from '../../views/views-repo.js'
import { viewsServiceFactory } from '../../views/views-service.js'

/**
 * The sandbox's payment views: search an app's payments, one payment with its ledger transaction
 * and timeline, why a user cannot pay the app now and what resolves it, the sandbox's own
 * complete and cancel, and the app's setup checklist. Sandbox mode only (docs/api.md).
 */
const PaymentParams = Type.Object({ ...AppParams().properties, payment_id: Id() })
const StringOrNull = Type.Union([Type.String(), Type.Null()])
const StateSchema = PaymentStateSchema
const ListedPayment = Type.Object({
  ...PaymentDTOSchema.properties,
  user_id: Type.String(),
  username: Type.String(),
  state: StateSchema,
})
const TimelineEvent = Type.Object({
  kind: Type.String({
    description: 'created, approved, transaction_linked, transaction_verified, completed, cancelled, user_cancelled or expired',
  }),
  at: Type.String({ description: 'Platform time' }),
  actor: Type.String({ description: 'app, user, approval_window, ledger or sandbox' }),
  actor_id: Type.Union([Type.String({ description: "The app's key id, or the user's uid" }), Type.Null()]),
  request_id: Type.Union([Type.String({ description: 'The request that made the move (its entry in the request log)' }), Type.Null()]),
  detail: StringOrNull,
})

export function sandboxPayments(app: FastifyInstance, deps: PaymentViewsDeps): void {
  const views = viewsServiceFactory({ repo: viewsRepo(deps.db) })
  const service = paymentViewsServiceFactory({ ...deps, repo: paymentViewsRepo(deps.db), views })
  const r = app.withTypeProvider<TypeBoxTypeProvider>()
  const common = { tags: ['Sandbox'], security: ADMIN_SECURITY }
  const config = { auth: 'admin' as const }
  const bySandbox = (request: FastifyRequest): MoveBy => ({ actor: 'sandbox', actorId: null, requestId: request.id })

  r.get(
    '/sandbox/apps/:app_id/payments',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxListPayments',
        summary: "An app's payments, newest first: search, filter and page",
        description:
          '`q` finds a payment by its identifier or txid, its user (user id, uid, or username regardless of case) or a ' +
          'part of its memo. `state` as the status flags map (created, approved, transaction_linked, verified, completed, ' +
          'cancelled); `direction`. `before=<next_cursor>` pages back; `next_cursor` is null on the last page.',
        params: AppParams(),
        querystring: Type.Object({
          ...paymentFilterQuery(),
          before: Type.Optional(Cursor()),
          limit: Type.Optional(PageLimit()),
        }),
        response: {
          200: Type.Object({
            payments: Type.Array(ListedPayment),
            next_cursor: StringOrNull,
            total: Type.Integer({ description: 'How many payments match, on every page' }),
          }),
          ...errorResponses(401, 404),
        },
      },
    },
    async (request) => {
      const { app_id: appId } = request.params
      const { q, state, direction } = request.query
      const limit = request.query.limit ?? 50
      const cursor = request.query.before === undefined ? undefined : decodeCursor('before', request.query.before, 'payments', appId)
      const rows = await service.list(appId, { q, state, direction }, limit, cursor)
      const total = await service.count(appId, { q, state, direction })
      const listed = page(rows, limit, (last) => encodeCursor('payments', appId, last.position))
      return { payments: listed.rows.map((row) => row.payment), next_cursor: listed.next, total }
    },
  )

  r.get(
    '/sandbox/apps/:app_id/payments/:payment_id',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxGetPayment',
        summary: 'One payment: its user, addresses, ledger transaction, timeline, and what moves it on',
        params: PaymentParams,
        response: {
          200: Type.Object({
            payment: PaymentDTOSchema,
            state: StateSchema,
            user: Type.Object({ user_id: Type.String(), username: Type.String(), uid: Type.String() }),
            from_address: Type.String(),
            to_address: Type.String(),
            ledger_transaction: Type.Union([
              Type.Null(),
              Type.Object({
                hash: Type.String(),
                ledger: Type.String(),
                created_at: Type.String(),
                source_account: Type.String(),
                fee_charged: Type.String({ description: 'Stroops' }),
                memo: StringOrNull,
                _link: Type.String({ description: 'GET /ledger/transactions/{hash}' }),
              }),
            ]),
            timeline: Type.Array(TimelineEvent, { description: 'Oldest first' }),
            advice: PaymentAdviceSchema,
          }),
          ...errorResponses(401, 404),
        },
      },
    },
    async (request) => {
      return service.detail(request.params.app_id, request.params.payment_id)
    },
  )

  r.get(
    '/sandbox/apps/:app_id/users/:user_id/blocking',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxUserBlocking',
        summary: 'Why a user cannot start a new payment with the app, and what resolves it',
        description:
          "The user's open payments with the app (at most one each way), each with what it waits for, the call the app " +
          'should make, and the sandbox actions that resolve it. `blocked` says whether a new payment in that direction ' +
          'would be refused with ongoing_payment_found.',
        params: Type.Object({ ...AppParams().properties, user_id: Id() }),
        response: {
          200: Type.Object({
            user_id: Type.String(),
            uid: StringOrNull,
            blocked: Type.Object({ user_to_app: Type.Boolean(), app_to_user: Type.Boolean() }),
            open_payments: Type.Array(Type.Object({ payment: PaymentDTOSchema, advice: PaymentAdviceSchema })),
          }),
          ...errorResponses(401, 404),
        },
      },
    },
    async (request) => {
      return service.blocking(request.params.app_id, request.params.user_id)
    },
  )

  r.post(
    '/sandbox/apps/:app_id/payments/:payment_id/complete',
    {
      config: { ...config, forms: true },
      preValidation: async (request) => {
        request.body ??= {}
      },
      schema: {
        ...common,
        operationId: 'sandboxCompletePayment',
        summary: 'Complete a payment as its app would (POST /v2/payments/{id}/complete), with its linked txid by default',
        params: PaymentParams,
        body: Type.Object({
          txid: Type.Optional(Type.String({ pattern: '^[0-9a-f]{64}$', description: 'a ledger transaction hash: 64 hex digits' })),
        }),
        response: { 200: PaymentDTOSchema, ...errorResponses(401, 404, 409) },
      },
    },
    async (request) => {
      return service.complete(request.params.app_id, request.params.payment_id, request.body.txid, bySandbox(request))
    },
  )

  r.post(
    '/sandbox/apps/:app_id/payments/:payment_id/cancel',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxCancelPayment',
        summary: 'Cancel a payment as its app would (POST /v2/payments/{id}/cancel)',
        params: PaymentParams,
        response: { 200: PaymentDTOSchema, ...errorResponses(401, 404, 409) },
      },
    },
    async (request) => {
      return service.cancel(request.params.app_id, request.params.payment_id, bySandbox(request))
    },
  )

  const Step = Type.Object({ done: Type.Boolean(), at: StringOrNull })
  r.get(
    '/sandbox/apps/:app_id/checklist',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxAppChecklist',
        summary: "The app's setup checklist: key made, URL set, first /v2/me, first approve, first complete",
        description:
          'Derived from the data: the oldest active key, the app URL, the first successful GET /v2/me in the request log ' +
          '(when the log is on), and the first approved and completed payments.',
        params: AppParams(),
        response: {
          200: Type.Object({ key_made: Step, url_set: Step, first_me: Step, first_approve: Step, first_complete: Step }),
          ...errorResponses(401, 404),
        },
      },
    },
    async (request) => {
      return service.checklist(request.params.app_id)
    },
  )
}
