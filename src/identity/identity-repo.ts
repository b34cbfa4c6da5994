import { type Insertable, type Kysely, type Selectable, sql } from 'kysely'
import { platformNow } from '../clock/platform-now.js'
import type { AccessTokensTable, DB, UsersTable } from '../db/schema.js'

export type UserRow = Selectable<UsersTable>

export interface TokenRecord {
  id: string
  token_hash: string
  app_id: string
  user_id: string
  scopes: string[]
  expires_at: Date
  revoked_at: Date | null
  uid: string
  username: string
  /** Whether `expires_at` has passed on the platform clock as stored, judged by the same statement. */
  expired: boolean
  /** When an operator suspended the user, or the token's app (migration 0017). */
  user_suspended_at: Date | null
  app_suspended_at: Date | null
}

export function identityRepo(db: Kysely<DB>) {
  return {
    /** Inserts the user unless the username (case-insensitively) is taken; answers whether it was inserted. */
    async insertUser(row: Insertable<UsersTable>): Promise<boolean> {
      const inserted = await db
        .insertInto('users')
        .values(row)
        .onConflict((oc) => oc.column('username_key').doNothing())
        .returning('id')
        .executeTakeFirst()
      return inserted !== undefined
    },

    async findUser(userId: string): Promise<UserRow | undefined> {
      return db.selectFrom('users').selectAll().where('id', '=', userId).executeTakeFirst()
    },

    /**
     * Records consent: the user's membership in the app is created with a fresh uid on the
     * first grant, and later grants add to the scopes already given. One statement, so two
     * concurrent first grants still end with one uid.
     */
    async grantConsent(input: {
      appId: string
      userId: string
      newUid: string
      scopes: string[]
      at: Date
    }): Promise<{ uid: string; scopes: string[] }> {
      return db
        .insertInto('app_users')
        .values({
          app_id: input.appId,
          user_id: input.userId,
          uid: input.newUid,
          scopes: input.scopes,
          created_at: input.at,
          updated_at: input.at,
        })
        .onConflict((oc) =>
          oc.columns(['app_id', 'user_id']).doUpdateSet({
            scopes: sql<string[]>`array(select distinct s from unnest(app_users.scopes || excluded.scopes) as s order by s)`,
            updated_at: (eb) => eb.ref('excluded.updated_at'),
          }),
        )
        .returning(['uid', 'scopes'])
        .executeTakeFirstOrThrow()
    },

    /**
     * Issues a token valid for `ttlSeconds` from the platform time as stored (whole seconds, so
     * valid_until.timestamp and .iso8601 name the same instant exactly): its expiry.
     */
    async insertToken(row: Omit<AccessTokensTable, 'revoked_at' | 'created_at' | 'expires_at'>, ttlSeconds: number): Promise<Date> {
      const inserted = await db
        .insertInto('access_tokens')
        .values({
          ...row,
          created_at: platformNow,
          expires_at: sql<Date>`date_trunc('second', ${platformNow}) + ${ttlSeconds}::integer * interval '1 second'`,
        })
        .returning('expires_at')
        .executeTakeFirstOrThrow()
      return inserted.expires_at
    },

    async findTokenByHash(tokenHash: string): Promise<TokenRecord | undefined> {
      return db
        .selectFrom('access_tokens as t')
        .innerJoin('app_users as au', (join) => join.onRef('au.app_id', '=', 't.app_id').onRef('au.user_id', '=', 't.user_id'))
        .innerJoin('users as u', 'u.id', 't.user_id')
        .innerJoin('apps as a', 'a.id', 't.app_id')
        .select(['t.id', 't.token_hash', 't.app_id', 't.user_id', 't.scopes', 't.expires_at', 't.revoked_at', 'au.uid', 'u.username'])
        .select(['u.suspended_at as user_suspended_at', 'a.suspended_at as app_suspended_at'])
        .select(sql<boolean>`t.expires_at <= ${platformNow}`.as('expired'))
        .where('t.token_hash', '=', tokenHash)
        .executeTakeFirst()
    },

    /** Ends a user's consent to an app: no scopes, every token revoked; answers whether the user was a member. */
    async withdrawConsent(appId: string, userId: string, at: Date): Promise<boolean> {
      const member = await db
        .updateTable('app_users')
        .set({ scopes: sql<string[]>`'{}'::text[]`, updated_at: at })
        .where('app_id', '=', appId)
        .where('user_id', '=', userId)
        .executeTakeFirst()
      await db
        .updateTable('access_tokens')
        .set({ revoked_at: at })
        .where('app_id', '=', appId)
        .where('user_id', '=', userId)
        .where('revoked_at', 'is', null)
        .execute()
      return member.numUpdatedRows > 0n
    },

    /** Revokes the token if active; answers whether a token with that hash exists at all. */
    async revokeTokenByHash(tokenHash: string, at: Date): Promise<boolean> {
      await db
        .updateTable('access_tokens')
        .set({ revoked_at: at })
        .where('token_hash', '=', tokenHash)
        .where('revoked_at', 'is', null)
        .execute()
      const row = await db.selectFrom('access_tokens').select('id').where('token_hash', '=', tokenHash).executeTakeFirst()
      return row !== undefined
    },
  }
}
