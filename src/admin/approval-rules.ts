/**
 * The two-person rule (docs/operators.md, "Two operators"), as pure rules: which acts wait for a
 * second operator, how long a request waits, and who may decide it.
 */

/** A request waits this long for a second operator, then expires (nothing runs). */
export const APPROVAL_SECONDS = 24 * 60 * 60

/** PLINTH_OPERATOR_APPROVAL_THRESHOLD: whole Pi, or `off` (one operator decides everything). */
export type ApprovalThreshold = number | 'off'

export type ApprovalStatus = 'pending' | 'approved' | 'rejected' | 'expired'

/** An issue needs a second operator when it is above the threshold (the threshold itself does not). */
export function issueNeedsApproval(stroops: bigint, threshold: ApprovalThreshold): boolean {
  return threshold !== 'off' && stroops > BigInt(threshold) * 10_000_000n
}

/** Granting the operator role needs a second operator, unless the rule is off; withdrawing a role never does. */
export function roleNeedsApproval(role: string, grant: boolean, threshold: ApprovalThreshold): boolean {
  return threshold !== 'off' && grant && role === 'operator'
}

/** What a request is now: a pending request past its expiry is expired. */
export function approvalStatus(row: { status: 'pending' | 'approved' | 'rejected'; expired: boolean }): ApprovalStatus {
  return row.status === 'pending' && row.expired ? 'expired' : row.status
}

export type DecisionRefusal = { code: 'forbidden'; message: string } | { code: 'approval_not_pending'; message: string }

/**
 * Why `decider` may not take `decision` on the request, or undefined. The requester never
 * approves their own request (they may withdraw it: a rejection); a request decided or expired
 * is decided for good; a request whose requester is no longer an active operator is void.
 */
export function decisionRefusal(
  request: { requested_by: string; status: ApprovalStatus; requester_active: boolean },
  decider: string,
  decision: 'approve' | 'reject',
): DecisionRefusal | undefined {
  if (request.status !== 'pending') return { code: 'approval_not_pending', message: `This request is ${request.status} already.` }
  if (decision === 'approve' && request.requested_by === decider) {
    return { code: 'forbidden', message: 'A request is approved by another operator, never by the one who made it.' }
  }
  if (decision === 'approve' && !request.requester_active) {
    return { code: 'approval_not_pending', message: 'Whoever made this request is no longer an active operator: it cannot run.' }
  }
  return undefined
}
