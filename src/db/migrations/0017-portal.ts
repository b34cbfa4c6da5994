import { type Kysely, sql } from 'kysely'

/**
 * The developer portal and the operator's console (docs/portal.md, docs/operators.md):
 *
 * - `app_members`: who may manage an app, as `owner` (exactly one per app) or `member`. It replaces
 *   `apps.owner_user_id` (migration 0016), whose owners become `owner` rows.
 * - `apps.description`, `apps.icon` (a small PNG, JPEG or WebP as a data: URL), shown in the
 *   directory. `apps.validation_key`: what the developer publishes at `/validation-key.txt`;
 *   `apps.verified_at` and `apps.verified_by` (`domain`, the fetch succeeded; `operator`, made by
 *   `plinth admin apps create`): an app is listed, opened and given tokens only once verified. A
 *   sandbox app has no key and needs none. `apps.suspended_at`: an operator suspended it.
 * - `users.suspended_at`: an operator suspended the user.
 * - `apps.request_log`: the app's owner turned its request log on (production, where each app opts in).
 * - `api_keys.name`, `api_keys.last_used_at` (recorded at most once a minute per key and process).
 * - `credential_events.kind` gains `app` and `user`: every token and key of a suspended app, every
 *   token of a suspended user, leaves every process's cache at once (subject: the app's or user's id).
 * - `password_resets`: a one-time link an operator issued (only the token's SHA-256 is kept).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table app_members (
      app_id text not null references apps (id) on delete cascade,
      user_id text not null references users (id) on delete cascade,
      role text not null check (role in ('owner', 'member')),
      added_at timestamptz not null default now(),
      primary key (app_id, user_id)
    )`.execute(db)
  await sql`create unique index app_members_one_owner on app_members (app_id) where role = 'owner'`.execute(db)
  await sql`create index app_members_user on app_members (user_id)`.execute(db)
  await sql`insert into app_members (app_id, user_id, role, added_at)
    select id, owner_user_id, 'owner', created_at from apps where owner_user_id is not null`.execute(db)
  await sql`drop index apps_owner`.execute(db)
  await sql`alter table apps drop column owner_user_id`.execute(db)

  await sql`alter table apps add column description text not null default ''`.execute(db)
  await sql`alter table apps add column icon text`.execute(db)
  await sql`alter table apps add column validation_key text`.execute(db)
  await sql`alter table apps add column verified_at timestamptz`.execute(db)
  await sql`alter table apps add column verified_by text check (verified_by in ('domain', 'operator'))`.execute(db)
  await sql`alter table apps add column suspended_at timestamptz`.execute(db)
  await sql`alter table apps add column request_log boolean not null default false`.execute(db)
  await sql`alter table users add column suspended_at timestamptz`.execute(db)
  await sql`alter table api_keys add column name text not null default ''`.execute(db)
  await sql`alter table api_keys add column last_used_at timestamptz`.execute(db)

  await sql`alter table credential_events drop constraint credential_events_kind_check`.execute(db)
  await sql`alter table credential_events add constraint credential_events_kind_check
    check (kind in ('token', 'key', 'member', 'app', 'user'))`.execute(db)

  await sql`
    create table password_resets (
      token_hash text primary key,
      user_id text not null references users (id) on delete cascade,
      created_by text not null,
      created_at timestamptz not null default now(),
      expires_at timestamptz not null,
      used_at timestamptz
    )`.execute(db)
  await sql`create index password_resets_user on password_resets (user_id)`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop table password_resets`.execute(db)
  await sql`delete from credential_events where kind in ('app', 'user')`.execute(db)
  await sql`alter table credential_events drop constraint credential_events_kind_check`.execute(db)
  await sql`alter table credential_events add constraint credential_events_kind_check check (kind in ('token', 'key', 'member'))`.execute(
    db,
  )
  for (const [table, column] of [
    ['api_keys', 'last_used_at'],
    ['api_keys', 'name'],
    ['users', 'suspended_at'],
    ['apps', 'request_log'],
    ['apps', 'suspended_at'],
    ['apps', 'verified_by'],
    ['apps', 'verified_at'],
    ['apps', 'validation_key'],
    ['apps', 'icon'],
    ['apps', 'description'],
  ] as const)
    await sql`alter table ${sql.table(table)} drop column ${sql.ref(column)}`.execute(db)
  await sql`alter table apps add column owner_user_id text references users (id)`.execute(db)
  await sql`update apps set owner_user_id = m.user_id from app_members m where m.app_id = apps.id and m.role = 'owner'`.execute(db)
  await sql`create index apps_owner on apps (owner_user_id) where owner_user_id is not null`.execute(db)
  await sql`drop table app_members`.execute(db)
}
