import { type Kysely, sql } from 'kysely'
import { appsWithOwner } from '../apps/apps-repo.js'
import { type AuditHead, auditChainKey, auditLog } from '../audit/audit-log.js'
import type { Clock } from '../clock/clock.js'
import { type CursorPosition, containsPattern } from '../core/cursors.js'
import { ApiError } from '../core/errors.js'
import type { SessionPrincipal } from '../core/principals.js'
import type { DB } from '../db/schema.js'
import { inTransaction } from '../db/transaction.js'
import { credentialEventsRepo, type RevokedCredential } from '../identity/credential-events.js'
import { formatAmount, parseStoredAmount } from '../ledger/amounts.js'
import { randomToken, sha256Hex } from '../lib/crypto.js'
import { adminServiceFactory, ROLES, type Role } from './admin-service.js'
import { type ApprovalThreshold, issueNeedsApproval, roleNeedsApproval } from './approval-rules.js'
import { type ApprovalFilter, approvalsServiceFactory } from './approvals-service.js'
import { checkDailyLimit, consoleIssuedToday, issueStroops, issueTarget } from './issuing.js'
import { changeRole, lockOperators, refuseLastOperator } from './operator-roles.js'
import { visibleReason } from './reasons.js'

/** Microseconds since 1970 of a row's created_at, exactly. */
const createdUs = (column: string) => sql<string>`(extract(epoch from ${sql.ref(column)}) * 1000000)::bigint::text`

export interface AuditFilter {
  actor?: string | undefined
  action?: string | undefined
  target?: string | undefined
  /** A part of the details' JSON, case-insensitively. */
  q?: string | undefined
}

/**
 * The operator's console (docs/operators.md): what a signed-in operator may do to the whole
 * platform. Every act writes an audit record naming `user:<id>` in the transaction that does it,
 * with the request's id; a suspension also writes a credential event there, so that every
 * process's credential cache drops the user's or the app's credentials within a second, and this
 * process's at once (`afterRevocation`, after the commit).
 */
export function operatorServiceFactory(deps: {
  db: Kysely<DB>
  clock: Clock
  secretKey: Buffer
  publicUrl: string
  /** Pi all operators together may issue in any 24 hours. */
  dailyIssueLimit: number
  /** Above it an issue, and any grant of the operator role, waits for a second operator (approval-rules.ts). */
  approvalThreshold: ApprovalThreshold
  resetLinkSeconds: number
  afterRevocation?: (revoked: RevokedCredential) => void
}) {
  const { db, clock, secretKey, publicUrl } = deps
  const audit = auditLog(db, auditChainKey(secretKey))
  const actorOf = (principal: SessionPrincipal) => `user:${principal.userId}`
  const admin = (principal: SessionPrincipal) => adminServiceFactory({ db, clock, secretKey, publicUrl, actor: actorOf(principal) })
  /** For what only reads (the ledger's check, the audit chain's): no act, so no actor is recorded. */
  const reader = adminServiceFactory({ db, clock, secretKey, publicUrl, actor: 'console' })
  const approvals = approvalsServiceFactory({ db, clock, secretKey, dailyIssueLimit: deps.dailyIssueLimit })

  const findUser = async (username: string) => {
    const user = await db
      .selectFrom('users')
      .select(['id', 'username', 'roles', 'suspended_at', 'created_at', 'wallet_address', 'password_hash'])
      .where('username_key', '=', username.toLowerCase())
      .executeTakeFirst()
    if (user === undefined) throw new ApiError('user_not_found', `No user named "${username.slice(0, 64)}".`)
    return user
  }
  const findApp = async (appId: string) => {
    const app = await db.selectFrom('apps').selectAll().where('id', '=', appId).executeTakeFirst()
    if (app === undefined) throw new ApiError('app_not_found', `No app with id ${appId}.`)
    return app
  }

  /** Sets or clears a suspension with its audit record and credential event, in one transaction; then this process's cache forgets. */
  async function suspension(
    principal: SessionPrincipal,
    target: { table: 'users' | 'apps'; id: string; name: string },
    suspend: boolean,
    reason: string,
    requestId: string,
  ) {
    visibleReason(reason)
    const event: RevokedCredential = { kind: target.table === 'users' ? 'user' : 'app', subject: target.id }
    const changed = await inTransaction(db, async (trx) => {
      if (target.table === 'users' && suspend) {
        // Under the operators lock: the last active operator is never suspended, even by two suspensions racing.
        await lockOperators(trx)
        await refuseLastOperator(trx, target.id, 'suspend')
      }
      const updated = await trx
        .updateTable(target.table)
        .set({ suspended_at: suspend ? sql<Date>`now()` : null })
        .where('id', '=', target.id)
        .where('suspended_at', suspend ? 'is' : 'is not', null)
        .executeTakeFirst()
      if (updated.numUpdatedRows === 0n) return false
      if (suspend) {
        await credentialEventsRepo(trx).record(event)
        if (target.table === 'users') {
          await trx
            .updateTable('account_sessions')
            .set({ revoked_at: sql<Date>`now()` })
            .where('user_id', '=', target.id)
            .where('revoked_at', 'is', null)
            .execute()
        }
      }
      await audit.append(trx, {
        actor: actorOf(principal),
        action: `${suspend ? 'suspend' : 'restore'}-${target.table === 'users' ? 'user' : 'app'}`,
        target: target.name,
        details: { id: target.id, reason, request_id: requestId },
      })
      return true
    })
    if (changed && suspend) deps.afterRevocation?.(event)
    return { changed }
  }

  /** A read of one user's or app's record in the console, in the audit log before the answer leaves (docs/operators.md, "Support lookup"). */
  const viewed = (principal: SessionPrincipal, action: string, target: string, details: Record<string, unknown>) =>
    inTransaction(db, (trx) => audit.append(trx, { actor: actorOf(principal), action, target, details }))

  const userView = (user: Awaited<ReturnType<typeof findUser>>) => ({
    user_id: user.id,
    username: user.username,
    roles: user.roles,
    suspended: user.suspended_at !== null,
    suspended_at: user.suspended_at?.toISOString() ?? null,
    has_password: user.password_hash !== null,
    wallet_address: user.wallet_address,
    created_at: user.created_at.toISOString(),
  })

  return {
    /** Users whose name contains `q`, by name; `after` is the last name of the page before. */
    async users(q: string | undefined, after: string | undefined, limit: number) {
      let query = db
        .selectFrom('users')
        .select(['id', 'username', 'username_key', 'roles', 'suspended_at', 'created_at', 'wallet_address', 'password_hash'])
      if (q !== undefined) query = query.where('username_key', 'like', containsPattern(q))
      if (after !== undefined) query = query.where('username_key', '>', after)
      const rows = await query
        .orderBy('username_key')
        .limit(limit + 1)
        .execute()
      return rows.map((row) => ({ view: userView(row), key: row.username_key }))
    },

    /** A user's record with their balance and apps: another person's data, so recorded (`view-user`) before it is answered. */
    async user(principal: SessionPrincipal, username: string, requestId: string) {
      const user = await findUser(username)
      const apps = await db
        .selectFrom('app_members as m')
        .innerJoin('apps as a', 'a.id', 'm.app_id')
        .select(['a.id', 'a.name', 'm.role'])
        .where('m.user_id', '=', user.id)
        .orderBy('a.created_at', 'desc')
        .limit(200)
        .execute()
      const balance = await db
        .selectFrom('ledger_accounts')
        .select(sql<string>`balance::text`.as('balance'))
        // π, on Pi Network: what operators issue.
        .where('network', '=', 'Pi Network')
        .where('address', '=', user.wallet_address)
        .executeTakeFirst()
      await viewed(principal, 'view-user', user.username, { user_id: user.id, request_id: requestId })
      return {
        ...userView(user),
        balance: formatAmount(parseStoredAmount(balance?.balance ?? '0')),
        apps: apps.map((a) => ({ app_id: a.id, name: a.name, role: a.role })),
      }
    },

    async suspendUser(principal: SessionPrincipal, username: string, reason: string, requestId: string) {
      const user = await findUser(username)
      if (user.id === principal.userId) throw new ApiError('forbidden', 'An operator does not suspend themselves.')
      return suspension(principal, { table: 'users', id: user.id, name: user.username }, true, reason, requestId)
    },

    async restoreUser(principal: SessionPrincipal, username: string, reason: string, requestId: string) {
      const user = await findUser(username)
      return suspension(principal, { table: 'users', id: user.id, name: user.username }, false, reason, requestId)
    },

    /**
     * Grants or withdraws a role (audited, even when nothing changes). An operator keeps their own
     * operator role; the last active operator keeps theirs (409 last_operator). Granting the
     * operator role waits for a second operator (a request, answered as `approval`) unless the
     * two-person rule is off or the user holds the role already.
     */
    async setRole(
      principal: SessionPrincipal,
      username: string,
      role: Role,
      grant: boolean,
      reason: string | undefined,
      requestId: string,
    ) {
      if (!(ROLES as readonly string[]).includes(role)) throw new ApiError('invalid_arguments', `role must be one of ${ROLES.join(', ')}.`)
      const user = await findUser(username)
      if (!grant && role === 'operator' && user.id === principal.userId) {
        throw new ApiError('forbidden', 'An operator does not withdraw their own operator role: another operator does.')
      }
      if (roleNeedsApproval(role, grant, deps.approvalThreshold) && !user.roles.includes(role)) {
        const approval = await approvals.request(
          principal,
          { kind: 'grant-role', target: user.username, role, reason: reason ?? '' },
          requestId,
        )
        return { approval }
      }
      const changed = await inTransaction(db, (trx) =>
        changeRole(trx, audit, {
          userId: user.id,
          role,
          grant,
          actor: actorOf(principal),
          details: { request_id: requestId, ...(reason === undefined ? {} : { reason }) },
        }),
      )
      return { changed }
    },

    /**
     * A one-time link that sets a new password (docs/operators.md): shown once to the operator,
     * kept as its hash. It ends every older link of the account: only the newest one works.
     */
    async resetLink(principal: SessionPrincipal, username: string, requestId: string) {
      const user = await findUser(username)
      const token = randomToken(32)
      return inTransaction(db, async (trx) => {
        await trx
          .updateTable('password_resets')
          .set({ expires_at: sql<Date>`now()` })
          .where('user_id', '=', user.id)
          .where('used_at', 'is', null)
          .where('expires_at', '>', sql<Date>`now()`)
          .execute()
        const row = await trx
          .insertInto('password_resets')
          .values({
            token_hash: sha256Hex(token),
            user_id: user.id,
            created_by: actorOf(principal),
            expires_at: sql<Date>`now() + make_interval(secs => ${deps.resetLinkSeconds})`,
          })
          .returning('expires_at')
          .executeTakeFirstOrThrow()
        await audit.append(trx, {
          actor: actorOf(principal),
          action: 'issue-password-reset',
          target: user.username,
          details: { user_id: user.id, expires_at: row.expires_at.toISOString(), request_id: requestId },
        })
        return { username: user.username, url: `${publicUrl}/#/reset/${token}`, expires_at: row.expires_at.toISOString() }
      })
    },

    /** Apps whose name or id contains `q`, newest first. */
    async apps(q: string | undefined, before: CursorPosition | undefined, limit: number) {
      let query = appsWithOwner(db)
        .select([
          'a.id',
          'a.name',
          'a.url',
          'a.network',
          'a.created_at',
          'a.verified_at',
          'a.verified_by',
          'a.suspended_at',
          'u.username as owner',
        ])
        .select(createdUs('a.created_at').as('created_us'))
      if (q !== undefined) query = query.where((eb) => eb.or([eb(sql`lower(a.name)`, 'like', containsPattern(q)), eb('a.id', '=', q)]))
      if (before !== undefined)
        query = query.where(sql<boolean>`(${createdUs('a.created_at')}::bigint, a.id) < (${before.n}::bigint, ${before.id ?? ''}::text)`)
      const rows = await query
        .orderBy(sql`a.created_at`, 'desc')
        .orderBy('a.id', 'desc')
        .limit(limit + 1)
        .execute()
      return rows.map((row) => ({
        view: {
          app_id: row.id,
          name: row.name,
          url: row.url,
          network: row.network,
          owner: row.owner,
          verified: row.verified_at !== null,
          verified_by: row.verified_by,
          suspended: row.suspended_at !== null,
          created_at: row.created_at.toISOString(),
        },
        position: { n: Number(row.created_us), id: row.id },
      }))
    },

    /** An app's record with its members: recorded (`view-app`) before it is answered. */
    async app(principal: SessionPrincipal, appId: string, requestId: string) {
      const app = await findApp(appId)
      const members = await db
        .selectFrom('app_members as m')
        .innerJoin('users as u', 'u.id', 'm.user_id')
        .select(['u.username', 'm.role', 'm.added_at'])
        .where('m.app_id', '=', appId)
        .orderBy('m.added_at')
        .limit(200)
        .execute()
      const keys = await db
        .selectFrom('api_keys')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('app_id', '=', appId)
        .where('revoked_at', 'is', null)
        .executeTakeFirstOrThrow()
      await viewed(principal, 'view-app', app.id, { request_id: requestId })
      return {
        app_id: app.id,
        name: app.name,
        url: app.url,
        description: app.description,
        network: app.network,
        wallet_address: app.wallet_address,
        verified: app.verified_at !== null,
        verified_at: app.verified_at?.toISOString() ?? null,
        verified_by: app.verified_by,
        suspended: app.suspended_at !== null,
        suspended_at: app.suspended_at?.toISOString() ?? null,
        created_at: app.created_at.toISOString(),
        active_keys: Number(keys.n),
        members: members.map((m) => ({ username: m.username, role: m.role, added_at: m.added_at.toISOString() })),
      }
    },

    async suspendApp(principal: SessionPrincipal, appId: string, reason: string, requestId: string) {
      const app = await findApp(appId)
      return suspension(principal, { table: 'apps', id: app.id, name: app.id }, true, reason, requestId)
    },

    async restoreApp(principal: SessionPrincipal, appId: string, reason: string, requestId: string) {
      const app = await findApp(appId)
      return suspension(principal, { table: 'apps', id: app.id, name: app.id }, false, reason, requestId)
    },

    /**
     * What an issue would meet, checked now and moving nothing (#41 U17): the refusals known in
     * advance (the amount, the reason, the target, the daily limit) come before the console asks
     * the operator to confirm. Only a check: `issue` checks all of it again at the act, under the
     * audit log's lock, so an issue that passed here can still be refused there.
     */
    async issueCheck(input: { target: string; amount: string; reason: string }) {
      const stroops = issueStroops(input.amount)
      visibleReason(input.reason)
      const target = await issueTarget(db, input.target)
      await checkDailyLimit(db, stroops, deps.dailyIssueLimit)
      return {
        target: input.target.startsWith('app_') ? input.target : target.name,
        address: target.wallet_address,
        amount: formatAmount(stroops),
        needs_approval: issueNeedsApproval(stroops, deps.approvalThreshold),
        daily_limit: formatAmount(BigInt(deps.dailyIssueLimit) * 10_000_000n),
        issued_today: formatAmount(await consoleIssuedToday(db)),
      }
    },

    /**
     * Issues money (issuing.ts) under the console's policy: a reason always, at most
     * `dailyIssueLimit` Pi from the console in any 24 hours for all operators together (checked in
     * the issuing transaction under the audit log's lock), and above the approval threshold, a
     * request for a second operator instead (the limit is checked now, and again when it runs).
     */
    async issue(principal: SessionPrincipal, input: { target: string; amount: string; reason: string }, requestId: string) {
      const stroops = issueStroops(input.amount)
      const reason = visibleReason(input.reason)
      if (issueNeedsApproval(stroops, deps.approvalThreshold)) {
        const target = await issueTarget(db, input.target)
        await checkDailyLimit(db, stroops, deps.dailyIssueLimit)
        const approval = await approvals.request(
          principal,
          { kind: 'issue', target: input.target.startsWith('app_') ? input.target : target.name, amount: formatAmount(stroops), reason },
          requestId,
        )
        return { approval }
      }
      const issued = await admin(principal).issue({
        ...input,
        requestId,
        policy: async (trx, checked) => {
          await checkDailyLimit(trx, checked, deps.dailyIssueLimit)
          return undefined
        },
      })
      return { issued }
    },

    approvals: (status: ApprovalFilter | undefined, before: CursorPosition | undefined, limit: number) =>
      approvals.list(status, before, limit),
    approve: (principal: SessionPrincipal, id: string, requestId: string) => approvals.approve(principal, id, requestId),
    reject: (principal: SessionPrincipal, id: string, reason: string, requestId: string) =>
      approvals.reject(principal, id, reason, requestId),

    ledgerCheck: () => reader.ledgerCheck(),

    /** Newest first; `before` is the id of the last record of the page before. */
    async audit(filter: AuditFilter, before: number | undefined, limit: number) {
      let query = db
        .selectFrom('audit_log as a')
        .leftJoin('users as u', (join) => join.on(sql<boolean>`a.actor = 'user:' || u.id`))
        .selectAll('a')
        .select('u.username as actor_username')
      if (filter.actor !== undefined) query = query.where('a.actor', '=', filter.actor)
      if (filter.action !== undefined) query = query.where('a.action', '=', filter.action)
      if (filter.target !== undefined) query = query.where('a.target', '=', filter.target)
      if (filter.q !== undefined) query = query.where(sql`lower(a.details::text)`, 'like', containsPattern(filter.q))
      if (before !== undefined) query = query.where('a.id', '<', String(before))
      const rows = await query
        .orderBy('a.id', 'desc')
        .limit(limit + 1)
        .execute()
      return rows.map((row) => ({
        id: String(row.id),
        at: row.at.toISOString(),
        actor: row.actor,
        actor_username: row.actor_username,
        action: row.action,
        target: row.target,
        details: row.details,
        prev_hash: row.prev_hash,
        hash: row.hash,
      }))
    },

    /** Whether the chain is whole (audit-log.ts, ChainCheck); with `expected`, whether it still reaches that head. */
    verifyAudit: (expected?: AuditHead) => reader.verifyAudit(expected),

    /** The newest record's id and MAC, to keep outside the database. */
    auditHead: () => reader.auditHead(),
  }
}

export type OperatorService = ReturnType<typeof operatorServiceFactory>
