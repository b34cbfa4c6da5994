import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table payments (
      identifier text primary key,
      app_id text not null references apps (id),
      user_id text not null references users (id),
      user_uid text not null,
      direction text not null check (direction in ('user_to_app', 'app_to_user')),
      amount numeric(20, 7) not null check (amount > 0),
      memo text not null,
      metadata jsonb not null,
      from_address text not null,
      to_address text not null,
      network text not null check (network in ('Pi Network', 'Pi Testnet')),
      created_at timestamptz not null,
      developer_approved boolean not null default false,
      approved_at timestamptz,
      developer_completed boolean not null default false,
      completed_at timestamptz,
      cancelled boolean not null default false,
      user_cancelled boolean not null default false,
      cancelled_at timestamptz,
      txid text unique,
      tx_verified boolean,
      tx_linked_at timestamptz,
      check ((txid is null) = (tx_verified is null)),
      check (not (developer_completed and (cancelled or user_cancelled))),
      check (not developer_completed or (txid is not null and tx_verified))
    )`.execute(db)
  // The platform's one-open-payment rules, as a constraint: a user has at most one open payment
  // per app and direction, whatever races the processes run.
  await sql`
    create unique index payments_one_open on payments (app_id, user_id, direction)
    where not developer_completed and not cancelled and not user_cancelled`.execute(db)
  await sql`create index payments_app_incomplete on payments (app_id, created_at) where direction = 'app_to_user' and not developer_completed and not cancelled`.execute(
    db,
  )
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table payments`.execute(db)
}
