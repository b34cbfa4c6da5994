import type { KeyPrincipal } from '../core/principals.js'
import { newSecret } from '../lib/crypto.js'
import { REDACTED } from './redact.js'

/**
 * Replaying a logged call (POST /sandbox/apps/{app_id}/requests/{id}/replay): what can be replayed,
 * and the one-use grant the replay authenticates with. Plinth keeps only a hash of each server API
 * key, so the sandbox cannot send the key itself: the replay is injected into this process with a
 * grant that the authentication stage (src/app/pipeline.ts) reads as the app's key.
 */

/** What of a log entry a replay needs. */
export interface Replayable {
  route: string
  key_id: string | null
  path: string
  query: string | null
  request_body: string | null
}

/**
 * Why an entry cannot be replayed, or undefined when it can. Decided here once (docs/api.md,
 * "Request log"): only /v2 calls made with a server API key, whose path, query and body were
 * stored whole (nothing redacted, nothing cut).
 */
export function replayProblem(entry: Replayable): string | undefined {
  if (!entry.route.startsWith('/v2/')) return `Only /v2 calls are replayed; ${entry.route || 'this call'} is not one.`
  if (entry.key_id === null) {
    return (
      "It was made with a user's access token, which Plinth does not keep: only calls made with a server API key are " +
      'replayed (make the call again from the sandbox browser, or with a token from POST /sandbox/apps/{app_id}/authenticate).'
    )
  }
  if (entry.path.includes(REDACTED) || entry.query?.includes(REDACTED) === true) {
    return 'A secret was redacted from its path or query string: the call cannot be sent again as it was made.'
  }
  const body = entry.request_body
  if (body !== null && (body.includes(REDACTED) || body.endsWith('…') || body.endsWith('…[truncated]'))) {
    return 'Its body was stored redacted or cut (past 8 KiB): the call cannot be sent again as it was made.'
  }
  return undefined
}

/** How long a grant may wait for its one use (ms): the replay uses it at once, in this process. */
const GRANT_MS = 30_000
/** Grants outstanding at once (a replay uses its grant before it answers). */
const MAX_GRANTS = 100

export interface ReplayGrants {
  /** A one-use credential that authenticates as `principal`'s key, in this process, for 30 s. */
  issue(principal: KeyPrincipal): string
  /** The principal of a grant, once: undefined for anything else (then the key is checked as usual). */
  take(credential: string): KeyPrincipal | undefined
}

export function replayGrants(now: () => number = Date.now): ReplayGrants {
  const grants = new Map<string, { principal: KeyPrincipal; until: number }>()
  return {
    issue(principal) {
      const at = now()
      for (const [credential, grant] of grants) if (grant.until <= at) grants.delete(credential)
      if (grants.size >= MAX_GRANTS) throw new Error('too many replays at once')
      const credential = newSecret()
      grants.set(credential, { principal, until: at + GRANT_MS })
      return credential
    },
    take(credential) {
      const grant = grants.get(credential)
      if (grant === undefined) return undefined
      grants.delete(credential)
      return grant.until > now() ? grant.principal : undefined
    },
  }
}
