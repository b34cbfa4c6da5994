import { type Kysely, sql } from 'kysely'

/**
 * The audit chain is keyed (docs/operators.md, "Audit log"): each record's `hash` becomes an
 * HMAC-SHA-256 under a subkey of PLINTH_SECRET_KEY, which anyone who can only write the database
 * cannot compute.
 *
 * - `audit_log.mac_version`: 0 for a record whose `hash` is the SHA-256 of before (every record
 *   existing now, and any written by a process still running the old code, the column's default),
 *   1 for a record MACed under the 'plinth audit chain v1' subkey.
 * - The migration runner does not hold the key, so it changes no hash: the first start of the new
 *   code (the server, or any `plinth admin` command) re-keys the chain from its first record after
 *   verifying it, and writes an `audit-rekey` record (src/audit/audit-log.ts, rekey). The partial
 *   index makes "is anything left to re-key?" one index probe at every later start.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table audit_log add column mac_version smallint not null default 0`.execute(db)
  await sql`create index audit_log_unkeyed on audit_log (id) where mac_version = 0`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index audit_log_unkeyed`.execute(db)
  await sql`alter table audit_log drop column mac_version`.execute(db)
}
