import { type Expression, type Kysely, type Selectable, sql } from 'kysely'
import { platformNow, platformNowPlus } from '../clock/platform-now.js'
import type { DB, NotificationsTable } from '../db/schema.js'
import { tally } from './notification-quota.js'

export type NotificationRow = Omit<Selectable<NotificationsTable>, 'recent_deliveries'>

/** One notification of a delivery. */
export interface NewNotification {
  id: string
  user_uid: string
  title: string
  body: string
  subroute: string
}

/** The columns a reader gets (the quota's state stays in the database). */
const NOTIFICATION_COLUMNS = [
  'id',
  'app_id',
  'user_id',
  'user_uid',
  'title',
  'body',
  'subroute',
  'created_at',
  'seen_at',
  'dismissed_at',
] as const

export function notificationsRepo(db: Kysely<DB>) {
  return {
    /**
     * Delivers a batch in one statement, notify_deliver (migration 0007): it locks the reachable
     * recipients (members who consented and did not turn the app's notifications off), reads
     * each one's quota state, and inserts every notification to them unless one would go over
     * the quota. Returns the reachable recipients (uids), each with whether it is over; when
     * any is, nothing was inserted.
     */
    async deliver(
      appId: string,
      batch: readonly NewNotification[],
      options: { scope: string; windowMs: number; limit: number },
    ): Promise<Array<{ recipient: string; over_quota: boolean }>> {
      const { recipients, counts, firsts } = tally(batch.map((n) => n.user_uid))
      // Locks are taken in this order in every process (code-unit order), so requests never deadlock.
      const order = recipients.map((_, i) => i).sort((a, b) => ((recipients[a] ?? '') < (recipients[b] ?? '') ? -1 : 1))
      const column = <K extends keyof NewNotification>(key: K) => batch.map((n) => n[key])
      const result = await sql<{ recipient: string; over_quota: boolean }>`
        select recipient, over_quota from notify_deliver(
          ${appId}, ${options.scope}, ${platformNow}, ${platformNowPlus(-options.windowMs)}, ${options.limit}::integer,
          ${order.map((i) => recipients[i])}::text[], ${order.map((i) => counts[i])}::integer[],
          ${column('id')}::text[], ${column('user_uid')}::text[], ${column('title')}::text[], ${column('body')}::text[],
          ${column('subroute')}::text[], ${firsts}::boolean[])`.execute(db)
      return result.rows
    },

    /**
     * The user's notifications, newest first, from one app or (appId undefined) every app. Every
     * app is the newest page of each of the user's apps, merged: the one index is per app and
     * user (notify keeps no second index for this sandbox view).
     */
    async listForUser(
      appId: string | undefined,
      userId: string,
      options: { limit: number; before?: { createdAt: Date; id: string } | undefined; includeDismissed: boolean },
    ): Promise<NotificationRow[]> {
      const page = (app: string | Expression<string>) => {
        let query = db.selectFrom('notifications').select(NOTIFICATION_COLUMNS).where('app_id', '=', app).where('user_id', '=', userId)
        if (!options.includeDismissed) query = query.where('dismissed_at', 'is', null)
        const before = options.before
        if (before !== undefined) {
          query = query.where((eb) =>
            eb.or([eb('created_at', '<', before.createdAt), eb.and([eb('created_at', '=', before.createdAt), eb('id', '<', before.id)])]),
          )
        }
        return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(options.limit)
      }
      if (appId !== undefined) return page(appId).execute()
      return db
        .selectFrom('app_users')
        .innerJoinLateral(
          (eb) => page(eb.ref('app_users.app_id')).as('n'),
          (join) => join.onTrue(),
        )
        .selectAll('n')
        .where('app_users.user_id', '=', userId)
        .orderBy('n.created_at', 'desc')
        .orderBy('n.id', 'desc')
        .limit(options.limit)
        .execute()
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
        .returning(NOTIFICATION_COLUMNS)
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
