import { type Kysely, sql } from 'kysely'

/**
 * The revocation feed is read by commit, not by id (src/identity/credential-cache.ts has the
 * argument). Each event carries the id of the transaction that wrote it (`pg_current_xact_id()`,
 * the top-level transaction's even inside a savepoint), so a reader can re-read every event of a
 * transaction that had not finished when it last read. `created_at` becomes the database's time:
 * events are pruned by it, and the platform clock, which the sandbox moves forward, must not make
 * a fresh event look old. Rows already there get this migration's transaction id.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table credential_events add column xid xid8 not null default pg_current_xact_id()`.execute(db)
  await sql`alter table credential_events alter column created_at set default now()`.execute(db)
  await sql`create index credential_events_xid on credential_events (xid)`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index credential_events_xid`.execute(db)
  await sql`alter table credential_events alter column created_at drop default`.execute(db)
  await sql`alter table credential_events drop column xid`.execute(db)
}
