import { type Kysely, sql } from 'kysely'
import type { auditLog } from '../audit/audit-log.js'
import { ApiError } from '../core/errors.js'
import type { DB } from '../db/schema.js'

/**
 * Serialises every act that can take the operator role from someone (a withdrawal, a suspension)
 * and every grant of a role (advisory lock class of Plinth's, object 20; taken before the audit
 * log's, never after it): two operators withdrawing each other at once, on any processes, are
 * decided one after the other, and the second sees the first.
 */
const OPERATORS_LOCK = sql`pg_advisory_xact_lock(1347177550, 20)`

export async function lockOperators(trx: Kysely<DB>): Promise<void> {
  if (!trx.isTransaction) throw new Error('the operators lock is taken inside a transaction')
  await sql`select ${OPERATORS_LOCK}`.execute(trx)
}

/**
 * Under the operators lock: refuses (409 last_operator) an act that would leave the platform with
 * no active operator, that is, withdrawing the operator role from, or suspending, the only
 * unsuspended operator.
 */
export async function refuseLastOperator(trx: Kysely<DB>, userId: string, act: 'withdraw' | 'suspend'): Promise<void> {
  const { rows } = await sql<{ others: number; is_one: boolean | null }>`
    select (count(*) filter (where id <> ${userId}))::int as others, bool_or(id = ${userId}) as is_one
    from users where 'operator' = any(roles) and suspended_at is null`.execute(trx)
  const row = rows[0]
  if (row?.is_one === true && row.others === 0) {
    throw new ApiError(
      'last_operator',
      `This is the last active operator: ${act === 'withdraw' ? 'withdrawing their role' : 'suspending them'} would leave nobody to run the platform. Make another operator first.`,
    )
  }
}

/**
 * Grants or withdraws a role in `trx`, with its audit record: under the operators lock, the
 * user's row locked, so a concurrent change of their roles is never lost. Withdrawing the role of
 * the last active operator is refused (409 last_operator).
 */
export async function changeRole(
  trx: Kysely<DB>,
  audit: ReturnType<typeof auditLog>,
  change: { userId: string; role: string; grant: boolean; actor: string; details: Record<string, unknown> },
): Promise<{ username: string; roles: string[] }> {
  await lockOperators(trx)
  const user = await trx.selectFrom('users').select(['username', 'roles']).where('id', '=', change.userId).forUpdate().executeTakeFirst()
  if (user === undefined) throw new ApiError('user_not_found', 'No such user.')
  if (!change.grant && change.role === 'operator') await refuseLastOperator(trx, change.userId, 'withdraw')
  const had = user.roles.includes(change.role)
  const roles = change.grant ? [...new Set([...user.roles, change.role])].sort() : user.roles.filter((r) => r !== change.role)
  await trx.updateTable('users').set({ roles }).where('id', '=', change.userId).execute()
  await audit.append(trx, {
    actor: change.actor,
    action: `${change.grant ? 'grant' : 'withdraw'}-${change.role}`,
    target: user.username,
    details: { user_id: change.userId, had, ...change.details },
  })
  return { username: user.username, roles }
}
