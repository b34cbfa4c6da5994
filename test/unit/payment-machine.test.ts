/**
 * The sandbox page's payment dialog rules (src/web/platform/payment/payment-machine.js), without a
 * browser: the transition table, and what each state shows. test/e2e/sandbox.e2e.ts and
 * sandbox-dialogs.e2e.ts drive the real dialog.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

interface Payment {
  identifier: string
  status: { developer_approved: boolean; developer_completed: boolean; cancelled: boolean; user_cancelled: boolean }
  transaction: { txid: string } | null
}
interface State {
  name: string
  payment: Payment | undefined
  error: string | undefined
}
type Event = { type: string; payment?: Payment; message?: string; expired?: boolean }
interface Buttons {
  pay: { hidden: boolean; disabled: boolean }
  cancel: { hidden: boolean; disabled: boolean }
  close: { hidden: boolean }
}
interface Facts {
  appName: string
  amount: string | number
  windowSeconds: number
  secondsLeft: number
  shortOfFunds: boolean
  message?: string
  production?: boolean
}
interface Machine {
  STATES: string[]
  FINAL_STATES: Set<string>
  TRANSITIONS: Record<string, Record<string, unknown>>
  transition(state: State, event: Event): State
  initialState(): State
  canCancel(state: State): boolean
  shortOfFunds(amount: string | number, balanceStroops: bigint | undefined): boolean
  toStroops(value: string | number): bigint | undefined
  view(state: State, facts: Facts): Buttons & { text: string | undefined; tone: string }
}

// A browser module (plain JavaScript, no types): loaded by URL, typed by the interface above.
const modulePath = new URL('../../src/web/platform/payment/payment-machine.js', import.meta.url).href
const m = (await import(modulePath)) as Machine

const payment = (over: Partial<Payment['status']> = {}, txid?: string): Payment => ({
  identifier: 'pay_1',
  status: { developer_approved: false, developer_completed: false, cancelled: false, user_cancelled: false, ...over },
  transaction: txid === undefined ? null : { txid },
})
const at = (name: string, p: Payment | undefined = payment(), error?: string): State => ({ name, payment: p, error })
const run = (events: Event[], from: State = m.initialState()) => events.reduce((state, event) => m.transition(state, event), from)
const facts: Facts = { appName: 'Shop', amount: '5', windowSeconds: 60, secondsLeft: 42, shortOfFunds: false }

describe('payment dialog: the transition table', () => {
  it('names only known states, and every final state has no way out', () => {
    for (const [from, events] of Object.entries(m.TRANSITIONS)) {
      assert.ok(m.STATES.includes(from), from)
      for (const to of Object.values(events)) if (typeof to === 'string') assert.ok(m.STATES.includes(to), `${from} → ${to}`)
    }
    for (const name of m.FINAL_STATES) assert.equal(m.TRANSITIONS[name], undefined, name)
  })

  it('the happy path: created, approved, paid, completed', () => {
    const steps: Array<[Event, string]> = [
      [{ type: 'created', payment: payment() }, 'awaiting_approval'],
      [{ type: 'update', payment: payment() }, 'awaiting_approval'],
      [{ type: 'update', payment: payment({ developer_approved: true }) }, 'approved'],
      [{ type: 'pay' }, 'submitting'],
      [{ type: 'submitted', payment: payment({ developer_approved: true }, 'a'.repeat(64)) }, 'paid'],
      [{ type: 'update', payment: payment({ developer_approved: true, developer_completed: true }, 'a'.repeat(64)) }, 'completed'],
    ]
    let state = m.initialState()
    for (const [event, name] of steps) {
      state = m.transition(state, event)
      assert.equal(state.name, name, event.type)
    }
    assert.equal(state.payment?.status.developer_completed, true)
  })

  it('a failed Pay goes back to approved with its message, kept by later polls and cleared by the next Pay', () => {
    const approved = payment({ developer_approved: true })
    const failed = run([{ type: 'pay' }, { type: 'pay_failed', message: 'The payment failed: no funds' }], at('approved', approved))
    assert.deepEqual([failed.name, failed.error], ['approved', 'The payment failed: no funds'])
    const polled = m.transition(failed, { type: 'update', payment: approved })
    assert.equal(polled.error, 'The payment failed: no funds')
    assert.equal(m.view(polled, facts).text, 'The payment failed: no funds Pay again to retry, or Cancel.')
    const again = m.transition(polled, { type: 'pay' })
    assert.deepEqual([again.name, again.error], ['submitting', undefined])
  })

  it("a poll answered late, while Pay submits, moves nothing: the submit's own answer or failure decides", () => {
    // The poll was sent before the click (it never starts while submitting) and answers during the submit.
    const approved = payment({ developer_approved: true })
    const submitting = run([{ type: 'pay' }], at('approved', approved))
    const latePoll = m.transition(submitting, { type: 'update', payment: approved })
    assert.equal(latePoll.name, 'submitting', 'Pay stays disabled until the submit answers')
    const failed = m.transition(latePoll, { type: 'pay_failed', message: 'The payment failed: no funds' })
    assert.deepEqual([failed.name, failed.error], ['approved', 'The payment failed: no funds'])
    const paid = m.transition(latePoll, { type: 'submitted', payment: payment({ developer_approved: true }, 'a'.repeat(64)) })
    assert.equal(paid.name, 'paid')
  })

  it('a failed Pay whose answer carries the payment follows that payment', () => {
    const state = m.transition(at('submitting'), { type: 'pay_failed', message: 'x', payment: payment({ cancelled: true }) })
    assert.equal(state.name, 'confirming_cancel')
  })

  it('the user cancels only while awaiting approval or approved; a failed cancel goes back by the payment', () => {
    assert.deepEqual(
      m.STATES.filter((name) => m.canCancel(at(name))),
      ['awaiting_approval', 'approved'],
    )
    assert.equal(m.transition(at('awaiting_approval'), { type: 'cancel' }).name, 'cancelling')
    assert.equal(m.transition(at('cancelling'), { type: 'update', payment: payment({ user_cancelled: true }) }).name, 'cancelled')
    assert.equal(m.transition(at('cancelling'), { type: 'cancel_failed', message: 'no' }).name, 'awaiting_approval')
    const approved = at('cancelling', payment({ developer_approved: true }))
    assert.equal(m.transition(approved, { type: 'cancel_failed', message: 'no' }).name, 'approved')
  })

  it("the platform's cancel is explained once the clock is read: expiry or the app's cancel", () => {
    const cancelled = m.transition(at('awaiting_approval'), { type: 'update', payment: payment({ cancelled: true }) })
    assert.equal(cancelled.name, 'confirming_cancel')
    // Polls are not acted on while it is explained.
    assert.equal(m.transition(cancelled, { type: 'update', payment: payment() }), cancelled)
    assert.equal(m.transition(cancelled, { type: 'cancel_explained', expired: true }).name, 'expired')
    assert.equal(m.transition(cancelled, { type: 'cancel_explained', expired: false }).name, 'cancelled_by_app')
  })

  it('a paid payment the app does not complete in time ends as not completed', () => {
    assert.equal(m.transition(at('paid', payment({}, 'b'.repeat(64))), { type: 'completion_timeout' }).name, 'not_completed')
    assert.equal(m.transition(at('approved'), { type: 'completion_timeout' }).name, 'approved')
  })

  it('creating fails or is aborted; an event a state does not list changes nothing', () => {
    assert.equal(run([{ type: 'create_failed' }]).name, 'failed')
    assert.equal(run([{ type: 'abort' }]).name, 'aborted')
    const approved = at('approved')
    assert.equal(m.transition(approved, { type: 'created' }), approved)
    for (const name of m.FINAL_STATES) {
      const final = at(name)
      assert.equal(m.transition(final, { type: 'update', payment: payment({ developer_completed: true }) }), final)
    }
  })
})

describe('payment dialog: what each state shows', () => {
  it('Pay and Cancel while the user can act, Close after; Pay only when approved and funded', () => {
    const shown = (name: string, short = false) => m.view(at(name, payment({}, 'c'.repeat(64))), { ...facts, shortOfFunds: short })
    assert.equal(shown('approved').pay.disabled, false)
    assert.equal(shown('approved', true).pay.disabled, true)
    assert.equal(shown('awaiting_approval').pay.disabled, true)
    assert.equal(shown('awaiting_approval').cancel.disabled, false)
    for (const name of ['creating', 'awaiting_approval', 'approved', 'submitting', 'cancelling']) {
      assert.deepEqual([shown(name).pay.hidden, shown(name).cancel.hidden, shown(name).close.hidden], [false, false, true], name)
    }
    for (const name of ['paid', 'confirming_cancel', ...m.FINAL_STATES]) {
      assert.deepEqual([shown(name).pay.hidden, shown(name).cancel.hidden, shown(name).close.hidden], [true, true, false], name)
    }
  })

  it('the status line speaks to the user', () => {
    assert.equal(
      m.view(at('awaiting_approval'), facts).text,
      'Waiting for Shop to approve the payment… 42 s left (the platform cancels it after 60 s).',
    )
    assert.match(m.view(at('approved'), { ...facts, shortOfFunds: true }).text ?? '', /^Your balance is too low: .*0\.00001 π fee/)
    // What the person can do, per mode: never "fund your wallet", which no user can (#41 U12).
    const sandbox = m.view(at('approved'), { ...facts, shortOfFunds: true }).text ?? ''
    const production = m.view(at('approved'), { ...facts, shortOfFunds: true, production: true }).text ?? ''
    for (const text of [sandbox, production]) assert.doesNotMatch(text, /fund your wallet/i)
    assert.match(sandbox, /get test-π with Get test-π in your wallet/)
    assert.match(production, /Pi comes into your wallet only from a payment to you .* when this platform’s faucet is on/)
    assert.equal(m.view(at('expired'), facts).text, 'Shop did not approve the payment within 60 s; the platform cancelled it.')
    assert.equal(m.view(at('failed'), { ...facts, message: 'amount is too large' }).text, 'amount is too large')
    assert.equal(m.view(at('cancelling'), facts).text, undefined)
  })

  it('amount and fee against the balance, exactly', () => {
    assert.equal(m.toStroops('12.5'), 125_000_000n)
    assert.equal(m.toStroops('1e3'), undefined)
    assert.equal(m.shortOfFunds('5', 50_000_100n), false)
    assert.equal(m.shortOfFunds('5', 50_000_099n), true)
    assert.equal(m.shortOfFunds('5', undefined), false)
  })
})
