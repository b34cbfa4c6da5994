/** An app may deliver this many notifications to one user in any 24 hours. */
export const QUOTA_PER_USER = 48
export const QUOTA_WINDOW_MS = 24 * 60 * 60 * 1000

/**
 * The recipients a request would take over the quota: delivered in the window so far plus
 * what this request delivers to them. Only delivered notifications count; an undelivered
 * one (no consent, turned off, unknown uid) takes nothing.
 */
export function overQuota<K>(deliveredInWindow: ReadonlyMap<K, number>, requested: ReadonlyMap<K, number>, limit = QUOTA_PER_USER): K[] {
  const over: K[] = []
  for (const [recipient, count] of requested) {
    if ((deliveredInWindow.get(recipient) ?? 0) + count > limit) over.push(recipient)
  }
  return over
}
