import { type Kysely, sql } from 'kysely'
import { platformNow } from '../clock/platform-now.js'
import type { CursorPosition } from '../core/cursors.js'
import { containsPattern } from '../core/cursors.js'
import type { DB } from '../db/schema.js'

/**
 * The SQL of the sandbox's read-only views (views-routes.ts): apps, users, and each app's keys,
 * ads and notifications. Lists come newest first; a paged list reads one row more than asked so
 * its caller knows whether another page follows.
 */

/** An app's keys and a user's apps are listed whole up to this many (the newest when there are more). */
export const MAX_NESTED_ROWS = 200

/** A row's created_at in microseconds since 1970, exactly: the sort key of the cursors (JavaScript dates keep milliseconds). */
const micros = sql<number>`(extract(epoch from created_at) * 1000000)::bigint`

/** Rows strictly older than the cursor's position, by (created_at, id): the keyset of every paged view. */
const olderThan = (cursor: CursorPosition) => sql<boolean>`(${micros}, id) < (${cursor.n}::bigint, ${cursor.id ?? ''}::text)`

export interface UserFilter {
  /** One user exactly, regardless of case. */
  username?: string | undefined
  /** Usernames that contain it, regardless of case. */
  q?: string | undefined
}

export function viewsRepo(db: Kysely<DB>) {
  return {
    findApp(appId: string) {
      return db.selectFrom('apps').selectAll().where('id', '=', appId).executeTakeFirst()
    },

    /** `limit + 1` apps older than `before`, newest first, each with its sort key (`created_us`). */
    listApps(limit: number, before: CursorPosition | undefined) {
      let query = db.selectFrom('apps').selectAll().select(micros.as('created_us'))
      if (before !== undefined) query = query.where(olderThan(before))
      return query
        .orderBy(micros, 'desc')
        .orderBy('id', 'desc')
        .limit(limit + 1)
        .execute()
    },

    async countApps(): Promise<number> {
      const row = await db.selectFrom('apps').select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow()
      return row.n
    },

    /** The app's newest `MAX_NESTED_ROWS` keys, oldest first. */
    async listAppKeys(appId: string) {
      const rows = await db
        .selectFrom('api_keys')
        .selectAll()
        .where('app_id', '=', appId)
        .orderBy('created_at', 'desc')
        .limit(MAX_NESTED_ROWS)
        .execute()
      return rows.reverse()
    },

    /** `limit + 1` matching users older than `before`, newest first, and how many match on every page. */
    async listUsers(filter: UserFilter, limit: number, before: CursorPosition | undefined) {
      let matching = db.selectFrom('users')
      if (filter.username !== undefined) matching = matching.where('username_key', '=', filter.username.toLowerCase())
      if (filter.q !== undefined) matching = matching.where('username_key', 'like', containsPattern(filter.q))
      let query = matching.select(['id', 'username', 'wallet_address', 'created_at', micros.as('created_us')])
      if (before !== undefined) query = query.where(olderThan(before))
      const [rows, count] = await Promise.all([
        query
          .orderBy(micros, 'desc')
          .orderBy('id', 'desc')
          .limit(limit + 1)
          .execute(),
        matching.select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow(),
      ])
      return { rows, total: count.n }
    },

    findUser(userId: string) {
      return db.selectFrom('users').select(['id', 'username', 'wallet_address', 'created_at']).where('id', '=', userId).executeTakeFirst()
    },

    /** The newest `MAX_NESTED_ROWS` apps the user signed in to, oldest first, with the consent given to each. */
    async listMemberships(userId: string) {
      const rows = await db
        .selectFrom('app_users as au')
        .innerJoin('apps as a', 'a.id', 'au.app_id')
        .select(['au.app_id', 'a.name', 'au.uid', 'au.scopes', 'au.notifications_enabled'])
        .where('au.user_id', '=', userId)
        .orderBy('au.created_at', 'desc')
        .limit(MAX_NESTED_ROWS)
        .execute()
      return rows.reverse()
    },

    /**
     * The app's newest ads. A verdict that fell due is shown as GET /v2/ads_network/status/{adId}
     * would answer it, but not written: no GET changes state (docs/security.md, "Requests from
     * other sites").
     */
    listAds(appId: string, limit: number) {
      const due = sql<boolean>`(ad.mediator_ack_status is null and ad.settles_at <= ${platformNow})`
      return db
        .selectFrom('ads as ad')
        .leftJoin('app_users as au', (join) => join.onRef('au.app_id', '=', 'ad.app_id').onRef('au.user_id', '=', 'ad.user_id'))
        .select([
          'ad.id',
          'ad.user_id',
          'au.uid',
          'ad.mediator_revoked_at',
          'ad.settles_at',
          'ad.created_at',
          sql<string | null>`case when ${due} then ad.settles_to else ad.mediator_ack_status end`.as('mediator_ack_status'),
          sql<Date | null>`case when ${due} and ad.settles_to = 'granted' then ad.settles_at else ad.mediator_granted_at end`.as(
            'mediator_granted_at',
          ),
        ])
        .where('ad.app_id', '=', appId)
        .orderBy('ad.created_at', 'desc')
        .limit(limit)
        .execute()
    },

    listNotifications(appId: string, limit: number) {
      return db.selectFrom('notifications').selectAll().where('app_id', '=', appId).orderBy('created_at', 'desc').limit(limit).execute()
    },
  }
}

export type ViewsRepo = ReturnType<typeof viewsRepo>
