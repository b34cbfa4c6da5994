import { type Kysely, sql } from 'kysely'
import type { ClockReading } from '../clock/clock.js'
import type { DB } from '../db/schema.js'

export type CredentialEventKind = 'token' | 'key' | 'member' | 'app' | 'user'

/**
 * A revoked credential: a token's or key's hash, a membership (`memberSubject`) whose tokens all go,
 * or an app's or a user's id (suspended: every token and key of the app, every token of the user).
 */
export interface RevokedCredential {
  kind: CredentialEventKind
  subject: string
}

export interface CredentialEvent extends RevokedCredential {
  id: number
  /** The id of the transaction that wrote the event (`xid8`). */
  xid: bigint
}

/** One read of the feed: events in one snapshot, and that snapshot's horizon. */
export interface FeedPage {
  events: CredentialEvent[]
  /**
   * `pg_snapshot_xmin` of the snapshot the events were read in: every transaction with a lower
   * id had finished (committed or rolled back) when it was taken.
   */
  horizon: bigint
  /** The platform clock's stored offset and epoch, read in the same snapshot. */
  clock: ClockReading
}

export const memberSubject = (appId: string, userId: string): string => `${appId}:${userId}`

/** How long events are kept, by the database's clock: far longer than any process goes without reading the feed while serving from its cache. */
export const KEEP_EVENTS_MS = 10 * 60_000

/** The revocation feed: written in the transaction that revokes, read by every process's cache. */
export function credentialEventsRepo(db: Kysely<DB>) {
  return {
    /** In the revoking transaction; the row gets that transaction's id and the database's time. */
    async record(credential: RevokedCredential): Promise<void> {
      await db.insertInto('credential_events').values({ kind: credential.kind, subject: credential.subject }).execute()
    },

    /**
     * The events written by transactions with an id at or above `horizon`, with an event id above
     * `afterId` (for paging), oldest id first, and the horizon of the snapshot they were read in:
     * one statement, so one snapshot. The same statement reads the platform clock's stored offset:
     * a cache that serves credentials only while this read is fresh then checks their expiry on a
     * clock no staler than its revocations.
     */
    async read(horizon: bigint, afterId: number, limit: number): Promise<FeedPage> {
      const { rows } = await sql<{
        id: string | null
        kind: CredentialEventKind | null
        subject: string | null
        xid: string | null
        horizon: string
        offset_ms: string
        epoch: number
      }>`
        select e.id, e.kind, e.subject, e.xid::text as xid, s.horizon::text as horizon, s.offset_ms::text as offset_ms, s.epoch
        from (
          select pg_snapshot_xmin(pg_current_snapshot()) as horizon, c.offset_ms, c.epoch from (select offset_ms, epoch from platform_clock where id = 1) c
        ) s
        left join lateral (
          select id, kind, subject, xid from credential_events
          where xid >= cast(${horizon.toString()} as xid8) and id > ${afterId}
          order by id
          limit ${limit}
        ) e on true`.execute(db)
      const first = rows[0]
      if (first === undefined) throw new Error('the feed query answered no row')
      const events: CredentialEvent[] = []
      for (const row of rows) {
        if (row.id === null || row.kind === null || row.subject === null || row.xid === null) continue
        events.push({ id: Number(row.id), kind: row.kind, subject: row.subject, xid: BigInt(row.xid) })
      }
      return { events, horizon: BigInt(first.horizon), clock: { offsetMs: Number(first.offset_ms ?? 0), epoch: Number(first.epoch ?? 0) } }
    },

    /** The horizon of a snapshot taken now (see FeedPage). */
    async horizon(): Promise<bigint> {
      const { rows } = await sql<{ horizon: string }>`select pg_snapshot_xmin(pg_current_snapshot())::text as horizon`.execute(db)
      const row = rows[0]
      if (row === undefined) throw new Error('the horizon query answered no row')
      return BigInt(row.horizon)
    },

    async prune(): Promise<void> {
      await db
        .deleteFrom('credential_events')
        .where('created_at', '<', sql<Date>`now() - make_interval(secs => ${KEEP_EVENTS_MS / 1000})`)
        .execute()
    },
  }
}
