import { type Kysely, sql } from 'kysely'

/**
 * A payment's timeline: every move (created, approved, transaction linked and verified,
 * completed, cancelled, expired), written by the statement that makes the move, so the
 * timeline and the payment's state commit together (src/payments/payments-repo.ts).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table payment_events (
      id bigint generated always as identity primary key,
      payment_id text not null references payments (identifier) on delete cascade,
      app_id text not null,
      kind text not null,
      actor text not null,
      actor_id text,
      at timestamptz not null,
      request_id text,
      detail text
    )`.execute(db)
  await sql`create index payment_events_payment on payment_events (payment_id, id)`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table payment_events`.execute(db)
}
