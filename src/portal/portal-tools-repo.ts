import { type Kysely, sql } from 'kysely'
import { type CursorPosition, containsPattern } from '../core/cursors.js'
import type { DB } from '../db/schema.js'

/**
 * The SQL of the portal's tools (portal-tools-routes.ts) that no other domain already has: an
 * app's last errors and the users who granted it, as the app sees them.
 */

/** A grant's created_at in microseconds since 1970, exactly: the users list's sort key. */
const micros = sql<number>`(extract(epoch from au.created_at) * 1000000)::bigint`

export function portalToolsRepo(db: Kysely<DB>) {
  return {
    /** The app's newest `limit` request-log entries that answered 4xx or 5xx. */
    lastErrors(appId: string, limit: number) {
      return db
        .selectFrom('request_log')
        .select(['id', 'at', 'method', 'path', 'route', 'status', 'error_code', 'request_id'])
        .where('app_id', '=', appId)
        .where('status', '>=', 400)
        .orderBy('id', 'desc')
        .limit(limit)
        .execute()
    },

    /**
     * `limit + 1` users who granted the app, newest grant first, older than `before`: by their uid
     * exactly or, where they granted the `username` scope, part of their username.
     */
    listUsers(appId: string, q: string | undefined, limit: number, before: CursorPosition | undefined) {
      let query = db
        .selectFrom('app_users as au')
        .innerJoin('users as u', 'u.id', 'au.user_id')
        .select(['au.uid', 'au.scopes', 'au.created_at', 'u.username', micros.as('created_us')])
        .where('au.app_id', '=', appId)
      if (q !== undefined) {
        query = query.where((eb) =>
          eb.or([
            eb('au.uid', '=', q),
            eb.and([eb(sql`'username'`, '=', sql`any(au.scopes)`), eb('u.username_key', 'like', containsPattern(q))]),
          ]),
        )
      }
      if (before !== undefined) query = query.where(sql<boolean>`(${micros}, au.uid) < (${before.n}::bigint, ${before.id ?? ''}::text)`)
      return query
        .orderBy(micros, 'desc')
        .orderBy('au.uid', 'desc')
        .limit(limit + 1)
        .execute()
    },
  }
}
