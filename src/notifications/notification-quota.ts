/** An app may deliver this many notifications to one user in any 24 hours. */
export const QUOTA_PER_USER = 48
export const QUOTA_WINDOW_MS = 24 * 60 * 60 * 1000

/**
 * The quota, as notify keeps it (in SQL: notify_deliver, migration 0007; docs/notifications.md):
 *
 * - Only delivered notifications count; an undelivered one (no consent, turned off, unknown uid)
 *   takes nothing.
 * - A request that would take any recipient over the quota delivers nothing, and the refusal
 *   names every such recipient.
 * - A recipient's state is the times of their QUOTA_PER_USER most recent deliveries from the
 *   app, ascending. Delivering n more is allowed when the times after `now - QUOTA_WINDOW_MS`
 *   plus n stay within QUOTA_PER_USER: exactly the count over every delivery, since more than
 *   QUOTA_PER_USER in the window would already refuse any n. Dropping by count, never by age,
 *   keeps it exact for a process whose clock lags another's.
 * - A delivery's time never goes back for a recipient: a process whose clock lags the
 *   recipient's newest delivery stamps that time instead, so the newest rows carry the state.
 */

/** What one request delivers to each recipient: how many, and the first of them, which carries the state. */
export interface Tally {
  /** Recipients in order of their first notification in the request. */
  recipients: string[]
  /** Notifications per recipient, in the order of `recipients`. */
  counts: number[]
  /** Per notification: whether it is its recipient's first in the request. */
  firsts: boolean[]
}

export function tally(recipientOf: readonly string[]): Tally {
  const index = new Map<string, number>()
  const recipients: string[] = []
  const counts: number[] = []
  const firsts: boolean[] = []
  for (const recipient of recipientOf) {
    const at = index.get(recipient)
    if (at === undefined) {
      index.set(recipient, recipients.length)
      recipients.push(recipient)
      counts.push(1)
      firsts.push(true)
    } else {
      counts[at] = (counts[at] ?? 0) + 1
      firsts.push(false)
    }
  }
  return { recipients, counts, firsts }
}
