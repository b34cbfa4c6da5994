import { type Kysely, sql } from 'kysely'

/**
 * A refused server API key is written to its app's request log when the app can be told safely
 * (docs/api.md, "The request log"): by its clear prefix, which every wrong key now looks up. Without
 * this index each refusal would read the whole api_keys table.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create index api_keys_key_prefix on api_keys (key_prefix)`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index api_keys_key_prefix`.execute(db)
}
