import { type Kysely, type Selectable, sql } from 'kysely'
import type { DB, NotificationsTable } from '../db/schema.js'

export type NotificationRow = Selectable<NotificationsTable>

export interface Recipient {
  user_id: string
  uid: string
  scopes: string[]
  notifications_enabled: boolean
}

export function notificationsRepo(db: Kysely<DB>) {
  return {
    /**
     * The app's members with these uids, locked in a fixed order: concurrent notify requests to
     * the same users queue here, so counting and inserting below is exact on any number of processes.
     */
    async lockRecipients(appId: string, uids: string[]): Promise<Recipient[]> {
      if (uids.length === 0) return []
      // NO KEY UPDATE: enough to queue notify requests, without blocking inserts that reference the member.
      return db
        .selectFrom('app_users')
        .select(['user_id', 'uid', 'scopes', 'notifications_enabled'])
        .where('app_id', '=', appId)
        .where('uid', 'in', uids)
        .orderBy('user_id')
        .forNoKeyUpdate()
        .execute()
    },

    /** How many notifications the app delivered to each of these users since `since`. */
    async countSince(appId: string, userIds: string[], since: Date): Promise<Map<string, number>> {
      if (userIds.length === 0) return new Map()
      const rows = await db
        .selectFrom('notifications')
        .select(['user_id', sql<number>`count(*)::int`.as('count')])
        .where('app_id', '=', appId)
        .where('user_id', 'in', userIds)
        .where('created_at', '>', since)
        .groupBy('user_id')
        .execute()
      return new Map(rows.map((row) => [row.user_id, Number(row.count)]))
    },

    /** One INSERT for the whole batch. */
    async insertMany(rows: Array<Omit<NotificationRow, 'seen_at' | 'dismissed_at'>>): Promise<void> {
      if (rows.length > 0) await db.insertInto('notifications').values(rows).execute()
    },

    async listForUser(
      appId: string | undefined,
      userId: string,
      options: { limit: number; before?: { createdAt: Date; id: string } | undefined; includeDismissed: boolean },
    ): Promise<NotificationRow[]> {
      let query = db.selectFrom('notifications').selectAll().where('user_id', '=', userId)
      if (appId !== undefined) query = query.where('app_id', '=', appId)
      if (!options.includeDismissed) query = query.where('dismissed_at', 'is', null)
      const before = options.before
      if (before !== undefined) {
        query = query.where((eb) =>
          eb.or([eb('created_at', '<', before.createdAt), eb.and([eb('created_at', '=', before.createdAt), eb('id', '<', before.id)])]),
        )
      }
      return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(options.limit).execute()
    },

    async countUnseen(appId: string, userId: string): Promise<number> {
      const row = await db
        .selectFrom('notifications')
        .select(sql<number>`count(*)::int`.as('count'))
        .where('app_id', '=', appId)
        .where('user_id', '=', userId)
        .where('seen_at', 'is', null)
        .where('dismissed_at', 'is', null)
        .executeTakeFirstOrThrow()
      return Number(row.count)
    },

    /** Sets seen_at (and dismissed_at for a dismissal) unless already set: the first time stands. */
    async mark(id: string, appId: string, userId: string, what: 'seen' | 'dismissed', now: Date): Promise<NotificationRow | undefined> {
      return db
        .updateTable('notifications')
        .set(
          what === 'seen'
            ? { seen_at: sql<Date>`coalesce(seen_at, ${now})` }
            : { seen_at: sql<Date>`coalesce(seen_at, ${now})`, dismissed_at: sql<Date>`coalesce(dismissed_at, ${now})` },
        )
        .where('id', '=', id)
        .where('app_id', '=', appId)
        .where('user_id', '=', userId)
        .returningAll()
        .executeTakeFirst()
    },

    async setEnabled(appId: string, userId: string, enabled: boolean): Promise<void> {
      await db
        .updateTable('app_users')
        .set({ notifications_enabled: enabled })
        .where('app_id', '=', appId)
        .where('user_id', '=', userId)
        .execute()
    },

    async isEnabled(appId: string, userId: string): Promise<boolean> {
      const row = await db
        .selectFrom('app_users')
        .select('notifications_enabled')
        .where('app_id', '=', appId)
        .where('user_id', '=', userId)
        .executeTakeFirst()
      return row?.notifications_enabled ?? false
    },
  }
}
