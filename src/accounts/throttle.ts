import { type Kysely, sql } from 'kysely'
import type { ThrottleLimit } from '../config.js'
import type { DB } from '../db/schema.js'

/** `first`: this attempt is the first refused in its window (the one the audit log records). */
export type ThrottleVerdict = { allowed: true } | { allowed: false; retryAfterSeconds: number; first: boolean }

/**
 * Attempts counted in the database (docs/accounts.md, "Throttling"), so that every process
 * agrees: each attempt is one upsert that starts a new window when the key's has passed and adds
 * one otherwise, under the row's lock. Concurrent attempts are serialised on the row, so exactly
 * `limit.attempts` of them in a window are allowed, whichever processes they reach. Time is the
 * database's.
 */
export function signinThrottle(db: Kysely<DB>) {
  return {
    /** Counts an attempt for `key`, and answers whether it is within the limit. */
    async attempt(key: string, limit: ThrottleLimit): Promise<ThrottleVerdict> {
      const window = sql<Date>`make_interval(secs => ${limit.windowSeconds})`
      const { rows } = await sql<{ attempts: number; retry_after: string }>`
        insert into signin_throttle as t (key, window_start, attempts) values (${key}, now(), 1)
        on conflict (key) do update set
          window_start = case when t.window_start + ${window} <= now() then now() else t.window_start end,
          attempts = case when t.window_start + ${window} <= now() then 1 else least(t.attempts + 1, 1000000000) end
        returning attempts, ceil(extract(epoch from (window_start + ${window} - now())))::text as retry_after`.execute(db)
      const row = rows[0]
      if (row === undefined) throw new Error('the throttle upsert answered no row')
      if (row.attempts <= limit.attempts) return { allowed: true }
      return { allowed: false, retryAfterSeconds: Math.max(1, Number(row.retry_after)), first: row.attempts === limit.attempts + 1 }
    },

    /** Forgets the attempts of `key` (a successful sign-in clears its account's count). */
    async clear(key: string): Promise<void> {
      await db.deleteFrom('signin_throttle').where('key', '=', key).execute()
    },

    /** Drops windows that have passed (they would restart at the next attempt anyway). */
    async prune(olderThanSeconds: number): Promise<void> {
      await db
        .deleteFrom('signin_throttle')
        .where('window_start', '<', sql<Date>`now() - make_interval(secs => ${olderThanSeconds})`)
        .execute()
    },
  }
}
