/** The embedded ledger as its tests call it: Horizon's answers, transactions built and submitted as stellar-sdk would. */
import assert from 'node:assert/strict'
import { afterEach } from 'node:test'
import { Account, Asset, Keypair, Memo, Operation, TransactionBuilder, type xdr } from '@stellar/stellar-base'
import type { LedgerNetwork } from '../../src/ledger/networks.js'
import { json, type TestPlatform } from './platform.js'
/** The address with its last character changed: the last character carries checksum bits, so any other one breaks it. */
export function withBadChecksum(address: string): string {
  return `${address.slice(0, 55)}${address.endsWith('A') ? 'B' : 'A'}`
}

export interface AccountBody {
  id: string
  account_id: string
  sequence: string
  balances: Array<{ balance: string; asset_type: string }>
  signers: Array<{ key: string; weight: number; type: string }>
  _links: Record<string, { href: string }>
}

export interface TransactionBody {
  id: string
  hash: string
  ledger: number
  paging_token: string
  created_at: string
  source_account: string
  source_account_sequence: string
  fee_charged: string
  max_fee: string
  operation_count: number
  envelope_xdr: string
  result_xdr: string
  result_meta_xdr: string
  fee_meta_xdr: string
  memo?: string
  memo_type: string
  successful: boolean
  _links: Record<string, { href: string }>
}

export interface Problem {
  type: string
  title: string
  status: number
  detail: string
  extras?: { envelope_xdr?: string; result_xdr?: string; result_codes?: { transaction: string; operations?: string[] } }
}

export interface PaymentOptions {
  from: Keypair
  to: string
  amount?: string
  sequence?: string
  fee?: string
  network?: string
  memo?: string
  timebounds?: { minTime: number; maxTime: number }
  signers?: Keypair[]
  ops?: xdr.Operation[]
}

/** After every test of the enclosing suite: on each network, Test Pi is only created by funding and destroyed by fees, whatever a test did. */
export function checkLedgerAfterEach(platform: TestPlatform): void {
  afterEach(async () => {
    for (const network of ['Pi Testnet', 'Pi Network']) {
      const check = await platform.app.inject({ method: 'GET', url: `/sandbox/ledger/check?network=${encodeURIComponent(network)}` })
      assert.equal(check.statusCode, 200)
      assert.equal(json(check).ok, true, `${network}: ledger invariants broken: ${check.body}`)
    }
  })
}

/** The ledger routes of `platform` (a `usePlatform()` handle is read only when a call is made). */
export function ledgerClient(platform: TestPlatform) {
  const get = (url: string) => platform.app.inject({ method: 'GET', url })

  async function account(address: string): Promise<{ balance: string; sequence: string }> {
    const response = await get(`/ledger/accounts/${address}`)
    assert.equal(response.statusCode, 200, response.body)
    const body = json<AccountBody>(response)
    return { balance: body.balances[0]?.balance ?? '', sequence: body.sequence }
  }

  const nowSeconds = () => Math.floor(platform.clock.now().getTime() / 1000)

  async function build(options: PaymentOptions): Promise<string> {
    const sequence = options.sequence ?? (await account(options.from.publicKey())).sequence
    const builder = new TransactionBuilder(new Account(options.from.publicKey(), sequence), {
      fee: options.fee ?? '100',
      networkPassphrase: options.network ?? 'Pi Testnet',
      timebounds: options.timebounds ?? { minTime: 0, maxTime: nowSeconds() + 180 },
    })
    for (const op of options.ops ?? [
      Operation.payment({ destination: options.to, asset: Asset.native(), amount: options.amount ?? '1' }),
    ]) {
      builder.addOperation(op)
    }
    if (options.memo !== undefined) builder.addMemo(Memo.text(options.memo))
    const tx = builder.build()
    tx.sign(...(options.signers ?? [options.from]))
    return tx.toEnvelope().toXDR('base64')
  }

  /** Submits as stellar-sdk does: a form with the field `tx`. */
  async function submit(envelope: string) {
    const response = await platform.app.inject({
      method: 'POST',
      url: '/ledger/transactions',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ tx: envelope }).toString(),
    })
    return response
  }

  const hashOf = (envelope: string, network = 'Pi Testnet') => TransactionBuilder.fromXDR(envelope, network).hash().toString('hex')

  /** Test Pi on `network`'s ledger (Pi Testnet when absent). */
  async function fund(address: string, amount: string | number, network?: LedgerNetwork) {
    return platform.app.inject({ method: 'POST', url: '/sandbox/ledger/fund', payload: { address, amount, network } })
  }

  /** A fresh funded keypair: its own account (on `network`'s ledger), so tests never share a sequence. */
  async function funded(amount = '100', network?: LedgerNetwork): Promise<Keypair> {
    const key = Keypair.random()
    const response = await fund(key.publicKey(), amount, network)
    assert.equal(response.statusCode, 200, response.body)
    return key
  }

  return { get, account, nowSeconds, build, submit, hashOf, fund, funded }
}
