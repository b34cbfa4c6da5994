import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { after, before, describe, it } from 'node:test'
import type { Browser, Frame, Page, Route } from 'playwright-core'
import { pay } from '../helpers/ledger.js'
import { type FixtureApp, startFixtureApp } from './fixture-app.js'
import {
  appFrame,
  type CreatedUser,
  closePagesAfterEach,
  expectStatus,
  inFrame,
  launchBrowser,
  newPage,
  openSandbox,
  type RunningPlinth,
  screenshot,
  serve,
  startPlinth,
  waitFor,
} from './harness.js'

interface Settled<T> {
  ok: boolean
  value?: T
  code?: string
  message?: string
}
interface SdkEvent {
  name: string
  args: unknown[]
}

/**
 * The sandbox page's dialogs and diagnoses: a failed Pay keeps its error and reaches
 * onError, long memos keep Pay and Cancel on screen, the dialogs keep the focus, the SDK names the
 * value it refuses, and an app that cannot connect gets a reason instead of "Loading…" forever.
 */
describe('sandbox dialogs and diagnoses in Chromium', () => {
  let plinth: RunningPlinth
  let fixture: FixtureApp
  let browser: Browser

  before(async () => {
    plinth = await startPlinth()
    fixture = await startFixtureApp(plinth, 'Dialog Shop')
    browser = await launchBrowser()
  })
  closePagesAfterEach(() => browser)
  after(async () => {
    await browser?.close()
    await fixture?.close()
    await plinth?.close()
  })

  async function openApp(viewport?: {
    width: number
    height: number
  }): Promise<{ page: Page; frame: Frame; user: CreatedUser; errors: string[] }> {
    const user = await plinth.createUser()
    const { page, errors } = await newPage(browser)
    if (viewport) await page.setViewportSize(viewport)
    await openSandbox(page, plinth.url, { user: user.user_id, app: fixture.appId })
    const frame = await appFrame(page, fixture.url)
    await inFrame(frame, `Pi.init({ version: '2.0', sandbox: true })`)
    return { page, frame, user, errors }
  }
  const dialog = (page: Page) => page.getByRole('dialog')
  async function authenticate(page: Page, frame: Frame) {
    await inFrame(frame, `window.authP = window.settle(Pi.authenticate(['username', 'payments'], window.onIncomplete)), 0`)
    await dialog(page).getByRole('button', { name: 'Allow' }).click()
    assert.equal((await inFrame<Settled<unknown>>(frame, 'window.authP')).ok, true)
  }
  const events = (frame: Frame) => inFrame<SdkEvent[]>(frame, 'window.events')
  const balanceOf = async (address: string) => {
    const answer = await plinth.api<{ balances: Array<{ asset_type: string; balance: string }> }>('GET', `/ledger/accounts/${address}`)
    return answer.body.balances.find((b) => b.asset_type === 'native')?.balance ?? '0'
  }

  it('a failed Pay keeps its error on screen and the app gets onError', async () => {
    const { page, frame, user, errors } = await openApp()
    await authenticate(page, frame)
    await inFrame(
      frame,
      `window.payP = window.settle(Pi.createPayment({ amount: 5, memo: 'Boots', metadata: {} }, window.paymentCallbacks)), 0`,
    )
    const created = await inFrame<Settled<{ identifier: string }>>(frame, 'window.payP')
    assert.equal(created.ok, true)
    const payButton = dialog(page).getByRole('button', { name: 'Pay' })
    await waitFor(async () => (await payButton.isEnabled()) || undefined, 'the approval')
    // The dialog reads the balance once, when it opens; read after the drain below (a loaded machine),
    // it would rightly disable Pay. The wallet is emptied only once the dialog shows the balance.
    await waitFor(
      async () => /\d/.test((await dialog(page).locator('.balance-value').textContent()) ?? '') || undefined,
      'the balance shown',
    )
    // As on a loaded machine: the submit answers late, and a poll sent before the click answers during it.
    const slow = (ms: number) => async (route: Route) => {
      await new Promise((resolve) => setTimeout(resolve, ms))
      await route.continue().catch(() => undefined)
    }
    await page.route(`**/v2/client/payments/${created.value?.identifier}`, slow(400))
    await page.route(`**/v2/client/payments/${created.value?.identifier}/submit`, slow(1_500))
    // The user's wallet is emptied behind the dialog's back: the ledger refuses the payment.
    const balance = await balanceOf(user.wallet.address)
    const keep = 1
    const drain = (Number(balance) - keep - 0.00001).toFixed(7)
    const app = expectStatus(await plinth.api<{ wallet_address: string }>('GET', `/sandbox/apps/${fixture.appId}`), 200, 'app')
    await pay(plinth.platform.app, { seed: user.wallet.seed, to: app.wallet_address, amount: drain })
    await payButton.click()
    const status = dialog(page).locator('.status-line')
    await status.getByText('Pay failed').waitFor()
    const shown = await status.textContent()
    // Several polls later (poll_ms 150) the message is still there, not "approved… Pay signs…".
    await page.waitForTimeout(1200)
    assert.equal(await status.textContent(), shown)
    assert.doesNotMatch(shown ?? '', /The user/, 'the dialog speaks to the user')
    const log = await waitFor(async () => {
      const all = await events(frame)
      return all.some((e) => e.name === 'error') ? all : undefined
    }, 'onError')
    const error = log.find((e) => e.name === 'error')
    assert.ok(error)
    assert.equal(typeof error.args[0], 'string')
    assert.notEqual(error.args[0], 'unknown_error')
    assert.equal(error.args[2], created.value?.identifier)
    await screenshot(page, 'sandbox-pay-failed')
    await dialog(page).getByRole('button', { name: 'Cancel' }).click()
    // The refused submit shows in the console as a failed resource; nothing else went wrong.
    assert.deepEqual(
      errors.filter((text) => !text.startsWith('Failed to load resource')),
      [],
    )
  })

  it('a 1,000-character memo at 1280×720 keeps Pay and Cancel on screen and clickable', async () => {
    const { page, frame } = await openApp({ width: 1280, height: 720 })
    await authenticate(page, frame)
    const memo = 'M'.repeat(400) + ' long words '.repeat(50)
    assert.equal(memo.length, 1000)
    await inFrame(
      frame,
      `window.payP = window.settle(Pi.createPayment({ amount: 1, memo: ${JSON.stringify(memo)}, metadata: {} }, window.paymentCallbacks)), 0`,
    )
    const payButton = dialog(page).getByRole('button', { name: 'Pay' })
    await waitFor(async () => (await payButton.isEnabled()) || undefined, 'the approval')
    for (const name of ['Pay', 'Cancel']) {
      const box = await dialog(page).getByRole('button', { name }).boundingBox()
      assert.ok(box, `${name} is laid out`)
      assert.ok(
        box.y >= 0 && box.y + box.height <= 720 && box.x + box.width <= 1280,
        `${name} is inside the 1280×720 window: ${JSON.stringify(box)}`,
      )
    }
    await screenshot(page, 'sandbox-long-memo')
    await dialog(page).getByRole('button', { name: 'Pay' }).click({ trial: true })
    await dialog(page).getByRole('button', { name: 'Cancel' }).click()
    await waitFor(async () => ((await events(frame)).some((e) => e.name === 'cancel') ? true : undefined), 'onCancel')
  })

  it('Pay stays disabled when amount and fee exceed the balance, with the fee shown', async () => {
    const { page, frame, user } = await openApp()
    await authenticate(page, frame)
    const balance = Number(await balanceOf(user.wallet.address))
    const amount = Math.floor(balance) // amount + 0.00001 fee > balance once the balance has no fraction above it
    await inFrame(
      frame,
      `window.payP = window.settle(Pi.createPayment({ amount: ${amount}, memo: 'All in', metadata: {} }, window.paymentCallbacks)), 0`,
    )
    await dialog(page).getByText('Network fee').waitFor()
    await dialog(page).getByText('0.00001 π', { exact: true }).waitFor()
    await dialog(page).getByText('Your balance is too low').waitFor()
    assert.equal(await dialog(page).getByRole('button', { name: 'Pay' }).isDisabled(), true)
    await dialog(page).getByRole('button', { name: 'Cancel' }).click()
  })

  it('the consent and payment dialogs keep the focus inside them', async () => {
    const { page, frame } = await openApp()
    await inFrame(frame, `window.authP = window.settle(Pi.authenticate(['username', 'payments'])), 0`)
    await dialog(page).getByRole('button', { name: 'Allow' }).waitFor()
    const buttons = await dialog(page).getByRole('button').count()
    for (let i = 0; i < buttons * 2 + 1; i++) {
      await page.keyboard.press(i % 3 === 2 ? 'Shift+Tab' : 'Tab')
      assert.equal(
        await page.evaluate(`!!document.activeElement.closest('[role="dialog"]')`),
        true,
        `focus left the dialog after ${i + 1} keys`,
      )
    }
    await dialog(page).getByRole('button', { name: 'Allow' }).click()
    assert.equal((await inFrame<Settled<unknown>>(frame, 'window.authP')).ok, true)
  })

  it('the SDK names the value it refuses, and more than 7 decimals never opens the dialog', async () => {
    const { page, frame } = await openApp()
    await authenticate(page, frame)
    const negative = await inFrame<Settled<unknown>>(
      frame,
      `window.settle(Promise.resolve().then(() => Pi.createPayment({ amount: -3, memo: 'x', metadata: {} }, window.paymentCallbacks)))`,
    )
    assert.equal(negative.code, 'invalid_arguments')
    assert.match(negative.message ?? '', /-3/)
    const precise = await inFrame<Settled<unknown>>(
      frame,
      `window.settle(Promise.resolve().then(() => Pi.createPayment({ amount: 0.123456789, memo: 'x', metadata: {} }, window.paymentCallbacks)))`,
    )
    assert.equal(precise.code, 'invalid_amount')
    assert.match(precise.message ?? '', /7 decimals, got 0\.123456789/)
    assert.equal(await dialog(page).count(), 0, 'no dialog was shown')
  })

  it('an app URL with nothing listening gets a reason instead of "Loading the app…" forever', async () => {
    const closed = await plinth.createApp('Nobody Home', 'http://127.0.0.1:9/')
    const user = await plinth.createUser()
    const { page } = await newPage(browser)
    await openSandbox(page, plinth.url, { user: user.user_id, app: closed.app_id, connect_ms: '1500' })
    await page.getByTestId('sdk-status').getByText('did not connect within 2 s').waitFor()
    assert.match((await page.getByTestId('sdk-status').textContent()) ?? '', /http:\/\/127\.0\.0\.1:9 .*server is running/)
  })

  it('a sandbox page on localhost while the SDK comes from 127.0.0.1 says so', async () => {
    const user = await plinth.createUser()
    const { page } = await newPage(browser)
    const localhost = plinth.url.replace('127.0.0.1', 'localhost')
    await openSandbox(page, localhost, { user: user.user_id, app: fixture.appId })
    await appFrame(page, fixture.url)
    const frame = await appFrame(page, fixture.url)
    await inFrame(frame, `Pi.init({ version: '2.0', sandbox: true }), 0`)
    await page.getByTestId('sdk-status').getByText(`The app's SDK talks to ${plinth.url}, but this page is ${localhost}`).waitFor()
  })

  it('labels: sandbox inputs have visible labels, three notification switches are told apart, a skip link leads to the content', async () => {
    const user = await plinth.createUser()
    const { page } = await newPage(browser)
    await openSandbox(page, plinth.url)
    await page.getByLabel("New user's name").waitFor()
    // A stale "already taken" goes once the name is edited.
    await page.getByLabel("New user's name").fill(user.username)
    await page.getByRole('button', { name: 'Create user' }).click()
    const error = page.locator('#signin-error')
    await error.waitFor({ state: 'visible' })
    await page.getByLabel("New user's name").fill(`${user.username}x`)
    await error.waitFor({ state: 'hidden' })
    await page.keyboard.press('Shift+Tab')
    await page.goto(`${plinth.url}/sandbox/`)
    // Once the users are listed (the page has drawn its view), the first Tab still reaches the skip
    // link: a page nobody has focused keeps the focus where it loaded.
    await page.getByRole('button', { name: 'Sign in' }).first().waitFor()
    await page.keyboard.press('Tab')
    assert.equal(await page.evaluate('document.activeElement.textContent'), 'Skip to content')

    // Three apps send this user notifications: three switches, three names.
    const names = ['Alpha Shop', 'Beta Shop', 'Gamma Shop']
    for (const name of names) {
      const app = await plinth.createApp(name, 'http://127.0.0.1:9/')
      const auth = expectStatus(
        await plinth.api<{ user: { uid: string } }>('POST', `/sandbox/apps/${app.app_id}/authenticate`, {
          body: { user_id: user.user_id, scopes: ['username', 'in_app_notifications'] },
        }),
        200,
        'authenticate',
      )
      expectStatus(
        await plinth.api('POST', '/v2/in_app_notifications/notify', {
          key: app.api_key,
          body: { notifications: [{ title: `Hello from ${name}`, body: 'Hi', user_uid: auth.user.uid, subroute: '/' }] },
        }),
        201,
        'notify',
      )
    }
    await openSandbox(page, plinth.url, { user: user.user_id })
    // The app's name in the picker opens it too: here it is the picker that matters.
    await page.getByRole('button', { name: 'Alpha Shop' }).first().waitFor()
    await page.locator('#bell').click()
    for (const name of names) await page.getByRole('switch', { name: `Notifications from ${name}` }).waitFor()
    const labels = await page.locator('#drawer label.switch').allTextContents()
    assert.equal(new Set(labels).size, 3, `distinct labels: ${labels.join(' | ')}`)
    assert.equal(
      labels.some((text) => text.includes('On/off')),
      false,
    )
  })

  it('the top-bar balance follows a payment to the user', async () => {
    const user = await plinth.createUser()
    const { page } = await newPage(browser)
    await openSandbox(page, plinth.url, { user: user.user_id })
    const chip = page.locator('#wallet-button')
    await chip.getByText('π').waitFor()
    const before = await chip.textContent()
    expectStatus(await plinth.api('POST', '/sandbox/ledger/fund', { body: { address: user.wallet.address, amount: '12.5' } }), 200, 'fund')
    await waitFor(async () => ((await chip.textContent()) !== before ? true : undefined), 'the top-bar balance to change')
  })

  it("docs/sandbox-browser.md step 2's snippet runs as written in a classic script", async () => {
    const doc = readFileSync(new URL('../../docs/sandbox-browser.md', import.meta.url), 'utf8')
    const snippet = /2\. In the app's page[\s\S]*?```html\n([\s\S]*?)```/.exec(doc)?.[1]
    assert.ok(snippet, 'step 2 has an html snippet')
    const html = snippet.replace(/^ {3}/gm, '').replaceAll('http://127.0.0.1:8080', plinth.url)
    const served = await serve({ '/': `<!doctype html><title>Docs app</title>${html}` })
    try {
      const app = await plinth.createApp('Docs App', `${served.url}/`)
      const user = await plinth.createUser()
      const { page, errors } = await newPage(browser)
      const logged: string[] = []
      page.on('console', (message) => logged.push(message.text()))
      await openSandbox(page, plinth.url, { user: user.user_id, app: app.app_id })
      await dialog(page).getByRole('button', { name: 'Allow' }).click()
      await waitFor(async () => logged.includes(`Signed in as ${user.username}`) || undefined, 'the snippet to sign in')
      assert.deepEqual(errors, [])
    } finally {
      await served.close()
    }
  })
})
