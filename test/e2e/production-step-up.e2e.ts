import assert from 'node:assert/strict'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import type { Browser, FrameLocator, Page } from 'playwright-core'
import { createShop } from '../../examples/shop/shop.js'
import { adminOf, freshName, GOOD_PASSWORD } from '../helpers/accounts.js'
import { appFrame, FAST, launchBrowser, newPage, payArmed, type RunningPlinth, startPlinth } from './harness.js'

/**
 * Large payments ask for the password (docs/production.md, "Large payments ask for the
 * password"), in Chromium: with the step-up amount at 5 π, the demo shop's π mug (3.14 π) is paid
 * with Pay alone and the dialog asks for no password; its golden ticket (10 π) shows the password
 * field, Pay waits for it, a wrong password pays nothing (the server refuses), the right one pays.
 */
describe('production: the step-up for large payments in the payment dialog, in Chromium', () => {
  let plinth: RunningPlinth
  let browser: Browser
  let server: Server
  let page: Page
  let errors: string[]
  let shop: FrameLocator
  const username = freshName('bea').slice(0, 32)

  before(async () => {
    plinth = await startPlinth({ mode: 'production', payments: { stepUpAmount: '5' } })
    ;({ server } = createShop({ plinthUrl: plinth.url, apiKey: 'pending', walletSeed: 'pending' }))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const shopUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    const admin = adminOf(plinth.platform)
    const owner = freshName('dev').slice(0, 32)
    await admin.createOperator(owner, GOOD_PASSWORD)
    await admin.grant(owner, 'developer')
    const created = await admin.createApp({ owner, name: 'Demo Shop', url: `${shopUrl}/` })
    server.close()
    ;({ server } = createShop({ plinthUrl: plinth.url, apiKey: created.api_key, walletSeed: created.wallet.seed }))
    await new Promise<void>((resolve) => server.listen(Number(new URL(shopUrl).port), '127.0.0.1', resolve))
    browser = await launchBrowser()
    ;({ page, errors } = await newPage(browser))

    await page.goto(`${plinth.url}/?${new URLSearchParams(FAST)}`)
    await page.getByLabel('Username (3 to 32').fill(username)
    await page.getByLabel('Password (8 to 128').fill(GOOD_PASSWORD)
    await page.getByRole('button', { name: 'Create account' }).click()
    await page.getByRole('heading', { name: 'Open an app' }).waitFor()
    await admin.issue({ target: username, amount: '50', reason: 'welcome' })
    await page.getByRole('button', { name: 'Open Demo Shop' }).click()
    await appFrame(page, shopUrl)
    shop = page.frameLocator('#app-frame')
    await shop.getByTestId('signin').click()
    await dialog().getByRole('button', { name: 'Allow' }).click()
    await shop.getByTestId('whoami').getByText(`@${username}`).waitFor()
  })
  after(async () => {
    await browser?.close()
    server?.closeAllConnections()
    await new Promise((resolve) => server?.close(resolve))
    await plinth?.close()
  })

  const dialog = () => page.getByRole('dialog')
  const balance = () => page.evaluate<string>(`fetch('/account').then((r) => r.json()).then((b) => b.wallet.balance)`)
  const approved = () => dialog().locator('.status-line[data-stage="approved"]').waitFor()

  it('at or below the amount: no password field, Pay alone pays', async () => {
    const before = await balance()
    await shop.getByTestId('buy-pi-mug').click()
    await approved()
    const pay = dialog().getByRole('button', { name: 'Pay' })
    await payArmed(pay)
    assert.equal(await dialog().getByLabel('Your password').isVisible(), false)
    await pay.click()
    await shop.getByTestId('owned-pi-mug').waitFor()
    assert.equal((Number(before) - Number(await balance())).toFixed(7), '3.1400100')
    await dialog().getByRole('button', { name: 'Close' }).click()
  })

  it('above the amount: the dialog asks for the password; a wrong one pays nothing, the right one pays', async () => {
    const before = await balance()
    await shop.getByTestId('buy-golden-ticket').click()
    await approved()
    const password = dialog().getByLabel('Your password: this payment is more than 5 π')
    const pay = dialog().getByRole('button', { name: /^Pay/ })
    assert.equal(await password.isVisible(), true)
    assert.equal(await pay.isDisabled(), true, 'Pay waits for the password')
    await password.fill('not my password')
    await payArmed(pay)
    await pay.click()
    await dialog().locator('.status-line').getByText('The password is wrong. Nothing was paid.').waitFor()
    assert.equal(await balance(), before, 'a wrong password: nothing moved')
    assert.equal(await password.inputValue(), '', 'the wrong password is not kept')
    await password.fill(GOOD_PASSWORD)
    await payArmed(pay)
    await pay.click()
    await shop.getByTestId('owned-golden-ticket').waitFor()
    assert.equal((Number(before) - Number(await balance())).toFixed(7), '10.0000100')
    await dialog().getByRole('button', { name: 'Close' }).click()
  })

  it('left no script errors (the page asking who is signed in before sign-up, and the refused wrong password, are the browser’s notes of a 401 and a 403)', () => {
    assert.deepEqual(
      errors.filter((e) => !/^Failed to load resource: the server responded with a status of (401|403) /.test(e)),
      [],
    )
  })
})
