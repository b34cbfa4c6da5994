import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Keypair } from '@stellar/stellar-base'
import type { Browser, Frame, Page } from 'playwright-core'
import { type FixtureApp, startFixtureApp } from './fixture-app.js'
import {
  appFrame,
  closePagesAfterEach,
  expectStatus,
  inFrame,
  launchBrowser,
  newPage,
  openSandbox,
  type RunningPlinth,
  startPlinth,
  waitFor,
} from './harness.js'

type Balances = { balances: Array<{ network: string; balance: string | null }> }

/**
 * The two networks in the console and the sandbox page (docs/ledger.md, "Two networks"): which
 * network an app, a wallet and a payment are on; the console funds a Pi Network app's wallet on
 * Pi Network; the payment dialog of a Pi Network app shows the user's Pi Network balance (not
 * "unknown"), and the wallet panel both networks' balances, at 1280×800 and 390×844.
 */
describe('two networks in the console and the sandbox page', () => {
  let plinth: RunningPlinth
  let mainnetShop: FixtureApp
  let browser: Browser

  before(async () => {
    plinth = await startPlinth()
    mainnetShop = await startFixtureApp(plinth, 'Mainnet Shop', 'Pi Network')
    browser = await launchBrowser()
  })
  closePagesAfterEach(() => browser)
  after(async () => {
    await browser?.close()
    await mainnetShop?.close()
    await plinth?.close()
  })

  const balancesOf = async (address: string): Promise<Record<string, string | null>> => {
    const answer = expectStatus(await plinth.api<Balances>('GET', `/sandbox/ledger/accounts/${address}`), 200, 'balances')
    return Object.fromEntries(answer.balances.map((b) => [b.network, b.balance]))
  }
  const fund = async (address: string, amount: string, network: string) =>
    expectStatus(await plinth.api('POST', '/sandbox/ledger/fund', { body: { address, amount, network } }), 200, 'fund')
  const text = async (page: Page, testid: string) => (await page.getByTestId(testid).textContent()) ?? ''

  it("the console names each app's, wallet's and payment's network, and funds a Pi Network app on Pi Network", async () => {
    const { page, errors } = await newPage(browser)
    await page.setViewportSize({ width: 1280, height: 800 })
    const app = await plinth.createApp('Launch Shop', undefined, 'Pi Network')
    await page.goto(`${plinth.url}/console/#/apps/${app.app_id}`)
    await page.getByTestId('app-balance').getByText('10000.0000000 Pi on Pi Network').waitFor()
    // The app's own network first, the other after it.
    assert.match(await text(page, 'app-balance'), /10000\.0000000 Pi on Pi Network.*10000\.0000000 test Pi on Pi Testnet/)
    const form = page.getByTestId('fund-app')
    await form.locator('input[name="amount"]').fill('250')
    await form.getByRole('button', { name: 'Fund wallet' }).click()
    await page.getByTestId('app-balance').getByText('10250.0000000 Pi on Pi Network').waitFor()
    assert.deepEqual(await balancesOf(app.wallet.address), { 'Pi Testnet': '10000.0000000', 'Pi Network': '10250.0000000' })

    // A user's wallet: one key, a balance on each network.
    const user = await plinth.createUser()
    await fund(user.wallet.address, '5', 'Pi Network')
    await page.goto(`${plinth.url}/console/#/users/${user.user_id}`)
    await page.getByTestId('user-balance').getByText('1005.0000000 Pi on Pi Network').waitFor()
    assert.match(await text(page, 'user-balance'), /1000\.0000000 test Pi on Pi Testnet/)

    // A payment of the Pi Network app is on Pi Network.
    const auth = expectStatus(
      await plinth.api<{ accessToken: string }>('POST', `/sandbox/apps/${app.app_id}/authenticate`, {
        body: { user_id: user.user_id, scopes: ['username', 'payments'] },
      }),
      200,
      'authenticate',
    )
    const payment = expectStatus(
      await plinth.api<{ identifier: string; network: string }>('POST', '/v2/client/payments', {
        token: auth.accessToken,
        body: { amount: 2, memo: 'Boots', metadata: {} },
      }),
      201,
      'payment',
    )
    assert.equal(payment.network, 'Pi Network')
    await page.goto(`${plinth.url}/console/#/apps/${app.app_id}/payments/${payment.identifier}`)
    await page.getByTestId('payment-network').getByText('Pi Network').waitFor()

    // Any address on either network, from the platform page; both ledgers are checked.
    const stranger = Keypair.random().publicKey()
    await page.goto(`${plinth.url}/console/#/platform`)
    const any = page.getByTestId('fund')
    await any.locator('input[name="address"]').fill(stranger)
    await any.locator('select[name="network"]').selectOption('Pi Network')
    await any.locator('input[name="amount"]').fill('7')
    await any.getByRole('button', { name: 'Fund' }).click()
    await waitFor(async () => (await balancesOf(stranger))['Pi Network'] === '7.0000000' || undefined, 'the Pi Network funding')
    assert.equal((await balancesOf(stranger))['Pi Testnet'], null, 'no test-π account opened')
    await page.getByTestId('mainnet-ledger-check').getByText('books balance').waitFor()
    await page.getByTestId('ledger-check').getByText('books balance').waitFor()
    assert.deepEqual(errors, [])
  })

  for (const size of [
    { name: 'desktop', width: 1280, height: 800 },
    { name: 'mobile', width: 390, height: 844 },
  ]) {
    it(`a Pi Network app's payment dialog shows the Pi Network balance; the wallet both (${size.name})`, async () => {
      const user = await plinth.createUser()
      // Unlike the Testnet balance (1000): the dialog must show this one.
      await fund(user.wallet.address, '234.5', 'Pi Network')
      const { page, errors } = await newPage(browser)
      await page.setViewportSize({ width: size.width, height: size.height })
      // The app list names each app's network.
      await openSandbox(page, plinth.url, { user: user.user_id })
      const listed = page.locator('#app-list li').filter({ hasText: 'Mainnet Shop' })
      await listed.waitFor({ state: 'attached' })
      assert.equal(await listed.locator('.app-network').textContent(), ' Pi Network')
      await openSandbox(page, plinth.url, { user: user.user_id, app: mainnetShop.appId })
      const frame: Frame = await appFrame(page, mainnetShop.url)
      await inFrame(frame, `Pi.init({ version: '2.0', sandbox: true })`)
      await inFrame(frame, `window.authP = window.settle(Pi.authenticate(['username', 'payments'], window.onIncomplete)), 0`)
      const dialog = page.getByRole('dialog')
      await dialog.getByRole('button', { name: 'Allow' }).click()
      assert.equal((await inFrame<{ ok: boolean }>(frame, 'window.authP')).ok, true)

      // The top bar shows the open app's network's balance.
      await waitFor(async () => ((await page.locator('#wallet-button').textContent()) ?? '').includes('1,234.5 π') || undefined, 'top bar')

      await inFrame(
        frame,
        `window.payP = window.settle(Pi.createPayment({ amount: 3, memo: 'Mainnet boots', metadata: {} }, window.paymentCallbacks)), 0`,
      )
      await dialog.getByTestId('payment-network').getByText('Pi Network').waitFor()
      const balance = dialog.locator('.balance-value')
      await waitFor(async () => ((await balance.textContent()) ?? '') !== '…' || undefined, 'the balance read')
      assert.equal(await balance.textContent(), '1,234.5 π')
      const fits = await page.evaluate<boolean>('document.documentElement.scrollWidth <= window.innerWidth')
      assert.ok(fits, `the page fits ${size.width} px`)
      await dialog.getByRole('button', { name: 'Cancel' }).click()
      await dialog.waitFor({ state: 'detached' })

      await page.locator('#wallet-button').click()
      const wallet = page.getByTestId('wallet-balance')
      await wallet.locator('[data-network="Pi Network"]').getByText('1,234.5 π').waitFor()
      assert.match((await wallet.locator('[data-network="Pi Testnet"]').textContent()) ?? '', /Pi Testnet\s+1,000 π/)
      // The open app's network first.
      assert.equal(await wallet.locator('[data-network]').first().getAttribute('data-network'), 'Pi Network')
      await page.getByText('None yet.').or(page.locator('.tx').first()).waitFor()
      assert.equal(await page.locator('#drawer .error, [role="dialog"] .error').count(), 0)
      assert.deepEqual(errors, [])
    })
  }
})
