import { Account, Asset, Memo, Operation, TransactionBuilder } from '@stellar/stellar-base'
import type { Kysely } from 'kysely'
import { checkNewPassword, hashPassword, passwordPepper } from '../accounts/passwords.js'
import { checkAppName, checkAppUrl } from '../apps/app-rules.js'
import { appsServiceFactory, newValidationKey } from '../apps/apps-service.js'
import { type AuditHead, auditChainKey, auditLog } from '../audit/audit-log.js'
import type { Clock } from '../clock/clock.js'
import { ApiError } from '../core/errors.js'
import type { DB } from '../db/schema.js'
import { inTransaction } from '../db/transaction.js'
import { identityServiceFactory } from '../identity/identity-service.js'
import { formatAmount, parseStoredAmount, tryParseAmount } from '../ledger/amounts.js'
import { LedgerError } from '../ledger/ledger-errors.js'
import { ledgerServiceFactory } from '../ledger/ledger-service.js'
import { signWithSeed } from '../ledger/stellar/ed25519.js'
import { newWallet } from '../ledger/stellar/keys.js'
import { EMPTY_BALANCES, ledgerWallets } from '../ledger/wallets.js'
import { decryptSecret, encryptSecret } from '../lib/crypto.js'
import { isBlankText } from '../lib/text.js'

/** The roles a user may hold. */
export const ROLES = ['operator', 'developer'] as const
export type Role = (typeof ROLES)[number]

/** Where issued money comes from (docs/production.md, "Issuing money"): one ledger account of the platform's. */
const ISSUER_META = 'issuer'
const ISSUER_CONTEXT = 'platform-issuer'
const ISSUE_FEE_STROOPS = 100n
/** Stellar amounts are int64 stroops. */
const MAX_ISSUE_STROOPS = 9_223_372_036_854_775_807n
const ISSUE_MEMO = 'issued'
/** The network of production apps and of issuing transactions. */
const NETWORK = 'Pi Network' as const

/**
 * The operator's first commands (`plinth admin`, docs/production.md): each talks to the database
 * directly and writes an audit record in the transaction that does the work, naming `actor`.
 * No secret enters a record: a password never, a key or seed never (only ids and addresses).
 */
export function adminServiceFactory(deps: { db: Kysely<DB>; clock: Clock; secretKey: Buffer; publicUrl: string; actor: string }) {
  const { db, clock, secretKey, actor } = deps
  const audit = auditLog(db, auditChainKey(secretKey))
  const ledger = ledgerServiceFactory({ db, clock })
  const services = (trx: Kysely<DB>) => {
    const wallets = ledgerWallets(ledgerServiceFactory({ db: trx, clock }), EMPTY_BALANCES)
    return {
      identity: identityServiceFactory({ db: trx, clock, secretKey, defaultTokenTtlSeconds: 3600, wallets }),
      apps: appsServiceFactory({ db: trx, clock, wallets }),
    }
  }

  const findUser = async (trx: Kysely<DB>, username: string) => {
    const user = await trx
      .selectFrom('users')
      .select(['id', 'username', 'roles', 'wallet_address'])
      .where('username_key', '=', username.toLowerCase())
      .executeTakeFirst()
    if (user === undefined) throw new ApiError('user_not_found', `No user named "${username}".`)
    return user
  }

  /** The issuing account, created (empty) at the first issue; its seed sealed under PLINTH_SECRET_KEY. */
  const issuer = async (): Promise<{ address: string; seed: string }> => {
    const existing = await db.selectFrom('platform_meta').select('value').where('key', '=', ISSUER_META).executeTakeFirst()
    if (existing !== undefined) {
      const sealed = JSON.parse(existing.value) as { address: string; seed: string }
      return { address: sealed.address, seed: decryptSecret(secretKey, sealed.seed, ISSUER_CONTEXT) }
    }
    const wallet = newWallet()
    const value = JSON.stringify({ address: wallet.address, seed: encryptSecret(secretKey, wallet.seed, ISSUER_CONTEXT) })
    const created = await inTransaction(db, async (trx) => {
      const claimed = await trx
        .insertInto('platform_meta')
        .values({ key: ISSUER_META, value })
        .onConflict((oc) => oc.column('key').doNothing())
        .returning('key')
        .executeTakeFirst()
      if (claimed !== undefined) await ledgerServiceFactory({ db: trx, clock }).openAccount(wallet.address, '0', trx)
      return claimed !== undefined
    })
    return created ? wallet : issuer()
  }

  return {
    /** A user with the operator role and a password (checked as a sign-up's is). */
    async createOperator(username: string, password: string) {
      const normalized = await checkNewPassword(password, username)
      const passwordHash = await hashPassword(normalized, passwordPepper(secretKey))
      return inTransaction(db, async (trx) => {
        const user = await services(trx).identity.createUser(username, { passwordHash, roles: ['operator'] })
        const record = await audit.append(trx, { actor, action: 'create-operator', target: username, details: { user_id: user.userId } })
        return { user_id: user.userId, username: user.username, wallet_address: user.wallet.address, audit_id: record.id }
      })
    },

    /** Gives a user a role (idempotent: a role held already is reported, and recorded once more). */
    async grant(username: string, role: Role) {
      return inTransaction(db, async (trx) => {
        const user = await findUser(trx, username)
        const had = user.roles.includes(role)
        if (!had) {
          await trx
            .updateTable('users')
            .set({ roles: [...user.roles, role].sort() })
            .where('id', '=', user.id)
            .execute()
        }
        const record = await audit.append(trx, {
          actor,
          action: `grant-${role}`,
          target: username,
          details: { user_id: user.id, already: had },
        })
        return { user_id: user.id, username: user.username, role, already: had, audit_id: record.id }
      })
    },

    /** An app owned by a developer: its first server API key and its wallet's seed are answered once. */
    async createApp(input: { owner: string; name: string; url: string }) {
      const name = checkAppName(input.name)
      if (!name.ok) throw new ApiError('invalid_arguments', name.message)
      const url = checkAppUrl(input.url, deps.publicUrl)
      if (!url.ok) throw new ApiError('invalid_arguments', url.message)
      return inTransaction(db, async (trx) => {
        const owner = await findUser(trx, input.owner)
        if (!owner.roles.includes('developer')) {
          throw new ApiError(
            'invalid_arguments',
            `${owner.username} is not a developer: grant the role first (plinth admin users grant-developer ${owner.username}).`,
          )
        }
        const created = await services(trx).apps.createApp({
          name: name.value,
          network: NETWORK,
          url: url.value,
          ownerUserId: owner.id,
          validationKey: newValidationKey(),
          verifiedBy: 'operator',
        })
        const record = await audit.append(trx, {
          actor,
          action: 'create-app',
          target: created.app.id,
          details: {
            owner: owner.username,
            name: created.app.name,
            url: created.app.url,
            key_id: created.keyId,
            wallet: created.wallet.address,
            verified_by: 'operator',
          },
        })
        return {
          app_id: created.app.id,
          name: created.app.name,
          url: created.app.url,
          owner: owner.username,
          api_key: created.apiKey,
          key_id: created.keyId,
          wallet: created.wallet,
          audit_id: record.id,
        }
      })
    },

    /**
     * Issues new money into a user's or an app's wallet: a payment transaction on the ledger from
     * the issuing account, which is first funded with what it lacks for it (the amount and the fee).
     * The audit record commits with the transaction. A transaction refused after the funding leaves
     * the funded money in the issuing account, where the next issue uses it first.
     */
    async issue(input: {
      target: string
      amount: string
      reason: string
      /** The console's request, recorded in the audit record. */
      requestId?: string
      /** A policy's check, inside the applying transaction under the audit log's lock: throw to refuse (nothing is applied). */
      beforeRecord?: (trx: Kysely<DB>, stroops: bigint) => Promise<void>
    }) {
      const stroops = tryParseAmount(input.amount)
      if (stroops === undefined || stroops <= 0n || stroops > MAX_ISSUE_STROOPS - ISSUE_FEE_STROOPS) {
        throw new ApiError(
          'invalid_amount',
          `"${input.amount.slice(0, 40)}" is not an amount to issue: a positive decimal with at most 7 places.`,
        )
      }
      const reason = input.reason.trim()
      if (isBlankText(reason) || reason.length > 500) {
        throw new ApiError(
          'invalid_arguments',
          'Give a --reason of 1 to 500 characters, at least one of them visible (not a space or an invisible character).',
        )
      }
      const target = input.target.startsWith('app_')
        ? await db.selectFrom('apps').select(['id as name', 'wallet_address']).where('id', '=', input.target).executeTakeFirst()
        : await db
            .selectFrom('users')
            .select(['username as name', 'wallet_address'])
            .where('username_key', '=', input.target.toLowerCase())
            .executeTakeFirst()
      if (target === undefined) throw new ApiError('not_found', `No user or app "${input.target.slice(0, 100)}".`)

      const from = await issuer()
      const held = await ledger.getAccount(from.address)
      const needed = stroops + ISSUE_FEE_STROOPS - (held === undefined ? 0n : parseStoredAmount(held.balance))
      if (needed > 0n) await ledger.fund(from.address, formatAmount(needed))

      let auditId = ''
      try {
        const applied = await ledger.submitSigned(
          from.address,
          (sequence) => {
            const tx = new TransactionBuilder(new Account(from.address, sequence), {
              fee: ISSUE_FEE_STROOPS.toString(),
              networkPassphrase: NETWORK,
              timebounds: { minTime: 0, maxTime: Math.floor(clock.now().getTime() / 1000) + 180 },
            })
              .addOperation(Operation.payment({ destination: target.wallet_address, asset: Asset.native(), amount: formatAmount(stroops) }))
              .addMemo(Memo.text(ISSUE_MEMO))
              .build()
            tx.signatures.push(signWithSeed(from.seed, tx.hash(), from.address))
            return tx.toEnvelope().toXDR('base64')
          },
          {
            accounts: [from.address, target.wallet_address],
            afterApply: async (trx, tx) => {
              await audit.lock(trx)
              await input.beforeRecord?.(trx, stroops)
              const record = await audit.append(trx, {
                actor,
                action: 'issue',
                target: input.target,
                details: {
                  amount: formatAmount(stroops),
                  reason,
                  to: target.wallet_address,
                  transaction: tx.hash,
                  ...(input.requestId === undefined ? {} : { request_id: input.requestId }),
                },
              })
              auditId = record.id
              return undefined
            },
          },
        )
        const account = await ledger.getAccount(target.wallet_address)
        return {
          target: input.target,
          address: target.wallet_address,
          amount: formatAmount(stroops),
          transaction: applied.hash,
          ledger: applied.ledger,
          balance: account?.balance ?? '0.0000000',
          issuer: from.address,
          audit_id: auditId,
        }
      } catch (error) {
        if (error instanceof LedgerError) {
          throw new ApiError('transaction_failed', `The ledger refused the issuing transaction: ${error.problem.detail ?? error.message}`)
        }
        throw error
      }
    },

    /**
     * The ledger's books: every Pi issued (funded) is in a balance or was burnt as a fee, no
     * balance is negative, and each account's balance is its fundings and payments.
     */
    async ledgerCheck() {
      const checked = await ledger.checkInvariants()
      return {
        total_issued: checked.totalFunded,
        total_balances: checked.totalBalances,
        total_fees: checked.totalFees,
        negative_balances: checked.negativeBalances,
        mismatched_accounts: checked.mismatchedAccounts,
        balanced: checked.ok,
      }
    },

    /**
     * Walks the whole audit chain (audit-log.ts, ChainCheck): how many records, the first broken one
     * (null when whole) and why; with `expected` (a head kept outside the database), whether the chain
     * still reaches it with the same MAC.
     */
    verifyAudit: (expected?: AuditHead) => audit.verify(expected),

    /** The newest record's id and MAC, to keep outside the database (docs/operators.md, "Keeping the head"). */
    auditHead: () => audit.head(),

    /** Keys a chain written before migration 0021 (audit-log.ts, rekey), as `actor`; nothing when it is keyed. */
    rekeyAudit: () => audit.rekey(actor),

    /** The audit log, newest first, and whether its chain is whole. */
    async auditTrail(limit: number) {
      return { records: await audit.list(limit), broken_at: (await audit.verify()).broken_at }
    },
  }
}
