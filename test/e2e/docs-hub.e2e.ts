import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { launchBrowser, newPage, type RunningPlinth, startPlinth } from './harness.js'

/** WCAG 2's contrast ratio of two CSS colours `rgb(r, g, b)`. */
function contrast(a: string, b: string): number {
  const luminance = (color: string) => {
    const [r = 0, g = 0, bl = 0] = (color.match(/[\d.]+/g) ?? []).map(Number).map((v) => {
      const c = v / 255
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4
    })
    return 0.2126 * r + 0.7152 * g + 0.0722 * bl
  }
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number]
  return (hi + 0.05) / (lo + 0.05)
}

/**
 * The API reference at /docs (Swagger UI in Plinth's colours), its error table and the hub at
 * `/`, in Chromium: the header and its links, the method badges' contrast, Try it out with a
 * sandbox app's key and a user's token picked from the selector, and the compressed bundle.
 */
describe('API reference and hub in a browser', () => {
  let plinth: RunningPlinth
  let browser: Browser
  let page: Page
  let errors: string[]

  before(async () => {
    plinth = await startPlinth()
    browser = await launchBrowser()
    ;({ page, errors } = await newPage(browser))
    // Swagger UI renders the whole document (350 KB) on each load: slow on a loaded machine.
    page.setDefaultTimeout(60_000)
  })
  after(async () => {
    await browser?.close()
    await plinth?.close()
  })

  it('is branded, links back to the console, and its bundle arrives compressed', async () => {
    const bundle = page.waitForResponse((response) => response.url().endsWith('/docs/static/swagger-ui-bundle.js'))
    await page.goto(`${plinth.url}/docs/`)
    const encoding = (await (await bundle).allHeaders())['content-encoding']
    assert.ok(encoding === 'br' || encoding === 'gzip', `content-encoding ${encoding}`)
    await page.locator('.opblock').first().waitFor()
    assert.equal(await page.title(), 'Plinth API reference')
    assert.equal(await page.locator('.plinth-header img').getAttribute('alt'), 'Plinth')
    assert.equal(await page.locator('.swagger-ui .topbar').isVisible(), false, "Swagger UI's top bar (and its logo) is hidden")
    const console = page.locator('.plinth-nav').getByRole('link', { name: 'Console' })
    assert.equal(await console.getAttribute('href'), '/console/')
    assert.deepEqual(errors, [])
  })

  it('method badges: white on colours of at least 4.5:1 (WCAG AA)', async () => {
    const badges = await page.locator('.opblock-summary-method').evaluateAll((nodes) =>
      nodes.map((node) => {
        const style = (
          globalThis as unknown as { getComputedStyle(e: unknown): { color: string; backgroundColor: string } }
        ).getComputedStyle(node)
        return { method: node.textContent ?? '', color: style.color, background: style.backgroundColor }
      }),
    )
    const methods = new Set(badges.map((b) => b.method))
    for (const method of ['GET', 'POST', 'DELETE', 'PUT', 'PATCH']) assert.ok(methods.has(method), `${method} in the reference`)
    for (const badge of badges) {
      const ratio = contrast(badge.color, badge.background)
      assert.ok(ratio >= 4.5, `${badge.method}: ${badge.color} on ${badge.background} is ${ratio.toFixed(2)}:1`)
    }
  })

  it("Try it out: a sandbox app's key (one per tab, reused) and a user's token with the scopes ticked authorize the calls", async () => {
    const app = await plinth.createApp('Docs Shop')
    const user = await plinth.createUser()
    await page.reload()
    await page.locator('.opblock').first().waitFor()
    await page.locator('#plinth-try-app').selectOption(app.app_id)
    await page.locator('#plinth-use-key').click()
    await page.getByRole('status').filter({ hasText: 'is set for Try it out' }).waitFor()
    const authorized = () =>
      page.evaluate('window.plinthUi.authSelectors.authorized().toJS()') as Promise<Record<string, { value: string }>>
    const key = (await authorized()).ServerApiKey?.value ?? ''
    assert.match(key, /^Key [A-Za-z0-9_-]{43}$/)
    assert.notEqual(key, `Key ${app.api_key}`, 'a new key, minted for the reference')
    const keyCall = await plinth.api('GET', '/v2/payments/incomplete_server_payments', { key: key.slice(4) })
    assert.equal(keyCall.status, 200)

    // Clicking again, or after a reload, reuses this tab's key: no new key per click (#41 U18).
    const keysOfApp = async () =>
      ((await plinth.api('GET', `/sandbox/apps/${app.app_id}`)).body as { keys: Array<{ key_id: string; revoked_at: string | null }> }).keys
    assert.equal((await keysOfApp()).length, 2, "the app's first key and the reference's")
    await page.reload()
    await page.locator('.opblock').first().waitFor()
    await page.locator('#plinth-try-app').selectOption(app.app_id)
    await page.locator('#plinth-use-key').click()
    await page.getByRole('status').filter({ hasText: "This tab's server API key of Docs Shop" }).waitFor()
    assert.equal((await authorized()).ServerApiKey?.value, key)
    assert.equal((await keysOfApp()).length, 2, 'still two keys')
    // Revoked (in the console, say), it is replaced by a new one.
    const tabKey = (await keysOfApp())[1]?.key_id ?? ''
    assert.equal((await plinth.api('DELETE', `/sandbox/apps/${app.app_id}/keys/${tabKey}`)).status, 200)
    await page.locator('#plinth-use-key').click()
    await page.getByRole('status').filter({ hasText: 'A new server API key of Docs Shop' }).waitFor()
    assert.notEqual((await authorized()).ServerApiKey?.value, key)

    // The token carries the scopes ticked (username and payments at first), and the panel says so.
    await page.locator('#plinth-try-user').selectOption(user.user_id)
    assert.equal(await page.getByRole('checkbox', { name: 'username' }).isChecked(), true)
    assert.equal(await page.getByRole('checkbox', { name: 'wallet_address' }).isChecked(), false)
    await page.getByRole('checkbox', { name: 'payments' }).uncheck()
    await page.locator('#plinth-use-token').click()
    await page.getByRole('status').filter({ hasText: 'access token, with the scopes username, is set for Try it out' }).waitFor()
    const token = (await authorized()).AccessToken?.value ?? ''
    const me = await plinth.api('GET', '/v2/me', { token })
    assert.deepEqual((me.body as { credentials: { scopes: string[] } }).credentials.scopes, ['username'])

    // Swagger UI's own Try it out sends it: GET /v2/me answers the chosen user.
    // The test platform's PLINTH_PUBLIC_URL is not this server's address: pick the page's own origin.
    await page.locator('.servers select').selectOption('/')
    const operation = page.locator('#operations-Users-getMe')
    await operation.locator('.opblock-summary-control').click()
    await operation.getByRole('button', { name: 'Try it out' }).click()
    await operation.getByRole('button', { name: 'Execute' }).click()
    const body = operation.locator('.live-responses-table .response-col_description pre').first()
    await body.waitFor()
    assert.match((await body.textContent()) ?? '', new RegExp(`"username": "${user.username}"`))
    assert.deepEqual(errors, [])
  })

  it('the error table is a page of the platform, linked from the header', async () => {
    // /docs, not /docs/: a navigation of its own, not a change of the hash Swagger UI set.
    await page.goto(`${plinth.url}/docs`)
    await page.locator('.plinth-nav').getByRole('link', { name: 'Error codes' }).click()
    await page.waitForURL(`${plinth.url}/docs/errors`)
    assert.equal(await page.title(), 'Plinth error codes')
    assert.ok((await page.locator('td code', { hasText: /^invalid_access_token$/ }).count()) === 1)
  })

  it('GET / is the hub: it names the demo app and leads to the console, sandbox, docs and ledger', async () => {
    expectReset(await plinth.api('POST', '/sandbox/reset', { body: { seed: 'demo' } }))
    await page.goto(`${plinth.url}/`)
    assert.equal(await page.title(), 'Plinth sandbox')
    assert.match((await page.locator('.plinth-demo').textContent()) ?? '', /Plinth Demo/)
    assert.deepEqual(errors, [])
    for (const [name, path] of [
      ['Developer console', '/console/'],
      ['Sandbox browser', '/sandbox/'],
      ['API reference', '/docs'],
      ['Ledger (Horizon root)', '/ledger'],
    ] as const) {
      await page.goto(`${plinth.url}/`)
      await page.getByRole('link', { name, exact: true }).click()
      await page.waitForURL((url) => url.pathname.startsWith(path))
    }
  })
})

function expectReset(answer: { status: number }): void {
  assert.equal(answer.status, 200, 'demo reset')
}
