import { type Static, Type } from 'typebox'
import type { LedgerAccount } from '../ledger-types.js'
import { type HorizonLinks, isoSeconds, Links } from './links.js'
import { Amount } from './operation-record.js'

export const AccountRecord = Type.Object({
  id: Type.String(),
  account_id: Type.String(),
  sequence: Type.String(),
  paging_token: Type.String(),
  subentry_count: Type.Integer(),
  last_modified_ledger: Type.Integer(),
  last_modified_time: Type.Union([Type.String(), Type.Null()]),
  thresholds: Type.Object({ low_threshold: Type.Integer(), med_threshold: Type.Integer(), high_threshold: Type.Integer() }),
  flags: Type.Object({
    auth_required: Type.Boolean(),
    auth_revocable: Type.Boolean(),
    auth_immutable: Type.Boolean(),
    auth_clawback_enabled: Type.Boolean(),
  }),
  balances: Type.Array(
    Type.Object({
      balance: Amount,
      buying_liabilities: Amount,
      selling_liabilities: Amount,
      asset_type: Type.Literal('native'),
    }),
  ),
  signers: Type.Array(Type.Object({ weight: Type.Integer(), key: Type.String(), type: Type.Literal('ed25519_public_key') })),
  data: Type.Object({}),
  num_sponsoring: Type.Integer(),
  num_sponsored: Type.Integer(),
  // The `data` link is what makes stellar-sdk expose `data_attr`, which its memo-required check reads.
  _links: Links('self', 'transactions', 'operations', 'payments', 'effects', 'offers', 'trades', 'data'),
})
export type AccountRecordType = Static<typeof AccountRecord>

/** `lastModifiedTime`: the close time of last_modified_ledger (the account's opening for ledger 0). */
export function accountRecord(links: HorizonLinks, account: LedgerAccount, lastModifiedTime: Date): AccountRecordType {
  const self = `/accounts/${account.address}`
  return {
    id: account.address,
    account_id: account.address,
    sequence: account.sequence,
    paging_token: account.address,
    subentry_count: 0,
    last_modified_ledger: Number(account.lastModifiedLedger),
    last_modified_time: isoSeconds(lastModifiedTime),
    thresholds: { low_threshold: 0, med_threshold: 0, high_threshold: 0 },
    flags: { auth_required: false, auth_revocable: false, auth_immutable: false, auth_clawback_enabled: false },
    balances: [{ balance: account.balance, buying_liabilities: '0.0000000', selling_liabilities: '0.0000000', asset_type: 'native' }],
    signers: [{ weight: 1, key: account.address, type: 'ed25519_public_key' }],
    data: {},
    num_sponsoring: 0,
    num_sponsored: 0,
    _links: {
      self: links.link(self),
      transactions: links.collection(`${self}/transactions`),
      operations: links.collection(`${self}/operations`),
      payments: links.collection(`${self}/payments`),
      effects: links.collection(`${self}/effects`),
      // As Horizon links them; Plinth has no offers or trades (docs/ledger.md): these answer 404.
      offers: links.collection(`${self}/offers`),
      trades: links.collection(`${self}/trades`),
      data: links.templated(`${self}/data/{key}`),
    },
  }
}
