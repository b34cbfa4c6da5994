import { Account, Asset, Memo, Operation, TransactionBuilder } from '@stellar/stellar-base'
import { type Kysely, sql } from 'kysely'
import { type AuditRecord, auditChainKey, auditLog } from '../audit/audit-log.js'
import type { Clock } from '../clock/clock.js'
import { ApiError } from '../core/errors.js'
import type { DB } from '../db/schema.js'
import { inTransaction } from '../db/transaction.js'
import { formatAmount, parseStoredAmount, tryParseAmount } from '../ledger/amounts.js'
import { LedgerError } from '../ledger/ledger-errors.js'
import { networkLedgers } from '../ledger/network-ledgers.js'
import { LEDGER_NETWORKS, type LedgerNetwork, MAINNET, TESTNET } from '../ledger/networks.js'
import { signWithSeed } from '../ledger/stellar/ed25519.js'
import { newWallet } from '../ledger/stellar/keys.js'
import { decryptSecret, encryptSecret } from '../lib/crypto.js'
import { visibleReason } from './reasons.js'

/** Where issued money comes from (docs/production.md, "Issuing money"): one ledger account of the platform's. */
const ISSUER_META = 'issuer'
const ISSUER_CONTEXT = 'platform-issuer'
/** The issuing transaction's fee, burnt: an issue mints its amount and this. */
export const ISSUE_FEE_STROOPS = 100n
/** Stellar amounts are int64 stroops. */
const MAX_ISSUE_STROOPS = 9_223_372_036_854_775_807n
const ISSUE_MEMO = 'issued'
/** The network of an operator's issues (production apps'). */
const NETWORK = 'Pi Network' as const
/** The passphrase an issuing transaction is signed under: the network it issues on. */
export type IssueNetwork = 'Pi Network' | 'Pi Testnet'

export interface IssueInput {
  target: string
  amount: string
  reason: string
  /** The console's request, recorded in the audit record. */
  requestId?: string
  /**
   * A policy's check, inside the issuing transaction under the audit log's lock, before the
   * record is written: throw to refuse (nothing is minted, paid or recorded). What it answers is
   * added to the issue's audit record (an approval's id, who requested it).
   */
  policy?: (trx: Kysely<DB>, stroops: bigint) => Promise<Record<string, unknown> | undefined>
}

/** An amount to issue, in stroops: positive, at most 7 places, and the fee still fitting an int64. */
export function issueStroops(amount: string): bigint {
  const stroops = tryParseAmount(amount)
  if (stroops === undefined || stroops <= 0n || stroops > MAX_ISSUE_STROOPS - ISSUE_FEE_STROOPS) {
    throw new ApiError('invalid_amount', `"${amount.slice(0, 40)}" is not an amount to issue: a positive decimal with at most 7 places.`)
  }
  return stroops
}

/** The wallet an issue pays: a user's (by name) or an app's (by id); 404 not_found when there is none. */
export async function issueTarget(db: Kysely<DB>, target: string): Promise<{ name: string; wallet_address: string }> {
  const found = target.startsWith('app_')
    ? await db.selectFrom('apps').select(['id as name', 'wallet_address']).where('id', '=', target).executeTakeFirst()
    : await db
        .selectFrom('users')
        .select(['username as name', 'wallet_address'])
        .where('username_key', '=', target.toLowerCase())
        .executeTakeFirst()
  if (found === undefined) throw new ApiError('not_found', `No user or app "${target.slice(0, 100)}".`)
  return found
}

/**
 * Issuing money (docs/operators.md, "Issuing money"): one atomic act. The closer locks the issuing
 * account and the recipient's, mints into the issuing account what it lacks for the amount and
 * the fee (a funding: new supply), applies the payment, and runs the policy and writes the audit
 * record under the log's lock, all in the one database transaction that closes the ledger. A
 * refusal anywhere (the policy, the ledger) rolls back all of it: no balance, supply figure,
 * ledger row or record changes. Issues racing on any number of processes queue on the issuing
 * account's row lock, and each mints from the balance it holds locked, so none fails for another.
 */
export function issuingFactory(deps: { db: Kysely<DB>; clock: Clock; secretKey: Buffer; actor: string }) {
  const { db, clock, secretKey, actor } = deps
  const audit = auditLog(db, auditChainKey(secretKey))
  const ledgers = networkLedgers({ db, clock })

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
      // One key, an account on each network: operators issue on Pi Network, the faucet on Pi Testnet.
      if (claimed !== undefined) {
        const opened = networkLedgers({ db: trx, clock })
        for (const network of LEDGER_NETWORKS) await opened[network].openAccount(wallet.address, '0', trx)
      }
      return claimed !== undefined
    })
    return created ? wallet : issuer()
  }

  /**
   * The one atomic issue every kind shares (an operator's issue, the faucet's): mints what the
   * issuing account lacks and pays `to` from it under `network`'s passphrase, then, under the
   * audit log's lock, runs the policy and writes the record (`record`'s action and details, with
   * the amount, fee, minted, recipient and transaction), all in the transaction that closes the
   * ledger. A refusal anywhere rolls all of it back.
   */
  async function mintAndPay(input: {
    network: IssueNetwork
    to: string
    stroops: bigint
    memo: string
    policy?: IssueInput['policy'] | undefined
    record: { action: 'issue' | 'faucet'; target: string; details: Record<string, unknown> }
    /** Who the record names, when not the factory's actor. */
    actor?: string | undefined
  }) {
    const { stroops } = input
    const from = await issuer()
    let record: AuditRecord | undefined
    let minted = 0n
    try {
      const applied = await ledgers[input.network].submitSigned(
        from.address,
        (sequence) => {
          const tx = new TransactionBuilder(new Account(from.address, sequence), {
            fee: ISSUE_FEE_STROOPS.toString(),
            networkPassphrase: input.network,
            timebounds: { minTime: 0, maxTime: Math.floor(clock.now().getTime() / 1000) + 180 },
          })
            .addOperation(Operation.payment({ destination: input.to, asset: Asset.native(), amount: formatAmount(stroops) }))
            .addMemo(Memo.text(input.memo))
            .build()
          tx.signatures.push(signWithSeed(from.seed, tx.hash(), from.address))
          return tx.toEnvelope().toXDR('base64')
        },
        {
          accounts: [from.address, input.to],
          // What the issuing account lacks, from its balance as locked: a leftover of an earlier version is used first.
          mint: async (_trx, balances) => {
            const lacking = stroops + ISSUE_FEE_STROOPS - (balances.get(from.address) ?? 0n)
            minted = lacking > 0n ? lacking : 0n
            return new Map(minted > 0n ? [[from.address, minted]] : [])
          },
          afterApply: async (trx, tx) => {
            await audit.lock(trx)
            const extra = await input.policy?.(trx, stroops)
            record = await audit.append(trx, {
              actor: input.actor ?? actor,
              action: input.record.action,
              target: input.record.target,
              details: {
                amount: formatAmount(stroops),
                fee: formatAmount(ISSUE_FEE_STROOPS),
                minted: formatAmount(minted),
                ...input.record.details,
                to: input.to,
                transaction: tx.hash,
                ...extra,
              },
            })
            return undefined
          },
        },
      )
      return { applied, issuer: from.address, auditId: record?.id ?? '' }
    } catch (error) {
      if (error instanceof LedgerError) {
        throw new ApiError('transaction_failed', `The ledger refused the issuing transaction: ${error.problem.detail ?? error.message}`)
      }
      throw error
    }
  }

  return {
    mintAndPay,

    async issue(input: IssueInput) {
      const stroops = issueStroops(input.amount)
      const reason = visibleReason(input.reason, 'The --reason')
      const target = await issueTarget(db, input.target)
      const {
        applied,
        issuer: from,
        auditId,
      } = await mintAndPay({
        network: NETWORK,
        to: target.wallet_address,
        stroops,
        memo: ISSUE_MEMO,
        policy: input.policy,
        record: {
          action: 'issue',
          target: input.target,
          details: { reason, ...(input.requestId === undefined ? {} : { request_id: input.requestId }) },
        },
      })
      const account = await ledgers[NETWORK].getAccount(target.wallet_address)
      return {
        target: input.target,
        address: target.wallet_address,
        amount: formatAmount(stroops),
        transaction: applied.hash,
        ledger: applied.ledger,
        balance: account?.balance ?? '0.0000000',
        issuer: from,
        audit_id: auditId,
      }
    },

    /**
     * The supply, three ways, on each network (docs/operators.md, "The ledger check"): what the
     * network's ledger funded (the supply issued), what its balances hold plus the fees burnt, and
     * what the audit log's records minted there (operators' issues on Pi Network, the faucet's on Pi
     * Testnet), with the fundings migration 0029 made for money that crossed networks
     * (`total_split`). They agree, no balance is negative and each account's balance is its history,
     * or `differs` names the figure that disagrees with the other two (all three when none agree).
     * The top-level figures are both networks' sums; `balanced` holds when each network balances.
     */
    async supplyCheck() {
      // One snapshot for every read: an issue committing between them cannot show as a difference.
      const [checked, audit] = await db
        .transaction()
        .setIsolationLevel('repeatable read')
        .execute(async (trx) => {
          const books = networkLedgers({ db: trx, clock })
          const invariants = []
          for (const network of LEDGER_NETWORKS) invariants.push({ network, ...(await books[network].checkInvariants()) })
          return [invariants, await auditedSupply(trx)] as const
        })
      const networks = checked.map((books) => {
        const split = parseStoredAmount(books.totalSplit)
        const records = audit.get(books.network) ?? { total: 0n, faucet: 0n }
        const audited = records.total + split
        const issued = parseStoredAmount(books.totalFunded)
        const held = parseStoredAmount(books.totalBalances) + parseStoredAmount(books.totalFees)
        const differs: Array<'issued' | 'balances_and_fees' | 'audit'> =
          issued === held && held === audited
            ? []
            : issued === held
              ? ['audit']
              : issued === audited
                ? ['balances_and_fees']
                : held === audited
                  ? ['issued']
                  : ['issued', 'balances_and_fees', 'audit']
        return {
          network: books.network,
          total_issued: books.totalFunded,
          total_balances: books.totalBalances,
          total_fees: books.totalFees,
          total_audited: formatAmount(audited),
          total_faucet: formatAmount(records.faucet),
          total_split: books.totalSplit,
          negative_balances: books.negativeBalances,
          mismatched_accounts: books.mismatchedAccounts,
          differs,
          balanced: books.ok && differs.length === 0,
        }
      })
      const sum = (pick: (n: (typeof networks)[number]) => string) =>
        formatAmount(networks.reduce((total, n) => total + parseStoredAmount(pick(n)), 0n))
      return {
        total_issued: sum((n) => n.total_issued),
        total_balances: sum((n) => n.total_balances),
        total_fees: sum((n) => n.total_fees),
        total_audited: sum((n) => n.total_audited),
        total_faucet: sum((n) => n.total_faucet),
        negative_balances: networks.reduce((total, n) => total + n.negative_balances, 0),
        mismatched_accounts: networks.reduce((total, n) => total + n.mismatched_accounts, 0),
        differs: [...new Set(networks.flatMap((n) => n.differs))],
        balanced: networks.every((n) => n.balanced),
        networks,
      }
    },
  }
}

/**
 * What the audit log's issue and faucet records minted, in stroops, by network: `minted` of each
 * (the fee included); a record written before it was kept counts its amount and the fee, which is
 * what those issues minted when the issuing account held nothing. An operator's issue is on Pi
 * Network; a faucet record names its network (Pi Testnet). `faucet`: the faucet's share.
 */
async function auditedSupply(db: Kysely<DB>): Promise<Map<LedgerNetwork, { total: bigint; faucet: bigint }>> {
  const { rows } = await sql<{ network: LedgerNetwork; action: string; minted: string }>`
    select coalesce(details->>'network', case when action = 'issue' then ${MAINNET} else ${TESTNET} end) as network, action,
      coalesce(sum(coalesce((details->>'minted')::numeric, (details->>'amount')::numeric + ${formatAmount(ISSUE_FEE_STROOPS)}::numeric)), 0)::text
      as minted from audit_log where action in ('issue', 'faucet') group by 1, 2`.execute(db)
  const supply = new Map<LedgerNetwork, { total: bigint; faucet: bigint }>()
  for (const row of rows) {
    const minted = parseStoredAmount(row.minted)
    const was = supply.get(row.network) ?? { total: 0n, faucet: 0n }
    supply.set(row.network, { total: was.total + minted, faucet: was.faucet + (row.action === 'faucet' ? minted : 0n) })
  }
  return supply
}

/**
 * The console's daily limit (PLINTH_OPERATOR_DAILY_ISSUE_LIMIT), for the whole platform: the Pi
 * issued from the console (actors `user:…`) by all operators together in the last 24 hours,
 * counted from the audit log. Called inside the issuing transaction after the log's lock, it is
 * exact: two issues racing on two processes cannot both get past it (409 issue_limit_reached).
 */
export async function checkDailyLimit(trx: Kysely<DB>, stroops: bigint, limitPi: number): Promise<void> {
  const issued = await consoleIssuedToday(trx)
  if (issued + stroops > BigInt(limitPi) * 10_000_000n) {
    throw new ApiError(
      'issue_limit_reached',
      `Operators together issue at most ${limitPi} Pi in 24 hours (PLINTH_OPERATOR_DAILY_ISSUE_LIMIT); ${formatAmount(issued)} issued so far.`,
    )
  }
}

/** The Pi issued from the console by all operators together in the last 24 hours, in stroops. */
export async function consoleIssuedToday(db: Kysely<DB>): Promise<bigint> {
  const { rows } = await sql<{ issued: string }>`
    select coalesce(sum((details->>'amount')::numeric), 0)::text as issued from audit_log
    where action = 'issue' and actor like 'user:%' and at > now() - interval '24 hours'`.execute(db)
  return parseStoredAmount(rows[0]?.issued ?? '0')
}
