import { type Kysely, sql } from 'kysely'

/**
 * Production accounts (docs/accounts.md):
 *
 * - `users.password_hash`: the argon2id hash (PHC string) of the user's password; null for a user
 *   with none (every sandbox user). `users.roles`: `operator`, `developer`.
 * - `account_sessions`: a signed-in browser. Only the SHA-256 of the session token is kept; a
 *   session ends at `expires_at` (its absolute lifetime), after its idle timeout without use
 *   (`last_seen_at`), or when revoked. Every request reads it here, so an end holds on every
 *   process at once.
 * - `account_passkeys`: WebAuthn credentials (passkeys): the credential id and COSE public key
 *   (base64url), the signature counter, the transports. `webauthn_challenges`: each ceremony's
 *   challenge, used once, for five minutes.
 * - `signin_throttle`: attempts per key (an account, a client address) in the current window,
 *   counted by one upsert so that every process agrees on the count.
 * - `apps.owner_user_id`: the developer who owns an app (null for sandbox apps).
 * - `audit_log`: what operators and the `plinth admin` commands did, each record chained to the one
 *   before by a SHA-256 (`prev_hash`, `hash`), so that an edit or a removal shows.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table users add column password_hash text`.execute(db)
  await sql`alter table users add column roles text[] not null default '{}'`.execute(db)
  await sql`alter table apps add column owner_user_id text references users (id)`.execute(db)
  await sql`create index apps_owner on apps (owner_user_id) where owner_user_id is not null`.execute(db)

  await sql`
    create table account_sessions (
      id text primary key,
      token_hash text not null unique,
      user_id text not null references users (id) on delete cascade,
      created_at timestamptz not null default now(),
      last_seen_at timestamptz not null default now(),
      expires_at timestamptz not null,
      revoked_at timestamptz
    )`.execute(db)
  await sql`create index account_sessions_user on account_sessions (user_id) where revoked_at is null`.execute(db)

  await sql`
    create table account_passkeys (
      id text primary key,
      user_id text not null references users (id) on delete cascade,
      public_key text not null,
      counter bigint not null default 0,
      transports text[] not null default '{}',
      name text not null,
      created_at timestamptz not null default now(),
      last_used_at timestamptz
    )`.execute(db)
  await sql`create index account_passkeys_user on account_passkeys (user_id)`.execute(db)
  await sql`
    create table webauthn_challenges (
      challenge text primary key,
      purpose text not null check (purpose in ('register', 'signin')),
      user_id text references users (id) on delete cascade,
      expires_at timestamptz not null
    )`.execute(db)

  await sql`
    create table signin_throttle (
      key text primary key,
      window_start timestamptz not null,
      attempts integer not null check (attempts > 0)
    )`.execute(db)

  await sql`
    create table audit_log (
      id bigserial primary key,
      at timestamptz not null default now(),
      actor text not null,
      action text not null,
      target text,
      details jsonb not null default '{}',
      prev_hash text not null,
      hash text not null unique
    )`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['audit_log', 'signin_throttle', 'webauthn_challenges', 'account_passkeys', 'account_sessions'])
    await sql`drop table ${sql.table(table)}`.execute(db)
  await sql`alter table apps drop column owner_user_id`.execute(db)
  await sql`alter table users drop column roles`.execute(db)
  await sql`alter table users drop column password_hash`.execute(db)
}
