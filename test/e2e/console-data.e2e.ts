import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { type CreatedApp, expectStatus, launchBrowser, newPage, type RunningPlinth, screenshot, startPlinth, waitFor } from './harness.js'

const USERS = 1_000
const PAYERS = 50
const PAYMENTS_EACH = 20

/** Runs `count` calls, `width` at a time. */
async function inBatches(count: number, width: number, fn: (i: number) => Promise<unknown>): Promise<void> {
  for (let start = 0; start < count; start += width) {
    await Promise.all(Array.from({ length: Math.min(width, count - start) }, (_, k) => fn(start + k)))
  }
}

/**
 * The console with realistic data: 1,000 users and 1,000 payments made through the
 * API, found by search and paged through; the request log showing a refused approve; a stuck
 * payment unstuck from the console; a 1,000-character memo at 1280×720; humane errors, one toast
 * at a time, and the console checking what the sandbox checks.
 */
describe('developer console with realistic data', () => {
  let plinth: RunningPlinth
  let browser: Browser
  let page: Page
  let errors: string[]
  let shop: CreatedApp
  const tag = `c${randomBytes(3).toString('hex')}`
  const userIds: string[] = []
  const tokens: string[] = []

  const authenticate = async (appId: string, userId: string) =>
    expectStatus(
      await plinth.api<{ accessToken: string; user: { uid: string } }>('POST', `/sandbox/apps/${appId}/authenticate`, {
        body: { user_id: userId, scopes: ['username', 'payments'] },
      }),
      200,
      'authenticate',
    )
  const createPayment = async (token: string, memo: string, amount = 1) =>
    expectStatus(
      await plinth.api<{ identifier: string }>('POST', '/v2/client/payments', { token, body: { amount, memo, metadata: {} } }),
      201,
      'create payment',
    )

  before(async () => {
    plinth = await startPlinth()
    browser = await launchBrowser()
    ;({ page, errors } = await newPage(browser))
    shop = await plinth.createApp('Busy Shop', 'http://127.0.0.1:9/')
    await inBatches(USERS, 25, async (i) => {
      const user = await plinth.createUser(`${tag}_User_${String(i).padStart(4, '0')}`)
      userIds[i] = user.user_id
    })
    // 50 users make 20 payments each: a new one cancels the one before (one open payment per user and app).
    await inBatches(PAYERS, 10, async (p) => {
      const auth = await authenticate(shop.app_id, userIds[p] ?? '')
      tokens[p] = auth.accessToken
      for (let k = 0; k < PAYMENTS_EACH; k++) await createPayment(auth.accessToken, `order ${p}-${k}`)
    })
  })
  after(async () => {
    await browser?.close()
    await plinth?.close()
  })

  it('finds any of 1,000 users by name, pages through them, and signs in as one', async () => {
    await page.goto(`${plinth.url}/console/#/users`)
    const status = page.getByTestId('users-status')
    await status.getByText(/in all/).waitFor()
    const [, pages, total] = /Page 1 of (\d+) · (\d+) in all/.exec((await status.textContent()) ?? '') ?? []
    assert.ok(Number(total) >= USERS, `total ${total}`)
    assert.equal(Number(pages), Math.ceil(Number(total) / 50))
    const firstPage = await page.getByTestId('user-row').allTextContents()
    assert.equal(firstPage.length, 50)
    await page.getByTestId('users-next').click()
    await status.getByText(/^Page 2 of/).waitFor()
    const secondPage = await page.getByTestId('user-row').allTextContents()
    assert.equal(secondPage.length, 50)
    assert.equal(
      secondPage.some((row) => firstPage.includes(row)),
      false,
      'the second page holds other users',
    )
    await screenshot(page, 'console-users')

    // An old user, long off the first pages, is one search away.
    await page.getByTestId('user-search').fill(`${tag}_user_0007`)
    await page.getByTestId('user-search').press('Enter')
    await status.getByText('Page 1 of 1 · 1 in all').waitFor()
    const row = page.getByTestId('user-row')
    assert.equal(await row.count(), 1)
    assert.equal(await row.getByTestId('sign-in-as').getAttribute('href'), `${plinth.url}/sandbox/?user=${userIds[7]}`)

    // The sandbox browser's sign-in finds the same user among 1,000 by name.
    const sandboxPage = await browser.newPage()
    await sandboxPage.goto(`${plinth.url}/sandbox/`)
    await sandboxPage
      .locator('#user-count')
      .getByText(/of \d+: search by name/)
      .waitFor()
    await sandboxPage.getByLabel('Find a user by name').fill(`${tag}_User_0007`)
    await sandboxPage.getByRole('button', { name: 'Search' }).click()
    await sandboxPage.getByRole('button', { name: `Sign in as ${tag}_User_0007` }).click()
    await sandboxPage.locator('#user-chip').getByText(`${tag}_User_0007`).waitFor()
    await sandboxPage.close()
  })

  it('searches 1,000 payments by memo and state, pages through them, and opens one with its timeline', async () => {
    await page.goto(`${plinth.url}/console/#/apps/${shop.app_id}/payments`)
    const rows = page.getByTestId('payment-row')
    await rows.first().waitFor()
    assert.equal(await rows.count(), 50)
    const first = await rows.allTextContents()
    await page.getByTestId('payments-next').click()
    await page
      .getByTestId('payments-status')
      .getByText(/^Page 2/)
      .waitFor()
    assert.equal(
      (await rows.allTextContents()).some((text) => first.includes(text)),
      false,
    )
    await page.getByTestId('payment-state').selectOption('cancelled')
    await page
      .getByTestId('payments-status')
      .getByText(/^Page 1/)
      .waitFor()
    await waitFor(async () => ((await rows.count()) === 50 ? true : undefined), 'cancelled payments')
    for (const text of await rows.allTextContents()) assert.match(text, /cancelled/)
    await page.getByTestId('payment-state').selectOption('')
    await page.getByTestId('payment-search').fill('order 17-19')
    await page.getByTestId('payment-search').press('Enter')
    await waitFor(async () => ((await rows.count()) === 1 ? true : undefined), 'one payment found by memo')
    await screenshot(page, 'console-payments')
    await rows.first().getByRole('link').first().click()
    await page.getByTestId('timeline-event').first().waitFor()
    assert.equal(await page.getByTestId('timeline-event').first().getAttribute('data-kind'), 'created')
    await page.getByTestId('advice').waitFor()
    assert.match((await page.getByTestId('payment-flags').textContent()) ?? '', /^developer_approved: no · transaction_verified: no/)
    // The event links to its request in the log.
    await page.getByTestId('timeline-request').first().click()
    await page.getByTestId('request-status').getByText('201').waitFor()
  })

  it('shows a refused approve in the request log with its error code, live', async () => {
    await page.goto(`${plinth.url}/console/#/apps/${shop.app_id}/requests`)
    await page.getByTestId('request-row').first().waitFor()
    // Made while the page is open: the live tail brings it in.
    const user = await plinth.createUser()
    const auth = await authenticate(shop.app_id, user.user_id)
    const created = await createPayment(auth.accessToken, 'refused approve')
    expectStatus(await plinth.api('POST', `/v2/client/payments/${created.identifier}/cancel`, { token: auth.accessToken }), 200, 'cancel')
    const refused = await plinth.api<{ error: string }>('POST', `/v2/payments/${created.identifier}/approve`, { key: shop.api_key })
    assert.ok(refused.status >= 400, `approve answered ${refused.status}`)
    const code = refused.body.error
    const row = page.locator(`[data-testid="request-row"][data-error="${code}"]`)
    await row.first().waitFor()
    assert.match((await row.first().textContent()) ?? '', new RegExp(`approve.*${code}`))

    // Filtered to errors, then opened: the entry names the error and shows the answer.
    await page.getByTestId('request-filters').locator('select[name="status"]').selectOption('4xx')
    await waitFor(async () => {
      const statuses = await page.getByTestId('request-row').evaluateAll((els) => els.map((el) => el.getAttribute('data-status')))
      return statuses.length > 0 && statuses.every((s) => s?.startsWith('4')) ? true : undefined
    }, 'only 4xx rows')
    await screenshot(page, 'console-requests')
    await row.first().getByRole('link').click()
    await page.getByTestId('request-error').getByText(code).waitFor()
    assert.match((await page.getByTestId('response-body').textContent()) ?? '', new RegExp(code))
  })

  it('unsticks a paid payment that blocks the user: why, the call the app should make, and complete from the console', async () => {
    const user = await plinth.createUser()
    const auth = await authenticate(shop.app_id, user.user_id)
    const stuck = await createPayment(auth.accessToken, 'stuck sword', 2)
    expectStatus(await plinth.api('POST', `/v2/payments/${stuck.identifier}/approve`, { key: shop.api_key }), 200, 'approve')
    expectStatus(await plinth.api('POST', `/v2/client/payments/${stuck.identifier}/submit`, { token: auth.accessToken }), 200, 'submit')
    // The app never completes: the next payment is refused.
    const blocked = await plinth.api<{ error: string }>('POST', '/v2/client/payments', {
      token: auth.accessToken,
      body: { amount: 1, memo: 'next', metadata: {} },
    })
    assert.equal(blocked.status >= 400, true)

    await page.goto(`${plinth.url}/console/#/users/${user.user_id}`)
    await page.getByRole('link', { name: 'Blocked?' }).click()
    await page.getByTestId('blocking-summary').getByText('blocks').waitFor()
    // The page names the user: by name in its title and summary, by uid in the app, by user id.
    await page.getByRole('heading', { name: `Why is ${user.username} blocked?` }).waitFor()
    assert.match((await page.getByTestId('blocking-summary').textContent()) ?? '', new RegExp(`blocks ${user.username}’s user-to-app`))
    assert.equal(await page.getByTestId('blocking-username').textContent(), user.username)
    assert.equal(await page.getByTestId('blocking-uid').textContent(), auth.user.uid)
    await page.getByText(user.user_id, { exact: true }).waitFor()
    const row = page.getByTestId('blocking-row')
    assert.match((await row.textContent()) ?? '', new RegExp(`/v2/payments/${stuck.identifier}/complete`))
    await screenshot(page, 'console-blocking')
    await row.getByTestId('unstick-complete').click()
    await page.getByTestId('blocking-summary').getByText('Nothing blocks').waitFor()
    const after = expectStatus(
      await plinth.api<{ status: { developer_completed: boolean } }>('GET', `/v2/payments/${stuck.identifier}`, { key: shop.api_key }),
      200,
      'payment',
    )
    assert.equal(after.status.developer_completed, true)
    expectStatus(
      await plinth.api('POST', '/v2/client/payments', { token: auth.accessToken, body: { amount: 1, memo: 'next', metadata: {} } }),
      201,
      'the next payment',
    )

    // The payment's page links its ledger transaction, which links its accounts.
    await page.goto(`${plinth.url}/console/#/apps/${shop.app_id}/payments/${stuck.identifier}`)
    await page.getByTestId('timeline-event').filter({ hasText: 'completed' }).waitFor()
    await screenshot(page, 'console-payment')
    await page.getByTestId('payment-tx').getByRole('link').click()
    await page.getByTestId('tx-memo').getByText(stuck.identifier).waitFor()
    await screenshot(page, 'console-ledger')
    await page
      .getByRole('link', { name: user.wallet.address.slice(0, 12) })
      .first()
      .click()
    await page.getByTestId('account-balance').first().waitFor()
  })

  it('keeps a 1,000-character memo inside a 1280×720 window', async () => {
    const app = await plinth.createApp('Memo Shop')
    const user = await plinth.createUser()
    const auth = await authenticate(app.app_id, user.user_id)
    await createPayment(auth.accessToken, 'x'.repeat(1000))
    await page.setViewportSize({ width: 1280, height: 720 })
    for (const hash of [`#/apps/${app.app_id}`, `#/apps/${app.app_id}/payments`]) {
      await page.goto(`${plinth.url}/console/${hash}`)
      await page.getByTestId('payment-row').first().waitFor()
      const widths = await page.evaluate<{ page: number; table: number }>(
        `({ page: document.documentElement.scrollWidth,
            table: Math.max(...[...document.querySelectorAll('table')].map((t) => t.getBoundingClientRect().right)) })`,
      )
      assert.ok(widths.page <= 1280, `${hash}: the page is ${widths.page} px wide`)
      assert.ok(widths.table <= 1280, `${hash}: a table ends at ${widths.table} px`)
    }
  })

  it('edits the app, funds its wallet, and ticks the setup checklist', async () => {
    const app = await plinth.createApp('Bare Shop')
    await page.goto(`${plinth.url}/console/#/apps/${app.app_id}`)
    await page.getByTestId('check-url_set').getByText('not yet').waitFor()
    const edit = page.getByTestId('edit-app')
    await edit.locator('input[name="name"]').fill('Renamed Shop')
    await edit.locator('input[name="url"]').fill('http://127.0.0.1:4000/')
    await edit.getByRole('button', { name: 'Save' }).click()
    await page.getByRole('heading', { name: 'Renamed Shop' }).waitFor()
    await page.getByTestId('check-url_set').getByText('✓').waitFor()
    const saved = expectStatus(await plinth.api<{ name: string; url: string }>('GET', `/sandbox/apps/${app.app_id}`), 200, 'app')
    assert.deepEqual({ name: saved.name, url: saved.url }, { name: 'Renamed Shop', url: 'http://127.0.0.1:4000/' })
    await screenshot(page, 'console-app')

    const balance = async () => (await page.getByTestId('app-balance').textContent()) ?? ''
    const before = await balance()
    const fund = page.getByTestId('fund-app')
    await fund.locator('input[name="amount"]').fill('250')
    await fund.getByRole('button', { name: 'Fund wallet' }).click()
    await waitFor(async () => ((await balance()) !== before ? true : undefined), 'the new balance')
  })

  it('checks what the sandbox checks, in plain words, one toast at a time', async () => {
    await page.goto(`${plinth.url}/console/#/apps`)
    const form = page.getByTestId('create-app')
    const toast = page.getByTestId('toast')
    // The input's maxlength stops typing; a pasted name is checked before sending.
    await page.evaluate(`(() => {
      const input = document.querySelector('[data-testid="create-app"] input[name="name"]')
      input.maxLength = 1000
      input.value = 'N'.repeat(300)
    })()`)
    await form.getByRole('button', { name: 'Create app' }).click()
    await toast.getByText('The name must be at most 60 characters (it has 300).').waitFor()
    await form.locator('input[name="name"]').fill('Loop Shop')
    await form.locator('input[name="url"]').fill(`${plinth.url.replace('127.0.0.1', 'localhost')}/shop/`)
    await form.getByRole('button', { name: 'Create app' }).click()
    await toast.getByText("The app cannot be served from Plinth's own origin").waitFor()
    assert.equal(await toast.count(), 1, 'one toast at a time')
    const apps = expectStatus(await plinth.api<{ apps: Array<{ name: string }> }>('GET', '/sandbox/apps?limit=200'), 200, 'apps')
    assert.equal(
      apps.apps.some((a) => a.name === 'Loop Shop' || a.name.startsWith('NNN')),
      false,
    )

    await page.goto(`${plinth.url}/console/#/platform`)
    const advance = page.getByTestId('advance-clock')
    await advance.locator('input[name="amount"]').fill('100000000')
    await advance.locator('select[name="unit"]').selectOption({ label: 'hours' })
    await advance.getByRole('button', { name: 'Advance' }).click()
    await toast.getByText('The clock moves at most ten years at a time').waitFor()
    assert.doesNotMatch((await toast.textContent()) ?? '', /body\/|<=/)
    assert.equal(await toast.count(), 1)
  })

  it('has a skip link, labelled inputs, and dialogs that keep the focus', async () => {
    await page.goto(`${plinth.url}/console/#/users`)
    await page.reload()
    await page.getByTestId('user-search').waitFor()
    await page.keyboard.press('Tab')
    assert.equal(await page.evaluate('document.activeElement.textContent'), 'Skip to content')
    const unlabelled = await page.evaluate<number>(
      `[...document.querySelectorAll('main input:not([type=hidden]), main select')]
        .filter((el) => el.labels.length === 0 && !el.getAttribute('aria-label')).length`,
    )
    assert.equal(unlabelled, 0)
    // The admin-token dialog keeps Tab inside it.
    await page.evaluate(`document.getElementById('token-dialog').showModal()`)
    for (let i = 0; i < 5; i++) {
      await page.keyboard.press('Tab')
      assert.equal(await page.evaluate(`!!document.activeElement.closest('#token-dialog')`), true)
    }
    await page.keyboard.press('Escape')
  })

  it("shows the active ad script, and withdraws a user's consent so the dialog shows again", async () => {
    const app = await plinth.createApp('Script Shop')
    expectStatus(
      await plinth.api('PUT', `/sandbox/apps/${app.app_id}/ads/script`, { body: { result: 'AD_CLOSED', count: 3 } }),
      200,
      'ad script',
    )
    await page.goto(`${plinth.url}/console/#/apps/${app.app_id}`)
    await page.getByTestId('active-ad-script').getByText('Active script: AD_CLOSED, settles granted, 3 ads left.').waitFor()

    const user = await plinth.createUser()
    await authenticate(app.app_id, user.user_id)
    await page.goto(`${plinth.url}/console/#/users/${user.user_id}`)
    const row = page.getByTestId('consent-row').filter({ hasText: 'Script Shop' })
    await row.getByText('payments').waitFor()
    await row.getByTestId('withdraw-consent').click()
    await row.getByTestId('withdraw-consent').click()
    await page.getByTestId('consent-row').filter({ hasText: 'Script Shop' }).getByText('payments').waitFor({ state: 'detached' })
    const detail = expectStatus(
      await plinth.api<{ apps: Array<{ app_id: string; scopes: string[] }> }>('GET', `/sandbox/users/${user.user_id}`),
      200,
      'user',
    )
    assert.deepEqual(detail.apps.find((a) => a.app_id === app.app_id)?.scopes ?? [], [])
  })

  it('left no script errors in the page', () => {
    assert.deepEqual(
      errors.filter((text) => !text.startsWith('Failed to load resource')),
      [],
    )
  })
})
