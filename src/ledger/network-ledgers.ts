import { type LedgerDeps, type LedgerService, ledgerServiceFactory } from './ledger-service.js'
import type { OnTransactionApplied, SubmittedTransaction } from './ledger-types.js'
import { LEDGER_NETWORKS, type LedgerNetwork, TESTNET } from './networks.js'

/** The ledger of each network (src/ledger/networks.ts), built once per process (src/app/services.ts). */
export type NetworkLedgers = Readonly<Record<LedgerNetwork, LedgerService>>

/** A ledger service for each network, alike but for the network (a short-lived pair, such as one transaction's). */
export function networkLedgers(deps: Omit<LedgerDeps, 'network'>): NetworkLedgers {
  return Object.fromEntries(LEDGER_NETWORKS.map((network) => [network, ledgerServiceFactory({ ...deps, network })])) as Record<
    LedgerNetwork,
    LedgerService
  >
}

/**
 * Applies an envelope on the ledger of the passphrase it is signed under, whichever it is: what
 * `/ledger` has always accepted (docs/ledger.md, "Two networks"). The signatures are checked once.
 */
export function submitOnItsNetwork(ledgers: NetworkLedgers) {
  return (envelopeXdr: string, options: { afterApply?: OnTransactionApplied } = {}): Promise<SubmittedTransaction> => {
    const checked = ledgers[TESTNET].check(envelopeXdr)
    return ledgers[checked.auth.network].submitChecked(checked, options)
  }
}

/**
 * `/ledger`'s ledger: Pi Testnet's, except that a transaction asked for by its hash (and its
 * operations) is found on either network. A hash binds the passphrase the transaction is signed
 * under, so it names one transaction on one network: a Mainnet app that submits to `/ledger` reads
 * its transaction back there (docs/ledger.md, "Two networks").
 */
export function legacyLedger(ledgers: NetworkLedgers): LedgerService {
  const testnet = ledgers[TESTNET]
  const others = Object.values(ledgers).filter((ledger) => ledger !== testnet)
  return {
    ...testnet,
    submit: submitOnItsNetwork(ledgers),
    async getTransaction(hash) {
      for (const ledger of [testnet, ...others]) {
        const found = await ledger.getTransaction(hash)
        if (found !== undefined) return found
      }
      return undefined
    },
    async getOperations(hash) {
      for (const ledger of [testnet, ...others]) {
        const found = await ledger.getOperations(hash)
        if (found.length > 0) return found
      }
      return []
    },
    /** A transaction's operations (`/transactions/{hash}/operations` and `/payments`) on the network that holds it; every other list, Pi Testnet's. */
    async listOperations(page, filter) {
      const hash = filter?.transaction
      if (hash === undefined) return testnet.listOperations(page, filter)
      for (const ledger of [testnet, ...others]) {
        if ((await ledger.getTransaction(hash)) !== undefined) return ledger.listOperations(page, filter)
      }
      return []
    },
  }
}
