import type { Kysely } from 'kysely'
import type { LedgerCloserLimits } from '../config.js'
import type { DB } from '../db/schema.js'
import { formatAmount, parseStoredAmount } from './amounts.js'
import { type LockedAccount, ledgerBatchRepo, type QueuedTransaction } from './ledger-batch-repo.js'
import { busy, erasedByReplace, hookRefused, LedgerError, refused } from './ledger-errors.js'
import type { TransactionRow } from './ledger-repo.js'
import {
  type AccountState,
  applyToAccounts,
  type DecodedTransaction,
  type Effects,
  involvedAccounts,
  isRefusal,
  type OpCode,
} from './ledger-rules.js'
import type {
  AppliedOperation,
  AppliedTransaction,
  BatchHook,
  BatchHookPass,
  HookDecision,
  HookRefusal,
  OnTransactionApplied,
} from './ledger-types.js'
import type { LedgerNetwork } from './networks.js'
import { type AccountBefore, transactionMetaTemplate } from './stellar/meta-xdr.js'
import { transactionResultXdr } from './stellar/result-xdr.js'

/**
 * The ledger closer: one per process. Submitted transactions, decoded and with their signatures
 * verified outside any database transaction, queue up; the closer applies them in batches, each
 * in one database transaction that closes one ledger holding all of them (docs/ledger.md,
 * "Ledgers close in batches"):
 *
 * 1. lock every account the batch involves, in one statement, in address order (no deadlocks);
 * 2. the batch hook (payments) locks and reads what it needs, in one statement;
 * 3. apply each transaction in order, in memory: the rules, the hook's decision, the submitter's
 *    condition. A transaction they refuse gets its refusal and leaves the batch; nothing of it is
 *    written, so the others never roll back for it;
 * 4. write the accounts, the queued transactions and the hook's links in one statement, and run
 *    the per-transaction hooks;
 * 5. COMMIT: the deferred trigger draws one ledger number for the batch, in commit order across
 *    processes, and writes the ledger. Every submitter is answered after the COMMIT returned (after
 *    the WAL flush), with its own hash, ledger and result.
 *
 * While one batch commits, the next gathers: a lone transaction closes its own ledger at once (no
 * wait unless `maxWaitMs` asks for one), and a busy one fills batches up to `maxBatch`. Past
 * `maxQueue` waiting transactions, a submit is refused at once with 503 and Retry-After.
 */

export type CloserLimits = LedgerCloserLimits

/** An envelope decoded and checked as far as it can be without the database. */
export interface Checked {
  tx: DecodedTransaction
  auth: { network: LedgerNetwork; hash: Buffer }
  hash: string
  now: Date
}

/** What a submitter hands the closer: an envelope someone signed, or a transaction the platform signs with the sequence the batch gives. */
export type Submission = (
  | { kind: 'envelope'; checked: Checked }
  | {
      kind: 'signed'
      source: string
      /** Every account the signed transaction involves, the source among them: locked before it is signed. */
      accounts: readonly string[]
      sign: (sequence: string) => string
    }
) & {
  /** In memory, after the hook's decision: a refusal takes the transaction out of the batch. */
  condition?: (decision: HookDecision) => HookRefusal | undefined
  /** Async, after the batch's rows are written; its writes commit with the ledger. Such a transaction closes a ledger alone. */
  afterApply?: OnTransactionApplied
  /**
   * New money for the transaction (an issue, src/admin/admin-service.ts): with the accounts locked
   * and before the transaction is applied, answers the stroops to fund each account with (a
   * funding: supply). It commits with the transaction or not at all: when the transaction is then
   * refused, the funding rolls back with it. Such a transaction closes a ledger alone.
   */
  mint?: Mint
}

/** Reads the locked balances (stroops) in the applying transaction; answers what to fund, by address. */
export type Mint = (trx: Kysely<DB>, balances: ReadonlyMap<string, bigint>) => Promise<ReadonlyMap<string, bigint>>

export interface Closed {
  row: TransactionRow
  operations: AppliedOperation[]
}

export interface CloserDeps {
  db: Kysely<DB>
  /** The network whose ledger this closer closes (its accounts, its ledger numbers). */
  network: LedgerNetwork
  limits: CloserLimits
  check: (envelopeXdr: string) => Checked
  /** The transactions of these hashes, as stored (one read after COMMIT). */
  readBack: (hashes: string[]) => Promise<Map<string, TransactionRow>>
  hook?: BatchHook | undefined
  onTransactionApplied?: OnTransactionApplied | undefined
  /** The platform's time: a mint's funding is recorded at it. */
  now: () => Date
  /** After each COMMIT that closed a ledger: its number and how many transactions it holds. */
  onClosed?: (ledger: string, transactions: number) => void
}

interface Waiting {
  submission: Submission
  resolve: (closed: Closed) => void
  reject: (error: unknown) => void
  /** The platform-signed envelope for the sequence it was last signed with. */
  signed?: { sequence: bigint; checked: Checked }
}

/** A transaction the pass accepted, with what the batch writes for it. */
interface Accepted {
  waiting: Waiting
  applied: AppliedTransaction
  queued: QueuedTransaction
}

interface Plan {
  accepted: Accepted[]
  refused: Map<Waiting, unknown>
  accounts: Map<string, AccountState>
  hookPass: BatchHookPass | undefined
}

/** A transaction whose per-transaction hook or condition refused it after the batch was written: the batch is applied again without it. */
class ItemFailed extends Error {
  constructor(
    readonly waiting: Waiting,
    readonly error: unknown,
  ) {
    super('a transaction of the batch failed after the batch was written')
  }
}

function noSourceAccount(source: string): LedgerError {
  return refused({ transaction: 'tx_no_source_account', detail: `The account ${source} does not exist.` }, '')
}

/** The locked accounts as the rules read them: balances in stroops, sequences as integers. */
function statesOf(locked: ReadonlyMap<string, LockedAccount>): Map<string, AccountState> {
  return new Map(
    [...locked].map(([address, row]) => [address, { balance: parseStoredAmount(row.balance), sequence: BigInt(row.sequence) }]),
  )
}

export function ledgerCloser(deps: CloserDeps) {
  const { db, limits, check } = deps
  const queue: Waiting[] = []
  let closing = false

  /** The envelope of a submission at the source's current sequence: signed again only when the sequence moved. */
  function envelopeOf(waiting: Waiting, accounts: ReadonlyMap<string, AccountState>): Checked {
    const { submission } = waiting
    if (submission.kind === 'envelope') return submission.checked
    const source = accounts.get(submission.source)
    if (source === undefined) throw noSourceAccount(submission.source)
    if (waiting.signed?.sequence !== source.sequence) {
      const checked = check(submission.sign(source.sequence.toString()))
      const outside = involvedAccounts(checked.tx).find((address) => !submission.accounts.includes(address))
      if (outside !== undefined) throw new Error(`a platform-signed transaction involves ${outside}, which its submitter did not declare`)
      waiting.signed = { sequence: source.sequence, checked }
    }
    return waiting.signed.checked
  }

  function appliedOf(checked: Checked, effects: Effects): AppliedTransaction {
    return {
      hash: checked.hash,
      network: checked.auth.network,
      sourceAccount: checked.tx.source,
      memo: checked.tx.memo.value,
      memoType: checked.tx.memo.type,
      operations: effects.payments.map((p) => ({ type: 'payment', from: p.from, to: p.to, amount: formatAmount(p.amount) })),
      feeCharged: effects.feeCharged.toString(),
    }
  }

  /**
   * One pass over the batch in order, in memory, from the locked accounts: each transaction the
   * rules, the hook and its submitter's condition accept moves the accounts for the next. Answers
   * `undefined` when a transaction the hook had accepted leaves the batch (its submitter's
   * condition refused): it is added to `left` and the pass must start again.
   */
  function pass(
    batch: readonly Waiting[],
    locked: ReadonlyMap<string, LockedAccount>,
    round: { pass(): BatchHookPass } | undefined,
    left: Map<Waiting, unknown>,
  ): Plan | undefined {
    const accounts = statesOf(locked)
    const changed = new Set<string>()
    const hookPass = round?.pass()
    const accepted: Accepted[] = []
    const refusedHere = new Map<Waiting, unknown>(left)
    for (const waiting of batch) {
      if (left.has(waiting)) continue
      let checked: Checked
      try {
        checked = envelopeOf(waiting, accounts)
      } catch (error) {
        refusedHere.set(waiting, error)
        continue
      }
      const { tx } = checked
      if (checked.auth.network !== deps.network) {
        // A transaction applies only on the ledger of the passphrase it is signed under (src/ledger/networks.ts).
        const detail = `The transaction is signed under the "${checked.auth.network}" passphrase, not ${deps.network}'s.`
        refusedHere.set(waiting, refused({ transaction: 'tx_bad_auth', detail }, tx.envelopeXdr))
        continue
      }
      const effects = applyToAccounts(tx, accounts)
      if (isRefusal(effects)) {
        refusedHere.set(waiting, refused(effects, tx.envelopeXdr))
        continue
      }
      const applied = appliedOf(checked, effects)
      const decision: HookDecision = hookPass?.decide(applied) ?? { linked: undefined }
      if ('refusal' in decision) {
        // The hook leaves no trace of a refusal: the pass goes on without the transaction.
        refusedHere.set(waiting, hookRefused(decision.refusal))
        continue
      }
      const condition = waiting.submission.condition?.(decision)
      if (condition !== undefined) {
        left.set(waiting, hookRefused(condition))
        return undefined
      }

      const involved = new Set([tx.source, ...effects.balances.keys()])
      const before = new Map<string, AccountBefore>()
      for (const address of involved) {
        const state = accounts.get(address)
        const row = locked.get(address)
        if (state === undefined || row === undefined)
          throw new Error(`applyToAccounts accepted a transaction on ${address}, which is not locked`)
        before.set(address, {
          balance: state.balance,
          sequence: state.sequence,
          lastModifiedLedger: Number(row.last_modified_ledger),
          inThisLedger: changed.has(address),
        })
      }
      const template = transactionMetaTemplate({
        source: tx.source,
        sequence: tx.sequence,
        fee: effects.feeCharged,
        payments: effects.payments,
        before,
      })
      const source = accounts.get(tx.source) as AccountState
      accounts.set(tx.source, { balance: source.balance, sequence: tx.sequence })
      for (const [address, balance] of effects.balances) {
        const state = accounts.get(address) as AccountState
        accounts.set(address, { balance, sequence: state.sequence })
      }
      for (const address of involved) changed.add(address)
      accepted.push({
        waiting,
        applied,
        queued: {
          hash: checked.hash,
          order: accepted.length + 1,
          network: checked.auth.network,
          source: tx.source,
          sequence: tx.sequence.toString(),
          feeCharged: effects.feeCharged.toString(),
          maxFee: tx.maxFee.toString(),
          operationCount: tx.operations.length,
          memo: tx.memo.value,
          memoType: tx.memo.type,
          envelopeXdr: tx.envelopeXdr,
          resultXdr: transactionResultXdr(
            effects.feeCharged,
            'tx_success',
            tx.operations.map((): OpCode => 'op_success'),
          ),
          feeMeta: template.fee,
          feeMetaLedgerAt: template.feeLedgerAt,
          resultMeta: template.result,
          resultMetaLedgerAt: template.resultLedgerAt,
          opFrom: applied.operations.map((op) => op.from),
          opTo: applied.operations.map((op) => op.to),
          opAmount: applied.operations.map((op) => op.amount),
          accounts: [...involved],
        },
      })
    }
    const moved = new Map([...accounts].filter(([address]) => changed.has(address)))
    return { accepted, refused: refusedHere, accounts: moved, hookPass }
  }

  /** Applies a batch in one database transaction; answers what committed and what was refused. Throws ItemFailed or the database's error. */
  async function apply(batch: readonly Waiting[]): Promise<Plan> {
    return db.transaction().execute(async (trx) => {
      const repo = ledgerBatchRepo(trx, deps.network)
      const involved = new Set<string>()
      for (const { submission } of batch) {
        const addresses = submission.kind === 'envelope' ? involvedAccounts(submission.checked.tx) : submission.accounts
        for (const address of addresses) involved.add(address)
      }
      const locked = await repo.lockAccounts([...involved])
      // Only a batch of one mints (take()): the funding is the transaction's own.
      const mint = batch.length === 1 ? batch[0]?.submission.mint : undefined
      if (mint !== undefined) {
        const credits = await mint(trx, new Map([...statesOf(locked)].map(([address, state]) => [address, state.balance])))
        for (const [address, stroops] of credits) {
          const row = locked.get(address)
          if (row === undefined || stroops <= 0n) throw new Error(`a mint of ${stroops} stroops for ${address}, not locked by the batch`)
          const balance = formatAmount(parseStoredAmount(row.balance) + stroops)
          await repo.fund(address, formatAmount(stroops), balance, deps.now())
          locked.set(address, { ...row, balance })
        }
      }
      const startAccounts = statesOf(locked)
      const left = new Map<Waiting, unknown>()
      // What the hook needs to lock: every transaction's memo and source, as first signed.
      const previews: AppliedTransaction[] = []
      for (const waiting of batch) {
        try {
          const checked = envelopeOf(waiting, startAccounts)
          previews.push({
            hash: checked.hash,
            network: checked.auth.network,
            sourceAccount: checked.tx.source,
            memo: checked.tx.memo.value,
            memoType: checked.tx.memo.type,
            operations: [],
            feeCharged: '0',
          })
        } catch (error) {
          left.set(waiting, error)
        }
      }
      const round = deps.hook === undefined || previews.length === 0 ? undefined : await deps.hook.prepare(trx, previews)
      let plan = pass(batch, locked, round, left)
      while (plan === undefined) plan = pass(batch, locked, round, left)
      if (plan.accepted.length === 0) {
        // A refused transaction mints nothing: its refusal rolls the funding back.
        if (mint !== undefined) throw [...plan.refused.values()][0]
        return plan
      }

      await repo.write(
        [...plan.accounts].map(([address, state]) => ({
          address,
          balance: formatAmount(state.balance),
          sequence: state.sequence.toString(),
        })),
        plan.accepted.map((a) => a.queued),
        new Date(),
        plan.hookPass?.writes() ?? [],
      )
      for (const { waiting, applied } of plan.accepted) {
        try {
          const refusal = (await deps.onTransactionApplied?.(trx, applied)) ?? (await waiting.submission.afterApply?.(trx, applied))
          if (refusal !== undefined && refusal !== null) throw hookRefused(refusal)
        } catch (error) {
          throw new ItemFailed(waiting, error)
        }
      }
      return plan
    })
  }

  /** Applies a batch and answers each of its submitters; a failure after the batch was written applies it again, one by one. */
  async function close(batch: Waiting[]): Promise<void> {
    let plan: Plan
    try {
      plan = await apply(batch)
    } catch (error) {
      if (batch.length === 1) {
        ;(batch[0] as Waiting).reject(error instanceof ItemFailed ? error.error : error)
        return
      }
      // One transaction's hook, or the database, failed the whole batch: each alone, so only the culprit fails.
      for (const waiting of batch) await close([waiting])
      return
    }
    for (const [waiting, error] of plan.refused) waiting.reject(error)
    if (plan.accepted.length === 0) return
    let rows: Map<string, TransactionRow>
    try {
      rows = await deps.readBack(plan.accepted.map((a) => a.queued.hash))
    } catch (error) {
      for (const { waiting } of plan.accepted) waiting.reject(error)
      return
    }
    let ledger: string | undefined
    for (const { waiting, applied } of plan.accepted) {
      const row = rows.get(applied.hash)
      // Only a reset or a restore that committed meanwhile erases a committed transaction (docs/ledger.md, "Reset and restore").
      if (row === undefined) waiting.reject(new LedgerError(erasedByReplace(applied.hash)))
      else {
        ledger = row.ledger
        waiting.resolve({ row, operations: applied.operations })
      }
    }
    if (ledger !== undefined) deps.onClosed?.(ledger, plan.accepted.length)
  }

  /** The next batch: up to maxBatch in arrival order; a submission with afterApply or a mint closes a ledger alone. */
  function take(): Waiting[] {
    const alone = (waiting: Waiting) => waiting.submission.afterApply !== undefined || waiting.submission.mint !== undefined
    if (alone(queue[0] as Waiting)) return queue.splice(0, 1)
    let end = 1
    while (end < queue.length && end < limits.maxBatch && !alone(queue[end] as Waiting)) end += 1
    return queue.splice(0, end)
  }

  async function run(): Promise<void> {
    closing = true
    try {
      while (queue.length > 0) {
        // One turn of the event loop first, so that the requests already received reach the queue: on
        // PGlite a batch runs without ever leaving the microtask queue, and without it every
        // transaction would close a ledger alone.
        await new Promise((resolve) => setImmediate(resolve))
        if (limits.maxWaitMs > 0 && queue.length < limits.maxBatch) await new Promise((resolve) => setTimeout(resolve, limits.maxWaitMs))
        await close(take())
      }
    } finally {
      closing = false
    }
  }

  return {
    /** Queues a submission for the next ledger; settles once its batch committed (or it was refused). */
    submit(submission: Submission): Promise<Closed> {
      if (queue.length >= limits.maxQueue) return Promise.reject(new LedgerError(busy(queue.length)))
      return new Promise<Closed>((resolve, reject) => {
        queue.push({ submission, resolve, reject })
        if (!closing) void run()
      })
    },

    /** Transactions waiting for a ledger (not counting the batch being applied). */
    waiting: (): number => queue.length,
  }
}
