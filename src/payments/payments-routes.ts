import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { ApiError } from '../core/errors.js'
import { Id } from '../core/schemas.js'
import { keyPrincipal, tokenPrincipal } from '../http/auth.js'
import { errorResponses } from '../http/errors.js'
import { KEY_SECURITY } from '../http/openapi.js'
import { PaymentDTOSchema } from './payment-dto.js'
import { MAX_AMOUNT, MAX_MEMO_LENGTH, MAX_METADATA_BYTES } from './payment-input.js'
import type { MoveBy } from './payments-repo.js'
import type { PaymentsService } from './payments-service.js'

const PaymentParams = Type.Object({ payment_id: Id({ description: 'Payment identifier' }) })
const Amount = Type.Unknown({
  description: `Number above 0, at most ${MAX_AMOUNT}, with at most 7 decimal places, or such a number as a decimal string ("1.5") (invalid_amount otherwise)`,
})
const Memo = Type.Unknown({ description: `String of at most ${MAX_MEMO_LENGTH} characters, shown to the user` })
const Metadata = Type.Optional(
  Type.Unknown({
    description: `JSON object of at most ${MAX_METADATA_BYTES} bytes, for the developer's own use (invalid_metadata otherwise); absent means {}`,
  }),
)
const TXID = '^[0-9a-f]{64}$'

/** Who makes a move through the API, for the payment's timeline: the key or the user, and the request. */
function byApp(request: FastifyRequest): MoveBy {
  return { actor: 'app', actorId: keyPrincipal(request).keyId, requestId: request.id }
}
function byUser(request: FastifyRequest): MoveBy {
  return { actor: 'user', actorId: tokenPrincipal(request).uid, requestId: request.id }
}

/** The server side of payments: `Authorization: Key`, the app's own payments only. */
export function paymentsRoutes(app: FastifyInstance, deps: { payments: PaymentsService }): void {
  const { payments } = deps
  const r = app.withTypeProvider<TypeBoxTypeProvider>()
  const common = { tags: ['Payments'], security: KEY_SECURITY }
  const config = { auth: 'key' as const }
  const paymentResponse = { 200: PaymentDTOSchema, ...errorResponses(401, 404, 409) }

  r.post(
    '/v2/payments',
    {
      config,
      schema: {
        ...common,
        operationId: 'createPayment',
        summary: 'Create an app-to-user (A2U) payment from the app wallet to one of its users',
        body: Type.Object({
          payment: Type.Object({
            amount: Amount,
            memo: Memo,
            metadata: Metadata,
            uid: Type.Unknown({ description: "The recipient's uid in this app" }),
          }),
        }),
        response: paymentResponse,
      },
    },
    async (request) => payments.createAppToUser(keyPrincipal(request).appId, request.body.payment, byApp(request)),
  )

  r.get(
    '/v2/payments/incomplete_server_payments',
    {
      config,
      schema: {
        ...common,
        operationId: 'getIncompleteServerPayments',
        summary: "The app's A2U payments not completed nor cancelled (oldest first, at most 200)",
        response: { 200: Type.Object({ incomplete_server_payments: Type.Array(PaymentDTOSchema) }), ...errorResponses(401) },
      },
    },
    async (request) => ({ incomplete_server_payments: await payments.incompleteServerPayments(keyPrincipal(request).appId) }),
  )

  r.get(
    '/v2/payments/:payment_id',
    {
      config,
      schema: { ...common, operationId: 'getPayment', summary: 'Read a payment', params: PaymentParams, response: paymentResponse },
    },
    async (request) => payments.getForApp(keyPrincipal(request).appId, request.params.payment_id),
  )

  r.post(
    '/v2/payments/:payment_id/approve',
    {
      config,
      schema: {
        ...common,
        operationId: 'approvePayment',
        summary: 'Approve a user-to-app payment, so the user can pay it',
        params: PaymentParams,
        response: paymentResponse,
      },
    },
    async (request) => payments.approve(keyPrincipal(request).appId, request.params.payment_id, byApp(request)),
  )

  r.post(
    '/v2/payments/:payment_id/complete',
    {
      // `{txid}` as JSON or as a form field (`txid=…`, what a PHP or HTML-form backend sends).
      config: { ...config, forms: true },
      // No body at all is "no txid", answered with missing_txid like a body without one.
      preValidation: async (request) => {
        request.body ??= {}
      },
      schema: {
        ...common,
        operationId: 'completePayment',
        summary: 'Complete a payment whose verified ledger transaction the app names',
        params: PaymentParams,
        body: Type.Object({
          txid: Type.Optional(Type.String({ pattern: TXID, description: 'The ledger transaction hash (64 hex characters)' })),
        }),
        response: paymentResponse,
      },
    },
    async (request) => {
      const txid = request.body.txid
      if (txid === undefined) throw new ApiError('missing_txid', 'Send the ledger transaction id as {"txid": "…"}.')
      return payments.complete(keyPrincipal(request).appId, request.params.payment_id, txid, byApp(request))
    },
  )

  r.post(
    '/v2/payments/:payment_id/cancel',
    {
      config,
      schema: { ...common, operationId: 'cancelPayment', summary: 'Cancel a payment', params: PaymentParams, response: paymentResponse },
    },
    async (request) => payments.cancel(keyPrincipal(request).appId, request.params.payment_id, byApp(request)),
  )
}

/**
 * The user's side of payments, as the client SDK drives it: `Authorization: Bearer`, the user's
 * own payments in this app only. `userPays`: production mode, where an access token never pays. The app holds its users' tokens (Pi.authenticate gives the app its user's
 * token), so a token that could submit would let the app spend the user's wallet without them:
 * only the signed-in user confirms a payment, in the platform's own page.
 */
export function clientPaymentsRoutes(app: FastifyInstance, deps: { payments: PaymentsService; userPays: boolean }): void {
  const { payments, userPays } = deps
  const r = app.withTypeProvider<TypeBoxTypeProvider>()
  const common = { tags: ['Client payments'] }
  const config = { auth: 'token', scope: 'payments' } as const
  const paymentResponse = { 200: PaymentDTOSchema, ...errorResponses(401, 404, 409) }

  r.post(
    '/v2/client/payments',
    {
      config,
      schema: {
        ...common,
        operationId: 'clientCreatePayment',
        summary: 'Start a user-to-app (U2A) payment (the client SDK’s createPayment)',
        body: Type.Object({ amount: Amount, memo: Memo, metadata: Metadata }),
        response: { 201: PaymentDTOSchema, ...errorResponses(401, 409) },
      },
    },
    async (request, reply) => reply.code(201).send(await payments.createUserToApp(tokenPrincipal(request), request.body, byUser(request))),
  )

  r.get(
    '/v2/client/payments/incomplete',
    {
      config,
      schema: {
        ...common,
        operationId: 'clientIncompletePayment',
        summary: "The user's paid but uncompleted payment in this app, if any (for onIncompletePaymentFound)",
        response: { 200: Type.Object({ payment: Type.Union([PaymentDTOSchema, Type.Null()]) }), ...errorResponses(401) },
      },
    },
    async (request) => ({ payment: await payments.incompleteForUser(tokenPrincipal(request)) }),
  )

  r.get(
    '/v2/client/payments/:payment_id',
    {
      config,
      schema: {
        ...common,
        operationId: 'clientGetPayment',
        summary: 'Read one of the user’s payments',
        params: PaymentParams,
        response: paymentResponse,
      },
    },
    async (request) => payments.getForUser(tokenPrincipal(request), request.params.payment_id),
  )

  r.post(
    '/v2/client/payments/:payment_id/submit',
    {
      config,
      schema: {
        ...common,
        operationId: 'clientSubmitPayment',
        summary: 'Pay an approved payment: the platform wallet signs the transaction and submits it to the ledger',
        params: PaymentParams,
        // 503 wallet_busy (with Retry-After): the wallet stayed busy with the user's own transactions.
        // 403 user_confirmation_required: production mode, where no access token pays.
        response: { ...paymentResponse, ...errorResponses(401, 403, 404, 409, 503) },
      },
    },
    async (request) => {
      if (userPays) {
        throw new ApiError(
          'user_confirmation_required',
          "In production an access token cannot pay: only the signed-in user confirms a payment, in the platform's own page",
        )
      }
      return payments.submit(tokenPrincipal(request), request.params.payment_id)
    },
  )

  r.post(
    '/v2/client/payments/:payment_id/cancel',
    {
      config,
      schema: {
        ...common,
        operationId: 'clientCancelPayment',
        summary: 'The user cancels a payment',
        params: PaymentParams,
        response: paymentResponse,
      },
    },
    async (request) => payments.userCancel(tokenPrincipal(request), request.params.payment_id, byUser(request)),
  )
}
