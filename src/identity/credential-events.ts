import type { Kysely } from 'kysely'
import type { DB } from '../db/schema.js'

export type CredentialEventKind = 'token' | 'key' | 'member'

export interface CredentialEvent {
  id: number
  kind: CredentialEventKind
  subject: string
}

export const memberSubject = (appId: string, userId: string): string => `${appId}:${userId}`

/** The revocation feed: written in the transaction that revokes, read by every process's cache. */
export function credentialEventsRepo(db: Kysely<DB>) {
  return {
    async record(kind: CredentialEventKind, subject: string, at: Date): Promise<void> {
      await db.insertInto('credential_events').values({ kind, subject, created_at: at }).execute()
    },

    /**
     * The events after `lastId`, and the platform clock's stored offset read by the same
     * statement: a cache that serves credentials only while this read is fresh then checks
     * their expiry on a clock no staler than its revocations.
     */
    async since(lastId: number, limit: number): Promise<{ events: CredentialEvent[]; clockOffsetMs: number }> {
      const rows = await db
        .selectFrom('platform_clock as c')
        .leftJoinLateral(
          (eb) =>
            eb
              .selectFrom('credential_events')
              .select(['id', 'kind', 'subject'])
              .where('id', '>', lastId)
              .orderBy('id')
              .limit(limit)
              .as('e'),
          (join) => join.onTrue(),
        )
        .select(['c.offset_ms', 'e.id', 'e.kind', 'e.subject'])
        .where('c.id', '=', 1)
        .orderBy('e.id')
        .execute()
      const events: CredentialEvent[] = []
      for (const row of rows) {
        if (row.id !== null && row.kind !== null && row.subject !== null) {
          events.push({ id: Number(row.id), kind: row.kind, subject: row.subject })
        }
      }
      return { events, clockOffsetMs: Number(rows[0]?.offset_ms ?? 0) }
    },

    async lastId(): Promise<number> {
      const row = await db
        .selectFrom('credential_events')
        .select((eb) => eb.fn.max('id').as('id'))
        .executeTakeFirst()
      return row?.id === null || row?.id === undefined ? 0 : Number(row.id)
    },

    async prune(before: Date): Promise<void> {
      await db.deleteFrom('credential_events').where('created_at', '<', before).execute()
    },
  }
}
