import type { Kysely } from 'kysely'
import type { Clock } from '../clock/clock.js'
import { ledgerCloserLimits } from '../config.js'
import { coalescingReader } from '../db/coalesce.js'
import type { DB } from '../db/schema.js'
import { inTransaction } from '../db/transaction.js'
import { parseInt64Id } from '../lib/integers.js'
import { AmountError, formatAmount, parseAmount, parseStoredAmount } from './amounts.js'
import { type Checked, type Closed, type CloserLimits, ledgerCloser, type Mint } from './ledger-closer.js'
import { badParameter, LedgerError, malformed, refused } from './ledger-errors.js'
import { ledgerHistory } from './ledger-history.js'
import { ledgerRepo, type Page } from './ledger-repo.js'
import { toAccount, toLedger, toOperation, toTransaction } from './ledger-rows.js'
import { authorize, checkStateless, decodeEnvelope, isAccountId, isRefusal } from './ledger-rules.js'
import type {
  BatchHook,
  HookDecision,
  HookRefusal,
  Invariants,
  LedgerAccount,
  LedgerOperation,
  LedgerSummary,
  LedgerTransaction,
  OnTransactionApplied,
  PageQuery,
  SubmittedTransaction,
} from './ledger-types.js'
import type { LedgerNetwork } from './networks.js'
import { ledgerPosition, transactionPosition } from './paging-tokens.js'

export interface LedgerDeps {
  db: Kysely<DB>
  /** The network whose ledger this is (src/ledger/networks.ts): it applies only transactions signed under its passphrase. */
  network: LedgerNetwork
  clock: Clock
  /** The closer's bounds (docs/ledger.md, "Ledgers close in batches"); the defaults when absent. */
  closer?: CloserLimits
  /** Runs over each batch in its database transaction (the payments' links: src/payments/payments-ledger.ts). */
  hook?: BatchHook
  /** Runs for each transaction of a batch after the batch is written; a refusal takes the transaction out, the batch is applied again without it. */
  onTransactionApplied?: OnTransactionApplied
  /** Called once a batch has committed, with the ledger it closed (a decimal string) and how many transactions it holds. */
  onLedgerClosed?: (ledger: string, transactions: number) => void
}

function isUniqueViolation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && 'code' in error && error.code === '23505'
}

function positiveAmount(amount: string): string {
  const stroops = parseAmount(amount)
  if (stroops <= 0n) throw new AmountError(`the amount must be more than 0, got "${amount}"`)
  return formatAmount(stroops)
}

function requireAccountId(address: string): void {
  if (!isAccountId(address)) throw new Error(`"${address.slice(0, 60)}" is not a ledger account id (G…)`)
}

export function ledgerServiceFactory(deps: LedgerDeps) {
  const { db, clock, network } = deps
  const repo = ledgerRepo(db, network)
  /** Horizon's account reads: concurrent reads share one query (batched, never cached). */
  const accountsByAddress = coalescingReader((addresses) => repo.findAccounts(addresses))

  /** The page a query asks for, its cursor (any TOID) turned into the position the page starts past. */
  function page<P>(query: PageQuery, position: (cursor: bigint, order: 'asc' | 'desc') => P): Page<P> {
    const cursor = query.cursor === undefined ? undefined : parseInt64Id(query.cursor)
    if (query.cursor !== undefined && cursor === undefined) throw badParameter('cursor', 'a paging token (an integer from 0 to 2^63 − 1)')
    return { order: query.order, limit: query.limit, after: cursor === undefined ? undefined : position(cursor, query.order) }
  }

  /**
   * Decodes and checks an envelope as far as it can be without the database: shape, time bounds,
   * fee, signatures. `auth.network` is the network of the passphrase it is signed under, this
   * ledger's or not (submitChecked refuses another's).
   */
  function check(envelopeXdr: string): Checked {
    const decoded = decodeEnvelope(envelopeXdr)
    if (!decoded.ok) throw malformed(decoded.detail, envelopeXdr)
    const tx = decoded.tx
    const now = clock.now()
    const seconds = (date: Date) => BigInt(Math.floor(date.getTime() / 1000))
    const early = checkStateless(tx, seconds(now), seconds(clock.wallNow()))
    if (early !== undefined) throw refused(early, tx.envelopeXdr)
    const auth = authorize(tx)
    if (isRefusal(auth)) throw refused(auth, tx.envelopeXdr)
    return { tx, auth, hash: auth.hash.toString('hex'), now }
  }

  const limits = deps.closer ?? ledgerCloserLimits()
  const closer = ledgerCloser({
    db,
    network,
    limits,
    check,
    now: () => clock.now(),
    readBack: (hashes) => repo.findTransactions(hashes),
    hook: deps.hook,
    onTransactionApplied: deps.onTransactionApplied,
    onClosed: deps.onLedgerClosed,
  })

  const submitted = ({ row, operations }: Closed): SubmittedTransaction => ({ ...toTransaction(row), operations })

  /** What `submit` does with an envelope `check` accepted: refused unless it is signed under this ledger's passphrase. */
  async function submitChecked(checked: Checked, options: { afterApply?: OnTransactionApplied } = {}): Promise<SubmittedTransaction> {
    if (checked.auth.network !== network) {
      throw refused(
        {
          transaction: 'tx_bad_auth',
          detail: `The transaction is signed under the "${checked.auth.network}" passphrase: it applies on that network's ledger, not on ${network}'s.`,
        },
        checked.tx.envelopeXdr,
      )
    }
    try {
      return submitted(await closer.submit({ kind: 'envelope', checked, ...options }))
    } catch (caught) {
      // A conflict on the hash can only show at COMMIT, and only for a transaction applied before.
      const error = isUniqueViolation(caught)
        ? refused({ transaction: 'tx_bad_seq', detail: 'This transaction was already applied.' }, checked.tx.envelopeXdr)
        : caught
      // A resubmission of an applied transaction (its sequence number is used: by itself) answers
      // its earlier result, as Horizon does for a duplicate; concurrent resubmissions all end here.
      if (error instanceof LedgerError && error.resultCodes?.transaction === 'tx_bad_seq') {
        const earlier = await repo.findTransaction(checked.hash)
        if (earlier !== undefined) {
          const operations = (await repo.findOperations(checked.hash)).map(({ type, from, to, amount }) => ({ type, from, to, amount }))
          return { ...toTransaction(earlier), operations }
        }
      }
      throw error
    }
  }

  return {
    ...ledgerHistory(repo),

    network,

    check,

    /**
     * Creates the ledger account of a new wallet with its starting balance, recorded as a
     * funding; inside `trx` when given, so the wallet and its account commit together.
     */
    async openAccount(address: string, startingBalance: string, trx?: Kysely<DB>): Promise<void> {
      requireAccountId(address)
      const stroops = parseAmount(startingBalance)
      const amount = formatAmount(stroops)
      const now = clock.now()
      await inTransaction(trx ?? db, async (t) => {
        const txRepo = ledgerRepo(t, network)
        if (!(await txRepo.insertAccount(address, amount, now))) throw new Error(`the ledger account ${address} already exists`)
        if (stroops > 0n) await txRepo.insertFunding(address, amount, now)
      })
    },

    /** Tops an account up with test Pi, creating it if missing; answers the new balance. */
    async fund(address: string, amount: string): Promise<{ address: string; balance: string }> {
      requireAccountId(address)
      const funded = positiveAmount(amount)
      const now = clock.now()
      const balance = await inTransaction(db, async (trx) => {
        const txRepo = ledgerRepo(trx, network)
        const balance = await txRepo.credit(address, funded, now)
        await txRepo.insertFunding(address, funded, now)
        return balance
      })
      return { address, balance }
    },

    /**
     * Applies a signed transaction envelope (base64 XDR) in the next ledger the closer closes, or
     * refuses it with a LedgerError carrying Horizon's problem and result codes. A refused
     * transaction changes nothing: no fee, no sequence number. `afterApply` lets an in-process
     * submitter add a condition of its own, checked inside the applying transaction after every
     * other hook (such a transaction closes a ledger alone).
     */
    async submit(envelopeXdr: string, options: { afterApply?: OnTransactionApplied } = {}): Promise<SubmittedTransaction> {
      // Signatures are checked before the database transaction: no connection waits on crypto.
      return submitChecked(check(envelopeXdr), options)
    },

    submitChecked,

    /**
     * Signs and applies a transaction of `source` that the platform signs itself (a user's
     * payment): the closer locks `accounts` (every account the transaction involves, the source
     * among them), then `sign` builds it with the sequence number the batch has reached for the
     * source. Two such transactions of one account, on any number of processes, never draw the same
     * number (the account's row lock, then the batch's order), so they never refuse each other. A
     * transaction someone else signed for the account can still take the number in the same batch
     * (tx_bad_seq, as for any submitter). Missing account: tx_no_source_account. `condition`, in
     * memory, sees what the batch hook decided for the transaction and may refuse it.
     */
    async submitSigned(
      source: string,
      sign: (sequence: string) => string,
      options: {
        accounts: readonly string[]
        condition?: (decision: HookDecision) => HookRefusal | undefined
        afterApply?: OnTransactionApplied
        /** New money, in the applying transaction (ledger-closer.ts, `Submission.mint`). */
        mint?: Mint
      },
    ): Promise<SubmittedTransaction> {
      const accounts = options.accounts.includes(source) ? options.accounts : [source, ...options.accounts]
      return submitted(await closer.submit({ kind: 'signed', source, sign, ...options, accounts }))
    },

    async getAccount(address: string): Promise<LedgerAccount | undefined> {
      const row = await accountsByAddress.get(address)
      return row === undefined ? undefined : toAccount(row)
    },

    async getTransaction(hash: string): Promise<LedgerTransaction | undefined> {
      const row = await repo.findTransaction(hash)
      return row === undefined ? undefined : toTransaction(row)
    },

    async getOperations(hash: string): Promise<LedgerOperation[]> {
      return (await repo.findOperations(hash)).map(toOperation)
    },

    /** Every applied transaction, in (ledger, application order) order. */
    async listTransactions(query: PageQuery): Promise<LedgerTransaction[]> {
      return (await repo.listTransactions(page(query, transactionPosition))).map(toTransaction)
    },

    /** Transactions the account sent, or that paid it or were paid from it, in (ledger, application order) order. */
    async listAccountTransactions(address: string, query: PageQuery): Promise<LedgerTransaction[]> {
      return (await repo.listTransactions(page(query, transactionPosition), { account: address })).map(toTransaction)
    },

    /** The transactions of one ledger, in application order. */
    async listLedgerTransactions(ledger: string, query: PageQuery): Promise<LedgerTransaction[]> {
      return (await repo.listTransactions(page(query, transactionPosition), { ledger })).map(toTransaction)
    },

    async listLedgers(query: PageQuery): Promise<LedgerSummary[]> {
      return (await repo.listLedgers(page(query, ledgerPosition))).map(toLedger)
    },

    async getLedger(sequence: string): Promise<LedgerSummary | undefined> {
      const row = await repo.findLedger(sequence)
      return row === undefined ? undefined : toLedger(row)
    },

    /** The last closed ledger ("0" with closedAt null before the first transaction). */
    async latestLedger(): Promise<{ sequence: string; closedAt: Date | null }> {
      const latest = await repo.latestLedger()
      return { sequence: latest.ledger, closedAt: latest.closed_at }
    },

    /** The most transactions one ledger holds (Horizon's max_tx_set_size). */
    maxTransactionsPerLedger: limits.maxBatch,

    /** Transactions waiting for the closer (not counting the batch being applied). */
    closerWaiting: (): number => closer.waiting(),

    /** Test Pi is only created by funding and only destroyed by fees: check that the books balance. */
    async checkInvariants(): Promise<Invariants> {
      const totals = await repo.totals()
      const balances = parseStoredAmount(totals.total_balances)
      const funded = parseStoredAmount(totals.total_funded)
      const fees = BigInt(totals.total_fees_stroops)
      return {
        totalBalances: formatAmount(balances),
        totalFunded: formatAmount(funded),
        totalSplit: formatAmount(parseStoredAmount(totals.total_split)),
        totalFees: formatAmount(fees),
        negativeBalances: totals.negative_balances,
        mismatchedAccounts: totals.mismatched_accounts,
        ok: balances === funded - fees && totals.negative_balances === 0 && totals.mismatched_accounts === 0,
      }
    },
  }
}

export type LedgerService = ReturnType<typeof ledgerServiceFactory>
