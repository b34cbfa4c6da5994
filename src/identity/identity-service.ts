import type { Kysely } from 'kysely'
import type { Clock } from '../clock/clock.js'
import { ApiError } from '../core/errors.js'
import type { TokenCheck, TokenPrincipal } from '../core/principals.js'
import { normalizeScopes } from '../core/scopes.js'
import type { DB } from '../db/schema.js'
import { inTransaction } from '../db/transaction.js'
import { newWallet, type Wallet } from '../ledger/stellar/keys.js'
import type { Wallets } from '../ledger/wallets.js'
import { constantTimeEqual, decryptSecret, encryptSecret, newId, newSecret, newUid, sha256Hex } from '../lib/crypto.js'
import { credentialEventsRepo, memberSubject, type RevokedCredential } from './credential-events.js'
import { identityRepo } from './identity-repo.js'

export interface UserDTO {
  uid: string
  credentials: {
    scopes: string[]
    valid_until: { timestamp: number; iso8601: string }
  }
  username?: string
}

export interface Authenticated {
  accessToken: string
  user: { uid: string; username?: string }
  expiresAt: Date
}

/** Context bound into the sealed seed, so a sealed value cannot be moved to another user. */
export const seedContext = (userId: string): string => `user-wallet:${userId}`

export function identityServiceFactory(deps: {
  db: Kysely<DB>
  clock: Clock
  secretKey: Buffer
  defaultTokenTtlSeconds: number
  /** Opens the new user's wallet on the ledger, funded. */
  wallets: Wallets
  /** Called once a revocation committed, before the answer, so this process's credential cache forgets it at once. */
  afterRevocation?: (revoked: RevokedCredential) => void
}) {
  const { db, clock, secretKey, defaultTokenTtlSeconds, wallets } = deps
  const repo = identityRepo(db)

  return {
    /**
     * A user and their wallet. `account`: what a production account adds, the password's hash
     * (accounts/passwords.ts) and roles; a sandbox user has neither.
     */
    async createUser(
      username: string,
      account: { passwordHash?: string; roles?: string[] } = {},
    ): Promise<{ userId: string; username: string; wallet: Wallet; createdAt: Date }> {
      const wallet = newWallet()
      const userId = newId('usr')
      const createdAt = clock.now()
      const walletSeedEnc = encryptSecret(secretKey, wallet.seed, seedContext(userId))
      // The user and the ledger account of their wallet exist together or not at all.
      const inserted = await inTransaction(db, async (trx) => {
        const ok = await identityRepo(trx).insertUser({
          id: userId,
          username,
          username_key: username.toLowerCase(),
          wallet_address: wallet.address,
          wallet_seed_enc: walletSeedEnc,
          created_at: createdAt,
          password_hash: account.passwordHash ?? null,
          roles: account.roles ?? [],
        })
        if (ok) await wallets.open(trx, wallet.address, 'user')
        return ok
      })
      if (!inserted) throw new ApiError('username_taken', `The username "${username}" is already taken.`)
      return { userId, username, wallet, createdAt }
    },

    /**
     * What the client SDK's authenticate does once the user accepted the consent dialog:
     * record the consent and issue an access token for exactly the scopes asked for.
     */
    async authenticate(input: {
      appId: string
      userId: string
      scopes: readonly string[]
      expiresInSeconds?: number | undefined
    }): Promise<Authenticated> {
      const user = await repo.findUser(input.userId)
      if (user === undefined) throw new ApiError('user_not_found', `No user with id ${input.userId}.`)
      const scopes = normalizeScopes(input.scopes)
      const now = clock.now()
      const ttl = input.expiresInSeconds ?? defaultTokenTtlSeconds
      const accessToken = newSecret()

      const { uid, expiresAt } = await inTransaction(db, async (trx) => {
        const txRepo = identityRepo(trx)
        const consent = await txRepo.grantConsent({ appId: input.appId, userId: user.id, newUid: newUid(), scopes, at: now })
        // The expiry is computed from the stored clock offset, not this process's copy of it, so a
        // token issued just after another process moved the clock lives its whole lifetime.
        const expires = await txRepo.insertToken(
          { id: newId('tok'), token_hash: sha256Hex(accessToken), app_id: input.appId, user_id: user.id, scopes },
          ttl,
        )
        return { uid: consent.uid, expiresAt: expires }
      })
      return {
        accessToken,
        expiresAt,
        user: scopes.includes('username') ? { uid, username: user.username } : { uid },
      }
    },

    async verifyAccessToken(token: string): Promise<TokenCheck> {
      const hash = sha256Hex(token)
      const row = await repo.findTokenByHash(hash)
      if (row === undefined || row.revoked_at !== null || !constantTimeEqual(row.token_hash, hash)) return undefined
      // Judged by the database against the stored offset: every process refuses it alike.
      if (row.expired) return 'expired'
      if (row.user_suspended_at !== null) return 'user_suspended'
      if (row.app_suspended_at !== null) return 'app_suspended'
      return {
        kind: 'token',
        tokenId: row.id,
        appId: row.app_id,
        userId: row.user_id,
        uid: row.uid,
        username: row.username,
        scopes: row.scopes,
        expiresAt: row.expires_at,
      }
    },

    async revokeAccessToken(token: string): Promise<void> {
      const hash = sha256Hex(token)
      const now = clock.now()
      const revoked: RevokedCredential = { kind: 'token', subject: hash }
      const found = await inTransaction(db, async (trx) => {
        const exists = await identityRepo(trx).revokeTokenByHash(hash, now)
        // Every process's credential cache drops the token within a second (credential-cache.ts).
        if (exists) await credentialEventsRepo(trx).record(revoked)
        return exists
      })
      if (!found) throw new ApiError('token_not_found', 'No such access token.')
      deps.afterRevocation?.(revoked)
    },

    /** The user withdraws consent from an app: its scopes go, and every token of the user for it stops working. */
    async withdrawConsent(appId: string, userId: string): Promise<void> {
      const now = clock.now()
      const revoked: RevokedCredential = { kind: 'member', subject: memberSubject(appId, userId) }
      const member = await inTransaction(db, async (trx) => {
        const was = await identityRepo(trx).withdrawConsent(appId, userId, now)
        if (was) await credentialEventsRepo(trx).record(revoked)
        return was
      })
      if (!member) throw new ApiError('user_not_found', `User ${userId} has not signed in to app ${appId}.`)
      deps.afterRevocation?.(revoked)
    },

    /** Refuses a user id that names no user (404 user_not_found). */
    async requireUser(userId: string): Promise<void> {
      if ((await repo.findUser(userId)) === undefined) throw new ApiError('user_not_found', `No user with id ${userId}.`)
    },

    /** The wallet seed the platform holds for a user, to sign the user's payments in the platform wallet. */
    async openWalletSeed(userId: string): Promise<string> {
      const user = await repo.findUser(userId)
      if (user === undefined) throw new ApiError('user_not_found', `No user with id ${userId}.`)
      return decryptSecret(secretKey, user.wallet_seed_enc, seedContext(userId))
    },

    /** The UserDTO: only what the user consented to share with this app. */
    me(principal: TokenPrincipal): UserDTO {
      const dto: UserDTO = {
        uid: principal.uid,
        credentials: {
          scopes: principal.scopes,
          valid_until: {
            timestamp: Math.floor(principal.expiresAt.getTime() / 1000),
            iso8601: principal.expiresAt.toISOString(),
          },
        },
      }
      if (principal.scopes.includes('username')) dto.username = principal.username
      return dto
    },
  }
}

export type IdentityService = ReturnType<typeof identityServiceFactory>
