import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { expectStatus, launchBrowser, newPage, type RunningPlinth, startPlinth, waitFor } from './harness.js'

/**
 * The console's platform page over the sandbox's state (docs/console.md, docs/testing.md): an
 * injected fault is listed and cleared from the console, the faulted call is marked in the request
 * log, and the data reset asks first, then leaves the platform empty or seeded.
 */
describe('console: faults and reset in a browser', () => {
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

  it('lists an injected fault, marks the faulted call in the request log, and clears the fault', async () => {
    const shop = await plinth.createApp('Faulty Shop')
    const fault = expectStatus(
      await plinth.api<{ id: string }>('POST', '/sandbox/faults', {
        body: { app_id: shop.app_id, match: { operation_id: 'getIncompleteServerPayments' }, effect: { status: 503 } },
      }),
      201,
      'create fault',
    )

    const faulted = await plinth.api<{ error: string }>('GET', '/v2/payments/incomplete_server_payments', { key: shop.api_key })
    assert.equal(faulted.status, 503)
    assert.equal(faulted.body.error, 'injected_fault')

    await page.goto(`${plinth.url}/console/#/platform`)
    const row = page.getByTestId('fault-row')
    await row.first().waitFor()
    assert.equal(await row.count(), 1)
    const text = (await row.first().textContent()) ?? ''
    assert.match(text, /getIncompleteServerPayments/)
    assert.match(text, /answers 503 before/)
    assert.match(text, /until cleared/)

    // The request log shows the call that failed, marked as injected, with its error code.
    await page.goto(`${plinth.url}/console/#/apps/${shop.app_id}/requests`)
    await page.getByText('injected_fault').first().waitFor()
    const log = expectStatus(
      await plinth.api<{ requests: { id: string; status: number; error_code: string | null; fault: string | null }[] }>(
        'GET',
        `/sandbox/apps/${shop.app_id}/requests`,
      ),
      200,
      'request log',
    )
    const entry = log.requests.find((r) => r.fault !== null)
    assert.ok(entry, 'the faulted call is in the request log')
    assert.equal(entry.status, 503)
    assert.equal(entry.error_code, 'injected_fault')
    assert.match(entry.fault ?? '', new RegExp(`^${fault.id}:`))
    await page.goto(`${plinth.url}/console/#/apps/${shop.app_id}/requests/${entry.id}`)
    await page.getByText('Injected fault').waitFor()

    // Cleared from the console: the platform answers normally again.
    await page.goto(`${plinth.url}/console/#/platform`)
    await page.getByTestId('clear-fault').click()
    await page.getByText('No fault injected').waitFor()
    const listed = expectStatus(await plinth.api<{ faults: unknown[] }>('GET', `/sandbox/faults?app_id=${shop.app_id}`), 200, 'faults')
    assert.deepEqual(listed.faults, [])
    assert.equal((await plinth.api('GET', '/v2/payments/incomplete_server_payments', { key: shop.api_key })).status, 200)
  })

  it('resets the data only after the confirmation, and leaves an empty platform', async () => {
    const shop = await plinth.createApp('Doomed Shop')
    await page.goto(`${plinth.url}/console/#/platform`)
    await page.locator('select[name="seed"]').selectOption('empty')
    await page.getByTestId('reset-data').click()
    const dialog = page.getByTestId('reset-dialog')
    await dialog.waitFor()

    // Cancel deletes nothing.
    await dialog.getByRole('button', { name: 'Cancel' }).click()
    expectStatus(await plinth.api('GET', `/sandbox/apps/${shop.app_id}`), 200, 'the app is still there after Cancel')

    await page.getByTestId('reset-data').click()
    await page.getByTestId('reset-dialog-yes').click()
    await waitFor(async () => (await plinth.api('GET', `/sandbox/apps/${shop.app_id}`)).status === 404, 'the app is gone')
    assert.equal((await plinth.api('GET', '/v2/payments/incomplete_server_payments', { key: shop.api_key })).status, 401)
    const apps = expectStatus(await plinth.api<{ apps: unknown[] }>('GET', '/sandbox/apps'), 200, 'apps')
    assert.deepEqual(apps.apps, [], 'an empty reset leaves no app')
    await page.waitForURL(/#\/apps$/)
    await page.getByText('Doomed Shop').waitFor({ state: 'detached' })
    assert.deepEqual(errors, [])
  })
})
