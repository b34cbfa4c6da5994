import { sha256Hex } from '../lib/crypto.js'
import { parseStoredAmount } from './amounts.js'
import type { AccountRow, LedgerRow, OperationRow, TransactionRow } from './ledger-repo.js'
import type { LedgerAccount, LedgerOperation, LedgerSummary, LedgerTransaction } from './ledger-types.js'

// The ledger's stored rows as the records its service, its history and the /ledger routes read.

export const toAccount = (row: AccountRow): LedgerAccount => ({
  address: row.address,
  balance: row.balance,
  sequence: row.sequence,
  lastModifiedLedger: row.last_modified_ledger,
  createdAt: row.created_at,
})

export const toTransaction = (row: TransactionRow): LedgerTransaction => ({
  hash: row.hash,
  ledger: row.ledger,
  applicationOrder: row.application_order,
  network: row.network,
  sourceAccount: row.source_account,
  sourceAccountSequence: row.source_account_sequence,
  feeCharged: row.fee_charged,
  maxFee: row.max_fee,
  operationCount: row.operation_count,
  memo: row.memo,
  memoType: row.memo_type,
  envelopeXdr: row.envelope_xdr,
  resultXdr: row.result_xdr,
  feeMetaXdr: row.fee_meta_xdr,
  resultMetaXdr: row.result_meta_xdr,
  createdAt: row.created_at,
})

/**
 * The ledger's own hash of a closed ledger: stable, and distinct from its transactions' hashes. Made
 * from its first transaction's, so the ledgers of one transaction closed before batches keep theirs.
 */
const ledgerHash = (sequence: string, firstTransactionHash: string): string =>
  sha256Hex(`plinth-ledger:${sequence}:${firstTransactionHash}`)

export const toLedger = (row: LedgerRow): LedgerSummary => ({
  sequence: row.ledger,
  hash: ledgerHash(row.ledger, row.first_transaction_hash),
  prevHash:
    row.prev_ledger === null || row.prev_first_transaction_hash === null
      ? null
      : ledgerHash(row.prev_ledger, row.prev_first_transaction_hash),
  firstTransactionHash: row.first_transaction_hash,
  transactionCount: row.transaction_count,
  operationCount: row.operation_count,
  closedAt: row.closed_at,
  feePool: row.fee_pool,
  totalCoins: (parseStoredAmount(row.total_funded) - BigInt(row.fee_pool)).toString(),
})

export const toOperation = (row: OperationRow): LedgerOperation => ({
  transactionHash: row.transaction_hash,
  ledger: row.ledger,
  applicationOrder: row.application_order,
  index: row.index,
  type: row.type,
  from: row.from,
  to: row.to,
  amount: row.amount,
  createdAt: row.created_at,
})
