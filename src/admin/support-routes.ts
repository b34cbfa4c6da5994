import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { decodeCursor, encodeCursor, page } from '../core/cursors.js'
import { Cursor, Id, Nullable, SearchText, Timestamp } from '../core/schemas.js'
import { sessionPrincipal } from '../http/auth.js'
import { errorResponses } from '../http/errors.js'
import { SESSION_SECURITY } from '../http/openapi.js'
import { PaymentDTOSchema, PaymentStateSchema } from '../payments/payment-dto.js'
import type { SupportService } from './support-service.js'

/** A support search's page size: a person reads it. */
const SupportLimit = () => Type.Integer({ minimum: 1, maximum: 100, default: 20 })
const Query = (description: string) => Type.Optional(SearchText({ description }))

const SupportPayment = Type.Object({
  payment_id: Type.String(),
  app_id: Type.String(),
  app_name: Type.String(),
  user_id: Type.String(),
  username: Type.String(),
  uid: Type.String({ description: "The user's uid in the app" }),
  direction: Type.Union([Type.Literal('user_to_app'), Type.Literal('app_to_user')]),
  amount: Type.String({ description: 'Pi, exactly (at most 7 decimal places)' }),
  memo: Type.String(),
  state: PaymentStateSchema,
  txid: Nullable(Type.String()),
  network: Type.String(),
  created_at: Timestamp(),
})
const SupportUser = Type.Object({
  user_id: Type.String(),
  username: Type.String(),
  roles: Type.Array(Type.String()),
  suspended: Type.Boolean(),
  wallet_address: Type.String(),
  created_at: Timestamp(),
})
const SupportApp = Type.Object({
  app_id: Type.String(),
  name: Type.String(),
  url: Nullable(Type.String()),
  network: Type.String(),
  owner: Nullable(Type.String()),
  wallet_address: Type.String(),
  verified: Type.Boolean(),
  suspended: Type.Boolean(),
  created_at: Timestamp(),
})
const LoggedRequest = Type.Object({
  id: Type.String({ description: "The entry's id in the app's request log" }),
  at: Timestamp(),
  method: Type.String(),
  path: Type.String(),
  status: Type.Integer(),
  error_code: Nullable(Type.String()),
  latency_ms: Type.Number(),
  request_body: Nullable(Type.String({ description: 'Redacted, as the request log keeps it' })),
  response_body: Nullable(Type.String({ description: 'Redacted, as the request log keeps it' })),
})
const TimelineStep = Type.Object({
  kind: Type.String(),
  at: Timestamp(),
  actor: Type.String(),
  actor_id: Nullable(Type.String()),
  request_id: Nullable(Type.String()),
  detail: Nullable(Type.String()),
  /** The app's request-log entry of request_id; null where the log holds none. */
  request: Nullable(LoggedRequest),
})
const PaymentCase = Type.Object({
  payment: PaymentDTOSchema,
  state: PaymentStateSchema,
  app: Type.Object({ app_id: Type.String(), name: Type.String(), suspended: Type.Boolean() }),
  user: Type.Object({
    user_id: Type.String(),
    username: Type.String(),
    uid: Type.String(),
    wallet_address: Type.String(),
    suspended: Type.Boolean(),
  }),
  ledger_transaction: Nullable(
    Type.Object({
      hash: Type.String(),
      ledger: Type.String(),
      created_at: Timestamp(),
      source_account: Type.String(),
      fee_charged: Type.String(),
      memo: Nullable(Type.String()),
      _link: Type.String(),
    }),
  ),
  advice: Type.Object({ waiting_for: Type.String(), next_call: Type.String(), blocks_new_payment: Type.Boolean() }),
  timeline: Type.Array(TimelineStep, { description: 'Oldest first' }),
})

/**
 * The operator's support lookup (docs/operators.md, "Support lookup"): payments, users and apps
 * across the platform, and one payment's timeline with its requests. Operators only; every answer
 * is recorded in the audit log before it leaves (support-service.ts).
 */
export function supportRoutes(
  app: FastifyInstance,
  deps: { support: SupportService; requestLog: { flush(): Promise<void> } | undefined },
): void {
  const { support } = deps
  const r = app.withTypeProvider<TypeBoxTypeProvider>()
  const common = { tags: ['Operator'], security: SESSION_SECURITY }
  const config = { auth: 'session', role: 'operator' } as const
  const asked = (request: FastifyRequest) => ({ principal: sessionPrincipal(request), requestId: request.id })

  r.get(
    '/operator/support/payments',
    {
      config,
      schema: {
        ...common,
        operationId: 'operatorSupportPayments',
        summary: 'Payments of every app, newest first: by payment, transaction, user, app or address (audited: lookup-payments)',
        description:
          '`q` is matched exactly against a payment identifier, a transaction hash (txid), an app id, a user (platform id, ' +
          'username regardless of case, a uid any app gave them, their wallet address) or an address a payment was from or to. ' +
          '`app_id` keeps one app’s. `before=<next_cursor>` pages back.',
        querystring: Type.Object({
          q: Query('A payment id, txid, app id, user id, username, uid or wallet address'),
          app_id: Type.Optional(Id()),
          before: Type.Optional(Cursor()),
          limit: Type.Optional(SupportLimit()),
        }),
        response: {
          200: Type.Object({ payments: Type.Array(SupportPayment), next_cursor: Nullable(Type.String()) }),
          ...errorResponses(400, 401, 403),
        },
      },
    },
    async (request) => {
      const { q, app_id: appId } = request.query
      const limit = request.query.limit ?? 20
      const before = request.query.before === undefined ? undefined : decodeCursor('before', request.query.before, 'support-payments', '')
      const rows = await support.payments(asked(request), { q, appId }, limit, before)
      const listed = page(rows, limit, (last) => encodeCursor('support-payments', '', last.position))
      return { payments: listed.rows.map((row) => row.view), next_cursor: listed.next }
    },
  )

  r.get(
    '/operator/support/payments/:payment_id',
    {
      config,
      schema: {
        ...common,
        operationId: 'operatorSupportPayment',
        summary:
          "One payment of any app: its ledger transaction, what it waits for, its timeline with each step's request (audited: view-payment)",
        params: Type.Object({ payment_id: Id() }),
        response: { 200: PaymentCase, ...errorResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      // This process's own calls are in the log before the timeline looks for them.
      await deps.requestLog?.flush()
      return support.payment(asked(request), request.params.payment_id)
    },
  )

  r.get(
    '/operator/support/users',
    {
      config,
      schema: {
        ...common,
        operationId: 'operatorSupportUsers',
        summary: 'Users by name: a part of the name, or exactly their id, wallet address or a uid an app gave them (audited: lookup-users)',
        querystring: Type.Object({
          q: Query('A part of a username, or a user id, wallet address or uid'),
          after: Type.Optional(Cursor()),
          limit: Type.Optional(SupportLimit()),
        }),
        response: {
          200: Type.Object({ users: Type.Array(SupportUser), next_cursor: Nullable(Type.String()) }),
          ...errorResponses(400, 401, 403),
        },
      },
    },
    async (request) => {
      const limit = request.query.limit ?? 20
      const after = request.query.after === undefined ? undefined : decodeCursor('after', request.query.after, 'support-users', '').id
      const rows = await support.users(asked(request), request.query.q, limit, after)
      const listed = page(rows, limit, (last) => encodeCursor('support-users', '', { n: 0, id: last.key }))
      return { users: listed.rows.map((row) => row.view), next_cursor: listed.next }
    },
  )

  r.get(
    '/operator/support/apps',
    {
      config,
      schema: {
        ...common,
        operationId: 'operatorSupportApps',
        summary:
          "Apps, newest first: a part of the name, or exactly the id, the wallet address or the owner's username (audited: lookup-apps)",
        querystring: Type.Object({
          q: Query("A part of an app's name, or its id, wallet address or owner's username"),
          before: Type.Optional(Cursor()),
          limit: Type.Optional(SupportLimit()),
        }),
        response: {
          200: Type.Object({ apps: Type.Array(SupportApp), next_cursor: Nullable(Type.String()) }),
          ...errorResponses(400, 401, 403),
        },
      },
    },
    async (request) => {
      const limit = request.query.limit ?? 20
      const before = request.query.before === undefined ? undefined : decodeCursor('before', request.query.before, 'support-apps', '')
      const rows = await support.apps(asked(request), request.query.q, limit, before)
      const listed = page(rows, limit, (last) => encodeCursor('support-apps', '', last.position))
      return { apps: listed.rows.map((row) => row.view), next_cursor: listed.next }
    },
  )
}
