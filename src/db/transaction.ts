import type { Kysely } from 'kysely'
import type { DB } from './schema.js'

/**
 * Runs `fn` in a transaction, or inside the caller's transaction when `db` already is one,
 * so a use case can be composed into a larger atomic unit (the demo seed, for one).
 */
export function inTransaction<T>(db: Kysely<DB>, fn: (trx: Kysely<DB>) => Promise<T>): Promise<T> {
  return db.isTransaction ? fn(db) : db.transaction().execute(fn)
}
