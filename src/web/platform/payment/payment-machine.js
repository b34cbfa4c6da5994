// @ts-check
/**
 * The payment dialog's rules, without a DOM: which state a payment dialog is in, which events
 * move it where (one table), and what each state shows. payment-dialog.js runs the effects
 * (calls, timers, the app's callbacks) and draws what `view` says; this module only decides,
 * so node can test it (test/unit/payment-machine.test.ts).
 *
 * A state is `{ name, payment, error }`: `payment` the platform's latest answer, `error` a
 * failed Pay's message (it stays until the next Pay: the polls must not replace it). Events:
 * `update` (a poll's answer), `submitted` (the submit's own answer), and the user's and the
 * platform's moves named in the table.
 */
import { formatPi, shortMiddle } from '../../../web/ui/format.js'

/**
 * @typedef {{ developer_approved: boolean, developer_completed: boolean, cancelled: boolean, user_cancelled: boolean }} PaymentStatus
 * @typedef {{ status: PaymentStatus, transaction: { txid: string } | null }} Payment the platform's answer, what the dialog reads of it
 * @typedef {{ name: string, payment: Payment | undefined, error: string | undefined }} State
 * @typedef {{ type: string, payment: Payment, message?: string, expired?: boolean }} MachineEvent
 * @typedef {string | ((event: MachineEvent, state: State) => string)} Rule
 */

/** The ledger's fee for one payment: 100 stroops (src/ledger/ledger-rules.ts, BASE_FEE_STROOPS). */
export const FEE_STROOPS = 100n
export const FEE_PI = '0.00001'

/**
 * The states. `awaiting_approval` and `approved` are the two a user may cancel from; the last
 * seven end the dialog's flow (the app has heard how it ended, or has gone).
 */
export const STATES = [
  'creating', // POST /v2/client/payments in flight
  'awaiting_approval', // created; the app has the approval window to approve it
  'approved', // the app approved it: Pay signs and submits from the user's wallet
  'submitting', // Pay was clicked: the platform signs and submits the transaction
  'cancelling', // the user's cancel is in flight
  'confirming_cancel', // the platform cancelled it: the clock is read to tell expiry from the app's cancel
  'paid', // on the ledger: the app has the window to complete it
  'completed',
  'cancelled', // by the user
  'cancelled_by_app',
  'expired', // not approved within the window
  'not_completed', // paid, but the app did not complete it within the window
  'failed', // the payment could not be created
  'aborted', // the app's page went away
]

export const FINAL_STATES = new Set(['completed', 'cancelled', 'cancelled_by_app', 'expired', 'not_completed', 'failed', 'aborted'])

/**
 * Where a payment the platform answered with leaves the dialog, whatever it was waiting for.
 * @param {Payment} payment
 * @param {(status: PaymentStatus) => string} otherwise
 */
function settle(payment, otherwise) {
  const s = payment.status
  if (s.developer_completed) return 'completed'
  if (s.user_cancelled) return 'cancelled'
  if (s.cancelled) return 'confirming_cancel'
  if (payment.transaction !== null) return 'paid'
  return otherwise(s)
}

/**
 * While the payment is open and not yet paid, an answer may show the app's approval.
 * @param {string} stay
 * @returns {(s: PaymentStatus) => string}
 */
const approvedOr = (stay) => (s) => (s.developer_approved ? 'approved' : stay)

/**
 * The transition table: state → event → the next state's name, or a function of the event that
 * returns it. An event a state does not list leaves it as it is (a late poll, a double click).
 * @type {Record<string, Record<string, Rule>>}
 */
export const TRANSITIONS = {
  creating: {
    created: 'awaiting_approval',
    create_failed: 'failed',
    abort: 'aborted',
  },
  awaiting_approval: {
    update: (e) => settle(e.payment, approvedOr('awaiting_approval')),
    cancel: 'cancelling',
    abort: 'aborted',
  },
  approved: {
    update: (e) => settle(e.payment, () => 'approved'),
    pay: 'submitting',
    cancel: 'cancelling',
    abort: 'aborted',
  },
  submitting: {
    // Only the submit's own answer: a poll sent before the click may answer now, with the payment as it
    // was (approved, unpaid), and must neither re-enable Pay mid-submit nor swallow the failure to come.
    submitted: (e) => settle(e.payment, () => 'approved'),
    pay_failed: (e) => (e.payment === undefined ? 'approved' : settle(e.payment, () => 'approved')),
    abort: 'aborted',
  },
  cancelling: {
    update: (e) => settle(e.payment, approvedOr('awaiting_approval')),
    cancel_failed: (e, state) => settle(/** @type {Payment} */ (e.payment ?? state.payment), approvedOr('awaiting_approval')),
    abort: 'aborted',
  },
  confirming_cancel: {
    cancel_explained: (e) => (e.expired ? 'expired' : 'cancelled_by_app'),
    abort: 'aborted',
  },
  paid: {
    update: (e) => settle(e.payment, () => 'paid'),
    completion_timeout: 'not_completed',
    abort: 'aborted',
  },
}

/**
 * The state after `event`: `{ name, payment, error }`, the same object when nothing changes.
 * @param {State} state
 * @param {MachineEvent} event
 * @returns {State}
 */
export function transition(state, event) {
  const rule = TRANSITIONS[state.name]?.[event.type]
  if (rule === undefined) return state
  const name = typeof rule === 'function' ? rule(event, state) : rule
  const payment = event.payment ?? state.payment
  const error = event.type === 'pay' ? undefined : event.type === 'pay_failed' ? event.message : state.error
  if (name === state.name && payment === state.payment && error === state.error) return state
  return { name, payment, error }
}

/** @returns {State} */
export const initialState = () => ({ name: 'creating', payment: undefined, error: undefined })

/**
 * Whether the user may cancel from here (the Cancel button, Escape).
 * @param {State} state
 */
export const canCancel = (state) => TRANSITIONS[state.name]?.cancel !== undefined

/**
 * '12.5' or 12.5 → stroops (BigInt), exact; undefined when it is not such a number.
 * @param {string | number} value
 */
export function toStroops(value) {
  const match = /^(\d+)(?:\.(\d{1,7}))?$/.exec(String(value))
  if (match === null) return undefined
  return BigInt(match[1]) * 10_000_000n + BigInt((match[2] ?? '').padEnd(7, '0'))
}

/**
 * Whether amount and fee exceed a known balance (stroops); an unknown balance never blocks Pay.
 * @param {string | number} amount
 * @param {bigint | undefined} balanceStroops
 */
export function shortOfFunds(amount, balanceStroops) {
  const stroops = toStroops(amount)
  return balanceStroops !== undefined && stroops !== undefined && stroops + FEE_STROOPS > balanceStroops
}

/**
 * What a state shows: the status line (`text` and `tone`; undefined keeps the line as it is) and
 * the three buttons. `facts`: `appName`, `amount`, `windowSeconds`, `secondsLeft` (of the
 * approval window), `shortOfFunds`, and `message` (why creating failed).
 * @param {State} state
 * @param {{ appName: string, amount: string | number, windowSeconds: number, secondsLeft?: number, shortOfFunds: boolean, message?: string, production?: boolean }} facts
 */
export function view(state, facts) {
  const { appName, amount, windowSeconds } = facts
  // Pay and Cancel while the user can still act; Close once the flow no longer needs them.
  const open = !FINAL_STATES.has(state.name) && state.name !== 'paid' && state.name !== 'confirming_cancel'
  const buttons = {
    pay: { hidden: !open, disabled: state.name !== 'approved' || facts.shortOfFunds },
    cancel: { hidden: !open, disabled: !canCancel(state) },
    close: { hidden: open },
  }
  /**
   * @param {string} text
   * @param {string} [tone]
   */
  const line = (text, tone = '') => ({ text, tone, ...buttons })
  switch (state.name) {
    case 'creating':
      return line('Creating the payment…')
    case 'awaiting_approval':
      return line(
        `Waiting for ${appName} to approve the payment… ${facts.secondsLeft} s left (the platform cancels it after ${windowSeconds} s).`,
      )
    case 'approved':
      // The payment is still open: the user may try again (the app's backend may be back) or cancel.
      if (state.error !== undefined) return line(`${state.error} Pay again to retry, or Cancel.`, 'bad')
      if (facts.shortOfFunds) {
        // What the person can do about it: a production wallet takes Pi only from payments to it (and the
        // faucet on Pi Testnet, when the operator turned it on); the sandbox's faucet always pays.
        const remedy = facts.production
          ? 'Cancel it: Pi comes into your wallet only from a payment to you (an app’s reward, say) or, on Pi Testnet, from Get test-π in your wallet when this platform’s faucet is on.'
          : 'Cancel it, and get test-π with Get test-π in your wallet (the balance button) before paying again.'
        return line(`Your balance is too low: this payment needs ${formatPi(amount)} plus the ${formatPi(FEE_PI)} fee. ${remedy}`, 'bad')
      }
      return line(`${appName} approved the payment. Pay signs and submits the transaction from your wallet.`, 'ok')
    case 'submitting':
      return line('Signing and submitting the transaction…')
    case 'paid':
      return line(
        `Paid: transaction ${shortMiddle(/** @type {{ transaction: { txid: string } }} */ (state.payment).transaction.txid)}. Waiting for ${appName} to complete the payment…`,
        'ok',
      )
    case 'completed':
      return line(`Completed: ${appName} completed the payment.`, 'ok')
    case 'cancelled':
      return line('You cancelled the payment.', 'bad')
    case 'cancelled_by_app':
      // A failed Pay stays on screen: the app's cancel came after it, often because of it.
      return line(
        state.error === undefined ? `${appName} cancelled the payment.` : `${state.error} Then ${appName} cancelled the payment.`,
        'bad',
      )
    case 'expired':
      return line(`${appName} did not approve the payment within ${windowSeconds} s; the platform cancelled it.`, 'bad')
    case 'not_completed':
      return line(`${appName} has not completed the payment; it will see it again at its next Pi.authenticate.`, 'bad')
    case 'failed':
      return line(facts.message ?? 'The payment could not be created.', 'bad')
    default:
      // cancelling, confirming_cancel, aborted: the line keeps what it said.
      return { text: undefined, tone: '', ...buttons }
  }
}
