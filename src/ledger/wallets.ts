import type { Kysely } from 'kysely'
import type { DB } from '../db/schema.js'
import type { LedgerService } from './ledger-service.js'

/**
 * The test Pi a new wallet starts with on the embedded ledger. A user gets enough to try
 * many payments; an app ten times that, since app-to-user payments come out of its wallet.
 */
export const STARTING_BALANCES = { user: '1000', app: '10000' } as const

export type WalletOwner = keyof typeof STARTING_BALANCES

/** What identity and apps need of the ledger: a funded account for each new wallet, in the caller's transaction. */
export interface Wallets {
  open(trx: Kysely<DB>, address: string, owner: WalletOwner): Promise<void>
}

export function ledgerWallets(ledger: Pick<LedgerService, 'openAccount'>): Wallets {
  return { open: (trx, address, owner) => ledger.openAccount(address, STARTING_BALANCES[owner], trx) }
}
