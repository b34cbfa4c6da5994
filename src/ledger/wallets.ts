import type { Kysely } from 'kysely'
import type { DB } from '../db/schema.js'
import type { LedgerService } from './ledger-service.js'
import { LEDGER_NETWORKS, type LedgerNetwork } from './networks.js'

/**
 * The test Pi a new wallet starts with in sandbox mode. A user gets enough to try many payments;
 * an app ten times that, since app-to-user payments come out of its wallet. In production a
 * wallet starts empty: money enters only by issuing (`plinth admin wallets issue`).
 */
export const STARTING_BALANCES = { user: '1000', app: '10000' } as const
export const EMPTY_BALANCES: Record<WalletOwner, string> = { user: '0', app: '0' }

export type WalletOwner = keyof typeof STARTING_BALANCES

/** What identity and apps need of the ledger: a funded account for each new wallet, in the caller's transaction. */
export interface Wallets {
  open(trx: Kysely<DB>, address: string, owner: WalletOwner): Promise<void>
}

/** A wallet has an account on each network (docs/ledger.md, "Two networks"), each with the starting balance. */
export function ledgerWallets(
  ledgers: Readonly<Record<LedgerNetwork, Pick<LedgerService, 'openAccount'>>>,
  balances: Readonly<Record<WalletOwner, string>> = STARTING_BALANCES,
): Wallets {
  return {
    open: async (trx, address, owner) => {
      for (const network of LEDGER_NETWORKS) await ledgers[network].openAccount(address, balances[owner], trx)
    },
  }
}
