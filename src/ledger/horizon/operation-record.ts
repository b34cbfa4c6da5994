import { type Static, Type } from 'typebox'
import type { LedgerOperation } from '../ledger-service.js'
import { operationPagingToken, transactionPagingToken } from '../paging-tokens.js'
import { type HorizonLinks, isoSeconds, Links } from './links.js'

export const Amount = Type.String({ description: 'Pi with 7 decimal places, as Horizon writes amounts', examples: ['1.5000000'] })

export const OperationRecord = Type.Object({
  id: Type.String(),
  paging_token: Type.String(),
  transaction_successful: Type.Boolean(),
  source_account: Type.String(),
  type: Type.Literal('payment'),
  type_i: Type.Literal(1),
  created_at: Type.String(),
  transaction_hash: Type.String(),
  asset_type: Type.Literal('native'),
  from: Type.String(),
  to: Type.String(),
  amount: Amount,
  _links: Links('self', 'transaction', 'precedes', 'succeeds'),
})
export type OperationRecordType = Static<typeof OperationRecord>

export function operationRecord(links: HorizonLinks, op: LedgerOperation): OperationRecordType {
  const id = operationPagingToken(BigInt(op.ledger), op.index)
  return {
    id,
    paging_token: id,
    transaction_successful: true,
    source_account: op.from,
    type: 'payment',
    type_i: 1,
    created_at: isoSeconds(op.createdAt),
    transaction_hash: op.transactionHash,
    asset_type: 'native',
    from: op.from,
    to: op.to,
    amount: op.amount,
    _links: {
      self: links.link(`/transactions/${op.transactionHash}/operations`),
      transaction: links.link(`/transactions/${op.transactionHash}`),
      precedes: links.link(`/transactions?order=asc&cursor=${transactionPagingToken(BigInt(op.ledger))}`),
      succeeds: links.link(`/transactions?order=desc&cursor=${transactionPagingToken(BigInt(op.ledger))}`),
    },
  }
}
