import type { SessionEnd } from '../core/principals.js'

/** What the database knows of a session that is no longer live, read by its token's hash. */
export interface EndedSession {
  now: Date
  last_seen_at: Date
  expires_at: Date
  revoked_at: Date | null
  suspended_at: Date | null
}

/**
 * Why a session ended: the first of the events that ended it (an idle session later signed out
 * everywhere ended idle). Told only to the browser holding the session's own token, which was
 * signed in as that person: it learns nothing a stranger could not, since a random token matches
 * no session (docs/security.md, V3).
 */
export function sessionEnd(row: EndedSession, idleSeconds: number): SessionEnd | undefined {
  const now = row.now.getTime()
  const ends: Array<[SessionEnd, number]> = [
    ['idle', row.last_seen_at.getTime() + idleSeconds * 1000],
    ['expired', row.expires_at.getTime()],
  ]
  // A revocation or a suspension ends the session whatever its stamp says (at the latest now). A
  // suspension revokes the user's sessions in its own transaction, at the same instant: it is
  // listed first, so it wins the tie.
  if (row.suspended_at !== null) ends.push(['suspended', Math.min(row.suspended_at.getTime(), now)])
  if (row.revoked_at !== null) ends.push(['signed_out', Math.min(row.revoked_at.getTime(), now)])
  let first: [SessionEnd, number] | undefined
  for (const end of ends) if (end[1] <= now && (first === undefined || end[1] < first[1])) first = end
  return first?.[0]
}
