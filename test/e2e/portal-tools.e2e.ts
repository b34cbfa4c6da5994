/**
 * The console's tools in the portal, in Chromium at 1280×800 and 390×844 (docs/portal.md, "The
 * app's tools"): a member of a live app reads its overview (payments by state, the last error,
 * the checklist), finds a call by its request id, a payment by its memo and a user by uid,
 * downloads its payments as CSV, and copies a logged call as curl with the key as $PI_API_KEY.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Browser } from 'playwright-core'
import { adminOf, GOOD_PASSWORD, signedUp } from '../helpers/accounts.js'
import { launchBrowser, type RunningPlinth, startPlinth } from './harness.js'

const SIZES = [
  { name: 'desktop', width: 1280, height: 800 },
  { name: 'phone', width: 390, height: 844 },
] as const

describe('production: the app’s tools in the portal, in Chromium', () => {
  let plinth: RunningPlinth
  let browser: Browser
  let member = ''
  let appId = ''
  let apiKey = ''
  let uid = ''
  let requestId = ''

  before(async () => {
    plinth = await startPlinth({ mode: 'production', requestLog: true })
    const admin = adminOf(plinth.platform)
    const app = () => plinth.platform.app
    const owner = await signedUp(app)
    await admin.grant(owner.username, 'developer')
    const dev = await signedUp(app)
    await admin.grant(dev.username, 'developer')
    member = dev.username
    const shop = await admin.createApp({ owner: owner.username, name: 'Mug Shop', url: 'https://mugs.example/' })
    appId = shop.app_id
    apiKey = shop.api_key
    assert.equal((await owner.call('POST', `/portal/apps/${appId}/members`, { username: member })).status, 201)
    const user = await signedUp(app)
    const consent = await user.call('POST', `/account/apps/${appId}/authenticate`, { scopes: ['payments'] })
    uid = String((consent.body.user as { uid: string }).uid)
    const created = await app().inject({
      method: 'POST',
      url: '/v2/client/payments',
      headers: { authorization: `Bearer ${String(consent.body.accessToken)}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ amount: 3.14, memo: 'A mug', metadata: {} }),
    })
    assert.equal(created.statusCode, 201)
    const missing = await app().inject({
      method: 'POST',
      url: '/v2/payments',
      headers: { authorization: `Key ${apiKey}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ payment: { amount: 1, memo: 'x', metadata: {}, uid: 'nobody' } }),
    })
    assert.equal(missing.statusCode, 404)
    requestId = String(missing.headers['x-request-id'])
    browser = await launchBrowser()
  })
  after(async () => {
    await browser?.close()
    await plinth?.close()
  })

  for (const size of SIZES) {
    it(`${size.width}×${size.height}: overview, a user by uid, the payments CSV, a call as curl`, async () => {
      const context = await browser.newContext({ viewport: { width: size.width, height: size.height } })
      context.setDefaultTimeout(15_000)
      const page = await context.newPage()
      const errors: string[] = []
      page.on('pageerror', (error) => errors.push(error.message))
      try {
        await page.goto(`${plinth.url}/`)
        await page.locator('#signin-username').fill(member)
        await page.locator('#signin-password').fill(GOOD_PASSWORD)
        await page.getByRole('button', { name: 'Sign in', exact: true }).click()
        await page.getByRole('button', { name: 'Portal', exact: true }).click()
        const view = page.locator('#portal-view')
        await view.getByRole('button', { name: /^Mug Shop/ }).click()

        const tools = view.getByTestId('portal-tools')
        const overview = tools.getByTestId('portal-overview')
        await overview.getByText('1 payment in all.').waitFor()
        await overview.getByRole('table', { name: 'Last errors' }).getByText('POST /v2/payments').waitFor()
        assert.equal(await tools.locator('[data-testid="portal-checklist"] li[data-done="true"]').count(), 2, 'key made, URL set')

        const hits = tools.getByTestId('portal-find-hits')
        await tools.getByLabel('Find in the app').fill(requestId)
        await tools.getByRole('button', { name: 'Find', exact: true }).click()
        await hits.locator('li[data-request-id]').getByText('POST /v2/payments → 404').waitFor()
        await tools.getByLabel('Find in the app').fill('A mug')
        await tools.getByRole('button', { name: 'Find', exact: true }).click()
        await hits.locator('li[data-payment-id]').waitFor()
        assert.equal(await hits.locator('li').count(), 1)

        await tools.getByLabel('Find users').fill(uid)
        await tools.getByRole('button', { name: 'Search users', exact: true }).click()
        await tools.locator(`tr[data-uid="${uid}"]`).getByText('not granted').waitFor()

        const href = await tools.getByRole('link', { name: 'Payments (CSV)' }).getAttribute('href')
        assert.equal(href, `/portal/apps/${appId}/payments/export?format=csv`)
        const csv = String(await page.evaluate(`fetch(${JSON.stringify(href)}).then((r) => r.text())`))
        assert.match(csv, /^"identifier","direction","state"/)
        assert.ok(csv.includes('"A mug"'))
        const fits = await page.evaluate(
          `(() => { const el = document.querySelector('[data-testid="portal-tools"]'); return el.scrollWidth <= el.clientWidth })()`,
        )
        assert.equal(fits, true, 'nothing in the tools sticks out of its section (tables scroll inside)')

        await view.getByRole('button', { name: 'Request log', exact: true }).click()
        await view
          .locator('tr[data-status="404"]')
          .getByRole('button', { name: /^Request / })
          .click()
        const dialog = page.getByRole('dialog')
        await dialog.getByRole('button', { name: 'Copy as curl' }).click()
        const curl = String(await dialog.getByTestId('request-curl').locator('pre').textContent())
        assert.match(curl, /^curl -X POST '/)
        assert.ok(curl.includes('Authorization: Key $PI_API_KEY'))
        assert.equal(curl.includes(apiKey), false)
        assert.deepEqual(errors, [])
      } finally {
        await context.close()
      }
    })
  }
})
