import { Account, Asset, Keypair, Memo, Operation, TransactionBuilder } from '@stellar/stellar-base'
import type { FastifyInstance } from 'fastify'

export interface PaymentTx {
  seed: string
  to: string
  amount: string
  memo?: string
  network?: string
  /** Defaults to the account's current sequence (read from the ledger API). */
  sequence?: string
  fee?: string
  /** Valid this long from the local clock (180 s); 0 for no time bound (for a platform clock moved ahead). */
  timeoutSeconds?: number
}

/** Reads an account from the Horizon-style ledger API. */
export async function ledgerAccount(app: FastifyInstance, address: string): Promise<{ sequence: string; balance: string } | undefined> {
  const response = await app.inject({ method: 'GET', url: `/ledger/accounts/${address}` })
  if (response.statusCode === 404) return undefined
  const body = response.json() as { sequence: string; balances: Array<{ balance: string; asset_type: string }> }
  const native = body.balances.find((b) => b.asset_type === 'native')
  return { sequence: body.sequence, balance: native?.balance ?? '0' }
}

/** Builds and signs a native payment as any app backend would, with @stellar/stellar-base. */
export async function buildPayment(app: FastifyInstance, tx: PaymentTx): Promise<string> {
  const keypair = Keypair.fromSecret(tx.seed)
  const sequence = tx.sequence ?? (await ledgerAccount(app, keypair.publicKey()))?.sequence
  if (sequence === undefined) throw new Error(`no ledger account ${keypair.publicKey()}`)
  let builder = new TransactionBuilder(new Account(keypair.publicKey(), sequence), {
    fee: tx.fee ?? '100',
    networkPassphrase: tx.network ?? 'Pi Testnet',
  })
    .addOperation(Operation.payment({ destination: tx.to, asset: Asset.native(), amount: tx.amount }))
    .setTimeout(tx.timeoutSeconds ?? 180)
  if (tx.memo !== undefined) builder = builder.addMemo(Memo.text(tx.memo))
  const built = builder.build()
  built.sign(keypair)
  return built.toEnvelope().toXDR('base64')
}

/** Submits an envelope the way stellar-sdk does: a form field `tx`. */
export async function submitEnvelope(app: FastifyInstance, envelope: string) {
  const response = await app.inject({
    method: 'POST',
    url: '/ledger/transactions',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({ tx: envelope }).toString(),
  })
  return { status: response.statusCode, body: response.json() as Record<string, unknown> & { hash?: string; id?: string } }
}

/** Builds, signs and submits a payment; throws unless the ledger applied it. Answers the txid. */
export async function pay(app: FastifyInstance, tx: PaymentTx): Promise<string> {
  const { status, body } = await submitEnvelope(app, await buildPayment(app, tx))
  if (status !== 200 || typeof body.hash !== 'string') throw new Error(`ledger refused the payment: ${status} ${JSON.stringify(body)}`)
  return body.hash
}
