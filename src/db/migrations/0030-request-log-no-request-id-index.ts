import { type Kysely, sql } from 'kysely'

/**
 * The request log's `request_id` index goes (issue #40): every logged call paid for it (random
 * UUIDs land on a random leaf page, about 3.7 µs of PostgreSQL's CPU a row), and the lookups it
 * served are rare and bounded without it. The support lookup and a replay's own entry read one
 * app's rows, found by `request_log_app_id` (retention keeps at most 10,000 an app); the sandbox
 * console's search by request id reads the table, which retention keeps small (docs/design.md,
 * "Request log").
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`drop index if exists request_log_request_id`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`create index request_log_request_id on request_log (request_id)`.execute(db)
}
