import { type Kysely, sql } from 'kysely'

/**
 * The two-person rule of the operator's console (docs/operators.md, "Two operators"):
 *
 * - `operator_approvals`: an act that needs a second operator (an issue above
 *   PLINTH_OPERATOR_APPROVAL_THRESHOLD, a grant of the operator role), kept as a request until
 *   another operator approves it (it then runs) or rejects it, or it expires (`expires_at`; an
 *   expired request stays `pending` in the table and is shown as expired).
 * - `audit_log_issues`: the console's daily limit sums the last 24 hours of issue records.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table operator_approvals (
      id text primary key,
      kind text not null check (kind in ('issue', 'grant-role')),
      requested_by text not null references users (id) on delete cascade,
      target text not null,
      amount numeric,
      role text,
      reason text not null,
      status text not null default 'pending' check (status in ('pending', 'approved', 'rejected')),
      created_at timestamptz not null default now(),
      expires_at timestamptz not null,
      decided_by text references users (id) on delete set null,
      decided_at timestamptz,
      decision_reason text,
      check ((kind = 'issue') = (amount is not null) and (kind = 'grant-role') = (role is not null))
    )`.execute(db)
  await sql`create index operator_approvals_created on operator_approvals (created_at desc, id desc)`.execute(db)
  await sql`create index audit_log_issues on audit_log (at) where action = 'issue'`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index audit_log_issues`.execute(db)
  await sql`drop table operator_approvals`.execute(db)
}
