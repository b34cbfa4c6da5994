import { type Kysely, sql } from 'kysely'

/**
 * Re-authentication (docs/accounts.md, "Re-authentication"):
 *
 * - `account_sessions.reauthenticated_at`: when the session last proved its person again (the
 *   password or a passkey, a sign-in included). Adding a passkey needs it within five minutes.
 *   Sessions begun before this migration have none: they re-authenticate before adding a passkey.
 * - `webauthn_challenges.purpose` takes `reauthenticate`: a passkey ceremony of a signed-in
 *   session, bound to its account, distinct from a sign-in's challenge.
 *
 * `account_passkeys.last_used_at` exists since 0016.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table account_sessions add column reauthenticated_at timestamptz`.execute(db)
  await sql`alter table webauthn_challenges drop constraint webauthn_challenges_purpose_check`.execute(db)
  await sql`
    alter table webauthn_challenges add constraint webauthn_challenges_purpose_check
      check (purpose in ('register', 'signin', 'reauthenticate'))`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`delete from webauthn_challenges where purpose = 'reauthenticate'`.execute(db)
  await sql`alter table webauthn_challenges drop constraint webauthn_challenges_purpose_check`.execute(db)
  await sql`alter table webauthn_challenges add constraint webauthn_challenges_purpose_check check (purpose in ('register', 'signin'))`.execute(
    db,
  )
  await sql`alter table account_sessions drop column reauthenticated_at`.execute(db)
}
