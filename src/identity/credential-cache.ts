import type { Kysely } from 'kysely'
import type { PlatformClock } from '../clock/clock.js'
import type { Authenticator, KeyPrincipal, TokenCheck, TokenPrincipal } from '../core/principals.js'
import type { DB } from '../db/schema.js'
import { sha256Hex } from '../lib/crypto.js'
import { credentialEventsRepo, KEEP_EVENTS_MS, memberSubject, type RevokedCredential } from './credential-events.js'

/**
 * Verified server API keys and access tokens, cached per process so that a request does not
 * need a database round trip to authenticate, without weakening revocation:
 *
 * - Every revocation (a token, a key, a user's consent to an app, an app or a user suspended by an
 *   operator: every token and key of it) writes an event in the
 *   transaction that revokes. The process that revoked drops the entry itself once that
 *   transaction has committed, before it answers; every process reads the feed every `pollMs`.
 * - The feed is read by commit, not by id. Event ids are drawn when a transaction inserts, so
 *   concurrent revocations commit out of id order, and a reader that kept "the last id seen"
 *   would skip an event that committed after a higher id was read. Each event instead carries
 *   its transaction's id (`xid`), and each read is one statement that returns, in one snapshot,
 *   the events with `xid >= horizon` and that snapshot's `pg_snapshot_xmin`: every transaction
 *   with a lower id had finished when the snapshot was taken. The next read starts from it.
 *   Nothing is skipped: an event the read in snapshot S did not see had not committed when S
 *   was taken, so its transaction was running (its id is at least S's xmin) or had no id yet
 *   (ids are handed out in increasing order, so it gets one above every running one); either way
 *   the next read, from S's xmin, returns it once it has committed. Events of a transaction
 *   still running come back on every read until it finishes; ids already applied are skipped.
 * - The cache is used only while its last successful read started under `maxStalenessMs` (1 s)
 *   ago: if the database stops answering the feed, every request goes to the database again.
 *   A read that starts after a revocation commits sees it, so a revocation committed at time T
 *   is honoured everywhere from T + 1 s at the latest.
 * - Expiry is checked on every hit against the platform clock. Every read of the feed also reads
 *   the clock's stored offset (one statement) and hands it to the clock, so a hit is judged on an
 *   offset no staler than the revocations: a token expired by a clock move made on another
 *   process is refused within `maxStalenessMs` too, at once on the process that moved it, and
 *   at once by the database on a miss (identity-service.ts). An entry also lives at most `ttlMs`.
 * - A clock reset (sandbox/world/clock-reset.ts) moves stored expiries back and starts a new clock
 *   epoch: a token entry is used only while the clock's epoch is the one its lookup began in, so
 *   once this process takes the reset (with the feed read, or a refresh) it asks the database again.
 *   A sandbox reset or snapshot restore (sandbox/world/world-service.ts) replaces every credential and
 *   starts a new epoch too: key entries are used only within their lookup's epoch as well.
 * - A lookup that started before an event is applied here and finishes after it is not cached,
 *   so a verification racing a revocation cannot re-insert a revoked credential. Applied events
 *   are numbered here, in the order this process applies them (not by their database id, whose
 *   order is not the commit order): a lookup whose database read saw the credential valid read
 *   before the revocation committed, so before the event could be applied here; if it was
 *   applied before the lookup answers, the lookup is not cached, and if after, it drops the entry.
 * - Unknown or refused credentials are never cached, so the cache cannot be filled from outside
 *   except with valid credentials; it holds at most `maxEntries` of them (oldest dropped first).
 * - Events are pruned `KEEP_EVENTS_MS` (10 min, by the database's clock) after the revoking
 *   transaction began. A process whose reads failed for half that long empties its cache before
 *   serving from it again, since events it has not read may be gone. (A revoking transaction is
 *   two statements; one left open for 10 minutes before it commits could lose its event.)
 */
export interface CredentialCacheOptions {
  db: Kysely<DB>
  clock: Pick<PlatformClock, 'now' | 'observe' | 'epoch'>
  pollMs?: number
  maxStalenessMs?: number
  ttlMs?: number
  maxEntries?: number
  onError?: (error: unknown) => void
  /** Every lookup, answered from the cache or not (GET /metrics). */
  onLookup?: (kind: 'key' | 'token', outcome: 'hit' | 'miss') => void
}

interface Entry<P> {
  principal: P
  cachedAtMs: number
  /** The clock's epoch when the lookup began: a token's expiry is judged on that epoch's clock only. */
  epoch: number
}

export interface CredentialCache {
  authenticator(inner: Authenticator): Authenticator
  /** Starts reading the revocation feed. */
  start(): Promise<void>
  /** Reads the feed now, waiting for a read in flight. */
  sync(): Promise<void>
  /** Drops a credential this process has just revoked; call it after the revoking transaction committed. */
  forget(credential: RevokedCredential): void
  stop(): void
  /** Whether hits are being served (the feed is fresh). */
  fresh(): boolean
  size(): number
}

const PRUNE_EVERY_MS = 60_000
const PAGE = 1000
/** Subjects kept to guard racing lookups before the set is emptied (and lookups in flight are not cached). */
const MAX_RECENT = 10_000

export function createCredentialCache(options: CredentialCacheOptions): CredentialCache {
  const pollMs = options.pollMs ?? 200
  const maxStalenessMs = options.maxStalenessMs ?? 1000
  const ttlMs = options.ttlMs ?? 60_000
  const maxEntries = options.maxEntries ?? 100_000
  const events = credentialEventsRepo(options.db)

  const tokens = new Map<string, Entry<TokenPrincipal>>()
  const keys = new Map<string, Entry<KeyPrincipal>>()
  /** How many revocations this process has applied: the clock of the racing-lookup guard. */
  let applied = 0
  /** Subjects revoked recently, with the value of `applied` when they were, to refuse racing inserts. */
  const recent = new Map<string, number>()
  /** Lookups that started before `recent` was last emptied are not cached. */
  let forgottenBelow = 0
  /** Every event of a transaction with an id at or above this may still be unread. */
  let horizon = 0n
  /** Events read with an xid at or above `horizon` (they come back on every read), by id, with their xid. */
  const seen = new Map<number, bigint>()
  let lastPollStartedMs = Number.NEGATIVE_INFINITY
  let lastPruneMs = Date.now()
  let timer: NodeJS.Timeout | undefined
  let polling = false

  const fresh = () => Date.now() - lastPollStartedMs < maxStalenessMs

  function remember<P>(map: Map<string, Entry<P>>, hash: string, principal: P, startedAt: number, epoch: number, subjects: string[]): void {
    if (startedAt < forgottenBelow) return
    for (const subject of subjects) {
      const revokedAt = recent.get(subject)
      if (revokedAt !== undefined && revokedAt > startedAt) return
    }
    if (map.size >= maxEntries) {
      const oldest = map.keys().next()
      if (!oldest.done) map.delete(oldest.value)
    }
    map.set(hash, { principal, cachedAtMs: Date.now(), epoch })
  }

  /** Drops everything, and lookups in flight will not be cached. */
  function forgetAll(): void {
    tokens.clear()
    keys.clear()
    recent.clear()
    applied += 1
    forgottenBelow = applied
  }

  function apply(event: RevokedCredential): void {
    applied += 1
    if (recent.size >= MAX_RECENT) {
      recent.clear()
      forgottenBelow = applied
    }
    recent.set(event.subject, applied)
    if (event.kind === 'token') tokens.delete(event.subject)
    else if (event.kind === 'key') keys.delete(event.subject)
    else if (event.kind === 'member') {
      for (const [hash, entry] of tokens) {
        if (memberSubject(entry.principal.appId, entry.principal.userId) === event.subject) tokens.delete(hash)
      }
    } else if (event.kind === 'app') {
      for (const [hash, entry] of tokens) if (entry.principal.appId === event.subject) tokens.delete(hash)
      for (const [hash, entry] of keys) if (entry.principal.appId === event.subject) keys.delete(hash)
    } else {
      for (const [hash, entry] of tokens) if (entry.principal.userId === event.subject) tokens.delete(hash)
    }
  }

  /** One read of the feed: every page from `horizon`, then the horizon moves to the first page's snapshot's. */
  async function read(): Promise<void> {
    let next: bigint | undefined
    let afterId = 0
    for (;;) {
      const page = await events.read(horizon, afterId, PAGE)
      options.clock.observe(page.clock)
      // The first page's snapshot is the oldest: later pages see everything it saw, and more.
      next ??= page.horizon
      for (const event of page.events) {
        afterId = event.id
        if (seen.has(event.id)) continue
        seen.set(event.id, event.xid)
        apply(event)
      }
      if (page.events.length < PAGE) break
    }
    if (next > horizon) horizon = next
    for (const [id, xid] of seen) if (xid < horizon) seen.delete(id)
  }

  async function poll(): Promise<void> {
    if (polling) return
    polling = true
    const startedMs = Date.now()
    try {
      await read()
      // Reads failed for long enough that events this process never read may have been pruned.
      if (startedMs - lastPollStartedMs > KEEP_EVENTS_MS / 2) forgetAll()
      lastPollStartedMs = startedMs
      if (startedMs - lastPruneMs > PRUNE_EVERY_MS) {
        lastPruneMs = startedMs
        await events.prune()
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
          // A sandbox reset or restore starts a new clock epoch and replaces every key: entries of an older one are not used.
          if (usable(hit) && hit.epoch === options.clock.epoch()) {
            options.onLookup?.('key', 'hit')
            return hit.principal
          }
          options.onLookup?.('key', 'miss')
          const startedAt = applied
          const epoch = options.clock.epoch()
          const checked = await inner.verifyApiKey(key)
          if (typeof checked === 'object') remember(keys, hash, checked, startedAt, epoch, [hash, checked.appId])
          return checked
        },
        async verifyAccessToken(token): Promise<TokenCheck> {
          const hash = sha256Hex(token)
          const hit = tokens.get(hash)
          // A clock reset (a new epoch) moved expiries back: entries cached before it are not used.
          if (usable(hit) && hit.epoch === options.clock.epoch()) {
            options.onLookup?.('token', 'hit')
            return hit.principal.expiresAt.getTime() <= options.clock.now().getTime() ? 'expired' : hit.principal
          }
          options.onLookup?.('token', 'miss')
          const startedAt = applied
          const epoch = options.clock.epoch()
          const checked = await inner.verifyAccessToken(token)
          if (typeof checked === 'object') {
            const subjects = [hash, memberSubject(checked.appId, checked.userId), checked.appId, checked.userId]
            remember(tokens, hash, checked, startedAt, epoch, subjects)
          }
          return checked
        },
      }
    },

    async start() {
      forgetAll()
      seen.clear()
      horizon = await events.horizon()
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

    forget: apply,
    fresh,
    size: () => tokens.size + keys.size,
  }
}
