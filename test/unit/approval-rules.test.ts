/** The two-person rule's pure rules (src/admin/approval-rules.ts, docs/operators.md "Two operators"). */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { approvalStatus, decisionRefusal, issueNeedsApproval, roleNeedsApproval } from '../../src/admin/approval-rules.js'

describe('the two-person rule', () => {
  it('an issue needs a second operator above the threshold, not at it; never when the rule is off', () => {
    assert.equal(issueNeedsApproval(1000n * 10_000_000n, 1000), false)
    assert.equal(issueNeedsApproval(1000n * 10_000_000n + 1n, 1000), true)
    assert.equal(issueNeedsApproval(10n ** 15n, 'off'), false)
    assert.equal(issueNeedsApproval(1n, 0), true)
  })

  it('granting the operator role needs one; granting developer or withdrawing never does', () => {
    assert.equal(roleNeedsApproval('operator', true, 1000), true)
    assert.equal(roleNeedsApproval('operator', true, 'off'), false)
    assert.equal(roleNeedsApproval('developer', true, 0), false)
    assert.equal(roleNeedsApproval('operator', false, 0), false)
  })

  it('a pending request past its expiry is expired; a decided one stays decided', () => {
    assert.equal(approvalStatus({ status: 'pending', expired: true }), 'expired')
    assert.equal(approvalStatus({ status: 'pending', expired: false }), 'pending')
    assert.equal(approvalStatus({ status: 'approved', expired: true }), 'approved')
  })

  it('the requester never approves their own, but may withdraw it; nothing is decided twice; a void request never runs', () => {
    const pending = { requested_by: 'u1', status: 'pending' as const, requester_active: true }
    assert.equal(decisionRefusal(pending, 'u1', 'approve')?.code, 'forbidden')
    assert.equal(decisionRefusal(pending, 'u1', 'reject'), undefined)
    assert.equal(decisionRefusal(pending, 'u2', 'approve'), undefined)
    for (const status of ['approved', 'rejected', 'expired'] as const) {
      assert.equal(decisionRefusal({ ...pending, status }, 'u2', 'approve')?.code, 'approval_not_pending')
      assert.equal(decisionRefusal({ ...pending, status }, 'u2', 'reject')?.code, 'approval_not_pending')
    }
    assert.equal(decisionRefusal({ ...pending, requester_active: false }, 'u2', 'approve')?.code, 'approval_not_pending')
  })
})
