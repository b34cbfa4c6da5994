import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { after, before, describe, it } from 'node:test'
import { promisify } from 'node:util'
import type { Browser, Page } from 'playwright-core'
import { parseCsv } from '../helpers/csv-parse.js'
import { type CreatedApp, expectStatus, launchBrowser, newPage, type RunningPlinth, screenshot, startPlinth, waitFor } from './harness.js'

const run = promisify(execFile)

/**
 * The console's data tools in Chromium (docs/console.md): a request-log entry with its headers,
 * query string, copy as curl (run for real with curl) and replay; an app's overview; the search
 * box in the header; exports downloaded as files. At 1180×860 and at 390×844.
 */
describe('developer console: request entry, overview, search and exports', () => {
  let plinth: RunningPlinth
  let browser: Browser
  let page: Page
  let errors: string[]
  let shop: CreatedApp
  let paymentId: string
  let buyerName: string
  const memo = '=HYPERLINK("http://evil.example","x"), "quoted"\nline'

  before(async () => {
    plinth = await startPlinth()
    browser = await launchBrowser()
    ;({ page, errors } = await newPage(browser))
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: plinth.url })
    shop = await plinth.createApp('Tools Shop')
    const buyer = await plinth.createUser()
    buyerName = buyer.username
    const auth = expectStatus(
      await plinth.api<{ accessToken: string }>('POST', `/sandbox/apps/${shop.app_id}/authenticate`, {
        body: { user_id: buyer.user_id, scopes: ['username', 'payments'] },
      }),
      200,
      'authenticate',
    )
    paymentId = expectStatus(
      await plinth.api<{ identifier: string }>('POST', '/v2/client/payments', {
        token: auth.accessToken,
        body: { amount: 3, memo, metadata: {} },
      }),
      201,
      'create payment',
    ).identifier
    expectStatus(await plinth.api('GET', '/v2/me', { token: auth.accessToken }), 200, 'me')
    // A key call with a query string and a header of the app's own, and a refused one.
    const answer = await fetch(`${plinth.url}/v2/payments/incomplete_server_payments?page=2&note=hello%20world`, {
      headers: { authorization: `Key ${shop.api_key}`, 'x-shop-trace': 'abc-123', 'x-request-id': 'tools-incomplete' },
    })
    assert.equal(answer.status, 200)
    expectStatus(await plinth.api('POST', `/v2/payments/${paymentId}/approve`, { key: shop.api_key }), 200, 'approve')
    expectStatus(await plinth.api('GET', '/v2/payments/none', { key: shop.api_key }), 404, 'an unknown payment')
  })
  after(async () => {
    await browser?.close()
    await plinth?.close()
  })

  const entryId = async (requestId: string) => {
    const found = expectStatus(
      await plinth.api<{ hits: Array<{ type: string; id: string }> }>('GET', `/sandbox/search?q=${requestId}`),
      200,
      'search',
    )
    const hit = found.hits.find((h) => h.type === 'request')
    assert.ok(hit, `entry of ${requestId}`)
    return hit.id
  }

  it("shows an entry's headers and query, copies it as a curl command that works, and replays it", async () => {
    const id = await entryId('tools-incomplete')
    await page.goto(`${plinth.url}/console/#/apps/${shop.app_id}/requests/${id}`)
    await page.getByTestId('request-headers').waitFor()
    assert.equal(await page.getByTestId('request-query').textContent(), 'page=2&note=hello%20world')
    const header = async (table: string, name: string) =>
      page.locator(`[data-testid="${table}-row"][data-name="${name}"] td:nth-child(2)`).textContent()
    assert.equal(await header('request-headers', 'authorization'), 'Key [redacted]')
    assert.equal(await header('request-headers', 'x-shop-trace'), 'abc-123')
    assert.match((await header('response-headers', 'content-type')) ?? '', /^application\/json/)

    const curl = (await page.getByTestId('curl').textContent()) ?? ''
    assert.ok(curl.includes('"Authorization: Key $PLINTH_APP_KEY"'), curl)
    assert.ok(!curl.includes(shop.api_key), 'the key is never in the command')
    assert.ok(curl.includes(`'${plinth.url}/v2/payments/incomplete_server_payments?page=2&note=hello%20world'`), curl)
    assert.ok(curl.includes("-H 'x-shop-trace: abc-123'"), curl)
    await page.getByTestId('copy-curl').click()
    await page.getByTestId('toast').getByText('Copied').waitFor()
    assert.equal(await page.evaluate('navigator.clipboard.readText()'), curl)
    // The command runs as written, with the key in the variable it names.
    const { stdout } = await run('bash', ['-c', `${curl} --silent --show-error --fail`], {
      env: { ...process.env, PLINTH_APP_KEY: shop.api_key },
    })
    assert.ok(Array.isArray(JSON.parse(stdout).incomplete_server_payments), stdout)

    // Replay: two clicks (the first arms the button), then the new entry, linked back.
    await page.getByTestId('replay').click()
    await page.getByTestId('replay').click()
    const link = page.getByTestId('replay-entry')
    await link.waitFor()
    assert.match((await page.getByTestId('replay-result').textContent()) ?? '', /200/)
    await screenshot(page, 'console-request-entry')
    await link.click()
    await page.getByTestId('replay-of').waitFor()
    assert.equal(await page.getByTestId('replay-of').textContent(), `entry ${id}`)
    const replayed = page.locator('[data-testid="request-headers-row"][data-name="x-shop-trace"] td:nth-child(2)')
    assert.equal(await replayed.textContent(), 'abc-123', "the replay sent the call's own header")
  })

  it('lists the log with how many of all are shown, marks the replay, and exports what the filters select', async () => {
    await page.goto(`${plinth.url}/console/#/apps/${shop.app_id}/requests`)
    const status = page.getByTestId('requests-status')
    await status.getByText(/of \d+ shown/).waitFor()
    const total = expectStatus(await plinth.api<{ total: number }>('GET', `/sandbox/apps/${shop.app_id}/requests`), 200, 'list').total
    assert.equal(await status.textContent(), `${total} of ${total} shown`)
    assert.equal(await page.locator('[data-testid="request-row"] .badge', { hasText: 'replay' }).count(), 1)
    await page.locator('select[name="status"]').selectOption('4xx')
    await status.getByText('1 of 1 shown').waitFor()
    const [file] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-requests-csv').click()])
    assert.equal(file.suggestedFilename(), `${shop.app_id}-requests.csv`)
    const rows = parseCsv(await readFile((await file.path()) ?? '', 'utf8'))
    assert.deepEqual(
      rows.slice(1).map((row) => row[rows[0]?.indexOf('status') ?? -1]),
      ['404'],
    )
    await page.getByTestId('link-overview').click()
    await page.getByTestId('payments-by-state').waitFor()
  })

  it("disables replay for a user's call, and says why", async () => {
    const list = expectStatus(
      await plinth.api<{ requests: Array<{ id: string; path: string }> }>('GET', `/sandbox/apps/${shop.app_id}/requests?route=getMe`),
      200,
      'list',
    )
    const me = list.requests[0]
    assert.ok(me)
    await page.goto(`${plinth.url}/console/#/apps/${shop.app_id}/requests/${me.id}`)
    await page.getByTestId('curl').waitFor()
    assert.equal(await page.getByTestId('replay').isDisabled(), true)
    assert.ok(((await page.getByTestId('curl').textContent()) ?? '').includes('"Authorization: Bearer $PLINTH_ACCESS_TOKEN"'))
    await page.getByText('Only calls made with a server API key can be replayed').waitFor()
  })

  it("shows the app's overview: payments by state, the last hour's error rate, the totals", async () => {
    await page.goto(`${plinth.url}/console/#/apps/${shop.app_id}/overview`)
    const approved = page.locator('[data-testid="state-row"][data-state="approved"] td')
    await approved.first().waitFor()
    assert.deepEqual(await approved.allTextContents(), ['approved', '1', '3'])
    assert.deepEqual(await page.locator('[data-testid="state-total"] td').allTextContents(), ['1', '3'])
    // Six calls (create, me, incomplete, approve, an unknown payment, the replay): one 4xx.
    const calls = Number(await page.getByTestId('hour-requests').textContent())
    assert.ok(calls >= 6, `calls ${calls}`)
    assert.equal(await page.getByTestId('hour-4xx').textContent(), '1')
    assert.equal(await page.getByTestId('error-rate').textContent(), `${Math.round((1 / calls) * 1000) / 10} %`)
    assert.equal(await page.getByTestId('total-payments').textContent(), '1')
    assert.equal(await page.getByTestId('total-requests').textContent(), String(calls))
    await screenshot(page, 'console-overview')
  })

  it('downloads payments as CSV, the memo intact and its formula defused; the request log as JSON', async () => {
    await page.goto(`${plinth.url}/console/#/apps/${shop.app_id}/overview`)
    const [csv] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-payments-csv').click()])
    assert.equal(csv.suggestedFilename(), `${shop.app_id}-payments.csv`)
    const rows = parseCsv(await readFile((await csv.path()) ?? '', 'utf8'))
    const header = rows[0] ?? []
    assert.equal(rows.length, 2)
    assert.equal(rows[1]?.[header.indexOf('identifier')], paymentId)
    assert.equal(rows[1]?.[header.indexOf('memo')], `'${memo}`)
    const [json] = await Promise.all([page.waitForEvent('download'), page.getByTestId('export-requests-json').click()])
    const body = JSON.parse(await readFile((await json.path()) ?? '', 'utf8')) as { requests: unknown[]; exported: number }
    assert.equal(body.exported, body.requests.length)
    assert.ok(body.exported >= 6)
  })

  it('links the app page to its overview; counts apps and payments; exports the users and payments the page selects', async () => {
    // Known counts: one more app with three payments of 1, 2 and 3 Pi by three users named alike, one approved.
    const appsBefore = expectStatus(await plinth.api<{ total: number }>('GET', '/sandbox/apps'), 200, 'apps').total
    const counted = await plinth.createApp('Counted Shop')
    const tag = `cnt${Date.now().toString(36)}`
    const ids: string[] = []
    for (const n of [1, 2, 3]) {
      const user = await plinth.createUser(`${tag}_${n}`)
      const auth = expectStatus(
        await plinth.api<{ accessToken: string }>('POST', `/sandbox/apps/${counted.app_id}/authenticate`, {
          body: { user_id: user.user_id, scopes: ['username', 'payments'] },
        }),
        200,
        'authenticate',
      )
      const created = await plinth.api<{ identifier: string }>('POST', '/v2/client/payments', {
        token: auth.accessToken,
        body: { amount: n, memo: `count ${n}`, metadata: {} },
      })
      ids.push(expectStatus(created, 201, 'create payment').identifier)
    }
    expectStatus(await plinth.api('POST', `/v2/payments/${ids[0]}/approve`, { key: counted.api_key }), 200, 'approve')

    await page.goto(`${plinth.url}/console/#/apps`)
    await page
      .getByTestId('apps-status')
      .getByText(`Page 1 of 1 · ${appsBefore + 1} in all`)
      .waitFor()
    assert.equal(await page.getByTestId('app-row').count(), appsBefore + 1)

    await page.goto(`${plinth.url}/console/#/apps/${counted.app_id}`)
    await page.getByTestId('link-overview').click()
    await page.getByTestId('payments-by-state').waitFor()
    assert.ok(page.url().endsWith(`#/apps/${counted.app_id}/overview`), page.url())
    assert.equal(await page.getByTestId('total-payments').textContent(), '3')

    await page.goto(`${plinth.url}/console/#/apps/${counted.app_id}/payments`)
    const status = page.getByTestId('payments-status')
    await status.getByText('Page 1 of 1 · 3 in all').waitFor()
    const download = async (testid: string) => {
      const [file] = await Promise.all([page.waitForEvent('download'), page.getByTestId(testid).click()])
      return { name: file.suggestedFilename(), text: await readFile((await file.path()) ?? '', 'utf8') }
    }
    const all = await download('export-payments-json')
    assert.equal(all.name, `${counted.app_id}-payments.json`)
    const listed = JSON.parse(all.text) as { payments: Array<{ identifier: string }>; exported: number }
    assert.deepEqual(listed.payments.map((p) => p.identifier).sort(), [...ids].sort())
    assert.equal(listed.exported, 3)
    // The export follows the filters: the approved one only, then none app-to-user.
    await page.getByTestId('payment-state').selectOption('approved')
    await status.getByText('Page 1 of 1 · 1 in all').waitFor()
    const approved = parseCsv((await download('export-payments-csv')).text)
    assert.equal(approved.length, 2, 'a header and one row')
    assert.equal(approved[1]?.[approved[0]?.indexOf('identifier') ?? -1], ids[0])
    await page.getByTestId('payment-direction').selectOption('app_to_user')
    await status.getByText('Page 1 of 1 · 0 in all').waitFor()
    assert.equal(parseCsv((await download('export-payments-csv')).text).length, 1, 'the header only')

    await page.goto(`${plinth.url}/console/#/users`)
    const users = page.getByTestId('users-status')
    await users.getByText(/in all/).waitFor()
    const everyone = JSON.parse((await download('export-users-json')).text) as { users: unknown[] }
    const total = expectStatus(await plinth.api<{ total: number }>('GET', '/sandbox/users'), 200, 'users').total
    assert.equal(everyone.users.length, total)
    await page.getByTestId('user-search').fill(tag)
    await page.getByTestId('user-search').press('Enter')
    await users.getByText('Page 1 of 1 · 3 in all').waitFor()
    const found = await download('export-users-csv')
    assert.equal(found.name, 'users.csv')
    const rows = parseCsv(found.text)
    assert.deepEqual(
      rows
        .slice(1)
        .map((row) => row[rows[0]?.indexOf('username') ?? -1])
        .sort(),
      [`${tag}_1`, `${tag}_2`, `${tag}_3`],
    )
    assert.deepEqual(errors, [])
  })

  it('finds a payment, a user and a request id from the search box in the header', async () => {
    await page.goto(`${plinth.url}/console/#/apps`)
    const box = page.getByTestId('global-search')
    await box.fill(paymentId)
    await box.press('Enter')
    const hit = page.locator(`[data-testid="hit"][data-type="payment"][data-id="${paymentId}"] a`)
    await hit.waitFor()
    await hit.click()
    await waitFor(async () => page.url().endsWith(`#/apps/${shop.app_id}/payments/${paymentId}`), 'the payment page')

    await box.fill(buyerName)
    await box.press('Enter')
    await page.locator('[data-testid="hit"][data-type="user"]').first().waitFor()
    assert.match((await page.getByTestId('hits-user').textContent()) ?? '', new RegExp(buyerName))

    await box.fill('tools-incomplete')
    await box.press('Enter')
    await page.locator('[data-testid="hit"][data-type="request"]').waitFor()
    await screenshot(page, 'console-search')

    await box.fill('nothing-matches-this')
    await box.press('Enter')
    await page.getByTestId('no-hits').waitFor()
    assert.deepEqual(errors, [])
  })

  it('fits a 390×844 phone: the search box and the overview, nothing wider than the screen', async () => {
    const phone = await browser.newContext({ viewport: { width: 390, height: 844 } })
    const small = await phone.newPage()
    try {
      for (const hash of [
        `#/apps/${shop.app_id}/overview`,
        `#/search?q=${paymentId}`,
        `#/apps/${shop.app_id}/requests/${await entryId('tools-incomplete')}`,
      ]) {
        await small.goto(`${plinth.url}/console/${hash}`)
        await small.locator('main h1').waitFor()
        await small.getByTestId('global-search').waitFor()
        const wide = await small.evaluate('document.documentElement.scrollWidth')
        assert.ok(Number(wide) <= 390, `${hash}: the page is ${wide} px wide`)
      }
      await small.goto(`${plinth.url}/console/#/apps/${shop.app_id}/overview`)
      await small.getByTestId('state-total').waitFor()
      await small.evaluate('window.scrollTo(0, 0)')
      await screenshot(small, 'console-overview-mobile')
    } finally {
      await phone.close()
    }
  })
})
