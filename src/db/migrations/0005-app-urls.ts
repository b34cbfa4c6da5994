import { type Kysely, sql } from 'kysely'

/** Where an app's frontend lives, so the sandbox browser can open it by app. */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table apps add column url text`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table apps drop column url`.execute(db)
}
