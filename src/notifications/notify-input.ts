/**
 * Validation of a notify request, as pure functions. The endpoint keeps the platform's own
 * notify error shape and statuses: 400 over 256 notifications, 422 for anything malformed.
 */

import { unstorableText } from '../lib/text.js'
export const MAX_NOTIFICATIONS_PER_REQUEST = 256
export const MAX_TITLE_LENGTH = 100
export const MAX_BODY_LENGTH = 1000
export const MAX_SUBROUTE_LENGTH = 500
export const MAX_UID_LENGTH = 64

export interface NotificationInput {
  title: string
  body: string
  user_uid: string
  subroute: string
}

export type NotifyCheck = { ok: true; notifications: NotificationInput[] } | { ok: false; status: 400 | 422; message: string }

const FIELDS: Array<[keyof NotificationInput, number]> = [
  ['title', MAX_TITLE_LENGTH],
  ['body', MAX_BODY_LENGTH],
  ['user_uid', MAX_UID_LENGTH],
  ['subroute', MAX_SUBROUTE_LENGTH],
]

export function checkNotifyBody(body: unknown): NotifyCheck {
  const list = typeof body === 'object' && body !== null ? (body as { notifications?: unknown }).notifications : undefined
  if (list === undefined) return { ok: false, status: 422, message: 'notifications is required' }
  if (!Array.isArray(list)) return { ok: false, status: 422, message: 'notifications must be an array' }
  if (list.length === 0) return { ok: false, status: 422, message: 'notifications must not be empty' }
  if (list.length > MAX_NOTIFICATIONS_PER_REQUEST)
    return { ok: false, status: 400, message: 'Maximum 256 notifications allowed per request' }

  const notifications: NotificationInput[] = []
  for (const [index, item] of list.entries()) {
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      return { ok: false, status: 422, message: `notifications[${index}] must be an object` }
    }
    const record = item as Record<string, unknown>
    for (const [field, max] of FIELDS) {
      const value = record[field]
      if (value === undefined || value === null) return { ok: false, status: 422, message: `notifications[${index}].${field} is required` }
      if (typeof value !== 'string') return { ok: false, status: 422, message: `notifications[${index}].${field} must be a string` }
      if (value.length === 0 && field !== 'body')
        return { ok: false, status: 422, message: `notifications[${index}].${field} must not be empty` }
      if (value.length > max)
        return { ok: false, status: 422, message: `notifications[${index}].${field} must be at most ${max} characters` }
      const unstorable = unstorableText(value)
      if (unstorable !== undefined) return { ok: false, status: 422, message: `notifications[${index}].${field} ${unstorable.message}` }
    }
    const subroute = record.subroute as string
    if (!subroute.startsWith('/')) return { ok: false, status: 422, message: `notifications[${index}].subroute must start with /` }
    notifications.push({ title: record.title as string, body: record.body as string, user_uid: record.user_uid as string, subroute })
  }
  return { ok: true, notifications }
}
