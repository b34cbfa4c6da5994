import type { PaymentRow } from './payments-repo.js'

/**
 * Pure: where a payment stands in its lifecycle, in one word, and for an open one what it waits
 * for, which call of the app's (or the user's) moves it on, and whether it blocks the user's next
 * payment with the app. The sandbox's "why is this user blocked" view (docs/api.md, "Unstick").
 */
export const PAYMENT_STATES = ['created', 'approved', 'transaction_linked', 'verified', 'completed', 'cancelled'] as const
export type PaymentState = (typeof PAYMENT_STATES)[number]

type Row = Pick<
  PaymentRow,
  'identifier' | 'direction' | 'developer_approved' | 'developer_completed' | 'cancelled' | 'user_cancelled' | 'txid' | 'tx_verified'
>

export function paymentState(row: Row): PaymentState {
  if (row.developer_completed) return 'completed'
  if (row.cancelled || row.user_cancelled) return 'cancelled'
  if (row.txid !== null) return row.tx_verified === true ? 'verified' : 'transaction_linked'
  if (row.developer_approved) return 'approved'
  return 'created'
}

export interface Advice {
  state: PaymentState
  /** Whether it stops the user's next payment in its direction (ongoing_payment_found). */
  blocks_new_payment: boolean
  waiting_for: string
  /** The call that moves it on, as the app (or the user's SDK) should have made it. */
  next_call: string
  /** What the sandbox can do about it now (POST /sandbox/apps/{app_id}/payments/{id}/{action}). */
  sandbox_actions: Array<'complete' | 'cancel'>
}

export function adviceFor(row: Row): Advice {
  const state = paymentState(row)
  const id = row.identifier
  const u2a = row.direction === 'user_to_app'
  switch (state) {
    case 'created':
      return u2a
        ? {
            state,
            // A new payment of the user cancels this one (one open payment per user and app).
            blocks_new_payment: false,
            waiting_for: "the app's approval (the approval window cancels it otherwise)",
            next_call: `POST /v2/payments/${id}/approve (the app's server, on onReadyForServerApproval)`,
            sandbox_actions: ['cancel'],
          }
        : {
            state,
            blocks_new_payment: true,
            waiting_for: 'the app to send the transaction from its wallet, then complete',
            next_call: `submit the payment's transaction (memo ${id}) to the ledger, then POST /v2/payments/${id}/complete with its txid; or POST /v2/payments/${id}/cancel`,
            sandbox_actions: ['cancel'],
          }
    case 'approved':
      return {
        state,
        blocks_new_payment: !u2a,
        waiting_for: "the user's payment (the wallet submits the transaction)",
        next_call: `POST /v2/client/payments/${id}/submit (the user pays), or POST /v2/payments/${id}/cancel`,
        sandbox_actions: ['cancel'],
      }
    case 'transaction_linked':
      return {
        state,
        blocks_new_payment: true,
        waiting_for: 'nothing that can succeed: the transaction did not match the payment (recipient, amount or network)',
        next_call: `POST /v2/payments/${id}/cancel`,
        sandbox_actions: ['cancel'],
      }
    case 'verified':
      return {
        state,
        blocks_new_payment: true,
        waiting_for: "the app's complete (the money has moved)",
        next_call: `POST /v2/payments/${id}/complete with {"txid": "${row.txid ?? ''}"} (the app's server, on onReadyForServerCompletion or onIncompletePaymentFound)`,
        sandbox_actions: ['complete'],
      }
    default:
      return { state, blocks_new_payment: false, waiting_for: 'nothing: it is closed', next_call: 'none', sandbox_actions: [] }
  }
}
