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

    async since(lastId: number, limit: number): Promise<CredentialEvent[]> {
      const rows = await db
        .selectFrom('credential_events')
        .select(['id', 'kind', 'subject'])
        .where('id', '>', lastId)
        .orderBy('id')
        .limit(limit)
        .execute()
      return rows.map((row) => ({ id: Number(row.id), kind: row.kind, subject: row.subject }))
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
