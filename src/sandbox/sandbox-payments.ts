import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { type Kysely, sql } from 'kysely'
import { Type } from 'typebox'
import { containsPattern, decodeCursor, encodeCursor, page } from '../core/cursors.js'
import { ApiError } from '../core/errors.js'
import { AppParams, Cursor, Id, PageLimit, SearchText } from '../core/schemas.js'
import type { DB } from '../db/schema.js'
import { errorResponses } from '../http/errors.js'
import { ADMIN_SECURITY } from '../http/openapi.js'
import { adviceFor, type PaymentState, paymentState } from '../payments/payment-advice.js'
import { PaymentDTOSchema, toPaymentDTO } from '../payments/payment-dto.js'
import type { MoveBy } from '../payments/payments-repo.js'
import type { PaymentsService } from '../payments/payments-service.js'

/**
 * The sandbox's payment views: search an app's payments, one payment with its ledger transaction
 * and timeline, why a user cannot pay the app now and what resolves it, the sandbox's own
 * complete and cancel, and the app's setup checklist. Sandbox mode only (docs/api.md).
 */
const PaymentParams = Type.Object({ ...AppParams().properties, payment_id: Id() })
const StringOrNull = Type.Union([Type.String(), Type.Null()])
const StateSchema = Type.Union([
  Type.Literal('created'),
  Type.Literal('approved'),
  Type.Literal('transaction_linked'),
  Type.Literal('verified'),
  Type.Literal('completed'),
  Type.Literal('cancelled'),
])
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
const AdviceSchema = Type.Object({
  state: StateSchema,
  blocks_new_payment: Type.Boolean(),
  waiting_for: Type.String(),
  next_call: Type.String({ description: 'The call that moves the payment on, as the app should have made it' }),
  sandbox_actions: Type.Array(Type.Union([Type.Literal('complete'), Type.Literal('cancel')]), {
    description: 'POST /sandbox/apps/{app_id}/payments/{payment_id}/{action}',
  }),
})

/** Which rows a state names (as the DTO's status flags map). */
function stateWhere(state: PaymentState) {
  const open = sql<boolean>`(not p.developer_completed and not p.cancelled and not p.user_cancelled)`
  switch (state) {
    case 'created':
      return sql<boolean>`(${open} and p.txid is null and not p.developer_approved)`
    case 'approved':
      return sql<boolean>`(${open} and p.txid is null and p.developer_approved)`
    case 'transaction_linked':
      return sql<boolean>`(${open} and p.txid is not null and not coalesce(p.tx_verified, false))`
    case 'verified':
      return sql<boolean>`(${open} and p.tx_verified)`
    case 'completed':
      return sql<boolean>`p.developer_completed`
    default:
      return sql<boolean>`(not p.developer_completed and (p.cancelled or p.user_cancelled))`
  }
}

/** A row's created_at in microseconds since 1970, exactly (JavaScript dates keep milliseconds only). */
const createdUs = sql<number>`(extract(epoch from p.created_at) * 1000000)::bigint`

export function sandboxPayments(
  app: FastifyInstance,
  deps: {
    db: Kysely<DB>
    publicUrl: string
    payments: Pick<PaymentsService, 'complete' | 'cancel' | 'expireDueApprovals'>
    /** This process's request log, flushed before the checklist reads it (undefined when off). */
    requestLog: { flush(): Promise<void> } | undefined
  },
): void {
  const { db, publicUrl, payments } = deps
  const r = app.withTypeProvider<TypeBoxTypeProvider>()
  const common = { tags: ['Sandbox'], security: ADMIN_SECURITY }
  const config = { auth: 'admin' as const }
  const bySandbox = (request: FastifyRequest): MoveBy => ({ actor: 'sandbox', actorId: null, requestId: request.id })

  const requireApp = async (appId: string) => {
    const row = await db.selectFrom('apps').selectAll().where('id', '=', appId).executeTakeFirst()
    if (row === undefined) throw new ApiError('app_not_found', `No app with id ${appId}.`)
    return row
  }
  const selectPayments = () =>
    db
      .selectFrom('payments as p')
      .innerJoin('users as u', 'u.id', 'p.user_id')
      .selectAll('p')
      .select(['u.username', createdUs.as('created_us')])

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
          q: Type.Optional(SearchText()),
          state: Type.Optional(StateSchema),
          direction: Type.Optional(Type.Union([Type.Literal('user_to_app'), Type.Literal('app_to_user')])),
          before: Type.Optional(Cursor()),
          limit: Type.Optional(PageLimit()),
        }),
        response: {
          200: Type.Object({ payments: Type.Array(ListedPayment), next_cursor: StringOrNull }),
          ...errorResponses(401, 404),
        },
      },
    },
    async (request) => {
      const { app_id: appId } = request.params
      const { q, state, direction } = request.query
      const limit = request.query.limit ?? 50
      const cursor = request.query.before === undefined ? undefined : decodeCursor('before', request.query.before, 'payments', appId)
      await requireApp(appId)
      await payments.expireDueApprovals(appId)
      let query = selectPayments().where('p.app_id', '=', appId)
      if (q !== undefined) {
        query = query.where((eb) =>
          eb.or([
            eb('p.identifier', '=', q),
            eb('p.txid', '=', q),
            eb('p.user_id', '=', q),
            eb('p.user_uid', '=', q),
            eb('u.username_key', '=', q.toLowerCase()),
            eb(sql`lower(p.memo)`, 'like', containsPattern(q)),
          ]),
        )
      }
      if (state !== undefined) query = query.where(stateWhere(state))
      if (direction !== undefined) query = query.where('p.direction', '=', direction)
      if (cursor !== undefined) {
        query = query.where(sql<boolean>`(${createdUs}, p.identifier) < (${cursor.n}::bigint, ${cursor.id ?? ''}::text)`)
      }
      const rows = await query
        .orderBy(createdUs, 'desc')
        .orderBy('p.identifier', 'desc')
        .limit(limit + 1)
        .execute()
      const listed = page(rows, limit, (last) => encodeCursor('payments', appId, { n: Number(last.created_us), id: last.identifier }))
      return {
        payments: listed.rows.map((row) => ({
          ...toPaymentDTO(row, publicUrl),
          user_id: row.user_id,
          username: row.username,
          state: paymentState(row),
        })),
        next_cursor: listed.next,
      }
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
            advice: AdviceSchema,
          }),
          ...errorResponses(401, 404),
        },
      },
    },
    async (request) => {
      const { app_id: appId, payment_id: paymentId } = request.params
      await requireApp(appId)
      await payments.expireDueApprovals(appId)
      const row = await selectPayments().where('p.app_id', '=', appId).where('p.identifier', '=', paymentId).executeTakeFirst()
      if (row === undefined) throw new ApiError('payment_not_found', `No payment ${paymentId} in app ${appId}.`)
      const tx =
        row.txid === null
          ? undefined
          : await db
              .selectFrom('ledger_transactions')
              .select([
                'hash',
                sql<string>`ledger::text`.as('ledger'),
                'created_at',
                'source_account',
                sql<string>`fee_charged::text`.as('fee'),
                'memo',
              ])
              .where('hash', '=', row.txid)
              .executeTakeFirst()
      const events = await db
        .selectFrom('payment_events')
        .selectAll()
        .where('payment_id', '=', paymentId)
        .where('app_id', '=', appId)
        .orderBy('id')
        .limit(100)
        .execute()
      return {
        payment: toPaymentDTO(row, publicUrl),
        state: paymentState(row),
        user: { user_id: row.user_id, username: row.username, uid: row.user_uid },
        from_address: row.from_address,
        to_address: row.to_address,
        ledger_transaction:
          tx === undefined
            ? null
            : {
                hash: tx.hash,
                ledger: tx.ledger,
                created_at: tx.created_at.toISOString(),
                source_account: tx.source_account,
                fee_charged: tx.fee,
                memo: tx.memo,
                _link: `${publicUrl}/ledger/transactions/${tx.hash}`,
              },
        timeline: events.map((e) => ({
          kind: e.kind,
          at: e.at.toISOString(),
          actor: e.actor,
          actor_id: e.actor_id,
          request_id: e.request_id,
          detail: e.detail,
        })),
        advice: adviceFor(row),
      }
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
            open_payments: Type.Array(Type.Object({ payment: PaymentDTOSchema, advice: AdviceSchema })),
          }),
          ...errorResponses(401, 404),
        },
      },
    },
    async (request) => {
      const { app_id: appId, user_id: userId } = request.params
      await requireApp(appId)
      const user = await db.selectFrom('users').select('id').where('id', '=', userId).executeTakeFirst()
      if (user === undefined) throw new ApiError('user_not_found', `No user with id ${userId}.`)
      await payments.expireDueApprovals(appId)
      const member = await db
        .selectFrom('app_users')
        .select('uid')
        .where('app_id', '=', appId)
        .where('user_id', '=', userId)
        .executeTakeFirst()
      const open = await db
        .selectFrom('payments')
        .selectAll()
        .where('app_id', '=', appId)
        .where('user_id', '=', userId)
        .where('developer_completed', '=', false)
        .where('cancelled', '=', false)
        .where('user_cancelled', '=', false)
        .orderBy('created_at')
        .limit(10)
        .execute()
      const listed = open.map((row) => ({ payment: toPaymentDTO(row, publicUrl), advice: adviceFor(row) }))
      const blocks = (direction: string) => listed.some((p) => p.payment.direction === direction && p.advice.blocks_new_payment)
      return {
        user_id: userId,
        uid: member?.uid ?? null,
        blocked: { user_to_app: blocks('user_to_app'), app_to_user: blocks('app_to_user') },
        open_payments: listed,
      }
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
      const { app_id: appId, payment_id: paymentId } = request.params
      await requireApp(appId)
      let txid = request.body.txid
      if (txid === undefined) {
        const row = await db
          .selectFrom('payments')
          .select('txid')
          .where('app_id', '=', appId)
          .where('identifier', '=', paymentId)
          .executeTakeFirst()
        if (row === undefined) throw new ApiError('payment_not_found', `No payment ${paymentId}.`)
        if (row.txid === null) throw new ApiError('missing_txid', 'The payment has no transaction yet: the user must pay first.')
        txid = row.txid
      }
      return payments.complete(appId, paymentId, txid, bySandbox(request))
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
      await requireApp(request.params.app_id)
      return payments.cancel(request.params.app_id, request.params.payment_id, bySandbox(request))
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
      const appRow = await requireApp(request.params.app_id)
      const appId = appRow.id
      await deps.requestLog?.flush()
      const [key, me, pay] = await Promise.all([
        db
          .selectFrom('api_keys')
          .select(sql<Date | null>`min(created_at)`.as('at'))
          .where('app_id', '=', appId)
          .where('revoked_at', 'is', null)
          .executeTakeFirst(),
        db
          .selectFrom('request_log')
          .select(sql<Date | null>`min(at)`.as('at'))
          .where('app_id', '=', appId)
          .where('operation_id', '=', 'getMe')
          .where('status', '=', 200)
          .executeTakeFirst(),
        db
          .selectFrom('payments')
          .select([sql<Date | null>`min(approved_at)`.as('approved'), sql<Date | null>`min(completed_at)`.as('completed')])
          .where('app_id', '=', appId)
          .executeTakeFirst(),
      ])
      const step = (at: Date | null | undefined) => ({
        done: at !== null && at !== undefined,
        at: at === null || at === undefined ? null : new Date(at).toISOString(),
      })
      return {
        key_made: step(key?.at),
        url_set: { done: appRow.url !== null, at: null },
        first_me: step(me?.at),
        first_approve: step(pay?.approved),
        first_complete: step(pay?.completed),
      }
    },
  )
}
