import { type Kysely, sql } from 'kysely'

/**
 * A feed of credential revocations. Every process caches verified keys and tokens for a short
 * while and reads this feed several times a second, so a revocation made by any process takes
 * effect on all of them within a second.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table credential_events (
      id bigserial primary key,
      kind text not null check (kind in ('token', 'key', 'member')),
      subject text not null,
      created_at timestamptz not null
    )`.execute(db)
  await sql`create index credential_events_created on credential_events (created_at)`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table credential_events`.execute(db)
}
