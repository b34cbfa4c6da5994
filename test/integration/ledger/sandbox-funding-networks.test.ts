/**
 * The console's wallet funding on both networks (docs/ledger.md, "Two networks"): the sandbox's
 * funding route takes the network, so a Pi Network app's wallet is funded on Pi Network's ledger,
 * and `/sandbox/ledger/accounts/{address}` reads an address's balance on each network (`/ledger`
 * is Pi Testnet's only).
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Keypair } from '@stellar/stellar-base'
import { checkLedgerAfterEach } from '../../helpers/ledger-client.js'
import { json, sandbox, TEST_DB, usePlatform } from '../../helpers/platform.js'

type Balances = { address: string; balances: Array<{ network: string; balance: string | null }> }

describe(`sandbox funding on both networks (${TEST_DB})`, () => {
  const platform = usePlatform()
  checkLedgerAfterEach(platform)

  const inject = (method: 'GET' | 'POST', url: string, payload?: Record<string, unknown>) =>
    platform.app.inject({ method, url, ...(payload === undefined ? {} : { payload }) })

  async function balances(address: string): Promise<Record<string, string | null>> {
    const answer = await inject('GET', `/sandbox/ledger/accounts/${address}`)
    assert.equal(answer.statusCode, 200, answer.body)
    const body = json<Balances>(answer)
    assert.equal(body.address, address)
    return Object.fromEntries(body.balances.map((b) => [b.network, b.balance]))
  }

  it("funds a Pi Network app's wallet on Pi Network's ledger, and no test-π moves", async () => {
    const app = await sandbox(platform.app).createApp(undefined, 'Pi Network')
    const before = await balances(app.wallet.address)
    assert.deepEqual(before, { 'Pi Testnet': '10000.0000000', 'Pi Network': '10000.0000000' })
    const funded = await inject('POST', '/sandbox/ledger/fund', { address: app.wallet.address, amount: '12.5', network: 'Pi Network' })
    assert.equal(funded.statusCode, 200, funded.body)
    assert.deepEqual(json(funded), { address: app.wallet.address, balance: '10012.5000000' })
    assert.deepEqual(await balances(app.wallet.address), { 'Pi Testnet': '10000.0000000', 'Pi Network': '10012.5000000' })
    // /ledger is Pi Testnet's: it still reads the Testnet balance.
    const testnet = json<{ balances: Array<{ balance: string }> }>(await inject('GET', `/ledger/accounts/${app.wallet.address}`))
    assert.equal(testnet.balances[0]?.balance, '10000.0000000')
  })

  it('funds on Pi Testnet when no network is named, and opens the account there only', async () => {
    const address = Keypair.random().publicKey()
    assert.deepEqual(await balances(address), { 'Pi Testnet': null, 'Pi Network': null })
    assert.equal((await inject('POST', '/sandbox/ledger/fund', { address, amount: '3' })).statusCode, 200)
    assert.deepEqual(await balances(address), { 'Pi Testnet': '3.0000000', 'Pi Network': null })
  })

  it('refuses an unknown network and a malformed address, and nothing moves', async () => {
    const address = Keypair.random().publicKey()
    const wrong = await inject('POST', '/sandbox/ledger/fund', { address, amount: '3', network: 'Pi Mainnet' })
    assert.equal(wrong.statusCode, 400, wrong.body)
    assert.equal(json<{ error: string }>(wrong).error, 'invalid_arguments')
    assert.deepEqual(await balances(address), { 'Pi Testnet': null, 'Pi Network': null })
    const malformed = await inject('GET', '/sandbox/ledger/accounts/GNOTANADDRESS')
    assert.equal(malformed.statusCode, 400, malformed.body)
    assert.equal(json<{ error: string; error_message: string }>(malformed).error, 'invalid_arguments')
    assert.match(json<{ error_message: string }>(malformed).error_message, /params\/address must be a ledger account id/)
  })
})
