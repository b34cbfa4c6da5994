import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { expectStatus, launchBrowser, newPage, type RunningPlinth, screenshot, startPlinth } from './harness.js'

/**
 * The developer console (`/console/`, docs/console.md) in Chromium: create an app and see its
 * key once, rotate and revoke keys, advance the platform clock, and the console's view of an
 * app's payments, ads and notifications (the screenshot in docs/console.md).
 */
describe('developer console in a browser', () => {
  let plinth: RunningPlinth
  let browser: Browser
  let page: Page
  let errors: string[]

  before(async () => {
    plinth = await startPlinth()
    browser = await launchBrowser()
    ;({ page, errors } = await newPage(browser))
  })
  after(async () => {
    await browser?.close()
    await plinth?.close()
  })

  const keyWorks = async (key: string) => (await plinth.api('GET', '/v2/payments/incomplete_server_payments', { key })).status === 200

  it('creates an app and shows its key and wallet seed once', async () => {
    await page.goto(`${plinth.url}/console/`)
    const form = page.getByTestId('create-app')
    await form.locator('input[name="name"]').fill('Console Shop')
    await form.locator('select[name="network"]').selectOption('Pi Network')
    await form.locator('input[name="url"]').fill('http://127.0.0.1:3000/')
    await form.getByRole('button', { name: 'Create app' }).click()

    const apiKey = (await page.getByTestId('revealed-api-key').textContent()) ?? ''
    const seed = (await page.getByTestId('revealed-seed').textContent()) ?? ''
    assert.match(apiKey, /^[A-Za-z0-9_-]{43}$/)
    assert.match(seed, /^S[A-Z2-7]{55}$/)
    assert.ok(await keyWorks(apiKey), 'the key shown is the app’s key')
    const appId = decodeURIComponent(new URL(page.url()).hash.replace('#/apps/', ''))
    const app = expectStatus(await plinth.api<{ name: string; network: string; url: string }>('GET', `/sandbox/apps/${appId}`), 200, 'app')
    assert.deepEqual(
      { name: app.name, network: app.network, url: app.url },
      { name: 'Console Shop', network: 'Pi Network', url: 'http://127.0.0.1:3000/' },
    )

    // Once dismissed, the secrets are gone from the page, and no reload brings them back.
    await page.getByTestId('dismiss-reveal').click()
    await page.getByTestId('key-row').first().waitFor()
    assert.equal((await page.content()).includes(apiKey), false)
    await page.reload()
    await page.getByTestId('key-row').first().waitFor()
    const html = await page.content()
    assert.equal(html.includes(apiKey) || html.includes(seed), false)
    assert.ok(html.includes(`${apiKey.slice(0, 8)}…`), 'the key is listed by its first characters')
  })

  it('rotates a key: issues a new one (shown once), revokes the old one', async () => {
    const created = await plinth.createApp('Rotating Shop')
    await page.goto(`${plinth.url}/console/#/apps/${created.app_id}`)
    await page.getByTestId('rotate-key').click()
    const newKey = (await page.getByTestId('revealed-api-key').textContent()) ?? ''
    assert.notEqual(newKey, created.api_key)
    assert.ok(await keyWorks(newKey))
    assert.equal(await page.getByTestId('key-row').count(), 2)

    const oldRow = page.locator(`[data-testid="key-row"][data-key-id="${await keyIdOf(created.app_id, created.api_key)}"]`)
    const revoke = oldRow.getByTestId('revoke-key')
    await revoke.click()
    assert.equal(await revoke.textContent(), 'Click again to revoke', 'a revocation asks for a second click')
    assert.ok(await keyWorks(created.api_key), 'one click revokes nothing')
    await revoke.click()
    await oldRow.getByText('revoked').waitFor()
    assert.equal(await keyWorks(created.api_key), false)
    assert.ok(await keyWorks(newKey))
  })

  async function keyIdOf(appId: string, apiKey: string): Promise<string> {
    const app = expectStatus(
      await plinth.api<{ keys: Array<{ key_id: string; prefix: string }> }>('GET', `/sandbox/apps/${appId}`),
      200,
      'app',
    )
    const key = app.keys.find((k) => apiKey.startsWith(k.prefix))
    assert.ok(key)
    return key.key_id
  }

  it('advances the platform clock', async () => {
    const before = expectStatus(await plinth.api<{ offset_seconds: number }>('GET', '/sandbox/clock'), 200, 'clock')
    await page.goto(`${plinth.url}/console/#/platform`)
    await page.getByRole('button', { name: '+1 hour' }).click()
    await page
      .getByTestId('platform-offset')
      .getByText(/\+1h( \d+s)? ahead/)
      .waitFor()
    const after = expectStatus(await plinth.api<{ offset_seconds: number }>('GET', '/sandbox/clock'), 200, 'clock')
    assert.equal(after.offset_seconds - before.offset_seconds, 3600)
    await page.locator('#clock-offset').getByText('+1h').waitFor()

    const form = page.getByTestId('advance-clock')
    await form.locator('input[name="amount"]').fill('2')
    await form.locator('select[name="unit"]').selectOption({ label: 'days' })
    await form.getByRole('button', { name: 'Advance' }).click()
    await page
      .getByTestId('platform-offset')
      .getByText(/\+2d 1h/)
      .waitFor()
    const later = expectStatus(await plinth.api<{ offset_seconds: number }>('GET', '/sandbox/clock'), 200, 'clock')
    assert.equal(later.offset_seconds - before.offset_seconds, 3600 + 2 * 86_400)

    // Reset asks for a second click, then puts the clock back on real time.
    await page.getByTestId('reset-clock').click()
    await page.getByTestId('reset-clock').getByText('Click again to reset').waitFor()
    await page.getByTestId('reset-clock').click()
    await page.getByTestId('platform-offset').getByText('real time').waitFor()
    await page.locator('#clock-offset').getByText('real time').waitFor()
    const reset = expectStatus(await plinth.api<{ offset_seconds: number }>('GET', '/sandbox/clock'), 200, 'clock')
    assert.equal(reset.offset_seconds, 0)
  })

  it("shows an app's payments, ads and notifications, and moves an ad's status", async () => {
    const app = await plinth.createApp('Demo Shop', 'http://127.0.0.1:3000/')
    const user = await plinth.createUser()
    const auth = expectStatus(
      await plinth.api<{ accessToken: string; user: { uid: string } }>('POST', `/sandbox/apps/${app.app_id}/authenticate`, {
        body: { user_id: user.user_id, scopes: ['username', 'payments', 'in_app_notifications'] },
      }),
      200,
      'authenticate',
    )
    const token = auth.accessToken
    // A completed purchase, and one the user cancelled.
    const paid = expectStatus(
      await plinth.api<{ identifier: string }>('POST', '/v2/client/payments', {
        token,
        body: { amount: 3.14, memo: 'π mug', metadata: {} },
      }),
      201,
      'create payment',
    )
    expectStatus(await plinth.api('POST', `/v2/payments/${paid.identifier}/approve`, { key: app.api_key }), 200, 'approve')
    const submitted = expectStatus(
      await plinth.api<{ transaction: { txid: string } }>('POST', `/v2/client/payments/${paid.identifier}/submit`, { token }),
      200,
      'submit',
    )
    expectStatus(
      await plinth.api('POST', `/v2/payments/${paid.identifier}/complete`, {
        key: app.api_key,
        body: { txid: submitted.transaction.txid },
      }),
      200,
      'complete',
    )
    const dropped = expectStatus(
      await plinth.api<{ identifier: string }>('POST', '/v2/client/payments', {
        token,
        body: { amount: 1, memo: 'Sticker pack', metadata: {} },
      }),
      201,
      'create payment',
    )
    expectStatus(await plinth.api('POST', `/v2/client/payments/${dropped.identifier}/cancel`, { token }), 200, 'user cancel')
    // A pending ad (held by the script) and a notification.
    expectStatus(
      await plinth.api('PUT', `/sandbox/apps/${app.app_id}/ads/script`, {
        body: { result: 'AD_REWARDED', mediator_ack_status: 'pending', count: 1 },
      }),
      200,
      'ad script',
    )
    const ad = expectStatus(await plinth.api<{ adId: string }>('POST', '/v2/client/ads/rewarded/show', { token }), 200, 'show ad')
    expectStatus(
      await plinth.api('POST', '/v2/in_app_notifications/notify', {
        key: app.api_key,
        body: {
          notifications: [{ title: 'Your π mug shipped', body: 'It arrives Tuesday.', user_uid: auth.user.uid, subroute: '/orders' }],
        },
      }),
      201,
      'notify',
    )

    // A fresh load (no toasts from earlier steps) in a window tall enough for the whole app page.
    await page.setViewportSize({ width: 1180, height: 1220 })
    await page.goto(`${plinth.url}/console/#/apps/${app.app_id}`)
    await page.reload()
    const rows = page.getByTestId('payment-row')
    await rows.first().waitFor()
    assert.equal(await rows.count(), 2)
    const completed = rows.filter({ hasText: 'π mug' })
    await completed.getByText('completed', { exact: true }).first().waitFor()
    // The row links to the payment's page and to its ledger transaction.
    const link = completed.getByRole('link', { name: `${submitted.transaction.txid.slice(0, 12)}…` })
    assert.equal(await link.getAttribute('href'), `http://plinth.test/ledger/transactions/${submitted.transaction.txid}`)
    await rows.filter({ hasText: 'Sticker pack' }).getByText('user cancelled').first().waitFor()
    // One pill a payment, the state that holds; the five status flags are in its tooltip.
    for (const row of await rows.all()) assert.equal(await row.locator('.badge').count(), 1)
    assert.equal(await page.locator('.flag').count(), 0, 'no struck-through flags')
    const pill = completed.getByTestId('payment-state-pill')
    assert.equal(await pill.textContent(), 'completed')
    assert.equal(
      await pill.getAttribute('title'),
      'developer_approved: yes\ntransaction_verified: yes\ndeveloper_completed: yes\ncancelled: no\nuser_cancelled: no',
    )
    assert.match(
      (await rows.filter({ hasText: 'Sticker pack' }).getByTestId('payment-state-pill').getAttribute('title')) ?? '',
      /user_cancelled: yes/,
    )
    await page.getByTestId('notification-row').getByText('Your π mug shipped').waitFor()

    const adRow = page.getByTestId('ad-row')
    await adRow.getByText('pending (held)').waitFor()
    await screenshot(page, 'console')
    await adRow.getByTestId('ad-granted').click()
    await adRow.getByText('granted', { exact: true }).waitFor()
    const status = expectStatus(
      await plinth.api<{ mediator_ack_status: string }>('GET', `/v2/ads_network/status/${ad.adId}`, { key: app.api_key }),
      200,
      'ad status',
    )
    assert.equal(status.mediator_ack_status, 'granted')
    await adRow.getByTestId('ad-revoked').click()
    await adRow.getByText('revoked', { exact: true }).waitFor()
  })

  it('shows data as text, never as markup', async () => {
    const name = '<img src=x id=injected onerror="window.hacked=1">'
    const app = await plinth.createApp(name)
    await page.goto(`${plinth.url}/console/#/apps`)
    await page.getByRole('link', { name }).waitFor()
    await page.goto(`${plinth.url}/console/#/apps/${app.app_id}`)
    await page.getByRole('heading', { name }).waitFor()
    assert.equal(await page.locator('#injected').count(), 0)
    assert.equal(await page.evaluate('window.hacked === undefined'), true)
  })

  it('left no script errors in the page', () => {
    assert.deepEqual(errors, [])
  })
})

describe('developer console with an admin token', () => {
  const adminToken = 'e2e-admin-token-0123456789abcdef'
  let plinth: RunningPlinth
  let browser: Browser

  before(async () => {
    plinth = await startPlinth({ adminToken })
    browser = await launchBrowser()
  })
  after(async () => {
    await browser?.close()
    await plinth?.close()
  })

  it('asks for the token, then uses it for every call', async () => {
    await plinth.createApp('Guarded Shop')
    const { page } = await newPage(browser)
    await page.goto(`${plinth.url}/console/`)
    const dialog = page.locator('#token-dialog')
    await dialog.waitFor({ state: 'visible' })
    await dialog.locator('input').fill('wrong-token-0123456789')
    await dialog.getByRole('button', { name: 'Use token' }).click()
    await dialog.getByText('That token was refused.').waitFor()
    await dialog.locator('input').fill(adminToken)
    await dialog.getByRole('button', { name: 'Use token' }).click()
    await page.getByRole('link', { name: 'Guarded Shop' }).waitFor()
    await page.locator('#clock-now').getByText(/UTC/).waitFor()
  })
})
