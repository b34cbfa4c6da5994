/**
 * The platform page's wallet on both networks (docs/ledger.md, "Two networks"): the directory
 * names each app's network (the page shows the open app's balance), and the signed-in person's
 * own transactions on either network are read at GET /account/wallet/transactions (`/ledger` is
 * Pi Testnet's Horizon only).
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { accountBrowser, adminOf, freshName, GOOD_PASSWORD, signedUp } from '../../helpers/accounts.js'
import { assertError } from '../../helpers/payments-client.js'
import { usePlatform } from '../../helpers/platform.js'

describe("the wallet's networks in production", () => {
  const platform = usePlatform({ mode: 'production' })
  const app = () => platform.app

  it("lists the person's transactions on the network asked, each network's apart", async () => {
    const user = await signedUp(app)
    assert.equal((await user.call('POST', '/account/faucet', {})).status, 200)
    await adminOf(platform).issue({ target: user.username, amount: '7', reason: 'welcome' })
    const on = async (network: string) => {
      const answer = await user.call('GET', `/account/wallet/transactions?network=${encodeURIComponent(network)}`)
      assert.equal(answer.status, 200, JSON.stringify(answer.body))
      return (answer.body.transactions as Array<{ hash: string; memo: string | null }>).map((tx) => tx.memo)
    }
    assert.deepEqual(await on('Pi Network'), ['issued'])
    assert.deepEqual(await on('Pi Testnet'), ['faucet'])
    const unnamed = await user.call('GET', '/account/wallet/transactions')
    assert.deepEqual(
      (unnamed.body.transactions as Array<{ memo: string | null }>).map((tx) => tx.memo),
      ['issued'],
      'no network named: Pi Network',
    )
    const wallet = (await user.call('GET', '/account')).body.wallet as { balance: string; testnet_balance: string }
    assert.equal(wallet.balance, '7.0000000')
    assert.equal(wallet.testnet_balance, '100.0000000')
    assertError(await user.call('GET', '/account/wallet/transactions?network=Pi%20Mainnet'), 400, 'invalid_arguments')
    assertError(await accountBrowser(app).call('GET', '/account/wallet/transactions?network=Pi%20Network'), 401, 'session_required')
  })

  it("names each app's network in the directory", async () => {
    const admin = adminOf(platform)
    const owner = freshName('dev').slice(0, 32)
    await admin.createOperator(owner, GOOD_PASSWORD)
    await admin.grant(owner, 'developer')
    const created = await admin.createApp({ owner, name: 'Networked', url: 'https://networked.example/' })
    const user = await signedUp(app)
    const listed = ((await user.call('GET', '/account/apps')).body.apps as Array<{ app_id: string; network: string }>).find(
      (a) => a.app_id === created.app_id,
    )
    assert.equal(listed?.network, 'Pi Network')
  })
})
