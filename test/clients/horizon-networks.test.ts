import assert from 'node:assert/strict'
import { get as httpGet } from 'node:http'
import { createServer } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { Asset, Horizon, Keypair, Operation, TransactionBuilder } from '@stellar/stellar-sdk'
import { type ClientPlatform, startClientPlatform } from './client-platform.js'

/** GET with a Host header of our own (what a reverse proxy forwards). */
function getWithHost(url: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const request = httpGet(url, { headers: { host } }, (response) => {
      let body = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => {
        body += chunk
      })
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body }))
    })
    request.on('error', reject)
  })
}

/** A port nothing listens on now (the server process takes it next). */
async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  await new Promise((resolve) => server.close(resolve))
  if (address === null || typeof address === 'string') throw new Error('no port')
  return address.port
}

/**
 * Each network's Horizon at the root of its own origin (docs/ledger.md, "Each network's Horizon
 * at its own origin"), driven by stellar-sdk given nothing but the origin, as the official SDKs
 * are given api.testnet.minepi.com or api.mainnet.minepi.com: PLINTH_TESTNET_HORIZON_PORT and
 * PLINTH_MAINNET_HORIZON_PORT (own listeners), and PLINTH_TESTNET_HORIZON_HOST (chosen by Host).
 */
describe('stellar-sdk at each network’s own Horizon origin', () => {
  let platform: ClientPlatform
  const ports = { testnet: 0, mainnet: 0 }
  const origin = (port: number) => `http://127.0.0.1:${port}`

  before(async () => {
    ports.testnet = await freePort()
    ports.mainnet = await freePort()
    platform = await startClientPlatform({
      PLINTH_TESTNET_HORIZON_PORT: String(ports.testnet),
      PLINTH_MAINNET_HORIZON_PORT: String(ports.mainnet),
      // Behind a reverse proxy that forwards this name to the Testnet's port: its links are built for the name.
      PLINTH_TESTNET_HORIZON_HOST: 'horizon-testnet.plinth.test',
    })
  })
  after(async () => {
    await platform.close()
  })

  /** Pays 3 from `from` to `to` on the network whose origin `server` is, signed under `passphrase`. */
  async function pay(server: Horizon.Server, from: Keypair, to: string, passphrase: string) {
    const account = await server.loadAccount(from.publicKey())
    const tx = new TransactionBuilder(account, {
      fee: String(await server.fetchBaseFee()),
      networkPassphrase: passphrase,
      timebounds: await server.fetchTimebounds(120),
    })
      .addOperation(Operation.payment({ destination: to, asset: Asset.native(), amount: '3' }))
      .build()
    tx.sign(from)
    return server.submitTransaction(tx)
  }

  /** Test-π (or, with `network`, that network's Pi) for an address, through the sandbox API. */
  async function fund(payload: { address: string; amount: string; network?: string }): Promise<void> {
    const answer = await platform.node.inject({ method: 'POST', url: '/sandbox/ledger/fund', payload })
    assert.equal(answer.statusCode, 200, answer.body)
  }

  const balanceOf = async (server: Horizon.Server, address: string) =>
    (await server.loadAccount(address)).balances.find((b) => b.asset_type === 'native')?.balance

  it('each origin is its network’s ledger: its root, its accounts, its payments, links built for that origin', async () => {
    const testnet = new Horizon.Server(origin(ports.testnet), { allowHttp: true })
    const mainnet = new Horizon.Server(origin(ports.mainnet), { allowHttp: true })
    assert.equal((await testnet.root()).network_passphrase, 'Pi Testnet')
    assert.equal((await mainnet.root()).network_passphrase, 'Pi Network')

    const [from, to] = [Keypair.random(), Keypair.random()]
    for (const key of [from, to]) {
      await fund({ address: key.publicKey(), amount: '100' })
      await fund({ address: key.publicKey(), amount: '50', network: 'Pi Network' })
    }
    assert.equal(await balanceOf(testnet, from.publicKey()), '100.0000000')
    assert.equal(await balanceOf(mainnet, from.publicKey()), '50.0000000')

    const paid = await pay(mainnet, from, to.publicKey(), 'Pi Network')
    assert.equal(await balanceOf(mainnet, to.publicKey()), '53.0000000')
    assert.equal(await balanceOf(testnet, to.publicKey()), '100.0000000', 'a Mainnet payment moves no test-π')

    const record = await mainnet.transactions().transaction(paid.hash).call()
    assert.equal(record.hash, paid.hash)
    assert.ok(record._links.self.href.startsWith(`${origin(ports.mainnet)}/transactions/`), record._links.self.href)
    // The SDK follows the record's links on the same origin.
    const operations = await record.operations()
    assert.equal(operations.records[0]?.type, 'payment')
    const payments = await mainnet.payments().forAccount(to.publicKey()).order('desc').limit(5).call()
    assert.equal(payments.records[0]?.transaction_hash, paid.hash)
    const next = await payments.next()
    assert.ok(Array.isArray(next.records))
    await assert.rejects(testnet.transactions().transaction(paid.hash).call(), 'not on the Testnet origin')
    const ledgers = await mainnet.ledgers().order('desc').limit(1).call()
    assert.ok(ledgers.records[0]?._links.self.href.startsWith(origin(ports.mainnet)))
  })

  it('a transaction signed under the other network’s passphrase is refused on an origin, and nothing moves', async () => {
    const testnet = new Horizon.Server(origin(ports.testnet), { allowHttp: true })
    const [from, to] = [Keypair.random(), Keypair.random()]
    for (const key of [from, to]) await fund({ address: key.publicKey(), amount: '10' })
    await assert.rejects(pay(testnet, from, to.publicKey(), 'Pi Network'), (error: unknown) => {
      const codes = (error as { response?: { data?: { extras?: { result_codes?: { transaction?: string } } } } }).response?.data?.extras
      assert.equal(codes?.result_codes?.transaction, 'tx_bad_auth')
      return true
    })
    assert.equal(await balanceOf(testnet, from.publicKey()), '10.0000000')
  })

  it('the Testnet origin answers friendbot; the Mainnet origin has none', async () => {
    const address = Keypair.random().publicKey()
    const bot = await fetch(`${origin(ports.testnet)}/friendbot?addr=${address}`)
    assert.equal(bot.status, 200, await bot.text())
    const none = await fetch(`${origin(ports.mainnet)}/friendbot?addr=${address}`)
    assert.equal(none.status, 404)
  })

  it('streams a network’s payments at its origin', async () => {
    const mainnet = new Horizon.Server(origin(ports.mainnet), { allowHttp: true })
    const [from, to] = [Keypair.random(), Keypair.random()]
    for (const key of [from, to]) await fund({ address: key.publicKey(), amount: '20', network: 'Pi Network' })
    const got = new Promise<string>((resolve, reject) => {
      const close = mainnet
        .payments()
        .forAccount(to.publicKey())
        .cursor('now')
        .stream({
          onmessage: (record) => {
            close()
            resolve((record as unknown as { transaction_hash: string }).transaction_hash)
          },
          onerror: (error) => reject(error),
        })
    })
    const paid = await pay(mainnet, from, to.publicKey(), 'Pi Network')
    assert.equal(await got, paid.hash)
  })

  it('chosen by Host behind a reverse proxy: the Testnet Horizon at the root, with links for that host', async () => {
    const answer = await getWithHost(`${platform.base}/`, 'horizon-testnet.plinth.test')
    assert.equal(answer.status, 200, answer.body)
    const root = JSON.parse(answer.body) as { network_passphrase: string; _links: { self: { href: string } } }
    assert.equal(root.network_passphrase, 'Pi Testnet')
    assert.equal(root._links.self.href, 'http://horizon-testnet.plinth.test')
    const accounts = await getWithHost(`${platform.base}/accounts?signer=${Keypair.random().publicKey()}`, 'horizon-testnet.plinth.test')
    assert.equal(accounts.status, 200, accounts.body)
    // The internal prefix is not reachable from the main origin.
    assert.equal((await fetch(`${platform.base}/_horizon/mainnet`)).status, 404)
    // /ledger stays Pi Testnet's.
    assert.equal(
      ((await (await fetch(`${platform.base}/ledger`)).json()) as { network_passphrase: string }).network_passphrase,
      'Pi Testnet',
    )
  })
})
