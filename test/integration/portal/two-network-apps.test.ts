/**
 * A Testnet app and a Mainnet app in one production server (docs/ledger.md, "Two networks";
 * docs/production.md §11): each app's wallet, its balance and its payments are on its own
 * network's ledger. Money issued by an operator (Pi Network) and test-π from the faucet (Pi
 * Testnet) stay apart: a user paid by both apps holds each on its network, and an app cannot
 * spend on the other network what it holds on its own.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ledgerServiceFactory } from '../../../src/ledger/ledger-service.js'
import type { LedgerNetwork } from '../../../src/ledger/networks.js'
import { adminOf, signedUp } from '../../helpers/accounts.js'
import { buildPayment, submitEnvelope } from '../../helpers/ledger.js'
import { usePlatform } from '../../helpers/platform.js'

describe('a Testnet app and a Mainnet app in one production server', () => {
  const platform = usePlatform({
    mode: 'production',
    portal: { operatorDailyIssueLimit: 10_000, operatorApprovalThreshold: 'off' },
    faucet: { amount: '25', dailyPerAddress: 2, dailyPerUser: 3 },
  })
  const app = () => platform.app
  const ledger = (network: LedgerNetwork) => ledgerServiceFactory({ network, db: platform.db, clock: platform.clock })
  const balanceOn = async (network: LedgerNetwork, address: string) => (await ledger(network).getAccount(address))?.balance
  const sequenceOn = async (network: LedgerNetwork, address: string) => {
    const account = await ledger(network).getAccount(address)
    assert.ok(account, `${address} has an account on ${network}`)
    return account.sequence
  }

  it('keeps their balances apart: issued π on Pi Network, faucet test-π on Pi Testnet, each app paying on its own', async () => {
    const op = await signedUp(app)
    await adminOf(platform).grant(op.username, 'operator')
    const dev = await signedUp(app)
    await adminOf(platform).grant(dev.username, 'developer')
    const register = async (name: string, network: LedgerNetwork) => {
      const made = await dev.call('POST', '/portal/apps', {
        name,
        url: `https://${name.toLowerCase().replace(' ', '-')}.example.com/`,
        network,
      })
      assert.equal(made.status, 201, JSON.stringify(made.body))
      const created = made.body.app as { app_id: string; network: string }
      assert.equal(created.network, network)
      return { id: created.app_id, seed: String(made.body.wallet_seed) }
    }
    const testApp = await register('Test Shop', 'Pi Testnet')
    const mainApp = await register('Main Shop', 'Pi Network')
    const walletOf = async (appId: string) => {
      const answer = await dev.call('GET', `/portal/apps/${appId}/wallet`)
      assert.equal(answer.status, 200, JSON.stringify(answer.body))
      return answer.body as { address: string; balance: string }
    }
    const [testWallet, mainWallet] = [await walletOf(testApp.id), await walletOf(mainApp.id)]
    assert.equal(testWallet.balance, '0.0000000')
    assert.equal(mainWallet.balance, '0.0000000')

    // Real π for the Mainnet app from an operator; test-π for the Testnet app from the faucet.
    assert.equal((await op.call('POST', '/operator/issue', { target: mainApp.id, amount: '5', reason: 'rewards budget' })).status, 200)
    const faucet = await platform.app.inject({ method: 'GET', url: `/ledger/friendbot?addr=${testWallet.address}` })
    assert.equal(faucet.statusCode, 200, faucet.body)
    assert.equal((await walletOf(mainApp.id)).balance, '5.0000000')
    assert.equal((await walletOf(testApp.id)).balance, '25.0000000')
    assert.equal(await balanceOn('Pi Testnet', mainWallet.address), '0.0000000', 'no test-π for the Mainnet app')
    assert.equal(await balanceOn('Pi Network', testWallet.address), '0.0000000', 'no π for the Testnet app')

    // Each app pays a user on its own network.
    const user = await signedUp(app)
    const userWallet = async () =>
      (await user.call('GET', '/account')).body.wallet as { address: string; balance: string; testnet_balance: string }
    const to = (await userWallet()).address
    const pay = async (from: { seed: string }, address: string, network: LedgerNetwork, amount: string) =>
      submitEnvelope(
        app(),
        await buildPayment(app(), { seed: from.seed, to, amount, memo: 'reward', network, sequence: await sequenceOn(network, address) }),
      )
    const mainPaid = await pay(mainApp, mainWallet.address, 'Pi Network', '2')
    assert.equal(mainPaid.status, 200, JSON.stringify(mainPaid.body))
    const testPaid = await pay(testApp, testWallet.address, 'Pi Testnet', '7')
    assert.equal(testPaid.status, 200, JSON.stringify(testPaid.body))
    const paid = await userWallet()
    assert.equal(paid.balance, '2.0000000', "the user's π: the Mainnet app's payment only")
    assert.equal(paid.testnet_balance, '7.0000000', "the user's test-π: the Testnet app's payment only")
    assert.equal((await walletOf(mainApp.id)).balance, '2.9999900')
    assert.equal((await walletOf(testApp.id)).balance, '17.9999900')

    // The Testnet app's 18 test-π cannot pay on Pi Network, where it holds nothing: refused, nothing moves.
    const crossed = await pay(testApp, testWallet.address, 'Pi Network', '1')
    assert.equal(crossed.status, 400, JSON.stringify(crossed.body))
    assert.equal((await userWallet()).balance, '2.0000000')
    assert.equal(await balanceOn('Pi Network', testWallet.address), '0.0000000')
    assert.equal((await walletOf(testApp.id)).balance, '17.9999900')

    // The supply balances on each network.
    const books = await op.call('GET', '/operator/ledger/check')
    assert.equal(books.body.balanced, true, JSON.stringify(books.body))
  })
})
