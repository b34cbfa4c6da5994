import { type Kysely, sql } from 'kysely'
import { auditLog } from '../audit/audit-log.js'
import { ApiError } from '../core/errors.js'
import type { PersonalTokenCheck, PersonalTokenScope, SessionPrincipal } from '../core/principals.js'
import type { DB } from '../db/schema.js'
import { inTransaction } from '../db/transaction.js'
import { constantTimeEqual, newId, newSecret, sha256Hex } from '../lib/crypto.js'
import type { AccountsService } from './accounts-service.js'

/**
 * Personal access tokens (docs/portal.md, "The portal from the command line"): a person's
 * credential for the `/portal` API, for scripts and `plinth portal`. Named, scoped (`read`:
 * GET and HEAD; `write`: what the portal session may do), expiring, revocable, shown once and
 * kept as a SHA-256 (256 random bits: nothing to brute-force, and one indexed lookup per request).
 * Created from a session that re-authenticated within five minutes, as a passkey is: a stolen
 * session cookie does not mint a credential that outlives it.
 */
export const TOKEN_PREFIX = 'plinth_pat_'
export const MAX_TOKENS = 20
export const MAX_TOKEN_DAYS = 365
/** `last_used_at` is written at most once in this many seconds: a script's burst costs one write. */
const LAST_USE_SECONDS = 60
/** The characters of a token kept in clear to name it in the list: the prefix and four of the secret. */
const SHOWN_CHARACTERS = TOKEN_PREFIX.length + 4

export interface PersonalTokenView {
  id: string
  name: string
  scope: PersonalTokenScope
  prefix: string
  created_at: string
  expires_at: string
  last_used_at: string | null
}

interface TokenRow {
  id: string
  name: string
  scope: PersonalTokenScope
  prefix: string
  created_at: Date
  expires_at: Date
  last_used_at: Date | null
}

const view = (row: TokenRow): PersonalTokenView => ({
  id: row.id,
  name: row.name,
  scope: row.scope,
  prefix: row.prefix,
  created_at: row.created_at.toISOString(),
  expires_at: row.expires_at.toISOString(),
  last_used_at: row.last_used_at?.toISOString() ?? null,
})

export function personalTokensServiceFactory(deps: { db: Kysely<DB>; accounts: AccountsService; auditKey: Buffer }) {
  const { db, accounts } = deps
  const audit = auditLog(db, deps.auditKey)
  const columns = ['id', 'name', 'scope', 'prefix', 'created_at', 'expires_at', 'last_used_at'] as const

  return {
    /** Makes a token (the session re-authenticated within five minutes; under the account's lock, at most MAX_TOKENS live). */
    async create(
      principal: SessionPrincipal,
      input: { name: string; scope: PersonalTokenScope; expiresInDays: number },
    ): Promise<PersonalTokenView & { token: string }> {
      await accounts.requireRecentReauthentication(principal)
      const token = `${TOKEN_PREFIX}${newSecret()}`
      const row = await inTransaction(db, async (trx) => {
        await trx.selectFrom('users').select('id').where('id', '=', principal.userId).forUpdate().executeTakeFirst()
        const live = await trx
          .selectFrom('personal_tokens')
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .where('user_id', '=', principal.userId)
          .where('revoked_at', 'is', null)
          .where('expires_at', '>', sql<Date>`now()`)
          .executeTakeFirstOrThrow()
        if (Number(live.n) >= MAX_TOKENS) {
          throw new ApiError('too_many_tokens', `An account has at most ${MAX_TOKENS} live personal access tokens: revoke one first.`)
        }
        const inserted = await trx
          .insertInto('personal_tokens')
          .values({
            id: newId('pat'),
            user_id: principal.userId,
            name: input.name,
            scope: input.scope,
            token_hash: sha256Hex(token),
            prefix: token.slice(0, SHOWN_CHARACTERS),
            expires_at: sql<Date>`now() + make_interval(days => ${input.expiresInDays})`,
          })
          .returning(columns)
          .executeTakeFirstOrThrow()
        await audit.append(trx, {
          actor: `user:${principal.userId}`,
          action: 'create-personal-token',
          target: inserted.id,
          details: { name: input.name, scope: input.scope, expires_at: inserted.expires_at.toISOString() },
        })
        return inserted
      })
      return { ...view(row), token }
    },

    /** The account's tokens not revoked, newest first, expired ones included until revoked (the list says when each ended). */
    async list(userId: string): Promise<PersonalTokenView[]> {
      const rows = await db
        .selectFrom('personal_tokens')
        .select(columns)
        .where('user_id', '=', userId)
        .where('revoked_at', 'is', null)
        .orderBy('created_at', 'desc')
        .orderBy('id', 'desc')
        .execute()
      return rows.map(view)
    },

    /** Revokes one token of the account (audited); another account's token, or one revoked already, is a 404. */
    async revoke(principal: SessionPrincipal, tokenId: string): Promise<void> {
      await inTransaction(db, async (trx) => {
        const revoked = await trx
          .updateTable('personal_tokens')
          .set({ revoked_at: sql<Date>`now()` })
          .where('id', '=', tokenId)
          .where('user_id', '=', principal.userId)
          .where('revoked_at', 'is', null)
          .returning('name')
          .executeTakeFirst()
        if (revoked === undefined) throw new ApiError('token_not_found', 'You have no personal access token with that id.')
        await audit.append(trx, {
          actor: `user:${principal.userId}`,
          action: 'revoke-personal-token',
          target: tokenId,
          details: { name: revoked.name },
        })
      })
    },

    /**
     * The person a token acts as (its account's roles read now, so a role withdrawn or a suspension
     * holds at once), or why it is refused. Its use is recorded at most once a minute.
     */
    async verify(token: string): Promise<PersonalTokenCheck> {
      const hash = sha256Hex(token)
      const { rows } = await sql<{
        id: string
        user_id: string
        scope: PersonalTokenScope
        token_hash: string
        revoked: boolean
        expired: boolean
        stale: boolean
        username: string
        roles: string[]
        suspended: boolean
      }>`
        select t.id, t.user_id, t.scope, t.token_hash, t.revoked_at is not null as revoked, t.expires_at <= now() as expired,
          (t.last_used_at is null or t.last_used_at < now() - make_interval(secs => ${LAST_USE_SECONDS})) as stale,
          u.username, u.roles, u.suspended_at is not null as suspended
        from personal_tokens t join users u on u.id = t.user_id
        where t.token_hash = ${hash}`.execute(db)
      const row = rows[0]
      // The lookup is by digest; the stored digest is compared again in constant time.
      if (row === undefined || row.revoked || !constantTimeEqual(row.token_hash, hash)) return undefined
      if (row.expired) return 'expired'
      if (row.suspended) return 'suspended'
      if (row.stale) {
        await db
          .updateTable('personal_tokens')
          .set({ last_used_at: sql<Date>`now()` })
          .where('id', '=', row.id)
          .where((eb) =>
            eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<', sql<Date>`now() - make_interval(secs => ${LAST_USE_SECONDS})`)]),
          )
          .execute()
      }
      return {
        kind: 'session',
        sessionId: row.id,
        userId: row.user_id,
        username: row.username,
        roles: row.roles,
        token: { id: row.id, scope: row.scope },
      }
    },
  }
}

export type PersonalTokensService = ReturnType<typeof personalTokensServiceFactory>
