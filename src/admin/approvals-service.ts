import { type Kysely, sql } from 'kysely'
import { auditChainKey, auditLog } from '../audit/audit-log.js'
import type { Clock } from '../clock/clock.js'
import type { CursorPosition } from '../core/cursors.js'
import { ApiError } from '../core/errors.js'
import type { SessionPrincipal } from '../core/principals.js'
import type { DB } from '../db/schema.js'
import { inTransaction } from '../db/transaction.js'
import { formatAmount, parseStoredAmount } from '../ledger/amounts.js'
import { newId } from '../lib/crypto.js'
import { APPROVAL_SECONDS, approvalStatus, decisionRefusal } from './approval-rules.js'
import { checkDailyLimit, issuingFactory } from './issuing.js'
import { changeRole, lockOperators } from './operator-roles.js'
import { visibleReason } from './reasons.js'

/** Microseconds since 1970 of a row's created_at, exactly. */
const createdUs = sql<string>`(extract(epoch from r.created_at) * 1000000)::bigint::text`

export type ApprovalFilter = 'pending' | 'approved' | 'rejected' | 'expired'

/**
 * The two-person rule (docs/operators.md, "Two operators"): an act that needs a second operator
 * is stored as a request (`request-*` audit record); another operator approves it, and it runs
 * then, in one transaction with the approval (the daily limit checked again at that time), or an
 * operator rejects it with a reason. Every step is audited; a request waits at most a day.
 */
export function approvalsServiceFactory(deps: { db: Kysely<DB>; clock: Clock; secretKey: Buffer; dailyIssueLimit: number }) {
  const { db, clock, secretKey } = deps
  const audit = auditLog(db, auditChainKey(secretKey))
  const actorOf = (principal: SessionPrincipal) => `user:${principal.userId}`

  const select = () =>
    db
      .selectFrom('operator_approvals as r')
      .innerJoin('users as u', 'u.id', 'r.requested_by')
      .leftJoin('users as d', 'd.id', 'r.decided_by')
      .select([
        'r.id',
        'r.kind',
        'r.requested_by',
        'u.username as requester',
        'r.target',
        sql<string | null>`r.amount::text`.as('amount'),
        'r.role',
        'r.reason',
        'r.status',
        'r.created_at',
        'r.expires_at',
        'd.username as decider',
        'r.decided_at',
        'r.decision_reason',
      ])
      .select(sql<boolean>`r.expires_at <= now()`.as('expired'))
      .select(sql<boolean>`('operator' = any(u.roles) and u.suspended_at is null)`.as('requester_active'))
      .select(createdUs.as('created_us'))

  type Row = Awaited<ReturnType<ReturnType<typeof select>['executeTakeFirstOrThrow']>>
  const view = (row: Row) => ({
    approval_id: row.id,
    kind: row.kind,
    requested_by: row.requester,
    target: row.target,
    amount: row.amount === null ? null : formatAmount(parseStoredAmount(row.amount)),
    role: row.role,
    reason: row.reason,
    status: approvalStatus(row),
    created_at: row.created_at.toISOString(),
    expires_at: row.expires_at.toISOString(),
    decided_by: row.decider,
    decided_at: row.decided_at?.toISOString() ?? null,
    decision_reason: row.decision_reason,
  })
  const find = async (id: string) => {
    const row = await select().where('r.id', '=', id).executeTakeFirst()
    if (row === undefined) throw new ApiError('approval_not_found', `No request with id ${id.slice(0, 64)}.`)
    return row
  }
  /** Decides a pending request in `trx`: only one decision ever lands (the UPDATE's guard), and never after its expiry. */
  const claim = async (
    trx: Kysely<DB>,
    id: string,
    principal: SessionPrincipal,
    status: 'approved' | 'rejected',
    reason: string | null,
  ) => {
    const updated = await trx
      .updateTable('operator_approvals')
      .set({ status, decided_by: principal.userId, decided_at: sql<Date>`now()`, decision_reason: reason })
      .where('id', '=', id)
      .where('status', '=', 'pending')
      .where(sql<boolean>`expires_at > now()`)
      .executeTakeFirst()
    if (updated.numUpdatedRows === 0n) throw new ApiError('approval_not_pending', 'This request was decided or expired meanwhile.')
  }
  const refuse = (row: Row, principal: SessionPrincipal, decision: 'approve' | 'reject') => {
    const refusal = decisionRefusal({ ...row, status: approvalStatus(row) }, principal.userId, decision)
    if (refusal !== undefined) throw new ApiError(refusal.code, refusal.message)
  }

  return {
    /** Stores a request for a second operator, with its `request-<kind>` audit record. */
    async request(
      principal: SessionPrincipal,
      input:
        | { kind: 'issue'; target: string; amount: string; reason: string }
        | { kind: 'grant-role'; target: string; role: string; reason: string },
      requestId: string,
    ) {
      visibleReason(input.reason)
      const id = newId('apr')
      await inTransaction(db, async (trx) => {
        await trx
          .insertInto('operator_approvals')
          .values({
            id,
            kind: input.kind,
            requested_by: principal.userId,
            target: input.target,
            amount: input.kind === 'issue' ? input.amount : null,
            role: input.kind === 'grant-role' ? input.role : null,
            reason: input.reason,
            expires_at: sql<Date>`now() + make_interval(secs => ${APPROVAL_SECONDS})`,
          })
          .execute()
        await audit.append(trx, {
          actor: actorOf(principal),
          action: input.kind === 'issue' ? 'request-issue' : `request-grant-${input.role}`,
          target: input.target,
          details: {
            approval_id: id,
            ...(input.kind === 'issue' ? { amount: input.amount } : { role: input.role }),
            reason: input.reason,
            request_id: requestId,
          },
        })
      })
      return view(await find(id))
    },

    /** Requests newest first, optionally of one status; `before` is the position of the last of the page before. */
    async list(status: ApprovalFilter | undefined, before: CursorPosition | undefined, limit: number) {
      let query = select()
      if (status === 'expired') query = query.where('r.status', '=', 'pending').where(sql<boolean>`r.expires_at <= now()`)
      else if (status === 'pending') query = query.where('r.status', '=', 'pending').where(sql<boolean>`r.expires_at > now()`)
      else if (status !== undefined) query = query.where('r.status', '=', status)
      if (before !== undefined)
        query = query.where(sql<boolean>`(${createdUs}::bigint, r.id) < (${before.n}::bigint, ${before.id ?? ''}::text)`)
      const rows = await query
        .orderBy(sql`r.created_at`, 'desc')
        .orderBy('r.id', 'desc')
        .limit(limit + 1)
        .execute()
      return rows.map((row) => ({ view: view(row), position: { n: Number(row.created_us), id: row.id } }))
    },

    /**
     * Approves another operator's request, and runs it in the same transaction: an issue (the
     * daily limit checked again now, under the audit log's lock), or the grant of the role.
     */
    async approve(principal: SessionPrincipal, id: string, requestId: string) {
      const row = await find(id)
      refuse(row, principal, 'approve')
      const approved = { actor: actorOf(principal), action: 'approve-request', target: row.target }
      const details = { approval_id: id, kind: row.kind, requested_by: `user:${row.requested_by}`, request_id: requestId }
      if (row.kind === 'issue') {
        const issued = await issuingFactory({ db, clock, secretKey, actor: actorOf(principal) }).issue({
          target: row.target,
          amount: row.amount ?? '0',
          reason: row.reason,
          requestId,
          policy: async (trx, stroops) => {
            await claim(trx, id, principal, 'approved', null)
            await checkDailyLimit(trx, stroops, deps.dailyIssueLimit)
            await audit.append(trx, { ...approved, details: { ...details, amount: formatAmount(stroops) } })
            return { approval_id: id, requested_by: `user:${row.requested_by}` }
          },
        })
        return { approval: view(await find(id)), issued, roles: null }
      }
      const changed = await inTransaction(db, async (trx) => {
        // The operators lock before the audit log's (operator-roles.ts).
        await lockOperators(trx)
        await claim(trx, id, principal, 'approved', null)
        const user = await trx.selectFrom('users').select('id').where('username_key', '=', row.target.toLowerCase()).executeTakeFirst()
        if (user === undefined) throw new ApiError('user_not_found', `No user named "${row.target}".`)
        await audit.append(trx, { ...approved, details: { ...details, role: row.role } })
        return changeRole(trx, audit, {
          userId: user.id,
          role: row.role ?? 'operator',
          grant: true,
          actor: actorOf(principal),
          details: { approval_id: id, requested_by: `user:${row.requested_by}`, request_id: requestId },
        })
      })
      return { approval: view(await find(id)), issued: null, roles: changed.roles }
    },

    /** Rejects a request (its requester may withdraw their own this way): nothing of it runs. */
    async reject(principal: SessionPrincipal, id: string, given: string, requestId: string) {
      const reason = visibleReason(given)
      const row = await find(id)
      refuse(row, principal, 'reject')
      await inTransaction(db, async (trx) => {
        await claim(trx, id, principal, 'rejected', reason)
        await audit.append(trx, {
          actor: actorOf(principal),
          action: 'reject-request',
          target: row.target,
          details: { approval_id: id, kind: row.kind, requested_by: `user:${row.requested_by}`, reason, request_id: requestId },
        })
      })
      return { approval: view(await find(id)) }
    },
  }
}
