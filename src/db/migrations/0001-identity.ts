import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table platform_clock (
      id smallint primary key default 1 check (id = 1),
      offset_ms double precision not null default 0
    )`.execute(db)
  await sql`insert into platform_clock (id, offset_ms) values (1, 0)`.execute(db)
  await sql`create table platform_meta (key text primary key, value text not null)`.execute(db)

  await sql`
    create table users (
      id text primary key,
      username text not null,
      username_key text not null unique,
      wallet_address text not null unique,
      wallet_seed_enc text not null,
      created_at timestamptz not null
    )`.execute(db)

  await sql`
    create table apps (
      id text primary key,
      name text not null,
      network text not null check (network in ('Pi Network', 'Pi Testnet')),
      wallet_address text not null unique,
      created_at timestamptz not null
    )`.execute(db)

  await sql`
    create table api_keys (
      id text primary key,
      app_id text not null references apps (id),
      key_hash text not null unique,
      key_prefix text not null,
      created_at timestamptz not null,
      revoked_at timestamptz
    )`.execute(db)
  await sql`create index api_keys_app_id on api_keys (app_id)`.execute(db)

  await sql`
    create table app_users (
      app_id text not null references apps (id),
      user_id text not null references users (id),
      uid text not null unique,
      scopes text[] not null,
      created_at timestamptz not null,
      updated_at timestamptz not null,
      primary key (app_id, user_id)
    )`.execute(db)

  await sql`
    create table access_tokens (
      id text primary key,
      token_hash text not null unique,
      app_id text not null references apps (id),
      user_id text not null references users (id),
      scopes text[] not null,
      created_at timestamptz not null,
      expires_at timestamptz not null,
      revoked_at timestamptz,
      foreign key (app_id, user_id) references app_users (app_id, user_id)
    )`.execute(db)
  await sql`create index access_tokens_app_user on access_tokens (app_id, user_id)`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['access_tokens', 'app_users', 'api_keys', 'apps', 'users', 'platform_meta', 'platform_clock']) {
    await sql`drop table ${sql.table(table)}`.execute(db)
  }
}
