import { type Kysely, sql } from 'kysely'

/**
 * Personal access tokens (docs/portal.md, "The portal from the command line"): a developer's
 * credential for the `/portal` API from scripts and the `plinth portal` CLI.
 *
 * - `token_hash`: the SHA-256 of the token; the token itself is shown once and never stored.
 *   `prefix`: its first characters, in clear, so the account's list can name it.
 * - `scope`: `read` (GET and HEAD only) or `write` (what the portal session may do).
 * - `expires_at`: every token expires (1 to 365 days); `revoked_at`: ended by its person or by a
 *   recovery. `last_used_at`: written at most once a minute.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table personal_tokens (
      id text primary key,
      user_id text not null references users (id) on delete cascade,
      name text not null,
      scope text not null check (scope in ('read', 'write')),
      token_hash text not null unique,
      prefix text not null,
      created_at timestamptz not null default now(),
      expires_at timestamptz not null,
      last_used_at timestamptz,
      revoked_at timestamptz
    )`.execute(db)
  await sql`create index personal_tokens_user on personal_tokens (user_id) where revoked_at is null`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table personal_tokens`.execute(db)
}
