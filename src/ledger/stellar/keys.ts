import { Keypair } from '@stellar/stellar-base'

export interface Wallet {
  /** Public key, `G…` (the ledger account id). */
  address: string
  /** Secret seed, `S…`. */
  seed: string
}

/** A fresh ed25519 ledger keypair. */
export function newWallet(): Wallet {
  const pair = Keypair.random()
  return { address: pair.publicKey(), seed: pair.secret() }
}
