/**
 * The two networks, as the live platform has them (docs/ledger.md, "Two networks"): Pi Testnet,
 * where test-π is free from the faucet, and Pi Network (Mainnet), where π is real. A network's
 * name is its passphrase: a transaction applies only on the ledger of the passphrase it is signed
 * under. Each network has its own ledger in the database (migration 0029: a `network` column in
 * every ledger table and its keys), its own ledger numbers, its own ledger-number lock and its own
 * tip channel.
 */
export const LEDGER_NETWORKS = ['Pi Testnet', 'Pi Network'] as const
export type LedgerNetwork = (typeof LEDGER_NETWORKS)[number]

export const TESTNET: LedgerNetwork = 'Pi Testnet'
export const MAINNET: LedgerNetwork = 'Pi Network'

/** What a network's ledger is stored and announced under (migration 0029's `ledger_close` uses the same names). */
export interface NetworkStorage {
  /** The sequence its ledger numbers are drawn from. */
  sequence: string
  /** The object of its ledger-number advisory lock (class 0x504c4c4e). */
  lockObject: number
  /** The SQL expression of its NOTIFY channel: one per schema and network (tests run many schemas in one database). */
  tipChannelSql: string
}

const STORAGE: Readonly<Record<LedgerNetwork, NetworkStorage>> = {
  'Pi Testnet': { sequence: 'ledger_numbers', lockObject: 0, tipChannelSql: `'plinth_ledger_' || left(md5(current_schema()), 16)` },
  'Pi Network': {
    sequence: 'ledger_numbers_mainnet',
    lockObject: 26,
    tipChannelSql: `'plinth_ledger_mainnet_' || left(md5(current_schema()), 16)`,
  },
}

export function networkStorage(network: LedgerNetwork): NetworkStorage {
  return STORAGE[network]
}
