import { type Static, Type } from 'typebox'
import { formatAmount } from '../amounts.js'
import { BASE_FEE_STROOPS } from '../ledger-rules.js'
import type { LedgerSummary } from '../ledger-types.js'
import { ledgerPagingToken } from '../paging-tokens.js'
import { ledgerHeaderXdr } from '../stellar/meta-xdr.js'
import { type HorizonLinks, isoSeconds, Links } from './links.js'
import { Amount } from './operation-record.js'

/** The protocol version Horizon reports; Plinth implements the subset docs/ledger.md lists. */
export const PROTOCOL_VERSION = 19

export const LedgerRecord = Type.Object({
  id: Type.String(),
  paging_token: Type.String(),
  hash: Type.String(),
  prev_hash: Type.Optional(Type.String({ description: 'The hash of the ledger before; absent for the first' })),
  sequence: Type.Integer(),
  successful_transaction_count: Type.Integer(),
  failed_transaction_count: Type.Integer(),
  operation_count: Type.Integer(),
  tx_set_operation_count: Type.Integer(),
  closed_at: Type.String(),
  total_coins: Amount,
  fee_pool: Amount,
  base_fee_in_stroops: Type.Integer(),
  base_reserve_in_stroops: Type.Integer(),
  max_tx_set_size: Type.Integer(),
  protocol_version: Type.Integer(),
  header_xdr: Type.String({ description: 'Base64 LedgerHeader (docs/ledger.md: what it holds)' }),
  _links: Links('self', 'transactions', 'operations', 'payments', 'effects'),
})
export type LedgerRecordType = Static<typeof LedgerRecord>

/** `maxTxSetSize`: the most transactions a ledger may hold (the closer's PLINTH_LEDGER_BATCH_MAX). */
export function ledgerRecord(links: HorizonLinks, summary: LedgerSummary, maxTxSetSize: number): LedgerRecordType {
  return {
    id: summary.hash,
    paging_token: ledgerPagingToken(BigInt(summary.sequence)),
    hash: summary.hash,
    ...(summary.prevHash === null ? {} : { prev_hash: summary.prevHash }),
    sequence: Number(summary.sequence),
    successful_transaction_count: summary.transactionCount,
    failed_transaction_count: 0,
    operation_count: summary.operationCount,
    tx_set_operation_count: summary.operationCount,
    closed_at: isoSeconds(summary.closedAt),
    total_coins: formatAmount(BigInt(summary.totalCoins)),
    fee_pool: formatAmount(BigInt(summary.feePool)),
    base_fee_in_stroops: Number(BASE_FEE_STROOPS),
    base_reserve_in_stroops: 0,
    max_tx_set_size: maxTxSetSize,
    protocol_version: PROTOCOL_VERSION,
    header_xdr: ledgerHeaderXdr({
      ledger: Number(summary.sequence),
      prevHash: summary.prevHash,
      // Plinth keeps no transaction set: its first transaction's hash stands in for the set's (docs/ledger.md).
      transactionHash: summary.firstTransactionHash,
      maxTxSetSize,
      closedAt: summary.closedAt,
      totalCoins: BigInt(summary.totalCoins),
      feePool: BigInt(summary.feePool),
      baseFee: Number(BASE_FEE_STROOPS),
      protocolVersion: PROTOCOL_VERSION,
    }),
    _links: {
      self: links.link(`/ledgers/${summary.sequence}`),
      transactions: links.collection(`/ledgers/${summary.sequence}/transactions`),
      operations: links.collection(`/ledgers/${summary.sequence}/operations`),
      payments: links.collection(`/ledgers/${summary.sequence}/payments`),
      effects: links.collection(`/ledgers/${summary.sequence}/effects`),
    },
  }
}
