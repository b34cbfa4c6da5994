import { type Kysely, sql } from 'kysely'

export async function up(db: Kysely<unknown>): Promise<void> {
  // Rewarded ads that were watched, each with the mediator's verdict on it.
  await sql`
    create table ads (
      id text primary key,
      app_id text not null references apps (id),
      user_id text not null references users (id),
      type text not null check (type in ('rewarded', 'interstitial')),
      mediator_ack_status text check (mediator_ack_status in ('granted', 'revoked', 'failed')),
      mediator_granted_at timestamptz,
      mediator_revoked_at timestamptz,
      settles_to text check (settles_to in ('granted', 'failed')),
      settles_at timestamptz,
      created_at timestamptz not null
    )`.execute(db)
  await sql`create index ads_app_created on ads (app_id, created_at)`.execute(db)

  // What the next ads of an app (user_id '') or of one user in it yield, set through the sandbox.
  await sql`
    create table ad_scripts (
      app_id text not null references apps (id),
      user_id text not null,
      result text not null,
      mediator text not null check (mediator in ('granted', 'failed', 'pending')),
      remaining integer check (remaining is null or remaining >= 0),
      created_at timestamptz not null,
      primary key (app_id, user_id)
    )`.execute(db)

  await sql`
    create table notifications (
      id text primary key,
      app_id text not null references apps (id),
      user_id text not null references users (id),
      user_uid text not null,
      title text not null,
      body text not null,
      subroute text not null,
      created_at timestamptz not null,
      seen_at timestamptz,
      dismissed_at timestamptz
    )`.execute(db)
  // Serves both the 24-hour quota count and the user's newest-first list.
  await sql`create index notifications_app_user_created on notifications (app_id, user_id, created_at desc, id desc)`.execute(db)
  await sql`create index notifications_user_created on notifications (user_id, created_at desc, id desc)`.execute(db)

  await sql`alter table app_users add column notifications_enabled boolean not null default true`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table app_users drop column notifications_enabled`.execute(db)
  await sql`drop table notifications`.execute(db)
  await sql`drop table ad_scripts`.execute(db)
  await sql`drop table ads`.execute(db)
}
