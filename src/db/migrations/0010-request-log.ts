import { type Kysely, sql } from 'kysely'

/**
 * The request log (src/request-log/): one row per /v2 call attributed to an app, written in
 * batches by each process's buffer and pruned in the background (rows per app and age).
 * Bodies are stored redacted and truncated; the Authorization header never is.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table request_log (
      id bigint generated always as identity primary key,
      app_id text not null,
      at timestamptz not null,
      logged_at timestamptz not null default now(),
      method text not null,
      path text not null,
      route text not null,
      operation_id text,
      key_id text,
      user_uid text,
      status integer not null,
      error_code text,
      latency_ms numeric(12, 3) not null,
      request_id text not null,
      request_body text,
      response_body text,
      fault text
    )`.execute(db)
  await sql`create index request_log_app_id on request_log (app_id, id desc)`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table request_log`.execute(db)
}
