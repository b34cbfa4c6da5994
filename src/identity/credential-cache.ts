import type { Kysely } from 'kysely'
import type { PlatformClock } from '../clock/clock.js'
import type { DB } from '../db/schema.js'
import type { Authenticator, KeyPrincipal, TokenCheck, TokenPrincipal } from '../http/auth.js'
import { sha256Hex } from '../lib/crypto.js'
import { type CredentialEvent, credentialEventsRepo, memberSubject } from './credential-events.js'

/**
 * Verified server API keys and access tokens, cached per process so that a request does not
 * need a database round trip to authenticate, without weakening revocation:
 *
 * - Every revocation (a token, a key, a user's consent to an app) writes an event in the
 *   transaction that revokes. Each process reads the feed every `pollMs`; the process that
 *   revoked also drops the entry at once.
 * - The cache is used only while its last successful poll is younger than `maxStalenessMs`
 *   (1 s): if the database stops answering the feed, every request goes to the database again.
 *   So a revocation committed at time T is honoured everywhere from T + 1 s at the latest.
 * - Expiry is checked on every hit against the platform clock. Every read of the feed also reads
 *   the clock's stored offset (one statement) and hands it to the clock, so a hit is judged on an
 *   offset no staler than the revocations: a token expired by a clock move made on another
 *   process is refused within `maxStalenessMs` too, at once on the process that moved it, and
 *   at once by the database on a miss (identity-service.ts). An entry also lives at most `ttlMs`.
 * - A lookup that started before an event and finishes after it is not cached (the event id at
 *   its start is compared), so a verification racing a revocation cannot re-insert a revoked
 *   credential.
 * - Unknown or refused credentials are never cached, so the cache cannot be filled from outside
 *   except with valid credentials; it holds at most `maxEntries` of them (oldest dropped first).
 */
export interface CredentialCacheOptions {
  db: Kysely<DB>
  clock: Pick<PlatformClock, 'now' | 'observeOffsetMs'>
  pollMs?: number
  maxStalenessMs?: number
  ttlMs?: number
  maxEntries?: number
  onError?: (error: unknown) => void
}

interface Entry<P> {
  principal: P
  cachedAtMs: number
}

export interface CredentialCache {
  authenticator(inner: Authenticator): Authenticator
  /** Starts reading the revocation feed. */
  start(): Promise<void>
  /** Reads the feed now (after this process revoked something), waiting for a poll in flight. */
  sync(): Promise<void>
  stop(): void
  /** Whether hits are being served (the feed is fresh). */
  fresh(): boolean
  size(): number
}

const PRUNE_EVERY_MS = 60_000
const KEEP_EVENTS_MS = 10 * 60_000

export function createCredentialCache(options: CredentialCacheOptions): CredentialCache {
  const pollMs = options.pollMs ?? 200
  const maxStalenessMs = options.maxStalenessMs ?? 1000
  const ttlMs = options.ttlMs ?? 60_000
  const maxEntries = options.maxEntries ?? 100_000
  const events = credentialEventsRepo(options.db)

  const tokens = new Map<string, Entry<TokenPrincipal>>()
  const keys = new Map<string, Entry<KeyPrincipal>>()
  /** Subjects revoked recently, with the event id, to refuse racing inserts. */
  const recent = new Map<string, number>()
  let lastEventId = 0
  let lastPollStartedMs = Number.NEGATIVE_INFINITY
  let lastPruneMs = Date.now()
  let timer: NodeJS.Timeout | undefined
  let polling = false

  const fresh = () => Date.now() - lastPollStartedMs < maxStalenessMs

  function remember<P>(map: Map<string, Entry<P>>, hash: string, principal: P, startedAtEvent: number, subjects: string[]): void {
    for (const subject of subjects) {
      const revokedAt = recent.get(subject)
      if (revokedAt !== undefined && revokedAt > startedAtEvent) return
    }
    if (map.size >= maxEntries) {
      const oldest = map.keys().next()
      if (!oldest.done) map.delete(oldest.value)
    }
    map.set(hash, { principal, cachedAtMs: Date.now() })
  }

  function apply(event: CredentialEvent): void {
    recent.set(event.subject, event.id)
    if (event.kind === 'token') tokens.delete(event.subject)
    else if (event.kind === 'key') keys.delete(event.subject)
    else {
      for (const [hash, entry] of tokens) {
        if (memberSubject(entry.principal.appId, entry.principal.userId) === event.subject) tokens.delete(hash)
      }
    }
  }

  async function poll(): Promise<void> {
    if (polling) return
    polling = true
    const startedMs = Date.now()
    try {
      for (;;) {
        const { events: batch, clockOffsetMs } = await events.since(lastEventId, 1000)
        options.clock.observeOffsetMs(clockOffsetMs)
        for (const event of batch) {
          apply(event)
          lastEventId = event.id
        }
        if (batch.length < 1000) break
      }
      lastPollStartedMs = startedMs
      if (recent.size > 10_000) recent.clear()
      if (startedMs - lastPruneMs > PRUNE_EVERY_MS) {
        lastPruneMs = startedMs
        await events.prune(new Date(options.clock.now().getTime() - KEEP_EVENTS_MS))
      }
    } catch (error) {
      options.onError?.(error)
    } finally {
      polling = false
    }
  }

  function usable<P>(entry: Entry<P> | undefined): entry is Entry<P> {
    return entry !== undefined && fresh() && Date.now() - entry.cachedAtMs < ttlMs
  }

  return {
    authenticator(inner) {
      return {
        async verifyApiKey(key) {
          const hash = sha256Hex(key)
          const hit = keys.get(hash)
          if (usable(hit)) return hit.principal
          const startedAtEvent = lastEventId
          const principal = await inner.verifyApiKey(key)
          if (principal !== undefined) remember(keys, hash, principal, startedAtEvent, [hash])
          return principal
        },
        async verifyAccessToken(token): Promise<TokenCheck> {
          const hash = sha256Hex(token)
          const hit = tokens.get(hash)
          if (usable(hit)) {
            return hit.principal.expiresAt.getTime() <= options.clock.now().getTime() ? 'expired' : hit.principal
          }
          const startedAtEvent = lastEventId
          const checked = await inner.verifyAccessToken(token)
          if (checked !== undefined && checked !== 'expired') {
            remember(tokens, hash, checked, startedAtEvent, [hash, memberSubject(checked.appId, checked.userId)])
          }
          return checked
        },
      }
    },

    async start() {
      lastEventId = await events.lastId()
      lastPollStartedMs = Date.now()
      timer = setInterval(() => void poll(), pollMs)
      timer.unref()
    },

    stop() {
      if (timer !== undefined) clearInterval(timer)
      timer = undefined
      lastPollStartedMs = Number.NEGATIVE_INFINITY
    },

    async sync() {
      while (polling) await new Promise((resolve) => setTimeout(resolve, 2))
      await poll()
    },

    fresh,
    size: () => tokens.size + keys.size,
  }
}
