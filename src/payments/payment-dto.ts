import { type Static, Type } from 'typebox'
import type { PaymentRow } from './payments-repo.js'

/** A payment's state as the views name it (PAYMENT_STATES in payment-advice.ts), for filters and counts. */
export const PaymentStateSchema = Type.Union([
  Type.Literal('created'),
  Type.Literal('approved'),
  Type.Literal('transaction_linked'),
  Type.Literal('verified'),
  Type.Literal('completed'),
  Type.Literal('cancelled'),
])

/**
 * What an open payment waits for and which call moves it on (adviceFor in payment-advice.ts): the
 * sandbox's and the portal's payment views answer it alike.
 */
export const PaymentAdviceSchema = Type.Object({
  state: PaymentStateSchema,
  blocks_new_payment: Type.Boolean(),
  waiting_for: Type.String(),
  next_call: Type.String({ description: 'The call that moves the payment on, as the app should have made it' }),
  sandbox_actions: Type.Array(Type.Union([Type.Literal('complete'), Type.Literal('cancel')]), {
    description: 'POST /sandbox/apps/{app_id}/payments/{payment_id}/{action}',
  }),
})

export const PaymentDTOSchema = Type.Object(
  {
    identifier: Type.String(),
    user_uid: Type.String({ description: "The user's uid in this app" }),
    amount: Type.Number(),
    memo: Type.String(),
    metadata: Type.Record(Type.String(), Type.Unknown()),
    from_address: Type.String({ description: 'Ledger account that pays' }),
    to_address: Type.String({ description: 'Ledger account that is paid' }),
    direction: Type.Union([Type.Literal('user_to_app'), Type.Literal('app_to_user')]),
    created_at: Type.String({ description: 'ISO 8601 UTC with milliseconds' }),
    network: Type.Union([Type.Literal('Pi Network'), Type.Literal('Pi Testnet')]),
    status: Type.Object({
      developer_approved: Type.Boolean(),
      transaction_verified: Type.Boolean(),
      developer_completed: Type.Boolean(),
      cancelled: Type.Boolean(),
      user_cancelled: Type.Boolean(),
    }),
    transaction: Type.Union([
      Type.Null(),
      Type.Object({
        txid: Type.String(),
        verified: Type.Boolean(),
        _link: Type.String({ description: 'The transaction on the ledger API' }),
      }),
    ]),
  },
  { $id: 'PaymentDTO' },
)
export type PaymentDTO = Static<typeof PaymentDTOSchema>

export function toPaymentDTO(row: PaymentRow, publicUrl: string): PaymentDTO {
  return {
    identifier: row.identifier,
    user_uid: row.user_uid,
    amount: Number(row.amount),
    memo: row.memo,
    metadata: row.metadata,
    from_address: row.from_address,
    to_address: row.to_address,
    direction: row.direction,
    created_at: row.created_at.toISOString(),
    network: row.network,
    status: {
      developer_approved: row.developer_approved,
      transaction_verified: row.tx_verified === true,
      developer_completed: row.developer_completed,
      cancelled: row.cancelled,
      user_cancelled: row.user_cancelled,
    },
    transaction:
      row.txid === null
        ? null
        : { txid: row.txid, verified: row.tx_verified === true, _link: `${publicUrl}/ledger/transactions/${row.txid}` },
  }
}
