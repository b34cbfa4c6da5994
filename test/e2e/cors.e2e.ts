import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Browser } from 'playwright-core'
import { expectStatus, launchBrowser, newPage, type RunningPlinth, type Served, serve, startPlinth } from './harness.js'

/**
 * CORS as Chromium enforces it, from a page on another origin than Plinth's (docs/security.md#cors):
 * the ledger and the Bearer routes are readable from any origin, preflight included; a
 * server-key route is refused by the browser.
 */
describe('CORS in Chromium, from another origin', () => {
  let plinth: RunningPlinth
  let site: Served
  let browser: Browser

  before(async () => {
    plinth = await startPlinth()
    site = await serve({ '/': '<!doctype html><title>another origin</title><p>app frontend</p>' })
    browser = await launchBrowser()
  })
  after(async () => {
    await browser.close()
    await site.close()
    await plinth.close()
  })

  it('lets the page read /ledger and /v2/me with a Bearer token, and refuses a Key route', async () => {
    const app = await plinth.createApp('CORS app')
    const user = await plinth.createUser()
    const { accessToken } = expectStatus(
      await plinth.api<{ accessToken: string }>('POST', `/sandbox/apps/${app.app_id}/authenticate`, {
        body: { user_id: user.user_id, scopes: ['username', 'payments'] },
      }),
      200,
      'authenticate',
    )
    const { page, errors } = await newPage(browser)
    await page.goto(`${site.url}/`)
    const outcome = (await page.evaluate(`(async () => {
      const base = ${JSON.stringify(plinth.url)}
      const attempt = async (path, init) => {
        try {
          const response = await fetch(base + path, init)
          return { status: response.status, body: await response.json() }
        } catch (error) {
          return { refused: String(error) }
        }
      }
      return {
        ledger: await attempt('/ledger/accounts/${app.wallet.address}'),
        me: await attempt('/v2/me', { headers: { Authorization: 'Bearer ${accessToken}' } }),
        unauthorised: await attempt('/v2/me', { headers: { Authorization: 'Bearer nope' } }),
        payment: await attempt('/v2/client/payments', {
          method: 'POST',
          headers: { Authorization: 'Bearer ${accessToken}', 'Content-Type': 'application/json' },
          body: JSON.stringify({ amount: 1, memo: 'from the browser' }),
        }),
        key: await attempt('/v2/payments/incomplete_server_payments', { headers: { Authorization: 'Key ${app.api_key}' } }),
      }
    })()`)) as Record<string, { status?: number; body?: Record<string, unknown>; refused?: string }>

    assert.equal(outcome.ledger?.status, 200)
    assert.equal(outcome.ledger?.body?.account_id, app.wallet.address)
    assert.equal(outcome.me?.status, 200)
    assert.equal(outcome.me?.body?.username, user.username)
    assert.equal(outcome.unauthorised?.status, 401, 'the page can read a refusal')
    assert.equal(outcome.payment?.status, 201, JSON.stringify(outcome.payment))
    assert.match(outcome.key?.refused ?? '', /Failed to fetch/, 'the browser refuses a server-key route')
    // The refusal is Chromium's CORS error in the console, nothing else.
    assert.ok(
      errors.every((e) => /CORS|Failed to load resource/.test(e)),
      errors.join('\n'),
    )
    await page.context().close()
  })
})
