import type { Kysely } from 'kysely'
import type { Clock } from '../clock/clock.js'
import { coalescingReader } from '../db/coalesce.js'
import type { DB } from '../db/schema.js'
import { inTransaction } from '../db/transaction.js'
import { parseInt64Id } from '../lib/integers.js'
import { AmountError, formatAmount, parseAmount, parseStoredAmount } from './amounts.js'
import { badParameter, erasedByReplace, hookRefused, LedgerError, malformed, refused } from './ledger-errors.js'
import { ledgerHistory } from './ledger-history.js'
import { ledgerRepo, type Page } from './ledger-repo.js'
import { toAccount, toLedger, toOperation, toTransaction } from './ledger-rows.js'
import {
  type AccountState,
  applyToAccounts,
  authorize,
  checkStateless,
  type DecodedTransaction,
  decodeEnvelope,
  type Effects,
  involvedAccounts,
  isAccountId,
  isRefusal,
  type LedgerNetwork,
  type OpCode,
} from './ledger-rules.js'
import type {
  AppliedOperation,
  AppliedTransaction,
  Invariants,
  LedgerAccount,
  LedgerOperation,
  LedgerSummary,
  LedgerTransaction,
  OnTransactionApplied,
  PageQuery,
  SubmittedTransaction,
} from './ledger-types.js'
import { ledgerBound } from './paging-tokens.js'
import { type MetaTemplate, transactionMetaTemplate } from './stellar/meta-xdr.js'
import { transactionResultXdr } from './stellar/result-xdr.js'

export interface LedgerDeps {
  db: Kysely<DB>
  clock: Clock
  onTransactionApplied?: OnTransactionApplied
  /** Called once a transaction has committed, with the ledger it closed (a decimal string). */
  onLedgerClosed?: (ledger: string) => void
}

function isUniqueViolation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && 'code' in error && error.code === '23505'
}

function positiveAmount(amount: string): string {
  const stroops = parseAmount(amount)
  if (stroops <= 0n) throw new AmountError(`the amount must be more than 0, got "${amount}"`)
  return formatAmount(stroops)
}

/** An envelope decoded and checked as far as it can be without the database. */
interface Checked {
  tx: DecodedTransaction
  auth: { network: LedgerNetwork; hash: Buffer }
  hash: string
  now: Date
}

/** The transaction's meta XDR (src/ledger/meta-xdr.ts), its ledger blank, from the locked rows before it and its effects. */
function metaOf(
  locked: ReadonlyArray<{ address: string; balance: string; sequence: string; last_modified_ledger: string }>,
  tx: DecodedTransaction,
  effects: Effects,
): MetaTemplate {
  const before = new Map(
    locked.map((row) => [
      row.address,
      { balance: parseStoredAmount(row.balance), sequence: BigInt(row.sequence), lastModifiedLedger: Number(row.last_modified_ledger) },
    ]),
  )
  return transactionMetaTemplate({ source: tx.source, sequence: tx.sequence, fee: effects.feeCharged, payments: effects.payments, before })
}

function requireAccountId(address: string): void {
  if (!isAccountId(address)) throw new Error(`"${address.slice(0, 60)}" is not a ledger account id (G…)`)
}

export function ledgerServiceFactory(deps: LedgerDeps) {
  const { db, clock, onTransactionApplied, onLedgerClosed } = deps
  const repo = ledgerRepo(db)
  /** Horizon's account reads: concurrent reads share one query (batched, never cached). */
  const accountsByAddress = coalescingReader((addresses) => repo.findAccounts(addresses))

  function page(query: PageQuery, kind: 'transaction' | 'ledger'): Page {
    const cursor = query.cursor === undefined ? undefined : parseInt64Id(query.cursor)
    if (query.cursor !== undefined && cursor === undefined) throw badParameter('cursor', 'a paging token (an integer from 0 to 2^63 − 1)')
    return { order: query.order, limit: query.limit, bound: cursor === undefined ? undefined : ledgerBound(cursor, query.order, kind) }
  }

  /** Decodes and checks an envelope as far as it can be without the database: shape, time bounds, fee, signatures. */
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

  /** Applies a checked transaction inside `trx`: locks its accounts, moves the balances and the sequence, records it, runs the hooks. */
  async function apply(trx: Kysely<DB>, checked: Checked, options: { afterApply?: OnTransactionApplied }): Promise<AppliedOperation[]> {
    const { tx, auth, hash, now } = checked
    const txRepo = ledgerRepo(trx)

    const locked = await txRepo.lockAccounts(involvedAccounts(tx))
    const accounts = new Map<string, AccountState>(
      locked.map((row) => [row.address, { balance: parseStoredAmount(row.balance), sequence: BigInt(row.sequence) }]),
    )
    const effects = applyToAccounts(tx, accounts)
    if (isRefusal(effects)) throw refused(effects, tx.envelopeXdr)

    const source = accounts.get(tx.source)
    // applyToAccounts refuses a transaction without a source account, so the lock found it.
    if (source === undefined) throw new Error('applyToAccounts accepted a transaction whose source account is not locked')
    // Every moved balance, and the source's (its sequence moves even if its balance would not).
    const deltas = new Map<string, bigint>([[tx.source, 0n]])
    for (const [address, balance] of effects.balances) deltas.set(address, balance - (accounts.get(address)?.balance ?? 0n))
    const template = metaOf(locked, tx, effects)
    const operations: AppliedOperation[] = effects.payments.map((p) => ({
      type: 'payment',
      from: p.from,
      to: p.to,
      amount: formatAmount(p.amount),
    }))
    // The number is drawn when this transaction commits (ledger-repo.ts, queueTransaction).
    const updated = await txRepo.queueTransaction(
      { address: tx.source, expected: source.sequence.toString(), next: tx.sequence.toString() },
      [...deltas].map(([address, delta]) => [address, formatAmount(delta)] as const),
      {
        hash,
        network: auth.network,
        source_account: tx.source,
        source_account_sequence: tx.sequence.toString(),
        fee_charged: effects.feeCharged.toString(),
        max_fee: tx.maxFee.toString(),
        operation_count: tx.operations.length,
        memo: tx.memo.value,
        memo_type: tx.memo.type,
        envelope_xdr: tx.envelopeXdr,
        result_xdr: transactionResultXdr(
          effects.feeCharged,
          'tx_success',
          tx.operations.map((): OpCode => 'op_success'),
        ),
        created_at: now,
        fee_meta: template.fee,
        fee_meta_ledger_at: template.feeLedgerAt,
        result_meta: template.result,
        result_meta_ledger_at: template.resultLedgerAt,
        op_from: operations.map((op) => op.from),
        op_to: operations.map((op) => op.to),
        op_amount: operations.map((op) => op.amount),
      },
    )
    // The rows are locked, so every condition holds; they stay as the database's own guard.
    if (!updated.has(tx.source)) {
      throw refused({ transaction: 'tx_bad_seq', detail: 'The sequence number was used meanwhile.' }, tx.envelopeXdr)
    }
    const short = [...deltas.keys()].find((address) => !updated.has(address))
    if (short !== undefined) {
      throw refused({ transaction: 'tx_insufficient_balance', detail: `The balance of ${short} changed meanwhile.` }, tx.envelopeXdr)
    }

    const applied: AppliedTransaction = {
      hash,
      network: auth.network,
      sourceAccount: tx.source,
      memo: tx.memo.value,
      memoType: tx.memo.type,
      operations: operations.map((op) => ({ ...op })),
      feeCharged: effects.feeCharged.toString(),
    }
    const refusal = await onTransactionApplied?.(trx, applied)
    if (refusal !== undefined) throw hookRefused(refusal)
    // The submitter's own condition, checked last, in the same transaction: if it refuses or throws, nothing is kept.
    const condition = await options.afterApply?.(trx, applied)
    if (condition !== undefined) throw hookRefused(condition)
    return operations
  }

  /**
   * Runs `applyIn` in a transaction of its own (`hashOf` and `envelopeOf` name what it applied) and answers the transaction as committed, with the
   * ledger it closed (drawn at COMMIT). A conflict on the hash, which can only show at COMMIT now,
   * is the same refusal as a used sequence number: the transaction was applied before.
   */
  async function applyAndClose(
    hashOf: () => string,
    envelopeOf: () => string,
    applyIn: (trx: Kysely<DB>) => Promise<AppliedOperation[]>,
  ): Promise<SubmittedTransaction> {
    let operations: AppliedOperation[]
    try {
      operations = await db.transaction().execute(applyIn)
    } catch (error) {
      if (isUniqueViolation(error))
        throw refused({ transaction: 'tx_bad_seq', detail: 'This transaction was already applied.' }, envelopeOf())
      throw error
    }
    const hash = hashOf()
    const row = await repo.findTransaction(hash)
    // Only a reset or a restore that committed between the two erases a committed transaction: the
    // request answers as the new world has it, not applied (docs/ledger.md, "Reset and restore").
    if (row === undefined) throw new LedgerError(erasedByReplace(hash))
    onLedgerClosed?.(row.ledger)
    return { ...toTransaction(row), operations }
  }

  return {
    ...ledgerHistory(repo),

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
        const txRepo = ledgerRepo(t)
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
        const txRepo = ledgerRepo(trx)
        const balance = await txRepo.credit(address, funded, now)
        await txRepo.insertFunding(address, funded, now)
        return balance
      })
      return { address, balance }
    },

    /**
     * Applies a signed transaction envelope (base64 XDR) atomically, or refuses it with a
     * LedgerError carrying Horizon's problem and result codes. A refused transaction changes
     * nothing: no fee, no sequence number. `afterApply` lets an in-process submitter add a
     * condition of its own, checked inside the applying transaction after every other hook.
     */
    async submit(envelopeXdr: string, options: { afterApply?: OnTransactionApplied } = {}): Promise<SubmittedTransaction> {
      // Signatures are checked before the database transaction: no connection waits on crypto.
      const checked = check(envelopeXdr)
      try {
        return await applyAndClose(
          () => checked.hash,
          () => checked.tx.envelopeXdr,
          (trx) => apply(trx, checked, options),
        )
      } catch (error) {
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
    },

    /**
     * Signs and applies a transaction of `source` that the platform signs itself (a user's
     * payment), in one database transaction that first takes the account's signing lock and
     * then reads its sequence number for `sign`: two such transactions of one account, on any
     * number of processes, never draw the same number, so they never refuse each other. A
     * transaction someone else signed for the account can still take the number meanwhile
     * (tx_bad_seq, as for any submitter). Missing account: tx_no_source_account.
     */
    async submitSigned(
      source: string,
      sign: (sequence: string) => string,
      options: { afterApply?: OnTransactionApplied } = {},
    ): Promise<SubmittedTransaction> {
      let hash = ''
      let envelopeXdr = ''
      return applyAndClose(
        () => hash,
        () => envelopeXdr,
        async (trx) => {
          const txRepo = ledgerRepo(trx)
          await txRepo.lockSigner(source)
          // Read after the lock is granted (a statement of its own, so a snapshot taken after it).
          const account = await txRepo.findAccount(source)
          if (account === undefined) {
            throw refused({ transaction: 'tx_no_source_account', detail: `The account ${source} does not exist.` }, '')
          }
          const checked = check(sign(account.sequence))
          hash = checked.hash
          envelopeXdr = checked.tx.envelopeXdr
          return apply(trx, checked, options)
        },
      )
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

    /** Every applied transaction, in ledger order. */
    async listTransactions(query: PageQuery): Promise<LedgerTransaction[]> {
      return (await repo.listTransactions(page(query, 'transaction'))).map(toTransaction)
    },

    /** Transactions the account sent, or that paid it or were paid from it, in ledger order. */
    async listAccountTransactions(address: string, query: PageQuery): Promise<LedgerTransaction[]> {
      return (await repo.listTransactions(page(query, 'transaction'), { account: address })).map(toTransaction)
    },

    /** The transaction of one ledger (a page of at most one). */
    async listLedgerTransactions(ledger: string, query: PageQuery): Promise<LedgerTransaction[]> {
      return (await repo.listTransactions(page(query, 'transaction'), { ledger })).map(toTransaction)
    },

    async listLedgers(query: PageQuery): Promise<LedgerSummary[]> {
      return (await repo.listLedgers(page(query, 'ledger'))).map(toLedger)
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

    /** Test Pi is only created by funding and only destroyed by fees: check that the books balance. */
    async checkInvariants(): Promise<Invariants> {
      const totals = await repo.totals()
      const balances = parseStoredAmount(totals.total_balances)
      const funded = parseStoredAmount(totals.total_funded)
      const fees = BigInt(totals.total_fees_stroops)
      return {
        totalBalances: formatAmount(balances),
        totalFunded: formatAmount(funded),
        totalFees: formatAmount(fees),
        negativeBalances: totals.negative_balances,
        mismatchedAccounts: totals.mismatched_accounts,
        ok: balances === funded - fees && totals.negative_balances === 0 && totals.mismatched_accounts === 0,
      }
    },
  }
}

export type LedgerService = ReturnType<typeof ledgerServiceFactory>
