import type { Kysely } from 'kysely'
import type { Clock } from '../clock/clock.js'
import { ApiError } from '../core/errors.js'
import type { TokenPrincipal } from '../core/principals.js'
import type { Scope } from '../core/scopes.js'
import type { DB } from '../db/schema.js'
import { randomToken } from '../lib/crypto.js'
import { QUOTA_PER_USER, QUOTA_WINDOW_MS } from './notification-quota.js'
import { type NotificationRow, notificationsRepo } from './notifications-repo.js'
import type { NotificationInput } from './notify-input.js'

export interface DeliveredNotification {
  id: string
  title: string
  body: string
  user_uid: string
  subroute: string
  seen_at: null
  dismissed_at: null
}

export interface NotificationDTO {
  id: string
  app_id: string
  title: string
  body: string
  user_uid: string
  subroute: string
  created_at: string
  seen_at: string | null
  dismissed_at: string | null
}

/** Raised when a notify request would take users over the quota: nothing of it is delivered. */
export class QuotaExceeded extends Error {
  override name = 'QuotaExceeded'
  constructor(readonly uids: string[]) {
    super(`Notification quota exceeded for users: ${uids.join(', ')}`)
  }
}

/** The scope that lets an app notify the user, and the user's notification centre of that app be read with its token. */
export const NOTIFICATIONS_SCOPE = 'in_app_notifications' satisfies Scope

/** Random characters per notification id: 22 base64url characters, 132 bits. */
const ID_RANDOM_CHARS = 22

/**
 * Ids for one delivery: `ntf_`, the delivery time (milliseconds, 12 hex digits) and 132 random
 * bits. Time first, so a batch's ids go to the end of the primary key's index instead of 256
 * random pages; the randomness comes from one draw per batch.
 */
export function newNotificationIds(at: Date, count: number): string[] {
  const time = at.getTime().toString(16).padStart(12, '0')
  const random = randomToken(Math.ceil((count * ID_RANDOM_CHARS * 6) / 8))
  return Array.from({ length: count }, (_, i) => `ntf_${time}${random.slice(i * ID_RANDOM_CHARS, (i + 1) * ID_RANDOM_CHARS)}`)
}

const toDTO = (row: NotificationRow): NotificationDTO => ({
  id: row.id,
  app_id: row.app_id,
  title: row.title,
  body: row.body,
  user_uid: row.user_uid,
  subroute: row.subroute,
  created_at: row.created_at.toISOString(),
  seen_at: row.seen_at?.toISOString() ?? null,
  dismissed_at: row.dismissed_at?.toISOString() ?? null,
})

/** Newest-first page cursor: the last row's time and id, opaque to clients. */
export function encodeCursor(row: { created_at: Date; id: string }): string {
  return Buffer.from(`${row.created_at.toISOString()}|${row.id}`, 'utf8').toString('base64url')
}

/** A notification id as it appears in a cursor (`ntf_` and base64url characters). */
const CURSOR_ID = /^ntf_[A-Za-z0-9_-]{1,60}$/
/** The times a cursor can hold: a notification's creation time, which every backend stores (PGlite's range is narrower than PostgreSQL's). */
const EARLIEST_CURSOR_TIME = Date.UTC(1970, 0, 1)
const LATEST_CURSOR_TIME = Date.UTC(9999, 11, 31, 23, 59, 59, 999)

/**
 * The cursor's time and id, or undefined unless it is exactly what encodeCursor writes for a
 * time from 1970 to 9999 and a notification id: a date the database cannot store, a NUL, bytes
 * that are not UTF-8, a missing or extra separator are all "not a cursor this API gave out".
 */
export function decodeCursor(cursor: string): { createdAt: Date; id: string } | undefined {
  const parts = Buffer.from(cursor, 'base64url').toString('utf8').split('|')
  if (parts.length !== 2) return undefined
  const [iso = '', id = ''] = parts
  const createdAt = new Date(iso)
  const time = createdAt.getTime()
  if (!(time >= EARLIEST_CURSOR_TIME && time <= LATEST_CURSOR_TIME) || !CURSOR_ID.test(id)) return undefined
  if (encodeCursor({ created_at: createdAt, id }) !== cursor) return undefined
  return { createdAt, id }
}

export function notificationsServiceFactory(deps: { db: Kysely<DB>; clock: Clock }) {
  const { db, clock } = deps
  const repo = notificationsRepo(db)

  async function list(
    appId: string | undefined,
    userId: string,
    options: { limit: number; cursor?: string | undefined; includeDismissed: boolean },
  ) {
    const before = options.cursor === undefined ? undefined : decodeCursor(options.cursor)
    if (options.cursor !== undefined && before === undefined)
      throw new ApiError('invalid_arguments', 'querystring/cursor is not a cursor this API gave out.')
    const rows = await repo.listForUser(appId, userId, { limit: options.limit, before, includeDismissed: options.includeDismissed })
    const last = rows.at(-1)
    return { notifications: rows.map(toDTO), next_cursor: rows.length === options.limit && last !== undefined ? encodeCursor(last) : null }
  }

  return {
    /**
     * Delivers a batch, best effort per user: a notification reaches its recipient only if the
     * uid is a user of this app who granted in_app_notifications and has not turned the app's
     * notifications off. All or nothing on the quota: if any recipient would go over, nothing of
     * the request is delivered. One statement whatever the batch size (notificationsRepo.deliver).
     */
    async notify(appId: string, batch: NotificationInput[]): Promise<DeliveredNotification[]> {
      const now = clock.now()
      const ids = newNotificationIds(now, batch.length)
      const rows = batch.map((n, i) => ({ id: ids[i] ?? '', user_uid: n.user_uid, title: n.title, body: n.body, subroute: n.subroute }))
      // The quota's window is judged on the platform time as stored, in the statement itself: a
      // process that has not yet seen another's clock move counts as that one does.
      const recipients = await repo.deliver(appId, rows, { scope: NOTIFICATIONS_SCOPE, windowMs: QUOTA_WINDOW_MS, limit: QUOTA_PER_USER })
      const over = new Set(recipients.filter((r) => r.over_quota).map((r) => r.recipient))
      if (over.size > 0) throw new QuotaExceeded([...new Set(batch.map((n) => n.user_uid).filter((uid) => over.has(uid)))])
      const reached = new Set(recipients.map((r) => r.recipient))
      return rows
        .filter((row) => reached.has(row.user_uid))
        .map((row) => ({
          id: row.id,
          title: row.title,
          body: row.body,
          user_uid: row.user_uid,
          subroute: row.subroute,
          seen_at: null,
          dismissed_at: null,
        }))
    },

    /** The user's notification centre for this app, newest first. */
    async listForUser(principal: TokenPrincipal, options: { limit: number; cursor?: string | undefined; includeDismissed: boolean }) {
      const [page, unseen] = await Promise.all([
        list(principal.appId, principal.userId, options),
        repo.countUnseen(principal.appId, principal.userId),
      ])
      return { ...page, unseen_count: unseen }
    },

    /** Any user's notifications from every app (the sandbox's view, for tests). */
    async listAllForUser(userId: string, options: { appId?: string | undefined; limit: number; cursor?: string | undefined }) {
      return list(options.appId, userId, { limit: options.limit, cursor: options.cursor, includeDismissed: true })
    },

    async mark(principal: TokenPrincipal, id: string, what: 'seen' | 'dismissed'): Promise<NotificationDTO> {
      const row = await repo.mark(id, principal.appId, principal.userId, what, clock.now())
      if (row === undefined) throw new ApiError('notification_not_found', `No notification ${id}.`)
      return toDTO(row)
    },

    async settings(principal: TokenPrincipal): Promise<{ enabled: boolean }> {
      return { enabled: await repo.isEnabled(principal.appId, principal.userId) }
    },

    async setEnabled(principal: TokenPrincipal, enabled: boolean): Promise<{ enabled: boolean }> {
      await repo.setEnabled(principal.appId, principal.userId, enabled)
      return { enabled }
    },
  }
}

export type NotificationsService = ReturnType<typeof notificationsServiceFactory>
