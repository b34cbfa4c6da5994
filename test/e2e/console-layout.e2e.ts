import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Browser, Page } from 'playwright-core'
import { expectStatus, launchBrowser, type RunningPlinth, screenshot, startPlinth } from './harness.js'

const SIZES = [
  { name: 'desktop', width: 1280, height: 800, mobile: false },
  { name: 'mobile', width: 390, height: 844, mobile: true },
] as const

/** Pages whose phone-size screenshot docs/console.md shows. */
const DOC_SHOTS = new Set(['app', 'payments', 'platform'])

interface Layout {
  scrollWidth: number
  innerWidth: number
  title: { left: number; right: number } | null
  key: { left: number; right: number; top: number } | null
  wraps: string[]
  tables: number[]
}

/**
 * Every console page at a desktop size and at a phone's 390×844 (docs/console.md, "On a phone"):
 * the page never scrolls sideways (document.scrollingElement.scrollWidth ≤ innerWidth), its title
 * and the first cell of its key list are inside the viewport, tables end inside the window (a wide
 * one scrolls in its own box), and no name, id or code in a table breaks mid-word.
 */
describe('console: every page at desktop and phone sizes', () => {
  let plinth: RunningPlinth
  let browser: Browser
  const pages: Array<{ name: string; hash: string; key: string }> = []

  before(async () => {
    plinth = await startPlinth()
    browser = await launchBrowser()
    const app = await plinth.createApp('Supercalifragilistic International Marketplace', 'http://127.0.0.1:3000/')
    const user = await plinth.createUser('averyveryverylongusername_32chr')
    const auth = expectStatus(
      await plinth.api<{ accessToken: string; user: { uid: string } }>('POST', `/sandbox/apps/${app.app_id}/authenticate`, {
        body: { user_id: user.user_id, scopes: ['username', 'payments', 'in_app_notifications'] },
      }),
      200,
      'authenticate',
    )
    const token = auth.accessToken
    const pay = async (memo: string) =>
      expectStatus(
        await plinth.api<{ identifier: string }>('POST', '/v2/client/payments', { token, body: { amount: 3.14, memo, metadata: {} } }),
        201,
        'create payment',
      ).identifier
    const paid = await pay('A mug with a rather long description of what is printed on it')
    expectStatus(await plinth.api('POST', `/v2/payments/${paid}/approve`, { key: app.api_key }), 200, 'approve')
    const submitted = expectStatus(
      await plinth.api<{ transaction: { txid: string } }>('POST', `/v2/client/payments/${paid}/submit`, { token }),
      200,
      'submit',
    )
    const txid = submitted.transaction.txid
    expectStatus(await plinth.api('POST', `/v2/payments/${paid}/complete`, { key: app.api_key, body: { txid } }), 200, 'complete')
    // A paid payment left incomplete: it blocks the user.
    const stuck = await pay('Sticker pack')
    expectStatus(await plinth.api('POST', `/v2/payments/${stuck}/approve`, { key: app.api_key }), 200, 'approve')
    expectStatus(await plinth.api('POST', `/v2/client/payments/${stuck}/submit`, { token }), 200, 'submit')
    expectStatus(
      await plinth.api('POST', '/v2/in_app_notifications/notify', {
        key: app.api_key,
        body: { notifications: [{ title: 'Your mug shipped', body: 'It arrives Tuesday.', user_uid: auth.user.uid, subroute: '/orders' }] },
      }),
      201,
      'notify',
    )
    expectStatus(
      await plinth.api('POST', '/sandbox/faults', {
        body: {
          app_id: app.app_id,
          match: { route: 'POST /v2/payments/{payment_id}/approve', user_uid: auth.user.uid },
          effect: { status: 503, retry_after_seconds: 5 },
          when: 'after',
          times: 2,
          probability: 0.5,
        },
      }),
      201,
      'fault',
    )
    expectStatus(await plinth.api('POST', '/sandbox/snapshots', { body: { name: 'before-the-big-refactor' } }), 201, 'snapshot')
    const a = `#/apps/${app.app_id}`
    pages.push(
      { name: 'apps', hash: '#/apps', key: '[data-testid="app-row"] td' },
      { name: 'app', hash: a, key: '[data-testid="payment-state-pill"]' },
      { name: 'payments', hash: `${a}/payments`, key: '[data-testid="payment-state-pill"]' },
      { name: 'payment', hash: `${a}/payments/${paid}`, key: '[data-testid="timeline-event"]' },
      { name: 'blocking', hash: `${a}/users/${user.user_id}/blocking`, key: '[data-testid="blocking-row"] td' },
      { name: 'requests', hash: `${a}/requests`, key: '[data-testid="request-row"] td' },
      { name: 'users', hash: '#/users', key: '[data-testid="user-row"] td' },
      { name: 'user', hash: `#/users/${user.user_id}`, key: '[data-testid="consent-row"] td' },
      { name: 'platform', hash: '#/platform', key: '[data-testid="fault-row"] td' },
      { name: 'ledger', hash: '#/ledger', key: '[data-testid="ledger-tx-row"] td' },
      { name: 'transaction', hash: `#/ledger/transactions/${txid}`, key: '[data-testid="tx-memo"]' },
      { name: 'account', hash: `#/ledger/accounts/${user.wallet.address}`, key: '[data-testid="account-balance"]' },
      { name: 'snapshots', hash: '#/snapshots', key: '[data-testid="snapshot-row"] td' },
    )
  })
  after(async () => {
    await browser?.close()
    await plinth?.close()
  })

  async function layout(page: Page, key: string): Promise<Layout> {
    return page.evaluate<Layout>(`(() => {
      const box = (el) => { if (el === null) return null; const r = el.getBoundingClientRect(); return { left: r.left, right: r.right, top: r.top } }
      // An inline element drawn on more than one line is broken; names and ids have no spaces to break at.
      const wraps = [...document.querySelectorAll('main td a, main td code, main td .badge')]
        .filter((el) => !/\\s/.test(el.textContent.trim()) && el.getClientRects().length > 1)
        .map((el) => el.textContent)
      return {
        scrollWidth: document.scrollingElement.scrollWidth,
        innerWidth: window.innerWidth,
        title: box(document.querySelector('main h1')),
        key: box(document.querySelector(${JSON.stringify(key)})),
        wraps,
        tables: [...document.querySelectorAll('main .table-wrap')].map((el) => el.getBoundingClientRect().right),
      }
    })()`)
  }

  for (const size of SIZES) {
    it(`fits every page in ${size.width}×${size.height} (${size.name})`, async () => {
      const context = await browser.newContext({
        viewport: { width: size.width, height: size.height },
        isMobile: size.mobile,
        hasTouch: size.mobile,
      })
      const page = await context.newPage()
      const errors: string[] = []
      page.on('pageerror', (error) => errors.push(error.message))
      try {
        for (const { name, hash, key } of pages) {
          await page.goto(`${plinth.url}/console/${hash}`)
          await page.reload()
          await page.locator(key).first().waitFor()
          const seen = await layout(page, key)
          const where = `${name} at ${size.name}`
          assert.equal(seen.innerWidth, size.width, `${where}: the layout viewport is the window`)
          assert.ok(seen.scrollWidth <= seen.innerWidth, `${where}: the page is ${seen.scrollWidth} px wide in ${seen.innerWidth}`)
          assert.ok(seen.title !== null && seen.title.left >= 0 && seen.title.right <= size.width, `${where}: the title is in view`)
          assert.ok(
            seen.key !== null && seen.key.left >= 0 && seen.key.right <= size.width,
            `${where}: ${key} is in view (${JSON.stringify(seen.key)})`,
          )
          for (const right of seen.tables) assert.ok(right <= size.width + 0.5, `${where}: a table ends at ${right} px`)
          assert.deepEqual(seen.wraps, [], `${where}: broken mid-word`)
          if (size.mobile && DOC_SHOTS.has(name)) {
            await page.locator(key).first().scrollIntoViewIfNeeded()
            await screenshot(page, `console-mobile-${name}`)
          }
        }
        assert.deepEqual(errors, [])
      } finally {
        await context.close()
      }
    })
  }
})
