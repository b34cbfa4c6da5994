/**
 * Two networks, two ledgers (docs/ledger.md, "Two networks"): a transaction applies only on the
 * ledger of the passphrase it is signed under; one key has an account and a balance on each;
 * /ledger takes a transaction signed under either passphrase and reads Pi Testnet; an app's
 * payments move money on its own network's ledger.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Keypair } from '@stellar/stellar-base'
import { LedgerError } from '../../../src/ledger/ledger-errors.js'
import { ledgerServiceFactory } from '../../../src/ledger/ledger-service.js'
import type { LedgerNetwork } from '../../../src/ledger/networks.js'
import { checkLedgerAfterEach, ledgerClient, type TransactionBody } from '../../helpers/ledger-client.js'
import { paymentClients } from '../../helpers/payments-client.js'
import { json, sandbox, TEST_DB, usePlatform } from '../../helpers/platform.js'

describe(`two networks, two ledgers (${TEST_DB})`, () => {
  const platform = usePlatform()
  checkLedgerAfterEach(platform)
  const { account, build, submit, hashOf, fund, get } = ledgerClient(platform)

  /** An account's balance on one network's ledger, as stored; undefined when it has no account there. */
  async function balanceOn(network: LedgerNetwork, address: string): Promise<string | undefined> {
    const row = await platform.db
      .selectFrom('ledger_accounts')
      .select((eb) => eb.cast<string>('balance', 'text').as('balance'))
      .where('network', '=', network)
      .where('address', '=', address)
      .executeTakeFirst()
    return row?.balance
  }

  /** A fresh key funded on both networks (Pi Testnet 100, Pi Network 50). */
  async function onBoth(): Promise<Keypair> {
    const key = Keypair.random()
    assert.equal((await fund(key.publicKey(), '100')).statusCode, 200)
    assert.equal((await fund(key.publicKey(), '50', 'Pi Network')).statusCode, 200)
    return key
  }

  it('one key has an account on each network, each with its own balance', async () => {
    const key = await onBoth()
    assert.equal(await balanceOn('Pi Testnet', key.publicKey()), '100.0000000')
    assert.equal(await balanceOn('Pi Network', key.publicKey()), '50.0000000')
    // /ledger reads Pi Testnet's.
    assert.equal((await account(key.publicKey())).balance, '100.0000000')
  })

  it('/ledger applies a transaction signed under Pi Network on the Mainnet ledger: no Testnet balance moves', async () => {
    const [from, to] = [await onBoth(), await onBoth()]
    const envelope = await build({ from, to: to.publicKey(), amount: '7', network: 'Pi Network' })
    const response = await submit(envelope)
    assert.equal(response.statusCode, 200, response.body)
    const hash = hashOf(envelope, 'Pi Network')
    assert.equal(json<TransactionBody>(response).hash, hash)
    assert.equal(await balanceOn('Pi Network', from.publicKey()), '42.9999900')
    assert.equal(await balanceOn('Pi Network', to.publicKey()), '57.0000000')
    assert.equal(await balanceOn('Pi Testnet', from.publicKey()), '100.0000000', 'test-π untouched by a Mainnet payment')
    assert.equal(await balanceOn('Pi Testnet', to.publicKey()), '100.0000000')
    // The transaction is Mainnet's: /ledger's lists (Pi Testnet's) do not hold it, but its hash finds it.
    const listed = json<{ _embedded: { records: Array<{ hash: string }> } }>(await get(`/ledger/accounts/${to.publicKey()}/transactions`))
    assert.deepEqual(listed._embedded.records, [])
    const byHash = await get(`/ledger/transactions/${hash}`)
    assert.equal(byHash.statusCode, 200, byHash.body)
    assert.equal(json<TransactionBody>(byHash).hash, hash)
    // And its operations (and payments), as the receipt and the wallet read them (#41 U13).
    for (const collection of ['operations', 'payments']) {
      const ops = json<{ _embedded: { records: Array<{ from: string; to: string; amount: string }> } }>(
        await get(`/ledger/transactions/${hash}/${collection}`),
      )
      assert.deepEqual(
        ops._embedded.records.map((op) => [op.from, op.to, op.amount]),
        [[from.publicKey(), to.publicKey(), '7.0000000']],
        `a Mainnet transaction's ${collection} by its hash`,
      )
    }
  })

  it('/ledger applies a transaction signed under Pi Testnet on the Testnet ledger: no Mainnet balance moves', async () => {
    const [from, to] = [await onBoth(), await onBoth()]
    const response = await submit(await build({ from, to: to.publicKey(), amount: '3' }))
    assert.equal(response.statusCode, 200, response.body)
    assert.equal(await balanceOn('Pi Testnet', from.publicKey()), '96.9999900')
    assert.equal(await balanceOn('Pi Testnet', to.publicKey()), '103.0000000')
    assert.equal(await balanceOn('Pi Network', from.publicKey()), '50.0000000')
    assert.equal(await balanceOn('Pi Network', to.publicKey()), '50.0000000')
  })

  it('each network numbers its own ledgers and sums its own fee pool', async () => {
    const [from, to] = [await onBoth(), await onBoth()]
    const testnet = json<TransactionBody>(await submit(await build({ from, to: to.publicKey() })))
    const mainnet = json<TransactionBody>(await submit(await build({ from, to: to.publicKey(), network: 'Pi Network' })))
    const rows = await platform.db
      .selectFrom('ledger_transactions')
      .select(['network', 'hash'])
      .select((eb) => [eb.cast<string>('ledger', 'text').as('ledger'), eb.cast<string>('fee_pool', 'text').as('fee_pool')])
      .where('hash', 'in', [testnet.hash, mainnet.hash])
      .execute()
    const of = (network: LedgerNetwork) => rows.find((row) => row.network === network)
    const pools = await platform.db
      .selectFrom('ledger_transactions')
      .select('network')
      .select((eb) => eb.fn.sum<string>('fee_charged').as('fees'))
      .groupBy('network')
      .execute()
    for (const network of ['Pi Testnet', 'Pi Network'] as const) {
      const fees = pools.find((row) => row.network === network)?.fees
      assert.equal(String(of(network)?.fee_pool), String(fees), `${network}'s fee pool is its own fees`)
    }
    // The later Mainnet transaction closed a Mainnet ledger; the Testnet's latest is still the Testnet one.
    const root = json<{ history_latest_ledger: number }>(await get('/ledger/'))
    assert.equal(String(root.history_latest_ledger), of('Pi Testnet')?.ledger)
  })

  it("a network's own ledger refuses a transaction signed under the other network's passphrase; nothing moves", async () => {
    const [from, to] = [await onBoth(), await onBoth()]
    const mainnet = ledgerServiceFactory({ network: 'Pi Network', db: platform.db, clock: platform.clock })
    await assert.rejects(mainnet.submit(await build({ from, to: to.publicKey() })), (error: unknown) => {
      assert.ok(error instanceof LedgerError)
      assert.equal(error.resultCodes?.transaction, 'tx_bad_auth')
      return true
    })
    for (const network of ['Pi Testnet', 'Pi Network'] as const) {
      assert.equal(await balanceOn(network, from.publicKey()), network === 'Pi Testnet' ? '100.0000000' : '50.0000000')
    }
  })

  it('an account only on Pi Testnet cannot be paid on Pi Network (op_no_destination)', async () => {
    const from = await onBoth()
    const testnetOnly = Keypair.random()
    assert.equal((await fund(testnetOnly.publicKey(), '1')).statusCode, 200)
    const response = await submit(await build({ from, to: testnetOnly.publicKey(), network: 'Pi Network' }))
    assert.equal(response.statusCode, 400, response.body)
    assert.deepEqual(json<{ extras: { result_codes: unknown } }>(response).extras.result_codes, {
      transaction: 'tx_failed',
      operations: ['op_no_destination'],
    })
  })

  for (const network of ['Pi Testnet', 'Pi Network'] as const) {
    it(`a ${network} app's user-to-app payment moves money on ${network}'s ledger only`, async () => {
      const app = await sandbox(platform.app).createApp(undefined, network)
      const other = network === 'Pi Testnet' ? 'Pi Network' : 'Pi Testnet'
      const { asApp, asUser } = paymentClients(platform)
      const user = await sandbox(platform.app).createUser()
      const auth = await sandbox(platform.app).authenticate(app.app_id, user.user_id, ['username', 'payments'])
      const [server, client] = [asApp(app), asUser(auth.accessToken)]
      const before = {
        user: [await balanceOn(network, user.wallet.address), await balanceOn(other, user.wallet.address)],
        app: [await balanceOn(network, app.wallet.address), await balanceOn(other, app.wallet.address)],
      }
      // A new sandbox wallet starts with its test balance on each network.
      assert.deepEqual(before, { user: ['1000.0000000', '1000.0000000'], app: ['10000.0000000', '10000.0000000'] })
      const created = await client.create({ amount: 2, memo: 'on its network', metadata: {} })
      assert.equal(created.status, 201, JSON.stringify(created.body))
      assert.equal(created.body.network, network)
      assert.equal((await server.approve(created.body.identifier)).status, 200)
      const submitted = await client.submit(created.body.identifier)
      assert.equal(submitted.status, 200, JSON.stringify(submitted.body))
      const txid = submitted.body.transaction?.txid
      assert.ok(txid !== undefined)
      const completed = await server.complete(created.body.identifier, txid)
      assert.equal(completed.status, 200, JSON.stringify(completed.body))
      assert.equal(completed.body.transaction?.verified, true)
      assert.equal(await balanceOn(network, user.wallet.address), '997.9999900')
      assert.equal(await balanceOn(network, app.wallet.address), '10002.0000000')
      assert.equal(await balanceOn(other, user.wallet.address), '1000.0000000', `nothing moved on ${other}`)
      assert.equal(await balanceOn(other, app.wallet.address), '10000.0000000')
      const stored = await platform.db
        .selectFrom('ledger_transactions')
        .select('network')
        .where('hash', '=', txid)
        .executeTakeFirstOrThrow()
      assert.equal(stored.network, network)
    })
  }
})
