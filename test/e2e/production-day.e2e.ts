/**
 * The production day's last items (#41), in Chromium at 1280×800 and 390×844, with the demo shop:
 * - U20: a new person's home offers the next steps (the directory, their wallet, their account,
 *   becoming a developer), and they go once the person has used an app.
 * - U23: after Pay, the payment dialog says, announced (`role="status"`), what was paid to whom,
 *   with a link to its receipt, and stays until closed.
 * - U13: a transaction's receipt is a readable page (hash, network, ledger, time, from, to,
 *   amount, fee, memo, the payment it belongs to) with a link to the raw JSON; the wallet's and
 *   the operator's transaction links open it.
 * - U17: the operator's issue is checked before the confirmation: one past the daily limit is
 *   refused next to the form with no question asked and nothing moved.
 */
import assert from 'node:assert/strict'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import type { Page } from 'playwright-core'
import { createShop } from '../../examples/shop/shop.js'
import { adminOf, freshName, GOOD_PASSWORD } from '../helpers/accounts.js'
import { appFrame, FAST, launchBrowser, payArmed, type RunningPlinth, startPlinth } from './harness.js'
import { pageAt, SIZES } from './views.js'

describe('production: next steps, the payment’s success, receipts and the issue’s check, in Chromium', () => {
  let plinth: RunningPlinth
  let browser: Awaited<ReturnType<typeof launchBrowser>>
  let server: Server
  let shopUrl: string
  let shopWallet: string
  const operator = freshName('op').slice(0, 32)
  let shopId: string
  /** Each size's paid payment: its id and transaction, for the portal's receipt. */
  const paid: Record<string, { id: string; hash: string }> = {}

  before(async () => {
    plinth = await startPlinth({ mode: 'production' })
    ;({ server } = createShop({ plinthUrl: plinth.url, apiKey: 'pending', walletSeed: 'pending' }))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    shopUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    const admin = adminOf(plinth.platform)
    await admin.createOperator(operator, GOOD_PASSWORD)
    await admin.grant(operator, 'developer')
    const created = await admin.createApp({ owner: operator, name: 'Demo Shop', url: `${shopUrl}/` })
    shopWallet = created.wallet.address
    shopId = created.app_id
    server.close()
    ;({ server } = createShop({ plinthUrl: plinth.url, apiKey: created.api_key, walletSeed: created.wallet.seed }))
    await new Promise<void>((resolve) => server.listen(Number(new URL(shopUrl).port), '127.0.0.1', resolve))
    browser = await launchBrowser()
  })
  after(async () => {
    await browser?.close()
    server?.closeAllConnections()
    await new Promise((resolve) => server?.close(resolve))
    await plinth?.close()
  })

  /** The receipt's facts, term → text. */
  const receiptFacts = (page: Page) =>
    page.getByTestId('receipt').evaluate((dl) => {
      const facts: Record<string, string> = {}
      for (const dt of dl.querySelectorAll('dt')) facts[dt.textContent ?? ''] = dt.nextElementSibling?.textContent ?? ''
      return facts
    })

  for (const size of SIZES) {
    it(`${size.width}×${size.height}: a new person's next steps; a payment's success with its receipt`, async () => {
      const { page, errors, close } = await pageAt(browser, size)
      try {
        const username = freshName('new').slice(0, 32)
        await page.goto(`${plinth.url}/?${new URLSearchParams(FAST)}`)
        await page.getByLabel('Username (3 to 32').fill(username)
        await page.getByLabel('Password (8 to 128').fill(GOOD_PASSWORD)
        await page.getByRole('button', { name: 'Create account' }).click()

        // U20: the next steps, above the directory.
        const guide = page.getByTestId('home-guide')
        await guide.getByRole('heading', { name: 'Welcome: what you can do here' }).waitFor()
        await guide.getByText('Open an app from the directory below').waitFor()
        await guide.getByText('Build apps of your own').waitFor()
        await guide.getByRole('button', { name: 'Open your wallet' }).click()
        await page.locator('#drawer').getByTestId('wallet-balance').waitFor()
        await page.locator('#drawer-close').click()
        await guide.getByRole('button', { name: 'Your account' }).click()
        await page.locator('#drawer').getByRole('button', { name: 'Add a passkey' }).waitFor()
        await page.locator('#drawer-close').click()

        // U23: Pay, then the announced success with the receipt's link.
        await adminOf(plinth.platform).issue({ target: username, amount: '10', reason: 'welcome' })
        await page.getByRole('button', { name: 'Open Demo Shop' }).click()
        await appFrame(page, shopUrl)
        const shop = page.frameLocator('#app-frame')
        await shop.getByTestId('signin').click()
        await page.getByRole('dialog').getByRole('button', { name: 'Allow' }).click()
        await shop.getByTestId('whoami').getByText(`@${username}`).waitFor()
        await shop.getByTestId('buy-pi-mug').click()
        const dialog = page.getByRole('dialog', { name: 'Confirm payment' })
        await dialog.locator('.status-line[data-stage="approved"]').waitFor()
        const pay = dialog.getByRole('button', { name: 'Pay' })
        await payArmed(pay)
        await pay.click()
        const success = dialog.getByTestId('pay-success')
        await success.getByText('You paid 3.14 π to Demo Shop.').waitFor()
        assert.equal(await success.getAttribute('role'), 'status')
        assert.equal(await success.getAttribute('aria-live'), 'polite')
        await shop.getByTestId('owned-pi-mug').waitFor()
        // Completed: production's dialog stays with its receipt until closed.
        await dialog.locator('.status-line[data-stage="completed"]').waitFor()
        await new Promise((resolve) => setTimeout(resolve, 2500))
        assert.equal(await success.isVisible(), true, 'the success stays')
        const link = success.getByRole('link', { name: /View the receipt/ })
        assert.equal(await link.getAttribute('target'), '_blank')
        const href = String(await link.getAttribute('href'))
        const hash = String(new URL(href, plinth.url).searchParams.get('tx'))
        assert.match(hash, /^[0-9a-f]{64}$/)
        await dialog.getByRole('button', { name: 'Close' }).click()
        await dialog.waitFor({ state: 'detached' })

        // U13: the receipt, readable, with the payment it belongs to and the raw JSON's link.
        const me = await page.evaluate<{ wallet: { address: string } }>(`fetch('/account').then((r) => r.json())`)
        await page.goto(new URL(href, plinth.url).href)
        await page.getByRole('heading', { name: 'Transaction receipt' }).waitFor()
        await page.getByTestId('receipt-payment').waitFor()
        const facts = await receiptFacts(page)
        assert.equal(facts.Hash, hash)
        assert.equal(facts.Network, 'Pi Network')
        assert.match(facts.Ledger ?? '', /^\d+$/)
        assert.ok((facts.Time ?? '') !== '')
        assert.equal(facts.From, me.wallet.address, JSON.stringify(facts))
        assert.equal(facts.To, shopWallet)
        assert.equal(facts.Amount, '3.14 π')
        assert.equal(facts.Fee, '0.00001 π')
        assert.match(facts.Payment ?? '', /^Demo Shop: π mug \(3\.14 π\), /)
        paid[size.name] = { id: String(facts.Payment?.split(', ').at(-1)), hash }
        const raw = page.getByTestId('receipt-raw')
        assert.equal(await raw.getAttribute('href'), `/ledger/transactions/${hash}`)
        const record = await page.evaluate<{ hash: string }>(`fetch('/ledger/transactions/${hash}').then((r) => r.json())`)
        assert.equal(record.hash, hash)
        assert.equal(
          facts.Memo,
          (await page.evaluate<{ memo: string }>(`fetch('/ledger/transactions/${hash}').then((r) => r.json())`)).memo,
        )
        const fits = await page.evaluate<boolean>('document.documentElement.scrollWidth <= window.innerWidth')
        assert.equal(fits, true, 'the receipt fits the window')

        // The wallet's link to the same transaction is its receipt; the guide is gone (an app was used).
        await page.goto(`${plinth.url}/?${new URLSearchParams(FAST)}`)
        await page.getByRole('heading', { name: 'Open an app' }).waitFor()
        await page.locator('#app-list').getByRole('button', { name: 'Open Demo Shop' }).waitFor()
        assert.equal(await page.getByTestId('home-guide').isVisible(), false)
        await page.locator('#wallet-button').click()
        const walletLink = page.locator(`#drawer .tx[data-hash="${hash}"] a`)
        await walletLink.waitFor()
        assert.equal(await walletLink.getAttribute('href'), `/?view=receipt&tx=${hash}`)
        assert.match(await walletLink.innerText(), /^Receipt: /)
        assert.deepEqual(errors, [])
      } finally {
        await close()
      }
    })

    it(`${size.width}×${size.height}: the operator's issue past the daily limit is refused before any confirmation`, async () => {
      const { page, errors, close } = await pageAt(browser, size)
      try {
        await page.goto(`${plinth.url}/?${new URLSearchParams(FAST)}`)
        await page.locator('#signin-username').fill(operator)
        await page.locator('#signin-password').fill(GOOD_PASSWORD)
        await page.getByRole('button', { name: 'Sign in', exact: true }).click()
        await page.locator('#operator-tab').click()
        const view = page.locator('#operator-view')
        await view.getByRole('button', { name: 'Issue money', exact: true }).click()
        await view.getByLabel('To: a username or an app id').fill(operator)
        await view.getByLabel('Amount in Pi').fill('20000')
        await view.getByLabel('Reason (kept in the audit log)').fill('far too much')
        const supply = async () =>
          (
            await plinth.platform.db
              .selectFrom('audit_log')
              .select((eb) => eb.fn.countAll<string>().as('n'))
              .executeTakeFirstOrThrow()
          ).n
        const before = await supply()
        await view.getByRole('button', { name: 'Issue', exact: true }).click()
        await view
          .getByTestId('issue-error')
          .getByText(/Operators together issue at most 10000 Pi in 24 hours/)
          .waitFor()
        assert.equal(await page.getByRole('dialog').count(), 0, 'no question asked for an issue that would be refused')
        assert.equal(await supply(), before, 'nothing recorded or moved')

        await view.getByLabel('Amount in Pi').fill('5')
        await view.getByRole('button', { name: 'Issue', exact: true }).click()
        const confirm = page.getByRole('dialog', { name: 'Issue new money?' })
        await confirm.getByText(/of the 10,000 π daily limit is issued so far/).waitFor()
        await confirm.getByRole('button', { name: 'Issue' }).click()
        const result = view.getByTestId('issue-result')
        await result.getByText(`Issued 5 π to ${operator}.`).waitFor()
        // U13: the issue's transaction opens its receipt.
        const link = result.getByRole('link')
        const href = String(await link.getAttribute('href'))
        assert.match(href, /^\/\?view=receipt&tx=[0-9a-f]{64}$/)
        await page.goto(new URL(href, plinth.url).href)
        const facts = await receiptFacts(page)
        assert.equal(facts.Network, 'Pi Network')
        assert.equal(facts.Amount, '5 π')
        assert.equal(facts.Memo, 'issued')

        // From the portal, the app's payment: its receipt names the payment (the app's, read by its member).
        const payment = paid[size.name]
        assert.ok(payment !== undefined, 'the test before paid')
        await page.goto(`${plinth.url}/?view=portal&portal_app=${shopId}`)
        await page
          .locator('#portal-view')
          .getByRole('button', { name: `Payment ${payment.id}` })
          .click()
        const detail = page.getByRole('dialog')
        const txLink = detail.getByRole('link', { name: /…/ })
        assert.equal(await txLink.getAttribute('href'), `/?view=receipt&tx=${payment.hash}&app=${shopId}&payment=${payment.id}`)
        await page.goto(new URL(String(await txLink.getAttribute('href')), plinth.url).href)
        await page.getByTestId('receipt-payment').waitFor()
        assert.match((await receiptFacts(page)).Payment ?? '', new RegExp(`^${shopId}: π mug \\(3\\.14 π\\), ${payment.id}$`))
        assert.deepEqual(errors, [])
      } finally {
        await close()
      }
    })
  }
})
