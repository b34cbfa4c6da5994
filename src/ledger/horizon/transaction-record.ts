import { type Static, Type } from 'typebox'
import type { LedgerTransaction } from '../ledger-types.js'
import { transactionPagingToken } from '../paging-tokens.js'
import { envelopeSignaturesAndBounds } from '../stellar/payment-envelope.js'
import { type HorizonLinks, isoSeconds, Links } from './links.js'

export const Stroops = Type.String({ description: 'Stroops (1 Pi = 10,000,000 stroops)', examples: ['100'] })

export const TransactionRecord = Type.Object({
  id: Type.String({ description: 'The transaction hash' }),
  paging_token: Type.String(),
  successful: Type.Boolean(),
  hash: Type.String(),
  ledger: Type.Integer(),
  created_at: Type.String({ description: 'ISO 8601 UTC, whole seconds' }),
  source_account: Type.String(),
  source_account_sequence: Type.String(),
  fee_account: Type.String(),
  fee_charged: Stroops,
  max_fee: Stroops,
  operation_count: Type.Integer(),
  envelope_xdr: Type.String(),
  result_xdr: Type.String(),
  result_meta_xdr: Type.String({ description: 'Base64 TransactionMeta v2: the sequence bump and every balance change' }),
  fee_meta_xdr: Type.String({ description: 'Base64 LedgerEntryChanges: the fee charged on the source' }),
  memo_type: Type.String(),
  memo: Type.Optional(Type.String()),
  memo_bytes: Type.Optional(Type.String({ description: 'A text memo in base64' })),
  signatures: Type.Array(Type.String({ description: 'Base64 signature' })),
  valid_after: Type.Optional(Type.String({ description: 'ISO 8601: the time bounds’ min_time' })),
  valid_before: Type.Optional(Type.String({ description: 'ISO 8601: the time bounds’ max_time, when set' })),
  preconditions: Type.Optional(
    Type.Object({ timebounds: Type.Object({ min_time: Type.String(), max_time: Type.Optional(Type.String()) }) }),
  ),
  _links: Links('self', 'account', 'ledger', 'operations', 'effects', 'precedes', 'succeeds', 'transaction'),
})
export type TransactionRecordType = Static<typeof TransactionRecord>

/** What the record shows of the stored envelope: signatures and time bounds (the envelope was valid when applied). */
function fromEnvelope(tx: LedgerTransaction) {
  const { signatures, timeBounds: bounds } = envelopeSignaturesAndBounds(tx.envelopeXdr, tx.network)
  const iso = (seconds: string) => isoSeconds(new Date(Number(seconds) * 1000))
  const maxTime = bounds === undefined || bounds.maxTime === '0' ? undefined : bounds.maxTime
  return {
    signatures: signatures.map((signature) => signature.toString('base64')),
    ...(tx.memoType === 'text' && tx.memo !== null ? { memo_bytes: Buffer.from(tx.memo, 'utf8').toString('base64') } : {}),
    ...(bounds === undefined
      ? {}
      : {
          valid_after: iso(bounds.minTime),
          ...(maxTime === undefined ? {} : { valid_before: iso(maxTime) }),
          preconditions: { timebounds: { min_time: bounds.minTime, ...(maxTime === undefined ? {} : { max_time: maxTime }) } },
        }),
  }
}

export function transactionRecord(links: HorizonLinks, tx: LedgerTransaction): TransactionRecordType {
  const self = `/transactions/${tx.hash}`
  const token = transactionPagingToken(BigInt(tx.ledger), tx.applicationOrder)
  return {
    id: tx.hash,
    paging_token: token,
    successful: true,
    hash: tx.hash,
    ledger: Number(tx.ledger),
    created_at: isoSeconds(tx.createdAt),
    source_account: tx.sourceAccount,
    source_account_sequence: tx.sourceAccountSequence,
    fee_account: tx.sourceAccount,
    fee_charged: tx.feeCharged,
    max_fee: tx.maxFee,
    operation_count: tx.operationCount,
    envelope_xdr: tx.envelopeXdr,
    result_xdr: tx.resultXdr,
    result_meta_xdr: tx.resultMetaXdr,
    fee_meta_xdr: tx.feeMetaXdr,
    memo_type: tx.memoType,
    ...(tx.memo === null ? {} : { memo: tx.memo }),
    ...fromEnvelope(tx),
    _links: {
      self: links.link(self),
      account: links.link(`/accounts/${tx.sourceAccount}`),
      ledger: links.link(`/ledgers/${tx.ledger}`),
      operations: links.collection(`${self}/operations`),
      effects: links.collection(`${self}/effects`),
      precedes: links.link(`/transactions?order=asc&cursor=${token}`),
      succeeds: links.link(`/transactions?order=desc&cursor=${token}`),
      transaction: links.link(self),
    },
  }
}
