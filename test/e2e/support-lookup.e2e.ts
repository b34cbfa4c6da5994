/**
 * "I paid but got nothing", answered in the operator console's Support tab in Chromium (docs/
 * operators.md, "Support lookup"), at 1280×800 and at a phone's 390×844: the operator types the
 * transaction hash the user sent and clicks Search, then Open; the payment's timeline shows it
 * paid and waiting for the app to complete it, with the app's approve request from its request
 * log. Both lookups are in the audit log.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Browser } from 'playwright-core'
import { adminOf, freshName, GOOD_PASSWORD, signedUp } from '../helpers/accounts.js'
import { launchBrowser, type RunningPlinth, screenshot, startPlinth } from './harness.js'

const SIZES = [
  { name: 'desktop', width: 1280, height: 800 },
  { name: 'phone', width: 390, height: 844 },
] as const

describe('production: the operator’s support lookup, in Chromium', () => {
  let plinth: RunningPlinth
  let browser: Browser
  const operator = freshName('olga').slice(0, 32)
  let paymentId = ''
  let txid = ''
  let payer = ''

  before(async () => {
    plinth = await startPlinth({ mode: 'production', requestLog: true })
    const admin = adminOf(plinth.platform)
    const app = () => plinth.platform.app
    await admin.createOperator(operator, GOOD_PASSWORD)
    const dev = await signedUp(app)
    await admin.grant(dev.username, 'developer')
    const shop = await admin.createApp({ owner: dev.username, name: 'Mug Shop', url: 'https://mugs.example/' })
    const user = await signedUp(app)
    payer = user.username
    await admin.issue({ target: user.username, amount: '20', reason: 'test money' })
    const consent = await user.call('POST', `/account/apps/${shop.app_id}/authenticate`, { scopes: ['payments'] })
    const created = await app().inject({
      method: 'POST',
      url: '/v2/client/payments',
      headers: { authorization: `Bearer ${String(consent.body.accessToken)}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ amount: 3.14, memo: 'A mug', metadata: {} }),
    })
    paymentId = String(created.json().identifier)
    const approved = await app().inject({
      method: 'POST',
      url: `/v2/payments/${paymentId}/approve`,
      headers: { authorization: `Key ${shop.api_key}` },
    })
    assert.equal(approved.statusCode, 200)
    const paid = await user.call('POST', `/account/payments/${paymentId}/pay`)
    txid = String((paid.body.transaction as { txid: string }).txid)
    browser = await launchBrowser()
  })
  after(async () => {
    await browser?.close()
    await plinth?.close()
  })

  for (const size of SIZES) {
    it(`${size.width}×${size.height}: Search by the transaction hash, Open: the timeline says the app never completed it`, async () => {
      const context = await browser.newContext({ viewport: { width: size.width, height: size.height } })
      context.setDefaultTimeout(15_000)
      const page = await context.newPage()
      const errors: string[] = []
      page.on('pageerror', (error) => errors.push(error.message))
      try {
        await page.goto(`${plinth.url}/`)
        await page.locator('#signin-username').fill(operator)
        await page.locator('#signin-password').fill(GOOD_PASSWORD)
        await page.getByRole('button', { name: 'Sign in', exact: true }).click()
        await page.getByRole('button', { name: 'Operator', exact: true }).click()
        const view = page.locator('#operator-view')
        await view.getByRole('button', { name: 'Support', exact: true }).click()
        const trailBefore = (await adminOf(plinth.platform).auditTrail(1000)).records.length

        await view.getByLabel('Payment id, transaction hash, username, uid, wallet address or app').fill(txid)
        await view.getByRole('button', { name: 'Search', exact: true }).click()
        const row = view.locator(`tr[data-payment-id="${paymentId}"]`)
        await row.getByText('Paid: the app has not completed it').waitFor()
        await row.getByText(payer).waitFor()
        await row.getByRole('button', { name: `Open the payment ${paymentId}` }).click()

        const timeline = view.getByTestId('support-timeline')
        await timeline.getByRole('heading', { name: `Payment ${paymentId}` }).waitFor()
        assert.equal(await page.evaluate<string>('document.activeElement?.id'), 'support-payment-title', 'the focus goes to the payment')
        await timeline.getByText('3.14 π').waitFor()
        // The transaction opens its receipt (#41 U13).
        assert.equal(await timeline.getByRole('link', { name: txid }).getAttribute('href'), `/?view=receipt&tx=${txid}`)
        await timeline.locator('tr[data-step="approved"]').getByText(`POST /v2/payments/${paymentId}/approve`).waitFor()
        await timeline.locator('tr[data-step="transaction_verified"]').getByText('No request in the app’s log').waitFor()
        if (size.name === 'desktop') await screenshot(page, 'operator-support-desktop')

        // Nothing of the section needs a sideways scroll of the page (a table scrolls in its own box).
        const past = await page.evaluate<string[]>(
          `[...document.querySelectorAll('[aria-labelledby="operator-support-title"] *')]
            .filter((e) => !e.closest('.table-scroll') && e.getBoundingClientRect().right > ${size.width})
            .map((e) => e.tagName + ' ' + Math.round(e.getBoundingClientRect().right))`,
        )
        assert.deepEqual(past, [], 'past the window’s right edge')
        // Newest first: the records written since the tab was opened.
        const trail = (await adminOf(plinth.platform).auditTrail(1000)).records
        const actions = trail.slice(0, trail.length - trailBefore).map((r) => r.action)
        assert.deepEqual(actions.sort(), ['lookup-apps', 'lookup-payments', 'lookup-users', 'view-payment'])

        // From an app found by its name, its payments only: nobody's users or apps are read again.
        await view.getByLabel('Payment id, transaction hash, username, uid, wallet address or app').fill('mug')
        await view.getByRole('button', { name: 'Search', exact: true }).click()
        await view.getByRole('button', { name: 'Payments of the app Mug Shop' }).click()
        await view.getByTestId('support-scope').getByText('Payments of the app').waitFor()
        await row.waitFor()
        const newest = (await adminOf(plinth.platform).auditTrail(1)).records[0]
        assert.deepEqual([newest?.action, newest?.details.q, typeof newest?.details.app_id], ['lookup-payments', null, 'string'])
        assert.deepEqual(errors, [])
      } finally {
        await context.close()
      }
    })
  }
})
