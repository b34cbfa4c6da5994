import { type Kysely, sql } from 'kysely'
import type { DB } from '../db/schema.js'
import type { EndedSession } from './session-end.js'

export interface SessionRecord {
  id: string
  user_id: string
  username: string
  roles: string[]
  created_at: Date
  expires_at: Date
}

export interface ConsentRecord {
  app_id: string
  name: string
  uid: string
  scopes: string[]
  notifications_enabled: boolean
  updated_at: Date
}

const text = (column: string) => sql<string>`${sql.ref(column)}::text`

/** The SQL of accounts and their sessions. Times are the database's (`now()`). */
export function accountsRepo(db: Kysely<DB>) {
  return {
    async findUserByName(username: string) {
      return db
        .selectFrom('users')
        .select(['id', 'username', 'password_hash', 'roles', 'suspended_at'])
        .where('username_key', '=', username.toLowerCase())
        .executeTakeFirst()
    },

    async findUser(userId: string) {
      return (
        db
          .selectFrom('users as u')
          // The wallet's account on each network (docs/ledger.md, "Two networks"): π on Pi Network, test-π on Pi Testnet.
          .leftJoin('ledger_accounts as l', (join) => join.onRef('l.address', '=', 'u.wallet_address').on('l.network', '=', 'Pi Network'))
          .leftJoin('ledger_accounts as t', (join) => join.onRef('t.address', '=', 'u.wallet_address').on('t.network', '=', 'Pi Testnet'))
          .select(['u.id', 'u.username', 'u.password_hash', 'u.roles', 'u.wallet_address', 'u.created_at'])
          .select([text('l.balance').as('balance'), text('t.balance').as('testnet_balance')])
          .where('u.id', '=', userId)
          .executeTakeFirst()
      )
    },

    async setPasswordHash(userId: string, passwordHash: string): Promise<void> {
      await db.updateTable('users').set({ password_hash: passwordHash }).where('id', '=', userId).execute()
    },

    async insertSession(row: { id: string; token_hash: string; user_id: string }, maxSeconds: number): Promise<Date> {
      const inserted = await db
        .insertInto('account_sessions')
        // A session begins with a proof of its person (a password, a passkey, a reset link): it counts as a re-authentication.
        .values({ ...row, expires_at: sql<Date>`now() + make_interval(secs => ${maxSeconds})`, reauthenticated_at: sql<Date>`now()` })
        .returning('expires_at')
        .executeTakeFirstOrThrow()
      return inserted.expires_at
    },

    /**
     * The live session of this token hash, its use recorded (`last_seen_at`) when `touch`: one
     * statement, so a session revoked, expired or idle past `idleSeconds` is never answered, on any
     * process. A background request (`touch` false) reads it under the same conditions and records
     * nothing, so it never keeps a session alive (docs/accounts.md, "Sessions").
     */
    async touchSession(tokenHash: string, idleSeconds: number, touch = true): Promise<SessionRecord | undefined> {
      const { rows } = touch
        ? await sql<SessionRecord>`
        update account_sessions s set last_seen_at = now()
        from users u
        where s.token_hash = ${tokenHash} and u.id = s.user_id and u.suspended_at is null and s.revoked_at is null and s.expires_at > now()
          and s.last_seen_at > now() - make_interval(secs => ${idleSeconds})
        returning s.id, s.user_id, u.username, u.roles, s.created_at, s.expires_at`.execute(db)
        : await sql<SessionRecord>`
        select s.id, s.user_id, u.username, u.roles, s.created_at, s.expires_at
        from account_sessions s join users u on u.id = s.user_id
        where s.token_hash = ${tokenHash} and u.suspended_at is null and s.revoked_at is null and s.expires_at > now()
          and s.last_seen_at > now() - make_interval(secs => ${idleSeconds})`.execute(db)
      return rows[0]
    },

    /** What ended the session of this token hash (session-end.ts), read when it was refused; undefined for a token of no session. */
    async endedSession(tokenHash: string): Promise<EndedSession | undefined> {
      const { rows } = await sql<EndedSession>`
        select now() as now, s.last_seen_at, s.expires_at, s.revoked_at, u.suspended_at
        from account_sessions s join users u on u.id = s.user_id
        where s.token_hash = ${tokenHash}`.execute(db)
      return rows[0]
    },

    /** Stamps the session as re-authenticated now (it must be live); answers the stamp. */
    async stampReauthentication(sessionId: string): Promise<Date | undefined> {
      const row = await db
        .updateTable('account_sessions')
        .set({ reauthenticated_at: sql<Date>`now()` })
        .where('id', '=', sessionId)
        .where('revoked_at', 'is', null)
        .returning('reauthenticated_at')
        .executeTakeFirst()
      return row?.reauthenticated_at ?? undefined
    },

    /** Whether the session re-authenticated within the last `seconds` (by the database's clock). */
    async reauthenticatedWithin(sessionId: string, seconds: number): Promise<boolean> {
      const row = await db
        .selectFrom('account_sessions')
        .select(sql<boolean>`coalesce(reauthenticated_at > now() - make_interval(secs => ${seconds}), false)`.as('fresh'))
        .where('id', '=', sessionId)
        .where('revoked_at', 'is', null)
        .executeTakeFirst()
      return row?.fresh === true
    },

    /** Removes every passkey of the user but those in `keep` (ids of other accounts keep nothing); answers how many went. */
    async removePasskeys(userId: string, keep: readonly string[] = []): Promise<number> {
      let query = db.deleteFrom('account_passkeys').where('user_id', '=', userId)
      if (keep.length > 0) query = query.where('id', 'not in', keep)
      const removed = await query.executeTakeFirst()
      return Number(removed.numDeletedRows)
    },

    /** Revokes every personal access token of the user (a recovery, sign out everywhere); answers how many. */
    async revokePersonalTokens(userId: string): Promise<number> {
      const revoked = await db
        .updateTable('personal_tokens')
        .set({ revoked_at: sql<Date>`now()` })
        .where('user_id', '=', userId)
        .where('revoked_at', 'is', null)
        .executeTakeFirst()
      return Number(revoked.numUpdatedRows)
    },

    /** Ends every live reset link of the user (but `except`, a token hash): they expire now. Answers how many. */
    async endResetLinks(userId: string, except?: string): Promise<number> {
      let query = db
        .updateTable('password_resets')
        .set({ expires_at: sql<Date>`now()` })
        .where('user_id', '=', userId)
        .where('used_at', 'is', null)
        .where('expires_at', '>', sql<Date>`now()`)
      if (except !== undefined) query = query.where('token_hash', '<>', except)
      const ended = await query.executeTakeFirst()
      return Number(ended.numUpdatedRows)
    },

    async revokeSessionByHash(tokenHash: string): Promise<void> {
      await db
        .updateTable('account_sessions')
        .set({ revoked_at: sql<Date>`now()` })
        .where('token_hash', '=', tokenHash)
        .where('revoked_at', 'is', null)
        .execute()
    },

    /** Revokes one session of the user, or all of them (`sessionId` undefined) but `except`; answers how many. */
    async revokeSessions(userId: string, options: { sessionId?: string; except?: string } = {}): Promise<number> {
      let query = db
        .updateTable('account_sessions')
        .set({ revoked_at: sql<Date>`now()` })
        .where('user_id', '=', userId)
        .where('revoked_at', 'is', null)
      if (options.sessionId !== undefined) query = query.where('id', '=', options.sessionId)
      if (options.except !== undefined) query = query.where('id', '<>', options.except)
      const result = await query.executeTakeFirst()
      return Number(result.numUpdatedRows)
    },

    async liveSessions(userId: string, idleSeconds: number) {
      return db
        .selectFrom('account_sessions')
        .select(['id', 'created_at', 'last_seen_at', 'expires_at'])
        .where('user_id', '=', userId)
        .where('revoked_at', 'is', null)
        .where('expires_at', '>', sql<Date>`now()`)
        .where('last_seen_at', '>', sql<Date>`now() - make_interval(secs => ${idleSeconds})`)
        .orderBy('created_at', 'desc')
        .limit(100)
        .execute()
    },

    /** A reset link still usable: unused and not expired (by the database's clock). */
    async findResetLink(tokenHash: string) {
      return db
        .selectFrom('password_resets as r')
        .innerJoin('users as u', 'u.id', 'r.user_id')
        .select(['r.user_id', 'r.created_by', 'u.username', 'u.suspended_at'])
        .where('r.token_hash', '=', tokenHash)
        .where('r.used_at', 'is', null)
        .where('r.expires_at', '>', sql<Date>`now()`)
        .executeTakeFirst()
    },

    /** Uses the link up; answers false when another request used it first (or it expired meanwhile). */
    async useResetLink(tokenHash: string): Promise<boolean> {
      const used = await db
        .updateTable('password_resets')
        .set({ used_at: sql<Date>`now()` })
        .where('token_hash', '=', tokenHash)
        .where('used_at', 'is', null)
        .where('expires_at', '>', sql<Date>`now()`)
        .executeTakeFirst()
      return used.numUpdatedRows > 0n
    },

    /**
     * The directory: every verified app with a frontend URL, not suspended and, on Mainnet, listed
     * (docs/portal.md, "Listing"), newest first (at most `limit`).
     */
    async directory(limit: number) {
      return db
        .selectFrom('apps')
        .select(['id', 'name', 'url', 'description', 'icon', 'created_at', 'network'])
        .where('url', 'is not', null)
        .where('verified_at', 'is not', null)
        .where('suspended_at', 'is', null)
        .where((eb) => eb.or([eb('network', '<>', 'Pi Network'), eb('listing', 'is', null), eb('listing', '=', 'approved')]))
        .orderBy('created_at', 'desc')
        .orderBy('id')
        .limit(limit)
        .execute()
    },

    /** Whether the app of one of the user's payments is suspended (undefined: no such payment of the user's). */
    async paymentAppSuspended(userId: string, paymentId: string): Promise<boolean | undefined> {
      const row = await db
        .selectFrom('payments as p')
        .innerJoin('apps as a', 'a.id', 'p.app_id')
        .select('a.suspended_at')
        .where('p.identifier', '=', paymentId)
        .where('p.user_id', '=', userId)
        .executeTakeFirst()
      return row === undefined ? undefined : row.suspended_at !== null
    },

    /** Whether the app may be opened and given tokens: verified, not suspended (undefined: no such app). */
    async openable(appId: string) {
      return db.selectFrom('apps').select(['id', 'verified_at', 'suspended_at']).where('id', '=', appId).executeTakeFirst()
    },

    /** The apps the user has signed in to, newest change first; a withdrawn consent has no scopes left. */
    async consents(userId: string): Promise<ConsentRecord[]> {
      return db
        .selectFrom('app_users as au')
        .innerJoin('apps as a', 'a.id', 'au.app_id')
        .select(['au.app_id', 'a.name', 'au.uid', 'au.scopes', 'au.notifications_enabled', 'au.updated_at'])
        .where('au.user_id', '=', userId)
        .orderBy('au.updated_at', 'desc')
        .limit(500)
        .execute()
    },
  }
}
