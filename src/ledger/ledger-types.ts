import type { Kysely, RawBuilder } from 'kysely'
import type { DB } from '../db/schema.js'
import type { MemoType } from './ledger-rules.js'
import type { LedgerNetwork } from './networks.js'

/*
 * The ledger's records and hooks, as its service, its history and the /ledger routes share them:
 * one module below all three, so none of them imports another for a type.
 */

export interface AppliedOperation {
  type: 'payment'
  from: string
  to: string
  /** Pi with 7 places, "1.5000000". */
  amount: string
}

/**
 * What the ledger hands to `onTransactionApplied`, inside the transaction that applies it. Its
 * ledger number is not drawn yet: that happens at COMMIT (`onLedgerClosed` has it).
 */
export interface AppliedTransaction {
  hash: string
  /** The passphrase the source's signature verified under. */
  network: LedgerNetwork
  sourceAccount: string
  /** Text memo as text; id as its decimal string; hash and return in base64; null for none. */
  memo: string | null
  memoType: MemoType
  operations: AppliedOperation[]
  // No time: the ledger's close time (the transaction's `created_at`) is taken at COMMIT, after
  // the hooks ran (migration 0015), no earlier than the ledger before.
  /** Stroops, as Horizon's fee_charged: "100" for one operation. */
  feeCharged: string
}

/**
 * The result code of a transaction the platform signed for a payment that, by the time the
 * ledger applied it, no longer took it (cancelled meanwhile): the ledger rolls it back. It is
 * the ledger's own and never leaves the server.
 */
export const PAYMENT_NOT_LINKED = 'tx_payment_not_linked' as const
/**
 * The result code of a transaction from a payment's payer, with that payment's identifier as its
 * memo, applied before the app approved the payment: the ledger refuses it and nothing moves.
 * Plinth's own code (Stellar has none for it); docs/ledger.md lists it.
 */
export const PAYMENT_NOT_APPROVED = 'tx_payment_not_approved' as const

/**
 * What a hook answers to refuse the transaction it was handed: one of the ledger's own result
 * codes and the problem's detail. The ledger rolls the transaction back and answers its own
 * problem (ledger-errors.ts, hookRefused); the hook never builds one.
 */
export interface HookRefusal {
  transaction: typeof PAYMENT_NOT_LINKED | typeof PAYMENT_NOT_APPROVED
  detail: string
}

/**
 * Runs inside the database transaction that applies a ledger transaction, after its rows are
 * written: whatever it writes with `trx` commits with the ledger transaction. If it answers a
 * refusal, or throws, nothing of either is kept (a LedgerError it throws reaches the submitter as is).
 */
// A hook that never refuses may answer nothing at all (Promise<void>).
export type OnTransactionApplied = (trx: Kysely<DB>, tx: AppliedTransaction) => Promise<HookRefusal | undefined> | Promise<void>

/** What a batch hook decided for one transaction: a refusal, or the payment it links (if any). */
export type HookDecision = { refusal: HookRefusal } | { linked: string | undefined }

/**
 * A hook the ledger closer runs over a whole batch, inside the database transaction that applies
 * it (src/ledger/ledger-closer.ts): `prepare` locks and reads, in one statement, what deciding
 * needs for the batch's transactions; each pass then decides every transaction in ledger order in
 * memory, and `writes` hands what the pass accepted to the batch's one write statement. A refusal leaves no trace
 * in the pass. A pass is started again when a transaction it accepted leaves the batch, so a pass
 * only ever writes the decisions of the transactions that commit.
 */
export interface BatchHook {
  prepare(trx: Kysely<DB>, txs: readonly AppliedTransaction[]): Promise<BatchHookRound>
}

export interface BatchHookRound {
  pass(): BatchHookPass
}

export interface BatchHookPass {
  decide(tx: AppliedTransaction): HookDecision
  /** What the pass decided, as data-modifying common table expressions (`[name, body]`) of the batch's one write statement. */
  writes(): ReadonlyArray<readonly [name: string, body: RawBuilder<unknown>]>
}

/** A stored transaction, as Horizon's transaction resource shows it. */
export interface LedgerTransaction {
  hash: string
  ledger: string
  /** The transaction's place in its ledger, from 1: with the ledger, its paging token. */
  applicationOrder: number
  network: LedgerNetwork
  sourceAccount: string
  sourceAccountSequence: string
  /** Stroops. */
  feeCharged: string
  /** Stroops: the most the submitter allowed. */
  maxFee: string
  operationCount: number
  memo: string | null
  memoType: MemoType
  envelopeXdr: string
  resultXdr: string
  /** Base64 LedgerEntryChanges and TransactionMeta v2 ('' for transactions applied before migration 0013). */
  feeMetaXdr: string
  resultMetaXdr: string
  createdAt: Date
}

export type SubmittedTransaction = LedgerTransaction & { operations: AppliedOperation[] }

export interface LedgerOperation extends AppliedOperation {
  transactionHash: string
  ledger: string
  /** Its transaction's place in the ledger, from 1. */
  applicationOrder: number
  /** Position in the transaction, from 0. */
  index: number
  createdAt: Date
}

export interface LedgerAccount {
  address: string
  /** Pi with 7 places. */
  balance: string
  sequence: string
  lastModifiedLedger: string
  createdAt: Date
}

/** A closed ledger: the transactions its closer applied together (docs/ledger.md, "Ledgers close in batches"). */
export interface LedgerSummary {
  sequence: string
  hash: string
  /** The hash of the ledger before (numbers skip only where a commit failed after drawing one); null for the first. */
  prevHash: string | null
  /** Stroops burned by fees up to and including this ledger. */
  feePool: string
  /** Stroops funded by this ledger's close, less the fees burned: the Pi in existence. */
  totalCoins: string
  /** Its transaction of application order 1: the ledger's hash is made from it, and it stands in for the transaction set's. */
  firstTransactionHash: string
  transactionCount: number
  /** Of all its transactions. */
  operationCount: number
  closedAt: Date
}

export interface PageQuery {
  order: 'asc' | 'desc'
  limit: number
  /** A paging token from an earlier record; the page starts after it. */
  cursor?: string | undefined
}

export interface Invariants {
  /** Pi with 7 places. */
  totalBalances: string
  totalFunded: string
  /** Of totalFunded: migration 0029's fundings of money that crossed networks. */
  totalSplit: string
  totalFees: string
  negativeBalances: number
  /** Accounts whose balance differs from their fundings + payments received − payments sent − fees paid. */
  mismatchedAccounts: number
  /** totalBalances = totalFunded − totalFees, and no account is negative or mismatched. */
  ok: boolean
}
