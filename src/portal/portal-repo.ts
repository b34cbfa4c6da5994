import { type Kysely, sql } from 'kysely'
import type { DB } from '../db/schema.js'

export type MemberRole = 'owner' | 'member'

const APP_COLUMNS = [
  'a.id',
  'a.name',
  'a.network',
  'a.url',
  'a.description',
  'a.icon',
  'a.wallet_address',
  'a.created_at',
  'a.validation_key',
  'a.verified_at',
  'a.verified_by',
  'a.suspended_at',
  'a.request_log',
  'a.listing',
  'a.listing_reason',
  'a.listing_changed_at',
] as const

/** The SQL of the developer portal: apps as their members see them, their keys and members. */
export function portalRepo(db: Kysely<DB>) {
  return {
    /** The app and the user's role in it, or undefined when the user is no member (or there is no such app). */
    async membership(appId: string, userId: string) {
      return db
        .selectFrom('app_members as m')
        .innerJoin('apps as a', 'a.id', 'm.app_id')
        .select(APP_COLUMNS)
        .select('m.role')
        .where('m.app_id', '=', appId)
        .where('m.user_id', '=', userId)
        .executeTakeFirst()
    },

    /** The user's apps, newest first (a developer is a member of at most `limit`). */
    async appsOf(userId: string, limit: number) {
      return db
        .selectFrom('app_members as m')
        .innerJoin('apps as a', 'a.id', 'm.app_id')
        .select(APP_COLUMNS)
        .select('m.role')
        .where('m.user_id', '=', userId)
        .orderBy('a.created_at', 'desc')
        .orderBy('a.id')
        .limit(limit)
        .execute()
    },

    /**
     * Takes the user's row lock, held to the end of the caller's transaction: the owner's apps are
     * counted and one is added under it, so two registrations on any processes cannot both pass the
     * cap. `for no key update` leaves the rows that refer to the user (sessions, payments) unblocked.
     */
    async lockUser(userId: string): Promise<void> {
      await db.selectFrom('users').select('id').where('id', '=', userId).forNoKeyUpdate().execute()
    },

    /**
     * Takes the app's row lock, held to the end of the caller's transaction: its keys and members
     * are counted and added, and its owner changes, one transaction at a time on any process.
     * Answers false when there is no such app.
     */
    async lockApp(appId: string): Promise<boolean> {
      const row = await db.selectFrom('apps').select('id').where('id', '=', appId).forNoKeyUpdate().executeTakeFirst()
      return row !== undefined
    },

    async countAppsOwned(userId: string): Promise<number> {
      const row = await db
        .selectFrom('app_members')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('user_id', '=', userId)
        .where('role', '=', 'owner')
        .executeTakeFirstOrThrow()
      return Number(row.n)
    },

    /** Edits; a new URL clears the verification (the new domain is not proven). Answers the app's columns. */
    async updateApp(
      appId: string,
      changes: { name?: string; url?: string; description?: string; icon?: string | null; request_log?: boolean },
    ) {
      const { url, ...rest } = changes
      return db
        .updateTable('apps')
        .set({
          ...rest,
          ...(url === undefined
            ? {}
            : {
                url,
                verified_at: sql<Date | null>`case when apps.url is not distinct from ${url} then apps.verified_at end`,
                verified_by: sql<'domain' | 'operator' | null>`case when apps.url is not distinct from ${url} then apps.verified_by end`,
              }),
        })
        .where('id', '=', appId)
        .returning(['id', 'url', 'verified_at'])
        .executeTakeFirst()
    },

    /** Marks the app verified if its URL is still the one checked (an edit racing the check wins). */
    async markVerified(appId: string, url: string): Promise<boolean> {
      const result = await db
        .updateTable('apps')
        .set({ verified_at: sql<Date>`now()`, verified_by: 'domain' })
        .where('id', '=', appId)
        .where('url', '=', url)
        .executeTakeFirst()
      return result.numUpdatedRows > 0n
    },

    async keys(appId: string) {
      return db
        .selectFrom('api_keys')
        .select(['id', 'name', 'key_prefix', 'created_at', 'revoked_at', 'last_used_at'])
        .where('app_id', '=', appId)
        .orderBy('created_at', 'desc')
        .orderBy('id')
        .limit(200)
        .execute()
    },

    async countActiveKeys(appId: string): Promise<number> {
      const row = await db
        .selectFrom('api_keys')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('app_id', '=', appId)
        .where('revoked_at', 'is', null)
        .executeTakeFirstOrThrow()
      return Number(row.n)
    },

    async members(appId: string) {
      return db
        .selectFrom('app_members as m')
        .innerJoin('users as u', 'u.id', 'm.user_id')
        .select(['u.username', 'm.role', 'm.added_at'])
        .where('m.app_id', '=', appId)
        .orderBy('m.added_at')
        .orderBy('u.username_key')
        .limit(200)
        .execute()
    },

    async countMembers(appId: string): Promise<number> {
      const row = await db
        .selectFrom('app_members')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('app_id', '=', appId)
        .executeTakeFirstOrThrow()
      return Number(row.n)
    },

    async findUserByName(username: string) {
      return db
        .selectFrom('users')
        .select(['id', 'username', 'roles', 'suspended_at'])
        .where('username_key', '=', username.toLowerCase())
        .executeTakeFirst()
    },

    /** Adds a member unless the user is one already; answers whether it was added. */
    async addMember(appId: string, userId: string): Promise<boolean> {
      const inserted = await db
        .insertInto('app_members')
        .values({ app_id: appId, user_id: userId, role: 'member' })
        .onConflict((oc) => oc.columns(['app_id', 'user_id']).doNothing())
        .returning('user_id')
        .executeTakeFirst()
      return inserted !== undefined
    },

    async removeMember(appId: string, userId: string): Promise<boolean> {
      const removed = await db
        .deleteFrom('app_members')
        .where('app_id', '=', appId)
        .where('user_id', '=', userId)
        .where('role', '=', 'member')
        .executeTakeFirst()
      return removed.numDeletedRows > 0n
    },

    /**
     * The owner becomes a member and the member the owner, in the caller's transaction (one owner at
     * every commit): `not_owner` when `fromUserId` no longer owns the app (another hand-over came
     * first), `not_member` when `toUserId` is no member; nothing is changed then once the caller's
     * transaction rolls back.
     */
    async transferOwnership(appId: string, fromUserId: string, toUserId: string): Promise<'done' | 'not_owner' | 'not_member'> {
      const demoted = await db
        .updateTable('app_members')
        .set({ role: 'member' })
        .where('app_id', '=', appId)
        .where('user_id', '=', fromUserId)
        .where('role', '=', 'owner')
        .executeTakeFirst()
      if (demoted.numUpdatedRows === 0n) return 'not_owner'
      const promoted = await db
        .updateTable('app_members')
        .set({ role: 'owner' })
        .where('app_id', '=', appId)
        .where('user_id', '=', toUserId)
        .where('role', '=', 'member')
        .executeTakeFirst()
      return promoted.numUpdatedRows > 0n ? 'done' : 'not_member'
    },

    /** The platform's user behind a uid of the app, if any user has that uid there. */
    async userOfUid(appId: string, uid: string): Promise<string | undefined> {
      const row = await db.selectFrom('app_users').select('user_id').where('app_id', '=', appId).where('uid', '=', uid).executeTakeFirst()
      return row?.user_id
    },

    async grantRole(userId: string, role: string): Promise<void> {
      await db
        .updateTable('users')
        .set({ roles: sql<string[]>`array(select distinct r from unnest(roles || array[${role}]::text[]) as r order by r)` })
        .where('id', '=', userId)
        .execute()
    },
  }
}
