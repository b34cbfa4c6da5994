import { type Kysely, sql } from 'kysely'

/**
 * What the request log's entry page shows beyond the bodies (docs/api.md, "Request log"):
 *
 * - `query`: the query string, redacted as the path is (by name and by shape), at most 1,000 characters.
 * - `request_headers`, `response_headers`: JSON objects of the headers, names lower-cased, each value
 *   redacted (the Authorization header keeps its scheme only, a cookie or any secret-named header
 *   loses its value) and bounded.
 * - `replay_of`: the entry this call replayed (`POST /sandbox/apps/{app_id}/requests/{id}/replay`).
 *
 * Rows written before this migration have none of them (null).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table request_log add column query text`.execute(db)
  await sql`alter table request_log add column request_headers text`.execute(db)
  await sql`alter table request_log add column response_headers text`.execute(db)
  await sql`alter table request_log add column replay_of bigint`.execute(db)
  // The search box finds an entry by its request id (GET /sandbox/search).
  await sql`create index request_log_request_id on request_log (request_id)`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index request_log_request_id`.execute(db)
  await sql`alter table request_log drop column query, drop column request_headers, drop column response_headers, drop column replay_of`.execute(
    db,
  )
}
