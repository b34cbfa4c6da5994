import { type Kysely, type Selectable, sql } from 'kysely'
import type { AppsTable, DB } from '../db/schema.js'

export type AppRow = Selectable<AppsTable>

export function appsRepo(db: Kysely<DB>) {
  return {
    async insertApp(row: AppRow): Promise<void> {
      await db.insertInto('apps').values(row).execute()
    },

    async updateApp(appId: string, changes: { name?: string; url?: string | null }): Promise<AppRow | undefined> {
      return db.updateTable('apps').set(changes).where('id', '=', appId).returningAll().executeTakeFirst()
    },

    async findApp(appId: string): Promise<AppRow | undefined> {
      return db.selectFrom('apps').selectAll().where('id', '=', appId).executeTakeFirst()
    },

    async insertMember(row: { app_id: string; user_id: string; role: 'owner' | 'member' }): Promise<void> {
      await db.insertInto('app_members').values(row).execute()
    },

    async insertKey(row: {
      id: string
      app_id: string
      key_hash: string
      key_prefix: string
      created_at: Date
      name: string
    }): Promise<void> {
      await db.insertInto('api_keys').values(row).execute()
    },

    /** Revokes the key if it is still active; answers the key as it now stands. */
    async revokeKey(
      appId: string,
      keyId: string,
      at: Date,
    ): Promise<{ id: string; key_hash: string; revoked_at: Date | null } | undefined> {
      await db
        .updateTable('api_keys')
        .set({ revoked_at: at })
        .where('id', '=', keyId)
        .where('app_id', '=', appId)
        .where('revoked_at', 'is', null)
        .execute()
      return db
        .selectFrom('api_keys')
        .select(['id', 'key_hash', 'revoked_at'])
        .where('id', '=', keyId)
        .where('app_id', '=', appId)
        .executeTakeFirst()
    },

    async touchKey(keyId: string): Promise<void> {
      await db.updateTable('api_keys').set({ last_used_at: sql<Date>`now()` }).where('id', '=', keyId).execute()
    },

    /** A key by its hash, revoked or not. */
    async findKeyByHash(keyHash: string): Promise<{ id: string; app_id: string } | undefined> {
      return db.selectFrom('api_keys').select(['id', 'app_id']).where('key_hash', '=', keyHash).executeTakeFirst()
    },

    /** Up to `limit` keys (revoked or not) whose clear prefix is `prefix`. */
    async findKeysByPrefix(prefix: string, limit: number): Promise<Array<{ id: string; app_id: string }>> {
      return db.selectFrom('api_keys').select(['id', 'app_id']).where('key_prefix', '=', prefix).limit(limit).execute()
    },

    async findActiveKeyByHash(
      keyHash: string,
    ): Promise<{ id: string; app_id: string; key_hash: string; suspended_at: Date | null } | undefined> {
      return db
        .selectFrom('api_keys as k')
        .innerJoin('apps as a', 'a.id', 'k.app_id')
        .select(['k.id', 'k.app_id', 'k.key_hash', 'a.suspended_at'])
        .where('k.key_hash', '=', keyHash)
        .where('k.revoked_at', 'is', null)
        .executeTakeFirst()
    },
  }
}

export type AppsRepo = ReturnType<typeof appsRepo>

/** Apps (`a`) with their owner's user row (`u`, null for an app without one): the console's lists start here. */
export function appsWithOwner(db: Kysely<DB>) {
  return db
    .selectFrom('apps as a')
    .leftJoin('app_members as m', (join) => join.onRef('m.app_id', '=', 'a.id').on('m.role', '=', 'owner'))
    .leftJoin('users as u', 'u.id', 'm.user_id')
}
