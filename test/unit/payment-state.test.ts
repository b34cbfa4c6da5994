import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { approvalExpired, type Decision, decide, isOpen, type Move, type PaymentState } from '../../src/payments/payment-state.js'

const TX = 'a'.repeat(64)
const OTHER_TX = 'b'.repeat(64)

function state(overrides: Partial<PaymentState> = {}): PaymentState {
  return {
    direction: 'user_to_app',
    developer_approved: false,
    developer_completed: false,
    cancelled: false,
    user_cancelled: false,
    txid: null,
    tx_verified: null,
    created_at: new Date(0),
    ...overrides,
  }
}

const created = state()
const approved = state({ developer_approved: true })
const paid = state({ developer_approved: true, txid: TX, tx_verified: true })
const paidUnverified = state({ developer_approved: true, txid: TX, tx_verified: false })
const completed = state({ developer_approved: true, txid: TX, tx_verified: true, developer_completed: true })
const cancelled = state({ cancelled: true })
const userCancelled = state({ user_cancelled: true })
const a2u = state({ direction: 'app_to_user' })
const a2uPaid = state({ direction: 'app_to_user', txid: TX, tx_verified: true })
const a2uCompleted = state({ direction: 'app_to_user', txid: TX, tx_verified: true, developer_completed: true })

const APPLY: Decision = { kind: 'apply' }
const REPLAY: Decision = { kind: 'replay' }

// [state name, state, move, expected: 'apply' | 'replay' | refusal code]
const TABLE: Array<[string, PaymentState, Move, 'apply' | 'replay' | string]> = [
  ['created U2A', created, { kind: 'approve' }, 'apply'],
  ['approved U2A', approved, { kind: 'approve' }, 'replay'],
  ['completed U2A', completed, { kind: 'approve' }, 'replay'],
  ['cancelled', cancelled, { kind: 'approve' }, 'cancelled_payment'],
  ['approved, then cancelled', state({ developer_approved: true, cancelled: true }), { kind: 'approve' }, 'cancelled_payment'],
  ['approved, then user-cancelled', state({ developer_approved: true, user_cancelled: true }), { kind: 'approve' }, 'cancelled_payment'],
  ['user-cancelled', userCancelled, { kind: 'approve' }, 'cancelled_payment'],
  ['A2U', a2u, { kind: 'approve' }, 'wrong_direction'],

  ['paid (verified)', paid, { kind: 'complete', txid: TX }, 'apply'],
  ['paid A2U', a2uPaid, { kind: 'complete', txid: TX }, 'apply'],
  ['completed', completed, { kind: 'complete', txid: TX }, 'replay'],
  ['completed A2U', a2uCompleted, { kind: 'complete', txid: TX }, 'replay'],
  ['completed, other txid', completed, { kind: 'complete', txid: OTHER_TX }, 'already_completed'],
  ['paid, other txid', paid, { kind: 'complete', txid: OTHER_TX }, 'txid_mismatch'],
  ['paid (unverified)', paidUnverified, { kind: 'complete', txid: TX }, 'not_verified'],
  ['no transaction', approved, { kind: 'complete', txid: TX }, 'verification_failed'],
  ['A2U, no transaction', a2u, { kind: 'complete', txid: TX }, 'verification_failed'],
  ['cancelled', cancelled, { kind: 'complete', txid: TX }, 'cancelled_payment'],
  ['user-cancelled', userCancelled, { kind: 'complete', txid: TX }, 'cancelled_payment'],

  ['created', created, { kind: 'cancel' }, 'apply'],
  ['approved', approved, { kind: 'cancel' }, 'apply'],
  ['A2U', a2u, { kind: 'cancel' }, 'apply'],
  ['paid (unverified)', paidUnverified, { kind: 'cancel' }, 'apply'],
  ['cancelled', cancelled, { kind: 'cancel' }, 'replay'],
  ['paid (verified)', paid, { kind: 'cancel' }, 'payment_tx_present'],
  ['paid A2U', a2uPaid, { kind: 'cancel' }, 'payment_tx_present'],
  ['completed', completed, { kind: 'cancel' }, 'already_completed'],
  ['user-cancelled', userCancelled, { kind: 'cancel' }, 'replay'],
  ['approved, then user-cancelled', state({ developer_approved: true, user_cancelled: true }), { kind: 'cancel' }, 'replay'],

  ['created', created, { kind: 'user_cancel' }, 'apply'],
  ['approved', approved, { kind: 'user_cancel' }, 'apply'],
  ['user-cancelled', userCancelled, { kind: 'user_cancel' }, 'replay'],
  ['cancelled', cancelled, { kind: 'user_cancel' }, 'replay'],
  ['paid', paid, { kind: 'user_cancel' }, 'payment_tx_present'],
  ['completed', completed, { kind: 'user_cancel' }, 'already_completed'],
  ['A2U', a2u, { kind: 'user_cancel' }, 'wrong_direction'],
  ['A2U paid', a2uPaid, { kind: 'user_cancel' }, 'wrong_direction'],

  ['approved', approved, { kind: 'submit' }, 'apply'],
  ['paid', paid, { kind: 'submit' }, 'replay'],
  ['completed', completed, { kind: 'submit' }, 'replay'],
  ['created (not approved)', created, { kind: 'submit' }, 'not_approved'],
  ['cancelled', state({ developer_approved: true, cancelled: true }), { kind: 'submit' }, 'cancelled_payment'],
  ['user-cancelled', userCancelled, { kind: 'submit' }, 'cancelled_payment'],
  ['A2U', a2u, { kind: 'submit' }, 'wrong_direction'],
]

describe('payment state rules', () => {
  for (const [name, from, move, expected] of TABLE) {
    const label = move.kind === 'complete' ? `complete(${move.txid === TX ? 'its txid' : 'another txid'})` : move.kind
    it(`${label} from ${name} → ${expected}`, () => {
      const decision = decide(from, move)
      if (expected === 'apply') assert.deepEqual(decision, APPLY)
      else if (expected === 'replay') assert.deepEqual(decision, REPLAY)
      else {
        assert.equal(decision.kind, 'refuse')
        assert.equal(decision.kind === 'refuse' && decision.code, expected)
        assert.ok(decision.kind === 'refuse' && decision.message.length > 0)
      }
    })
  }

  describe('approval window', () => {
    const window = 60_000
    const at = (ms: number) => new Date(ms)
    it('is open until the window has passed', () => {
      assert.equal(approvalExpired(created, at(59_999), window), false)
      assert.equal(approvalExpired(created, at(60_000), window), true)
    })
    it('does not apply to approved, cancelled or app-to-user payments', () => {
      assert.equal(approvalExpired(approved, at(1e9), window), false)
      assert.equal(approvalExpired(cancelled, at(1e9), window), false)
      assert.equal(approvalExpired(userCancelled, at(1e9), window), false)
      assert.equal(approvalExpired(a2u, at(1e9), window), false)
    })
    it('never applies to a payment with a transaction: the money moved for it', () => {
      assert.equal(approvalExpired({ ...created, txid: TX, tx_verified: true }, at(1e9), window), false)
      assert.equal(approvalExpired({ ...created, txid: TX, tx_verified: false }, at(1e9), window), false)
    })
  })

  it('counts a payment open until completed or cancelled by anyone', () => {
    assert.equal(isOpen(created), true)
    assert.equal(isOpen(paid), true)
    assert.equal(isOpen(completed), false)
    assert.equal(isOpen(cancelled), false)
    assert.equal(isOpen(userCancelled), false)
  })
})
