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
import { networkLedgers } from '../ledger/network-ledgers.js'
import { EMPTY_BALANCES, ledgerWallets } from '../ledger/wallets.js'
import { type IssueInput, issuingFactory } from './issuing.js'

/** The roles a user may hold. */
export const ROLES = ['operator', 'developer'] as const
export type Role = (typeof ROLES)[number]

/** The network of production apps. */
const NETWORK = 'Pi Network' as const

/**
 * The operator's first commands (`plinth admin`, docs/production.md): each talks to the database
 * directly and writes an audit record in the transaction that does the work, naming `actor`.
 * No secret enters a record: a password never, a key or seed never (only ids and addresses).
 */
export function adminServiceFactory(deps: { db: Kysely<DB>; clock: Clock; secretKey: Buffer; publicUrl: string; actor: string }) {
  const { db, clock, secretKey, actor } = deps
  const audit = auditLog(db, auditChainKey(secretKey))
  const issuing = issuingFactory({ db, clock, secretKey, actor })
  const services = (trx: Kysely<DB>) => {
    const wallets = ledgerWallets(networkLedgers({ db: trx, clock }), EMPTY_BALANCES)
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
          // An app the operator creates is listed by them.
          listing: 'approved',
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

    /** Issues new money into a user's or an app's wallet: one atomic act (issuing.ts). */
    issue: (input: IssueInput) => issuing.issue(input),

    /** The supply three ways: issued, balances and fees, the audit log's issues (issuing.ts). */
    ledgerCheck: () => issuing.supplyCheck(),

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
