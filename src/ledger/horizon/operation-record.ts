import { type Static, Type } from 'typebox'
import type { LedgerOperation } from '../ledger-types.js'
import { operationPagingToken } from '../paging-tokens.js'
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
  _links: Links('self', 'transaction', 'effects', 'succeeds', 'precedes'),
})
export type OperationRecordType = Static<typeof OperationRecord>

export function operationRecord(links: HorizonLinks, op: LedgerOperation): OperationRecordType {
  const id = operationPagingToken(BigInt(op.ledger), op.applicationOrder, op.index)
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
    // As Horizon: succeeds and precedes page the effects around this operation.
    _links: {
      self: links.link(`/operations/${id}`),
      transaction: links.link(`/transactions/${op.transactionHash}`),
      effects: links.collection(`/operations/${id}/effects`),
      succeeds: links.link(`/effects?order=desc&cursor=${id}`),
      precedes: links.link(`/effects?order=asc&cursor=${id}`),
    },
  }
}
