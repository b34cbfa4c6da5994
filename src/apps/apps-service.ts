import type { Kysely } from 'kysely'
import type { Clock } from '../clock/clock.js'
import { ApiError } from '../core/errors.js'
import type { KeyCheck } from '../core/principals.js'
import type { DB } from '../db/schema.js'
import { inTransaction } from '../db/transaction.js'
import { credentialEventsRepo, type RevokedCredential } from '../identity/credential-events.js'
import { newWallet, type Wallet } from '../ledger/stellar/keys.js'
import type { Wallets } from '../ledger/wallets.js'
import { constantTimeEqual, newId, newSecret, randomToken, sha256Hex } from '../lib/crypto.js'
import { type AppRow, type AppsRepo, appsRepo as makeAppsRepo } from './apps-repo.js'

export type AppNetwork = AppRow['network']

export interface CreatedApp {
  app: AppRow
  /** Shown once; the app's first server API key. */
  apiKey: string
  keyId: string
  /** Shown once; the platform keeps only the address. */
  wallet: Wallet
}

const KEY_PREFIX_LENGTH = 8
const KEY_USE_RESOLUTION_MS = 60_000

/** What a developer publishes at `<app origin>/validation-key.txt` to prove the domain (docs/portal.md). */
export const newValidationKey = (): string => `plinth-${randomToken(24)}`

export function appsServiceFactory(deps: {
  db: Kysely<DB>
  clock: Clock
  /** Opens the new app's wallet on the ledger, funded. */
  wallets: Wallets
  /** Called once a revocation committed, before the answer, so this process's credential cache forgets it at once. */
  afterRevocation?: (revoked: RevokedCredential) => void
}) {
  const { db, clock, wallets } = deps
  const appsRepo = makeAppsRepo(db)

  async function issueKey(repo: AppsRepo, appId: string, name = ''): Promise<{ keyId: string; apiKey: string }> {
    const apiKey = newSecret()
    const keyId = newId('key')
    await repo.insertKey({
      id: keyId,
      app_id: appId,
      key_hash: sha256Hex(apiKey),
      key_prefix: apiKey.slice(0, KEY_PREFIX_LENGTH),
      created_at: clock.now(),
      name,
    })
    return { keyId, apiKey }
  }

  async function requireApp(appId: string): Promise<AppRow> {
    const app = await appsRepo.findApp(appId)
    if (app === undefined) throw new ApiError('app_not_found', `No app with id ${appId}.`)
    return app
  }

  /** When this process last recorded each key's use (ms): a key's `last_used_at` is written at most once a minute per process. */
  const lastNoted = new Map<string, number>()

  return {
    requireApp,

    /** Records that a key authenticated a request, at most once a minute per key and process (`api_keys.last_used_at`). */
    async noteKeyUse(keyId: string): Promise<void> {
      const now = Date.now()
      const last = lastNoted.get(keyId)
      if (last !== undefined && now - last < KEY_USE_RESOLUTION_MS) return
      if (lastNoted.size >= 10_000) lastNoted.clear()
      lastNoted.set(keyId, now)
      await appsRepo.touchKey(keyId)
    },

    /** Creates an app with a fresh wallet and its first server API key, atomically. */
    async createApp(input: {
      name: string
      network: AppNetwork
      url?: string | undefined
      /** The developer who owns it (production); none in the sandbox. */
      ownerUserId?: string | undefined
      /** Production: shown in the directory. */
      description?: string | undefined
      icon?: string | null | undefined
      /** Production: the key to publish at /validation-key.txt; none for a sandbox app. */
      validationKey?: string | undefined
      /** Production: an app an operator created is verified by them. */
      verifiedBy?: 'operator' | undefined
      /** Production, Mainnet: the listing review's first state (listing.ts); none where listing does not apply. */
      listing?: 'pending' | 'approved' | undefined
    }): Promise<CreatedApp> {
      const wallet = newWallet()
      const now = clock.now()
      const app: AppRow = {
        id: newId('app'),
        name: input.name,
        network: input.network,
        wallet_address: wallet.address,
        created_at: now,
        url: input.url ?? null,
        description: input.description ?? '',
        icon: input.icon ?? null,
        validation_key: input.validationKey ?? null,
        verified_at: input.verifiedBy === undefined ? null : now,
        verified_by: input.verifiedBy ?? null,
        suspended_at: null,
        request_log: false,
        listing: input.listing ?? null,
        listing_reason: null,
        listing_changed_at: input.listing === undefined ? null : now,
      }
      const { keyId, apiKey } = await inTransaction(db, async (trx) => {
        const repo = makeAppsRepo(trx)
        await repo.insertApp(app)
        if (input.ownerUserId !== undefined) await repo.insertMember({ app_id: app.id, user_id: input.ownerUserId, role: 'owner' })
        await wallets.open(trx, app.wallet_address, 'app')
        return issueKey(repo, app.id, 'first key')
      })
      return { app, apiKey, keyId, wallet }
    },

    /** Edits an app's name or frontend URL (null removes the URL); the caller checked them (app-rules.ts). */
    async updateApp(appId: string, changes: { name?: string; url?: string | null }): Promise<AppRow> {
      const row = await makeAppsRepo(db).updateApp(appId, changes)
      if (row === undefined) throw new ApiError('app_not_found', `No app with id ${appId}.`)
      return row
    },

    async createKey(appId: string, name = ''): Promise<{ keyId: string; apiKey: string }> {
      await requireApp(appId)
      return issueKey(appsRepo, appId, name)
    },

    /** Idempotent: revoking a revoked key answers when it was revoked. */
    async revokeKey(appId: string, keyId: string): Promise<{ keyId: string; revokedAt: Date; revoked: RevokedCredential }> {
      const now = clock.now()
      const key = await inTransaction(db, async (trx) => {
        const revoked = await makeAppsRepo(trx).revokeKey(appId, keyId, now)
        // Every process's credential cache drops the key within a second (credential-cache.ts).
        if (revoked?.revoked_at != null) await credentialEventsRepo(trx).record({ kind: 'key', subject: revoked.key_hash })
        return revoked
      })
      if (key?.revoked_at == null) throw new ApiError('key_not_found', `App ${appId} has no key ${keyId}.`)
      const revoked: RevokedCredential = { kind: 'key', subject: key.key_hash }
      deps.afterRevocation?.(revoked)
      return { keyId: key.id, revokedAt: key.revoked_at, revoked }
    },

    /**
     * A refused key's app, for its request log: the revoked key it is (its hash), or else the one key
     * whose first KEY_PREFIX_LENGTH characters (kept in clear for display) it starts with; none
     * when no key or keys of several apps match. The caller is told nothing of it.
     */
    async identifyRefusedKey(apiKey: string): Promise<{ appId: string; keyId: string } | undefined> {
      const known = await appsRepo.findKeyByHash(sha256Hex(apiKey))
      if (known !== undefined) return { appId: known.app_id, keyId: known.id }
      if (apiKey.length < KEY_PREFIX_LENGTH) return undefined
      const alike = await appsRepo.findKeysByPrefix(apiKey.slice(0, KEY_PREFIX_LENGTH), 2)
      const [only] = alike
      return alike.length === 1 && only !== undefined ? { appId: only.app_id, keyId: only.id } : undefined
    },

    async verifyApiKey(apiKey: string): Promise<KeyCheck> {
      const hash = sha256Hex(apiKey)
      const key = await appsRepo.findActiveKeyByHash(hash)
      if (key === undefined || !constantTimeEqual(key.key_hash, hash)) return undefined
      if (key.suspended_at !== null) return 'app_suspended'
      return { kind: 'key', appId: key.app_id, keyId: key.id }
    },
  }
}

export type AppsService = ReturnType<typeof appsServiceFactory>
