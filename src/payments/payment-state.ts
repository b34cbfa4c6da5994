/**
 * The payment lifecycle as pure rules: which move is allowed from which state, which repeat
 * is a harmless replay, and which refusal (code and message) answers everything else.
 * docs/payments.md carries the same table; test/unit/payment-state.test.ts has a test a row.
 *
 * A payment has no single state field; its state is the flags below plus the linked
 * transaction. The repository applies an allowed move with an UPDATE whose WHERE clause is
 * exactly `allowed(...)`, so a move that lost a race re-reads the row and lands here again.
 */

export type Direction = 'user_to_app' | 'app_to_user'

export interface PaymentState {
  direction: Direction
  developer_approved: boolean
  developer_completed: boolean
  cancelled: boolean
  user_cancelled: boolean
  txid: string | null
  tx_verified: boolean | null
  created_at: Date
}

export type Move =
  | { kind: 'approve' }
  | { kind: 'complete'; txid: string }
  | { kind: 'cancel' }
  | { kind: 'user_cancel' }
  | { kind: 'submit' }

export type RefusalCode =
  | 'wrong_direction'
  | 'cancelled_payment'
  | 'already_completed'
  | 'payment_tx_present'
  | 'txid_mismatch'
  | 'not_verified'
  | 'verification_failed'
  | 'not_approved'

export type Decision = { kind: 'apply' } | { kind: 'replay' } | { kind: 'refuse'; code: RefusalCode; message: string }

const APPLY: Decision = { kind: 'apply' }
const REPLAY: Decision = { kind: 'replay' }
const refuse = (code: RefusalCode, message: string): Decision => ({ kind: 'refuse', code, message })

/**
 * An unapproved user-to-app payment is cancelled by the platform once its approval window has
 * passed. Never one with a transaction: the ledger refuses transactions for unapproved payments,
 * and one linked before that rule moved the user's money, so it must stay completable.
 */
export function approvalExpired(state: PaymentState, now: Date, windowMs: number): boolean {
  return (
    state.direction === 'user_to_app' &&
    !state.developer_approved &&
    state.txid === null &&
    !state.cancelled &&
    !state.user_cancelled &&
    now.getTime() - state.created_at.getTime() >= windowMs
  )
}

/** Neither completed nor cancelled by anyone: the payment still holds the user's one open slot. */
export function isOpen(state: PaymentState): boolean {
  return !state.developer_completed && !state.cancelled && !state.user_cancelled
}

function cancelledMessage(state: PaymentState): string {
  return state.user_cancelled ? 'The user cancelled this payment.' : 'This payment was cancelled.'
}

/**
 * Decides a move. `state` must already reflect an expired approval window (see
 * approvalExpired): the service persists that cancellation before deciding.
 */
export function decide(state: PaymentState, move: Move): Decision {
  switch (move.kind) {
    case 'approve': {
      if (state.direction !== 'user_to_app')
        return refuse('wrong_direction', 'Only user-to-app payments are approved; app-to-user payments go straight to completion.')
      // A cancelled payment refuses approval even when it was approved before it was cancelled:
      // answering 200 would tell the app it may expect the user's transaction.
      if (state.cancelled || state.user_cancelled) return refuse('cancelled_payment', cancelledMessage(state))
      if (state.developer_approved) return REPLAY
      return APPLY
    }

    case 'complete': {
      if (state.developer_completed) {
        return state.txid === move.txid
          ? REPLAY
          : refuse('already_completed', `This payment was already completed with transaction ${state.txid ?? ''}.`)
      }
      if (state.cancelled || state.user_cancelled) return refuse('cancelled_payment', cancelledMessage(state))
      if (state.txid === null)
        return refuse('verification_failed', `No ledger transaction is linked to this payment, so ${move.txid} cannot complete it.`)
      if (state.txid !== move.txid)
        return refuse('txid_mismatch', `The transaction linked to this payment is ${state.txid}, not ${move.txid}.`)
      if (state.tx_verified !== true) {
        return refuse(
          'not_verified',
          'The linked transaction does not match the payment (payer, recipient, amount or network); cancel the payment instead.',
        )
      }
      return APPLY
    }

    case 'cancel': {
      if (state.developer_completed) return refuse('already_completed', 'A completed payment cannot be cancelled.')
      // A cancel is idempotent, whoever cancelled first: the user (pi-sdk's router then cancels on
      // the app's behalf too), the app, or the platform's approval window. Nothing is written.
      if (state.cancelled || state.user_cancelled) return REPLAY
      // A verified transaction moved the money for this payment: it must be completed, not cancelled.
      // An unverified one did not pay this payment, so the payment can still be ended.
      if (state.txid !== null && state.tx_verified === true) {
        return refuse('payment_tx_present', 'A verified transaction is linked to this payment: complete it instead.')
      }
      return APPLY
    }

    case 'user_cancel': {
      // The app pays an app-to-user payment: only the app can cancel it (its incomplete list must stay truthful).
      if (state.direction !== 'user_to_app') return refuse('wrong_direction', 'Only the app can cancel an app-to-user payment.')
      if (state.developer_completed) return refuse('already_completed', 'A completed payment cannot be cancelled.')
      // Idempotent as the app's cancel is: cancelled by the app or the platform is cancelled.
      if (state.cancelled || state.user_cancelled) return REPLAY
      if (state.txid !== null) return refuse('payment_tx_present', 'The payment was already paid on the ledger.')
      return APPLY
    }

    case 'submit': {
      if (state.direction !== 'user_to_app') return refuse('wrong_direction', "Only user-to-app payments are paid from the user's wallet.")
      if (state.txid !== null) return REPLAY
      if (state.cancelled || state.user_cancelled) return refuse('cancelled_payment', cancelledMessage(state))
      if (!state.developer_approved) return refuse('not_approved', 'The app has not approved this payment yet.')
      return APPLY
    }
  }
}
