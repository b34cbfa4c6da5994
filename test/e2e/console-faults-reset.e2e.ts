import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { expectStatus, launchBrowser, newPage, type RunningPlinth, screenshot, startPlinth } from './harness.js'

interface Fault {
  id: string
  app_id: string
  match: { route?: string; operation_id?: string; user_uid?: string }
  effect: { status?: number; retry_after_seconds?: number; delay_ms?: number; drop?: true }
  when: string
  times_left: number | null
  probability: number
}

/**
 * The console's platform page over the sandbox's state (docs/console.md, docs/testing.md): a fault
 * is created from the console with every field the faults API takes and listed with all of them
 * (probability too), an injected fault is marked in the request log and cleared, the data reset
 * asks first, then shows the new platform's figures at once, and a toast leaves with its page.
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
    assert.match(text, /answers 503/)
    assert.equal(await row.first().getByTestId('fault-when').textContent(), 'before')
    assert.equal(await row.first().getByTestId('fault-probability').textContent(), '100%')
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

  it('creates a fault with every field the API takes, and lists each of them', async () => {
    const shop = await plinth.createApp('Flaky Shop')
    // The page may be open already: loaded again, it lists the new app.
    await page.goto(`${plinth.url}/console/#/platform`)
    await page.reload()
    const form = page.getByTestId('create-fault')
    await form.locator('select[name="app_id"]').selectOption(shop.app_id)
    // The route list offers the /v2 routes this Plinth serves.
    assert.ok(
      (await page.locator('#fault-routes option').evaluateAll((els) => els.map((el) => el.getAttribute('value')))).includes(
        'POST /v2/payments/{payment_id}/approve',
      ),
    )
    await form.locator('input[name="route"]').fill('POST /v2/payments/{payment_id}/approve')
    await form.locator('input[name="user_uid"]').fill('uid-of-alice')
    await form.locator('select[name="effect"]').selectOption('status:429')
    await form.locator('input[name="retry_after_seconds"]').fill('7')
    assert.equal(await form.locator('input[name="delay_ms"]').isVisible(), false, 'the delay shows only for a delay')
    await form.locator('select[name="when"]').selectOption('after')
    await form.locator('input[name="times"]').fill('3')
    await form.locator('input[name="probability"]').fill('0.25')
    await form.getByRole('button', { name: 'Add fault' }).click()
    const row = page.getByTestId('fault-row').filter({ hasText: 'Flaky Shop' })
    await row.waitFor()

    const listed = expectStatus(await plinth.api<{ faults: Fault[] }>('GET', `/sandbox/faults?app_id=${shop.app_id}`), 200, 'faults')
    assert.equal(listed.faults.length, 1)
    const fault = listed.faults[0] as Fault
    assert.deepEqual(
      { match: fault.match, effect: fault.effect, when: fault.when, times_left: fault.times_left, probability: fault.probability },
      {
        match: { route: 'POST /v2/payments/:payment_id/approve', user_uid: 'uid-of-alice' },
        effect: { status: 429, retry_after_seconds: 7 },
        when: 'after',
        times_left: 3,
        probability: 0.25,
      },
    )
    const text = (await row.textContent()) ?? ''
    assert.match(text, /POST \/v2\/payments\/:payment_id\/approve/)
    assert.match(text, /uid-of-alice/)
    assert.equal(await row.getByTestId('fault-effect').textContent(), 'answers 429, Retry-After 7 s')
    assert.equal(await row.getByTestId('fault-when').textContent(), 'after')
    assert.equal(await row.getByTestId('fault-probability').textContent(), '25%')
    assert.equal(await row.getByTestId('fault-times-left').textContent(), '3')
    await row.scrollIntoViewIfNeeded()
    await screenshot(page, 'console-platform')

    // A delay by operationId, and a dropped connection on every call.
    await form.locator('select[name="app_id"]').selectOption(shop.app_id)
    await form.locator('input[name="route"]').fill('')
    await form.locator('input[name="user_uid"]').fill('')
    await form.locator('input[name="operation_id"]').fill('getPayment')
    await form.locator('select[name="effect"]').selectOption('delay')
    await form.locator('input[name="delay_ms"]').fill('1500')
    await form.locator('input[name="times"]').fill('')
    await form.locator('input[name="probability"]').fill('1')
    await form.getByRole('button', { name: 'Add fault' }).click()
    await row.getByText('delays 1500 ms').waitFor()
    await form.locator('input[name="operation_id"]').fill('')
    await form.locator('select[name="effect"]').selectOption('drop')
    await form.getByRole('button', { name: 'Add fault' }).click()
    await row.getByText('drops the connection').waitFor()
    const all = expectStatus(await plinth.api<{ faults: Fault[] }>('GET', `/sandbox/faults?app_id=${shop.app_id}`), 200, 'faults')
    assert.deepEqual(
      all.faults.map((f) => [f.match, f.effect, f.times_left]),
      [
        [{ route: 'POST /v2/payments/:payment_id/approve', user_uid: 'uid-of-alice' }, { status: 429, retry_after_seconds: 7 }, 3],
        [{ operation_id: 'getPayment' }, { delay_ms: 1500 }, null],
        [{}, { drop: true }, null],
      ],
    )

    // What the API refuses is refused in plain words before sending.
    await form.locator('input[name="probability"]').fill('0')
    await form.getByRole('button', { name: 'Add fault' }).click()
    await page.getByTestId('toast').getByText('The probability is more than 0 and at most 1').waitFor()
    await form.locator('input[name="probability"]').fill('1')
    await form.locator('input[name="operation_id"]').fill('noSuchOperation')
    await form.getByRole('button', { name: 'Add fault' }).click()
    await page.getByTestId('toast').getByText('match.operation_id: no /v2 operation noSuchOperation.').waitFor()
    assert.equal((await plinth.api<{ faults: Fault[] }>('GET', `/sandbox/faults?app_id=${shop.app_id}`)).body.faults.length, 3)

    await page.getByTestId('clear-faults').click()
    await page.getByText('No fault injected').waitFor()
  })

  it('removes a toast when the page it belongs to is left', async () => {
    const user = await plinth.createUser()
    await page.goto(`${plinth.url}/console/#/platform`)
    await page.getByTestId('fund').locator('input[name="address"]').fill(user.wallet.address)
    await page.getByTestId('fund').getByRole('button', { name: 'Fund' }).click()
    const toast = page.getByTestId('toast')
    await toast.waitFor()
    await page.getByRole('link', { name: 'Apps', exact: true }).click()
    await page.getByTestId('create-app').waitFor()
    await toast.waitFor({ state: 'detached', timeout: 1000 })
    // A toast shown as its page is drawn again stays with it, and goes when the page is left.
    await page.goto(`${plinth.url}/console/#/snapshots`)
    await page.getByTestId('save-snapshot').locator('input[name="name"]').fill('toast-check')
    await page.getByTestId('save-snapshot').getByRole('button', { name: 'Save snapshot' }).click()
    await toast.getByText('Saved toast-check').waitFor()
    await page.goBack()
    await toast.waitFor({ state: 'detached', timeout: 1000 })
  })

  it('resets the data only after the confirmation, then shows the new figures at once, and the new demo key', async () => {
    const shop = await plinth.createApp('Doomed Shop')
    const user = await plinth.createUser()
    expectStatus(
      await plinth.api('POST', '/sandbox/ledger/fund', { body: { address: user.wallet.address, amount: '123456' } }),
      200,
      'fund',
    )
    await plinth.advanceClock(86_400)
    await page.goto(`${plinth.url}/console/#/platform`)
    await page.reload()
    const sum = page.getByTestId('ledger-sum')
    await sum.waitFor()
    const oldSum = (await sum.textContent()) ?? ''
    assert.ok(Number(oldSum) >= 123_456, `the sum before: ${oldSum}`)
    await page.locator('select[name="seed"]').selectOption('empty')
    await page.getByTestId('reset-data').click()
    const dialog = page.getByTestId('reset-dialog')
    await dialog.waitFor()

    // Cancel deletes nothing.
    await dialog.getByRole('button', { name: 'Cancel' }).click()
    expectStatus(await plinth.api('GET', `/sandbox/apps/${shop.app_id}`), 200, 'the app is still there after Cancel')

    // Every figure the page shows from the moment of the confirmation is recorded.
    await page.evaluate(`(() => {
      window.seenSums = []
      const record = () => {
        const el = document.querySelector('[data-testid="ledger-sum"]')
        window.seenSums.push(el === null ? null : el.textContent)
      }
      new MutationObserver(record).observe(document.getElementById('main'), { subtree: true, childList: true, characterData: true })
    })()`)
    await page.getByTestId('reset-data').click()
    await page.getByTestId('reset-dialog-yes').click()
    await page.getByTestId('toast').getByText('Sandbox reset: it is empty').waitFor()
    // The moment it says so, the page shows the new platform: no old sum, the clock on real time.
    const check = expectStatus(await plinth.api<{ total_balances: string }>('GET', '/sandbox/ledger/check'), 200, 'ledger check')
    assert.equal(await sum.textContent(), check.total_balances)
    assert.equal(await page.getByTestId('platform-offset').textContent(), 'real time')
    assert.equal(await page.locator('#clock-offset').textContent(), 'real time')
    const seen = await page.evaluate<Array<string | null>>('window.seenSums')
    assert.ok(seen.length > 0)
    assert.equal(seen.includes(oldSum), false, `the old sum ${oldSum} showed after the confirmation: ${seen.join(', ')}`)

    assert.equal((await plinth.api('GET', `/sandbox/apps/${shop.app_id}`)).status, 404)
    assert.equal((await plinth.api('GET', '/v2/payments/incomplete_server_payments', { key: shop.api_key })).status, 401)
    const apps = expectStatus(await plinth.api<{ apps: unknown[] }>('GET', '/sandbox/apps'), 200, 'apps')
    assert.deepEqual(apps.apps, [], 'an empty reset leaves no app')

    // Seeded with the demo: its new key is shown once, and works.
    await page.locator('select[name="seed"]').selectOption('demo')
    await page.getByTestId('reset-data').click()
    await page.getByTestId('reset-dialog-yes').click()
    const key = (await page.getByTestId('revealed-api-key').textContent()) ?? ''
    assert.equal((await plinth.api('GET', '/v2/payments/incomplete_server_payments', { key })).status, 200)
    await page.getByTestId('dismiss-reveal').click()
    await page.getByTestId('revealed-api-key').waitFor({ state: 'detached' })
    // The one refused call (the unknown operationId) is the browser's only complaint.
    assert.deepEqual(
      errors.filter((text) => !text.startsWith('Failed to load resource')),
      [],
    )
  })
})
