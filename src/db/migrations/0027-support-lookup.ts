import { type Kysely, sql } from 'kysely'

/**
 * The operator's support lookup (docs/operators.md, "Support lookup"): payments searched across
 * every app, newest first, by a user (their platform id, or their uid with an app) or by an app.
 * Without these, each search would read the whole payments table.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create index payments_newest on payments (created_at desc, identifier desc)`.execute(db)
  await sql`create index payments_user_newest on payments (user_id, created_at desc, identifier desc)`.execute(db)
  await sql`create index payments_app_newest on payments (app_id, created_at desc, identifier desc)`.execute(db)
  await sql`create index payments_user_uid on payments (user_uid)`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const index of ['payments_newest', 'payments_user_newest', 'payments_app_newest', 'payments_user_uid']) {
    await sql`drop index ${sql.id(index)}`.execute(db)
  }
}
