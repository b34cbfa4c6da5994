import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Browser, Frame, Page } from 'playwright-core'
import { pay as ledgerPay } from '../helpers/ledger.js'
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
  startPlinth,
  waitFor,
} from './harness.js'

interface Settled<T> {
  ok: boolean
  value?: T
  code?: string
}
interface SdkEvent {
  name: string
  args: unknown[]
}

/**
 * The client SDK calls real frontends make (getPiHostAppInfo, checkUserHasPiBrowser,
 * checkUserHasMiningApp; two authenticate calls in one tick, as React's StrictMode makes them),
 * a Pay that fails with a 503 (shown, retryable, not an app's cancel), and the wallet: memos by
 * app, a balance that follows the ledger at once, ledger links to readable pages.
 */
describe('the client SDK and the wallet in Chromium', () => {
  let plinth: RunningPlinth
  let fixture: FixtureApp
  let browser: Browser

  before(async () => {
    plinth = await startPlinth()
    fixture = await startFixtureApp(plinth, 'SDK Shop')
    browser = await launchBrowser()
  })
  closePagesAfterEach(() => browser)
  after(async () => {
    await browser?.close()
    await fixture?.close()
    await plinth?.close()
  })

  const dialog = (page: Page) => page.getByRole('dialog')
  const events = (frame: Frame) => inFrame<SdkEvent[]>(frame, 'window.events')
  async function openApp(query: Record<string, string> = {}): Promise<{ page: Page; frame: Frame; user: CreatedUser; errors: string[] }> {
    const user = await plinth.createUser()
    const { page, errors } = await newPage(browser)
    await openSandbox(page, plinth.url, { user: user.user_id, app: fixture.appId, ...query })
    const frame = await appFrame(page, fixture.url)
    return { page, frame, user, errors }
  }
  async function authenticate(page: Page, frame: Frame) {
    await inFrame(frame, `Pi.init({ version: '2.0', sandbox: true })`)
    await inFrame(frame, `window.authP = window.settle(Pi.authenticate(['username', 'payments'], window.onIncomplete)), 0`)
    await dialog(page).getByRole('button', { name: 'Allow' }).click()
    assert.equal((await inFrame<Settled<unknown>>(frame, 'window.authP')).ok, true)
  }

  it('getPiHostAppInfo, checkUserHasPiBrowser and checkUserHasMiningApp answer as the platform’s browser inside the sandbox, and as a plain browser outside', async () => {
    const { page, frame } = await openApp()
    // Before init too: frontends ask it to choose their sign-in flow.
    const inside = await inFrame(
      frame,
      `(async () => [
      await Pi.getPiHostAppInfo(),
      await Pi.checkUserHasPiBrowser(),
      await Pi.checkUserHasMiningApp(),
    ])()`,
    )
    assert.deepEqual(inside, [{ hostApp: 'pi-browser' }, { userHasPiBrowser: true }, { userHasMiningApp: true }])
    // The module has them too.
    const outside = await page.context().newPage()
    await outside.goto(`${fixture.url}/`)
    const answers = await inFrame(
      outside,
      `(async () => {
      Pi.init({ version: '2.0', sandbox: true })
      return [await Pi.getPiHostAppInfo(), await Pi.checkUserHasPiBrowser(), await Pi.checkUserHasMiningApp()]
    })()`,
    )
    assert.deepEqual(answers, [{ hostApp: 'web' }, { userHasPiBrowser: false }, { userHasMiningApp: false }])
    // In a frame whose parent is not the sandbox page: no welcome within 3 s, a plain browser.
    await inFrame(outside, `window.addFrame(location.href)`)
    const child = outside.frames().find((f) => f !== outside.mainFrame())
    assert.ok(child)
    await child.waitForLoadState('load')
    assert.deepEqual(await inFrame(child, `(async () => { Pi.init({ version: '2.0', sandbox: true }); return Pi.getPiHostAppInfo() })()`), {
      hostApp: 'web',
    })
    await outside.goto(`${fixture.url}/module.html`)
    await waitFor(() => inFrame(outside, 'window.PiModule !== undefined'), 'the module')
    assert.deepEqual(await inFrame(outside, 'window.PiModule.getPiHostAppInfo()'), { hostApp: 'web' })
  })

  it('two Pi.authenticate calls in the same tick (React StrictMode) share one consent dialog and both resolve with its result', async () => {
    const { page, frame } = await openApp()
    await inFrame(frame, `Pi.init({ version: '2.0', sandbox: true })`)
    await inFrame(
      frame,
      `window.first = window.settle(Pi.authenticate(['username', 'payments'])), window.second = window.settle(Pi.authenticate(['payments', 'username'])), 0`,
    )
    await dialog(page).getByRole('button', { name: 'Allow' }).click()
    const [first, second] = await inFrame<Array<Settled<{ accessToken: string; user: { uid: string } }>>>(
      frame,
      'Promise.all([window.first, window.second])',
    )
    assert.equal(first?.ok, true)
    assert.equal(second?.ok, true)
    assert.equal(first?.value?.accessToken, second?.value?.accessToken, 'one sign-in, one token')
    assert.equal(await dialog(page).count(), 0, 'no second dialog')

    // Other scopes in the same tick: the second waits for the first, and both settle.
    await inFrame(
      frame,
      `window.a = window.settle(Pi.authenticate(['username'])), window.b = window.settle(Pi.authenticate(['username', 'wallet_address'])), 0`,
    )
    await dialog(page).getByText('wallet_address').waitFor()
    // Escape denies, as the Deny button does.
    await page.keyboard.press('Escape')
    const [a, b] = await inFrame<Array<Settled<unknown>>>(frame, 'Promise.all([window.a, window.b])')
    assert.equal(a?.ok, true)
    assert.deepEqual([b?.ok, b?.code], [false, 'consent_denied'])
  })

  it('a Pay answered 503 says that Pay failed, offers Pay again, tells the app it is retryable, and the retry pays', async () => {
    const { page, frame } = await openApp()
    await authenticate(page, frame)
    // The user's next submit fails with 503 before anything changes (docs/testing.md, "Fault injection").
    expectStatus(
      await plinth.api('POST', '/sandbox/faults', {
        body: {
          app_id: fixture.appId,
          match: { route: 'POST /v2/client/payments/{payment_id}/submit' },
          effect: { status: 503 },
          times: 1,
        },
      }),
      201,
      'fault',
    )
    await inFrame(
      frame,
      `window.retryable = []
       window.payP = window.settle(Pi.createPayment({ amount: 2, memo: 'Sticker pack', metadata: {} }, {
         ...window.paymentCallbacks,
         onError: (error, payment) => { window.retryable.push(error.retryable); window.paymentCallbacks.onError(error, payment) },
       })), 0`,
    )
    const pay = dialog(page).getByRole('button', { name: 'Pay' })
    await waitFor(async () => (await pay.isEnabled()) || undefined, 'the approval')
    await pay.click()
    const status = dialog(page).locator('.status-line')
    await status.getByText('Pay failed (HTTP 503)').waitFor()
    assert.match((await status.textContent()) ?? '', /Pay again to retry, or Cancel\./)
    assert.deepEqual(await inFrame(frame, 'window.retryable'), [true])
    await screenshot(page, 'sandbox-pay-503')
    // Pay again: the fault is spent, the payment goes through and the app completes it.
    await dialog(page).getByRole('button', { name: 'Pay again' }).click()
    await dialog(page).getByText('Completed').waitFor()
    const names = (await events(frame)).map((e) => e.name)
    assert.ok(names.includes('completion'), names.join(', '))
    assert.equal(names.includes('cancel'), false)
  })

  it('the wallet names each payment "<app>: <memo>", follows the ledger at once, and links to readable ledger pages', async () => {
    // No notification or wallet poll for ten minutes: what moves the balance is the ledger's stream.
    const { page, frame, user } = await openApp({ refresh_ms: '600000' })
    await authenticate(page, frame)
    await inFrame(
      frame,
      `window.payP = window.settle(Pi.createPayment({ amount: 1, memo: 'Sticker pack', metadata: {} }, window.paymentCallbacks)), 0`,
    )
    const pay = dialog(page).getByRole('button', { name: 'Pay' })
    await waitFor(async () => (await pay.isEnabled()) || undefined, 'the approval')
    await pay.click()
    await dialog(page).getByText('Completed').waitFor()
    await dialog(page).getByRole('button', { name: 'Close' }).click()

    const chip = page.locator('#wallet-button')
    await page.locator('#wallet-button').click()
    const drawer = page.locator('#drawer')
    await drawer.getByText(`${fixture.name}: Sticker pack`).waitFor()
    const before = await chip.textContent()
    // A reward (a ledger payment from an app's wallet) reaches the user: the top bar follows within a couple of seconds.
    const rewarding = await plinth.createApp('Reward App')
    const paidAt = Date.now()
    await ledgerPay(plinth.platform.app, { seed: rewarding.wallet.seed, to: user.wallet.address, amount: '7' })
    await waitFor(async () => ((await chip.textContent()) !== before ? true : undefined), 'the balance to follow', 3000)
    assert.ok(Date.now() - paidAt < 3000)

    // The ledger link opens the console's page of the transaction, not the API's JSON.
    const link = drawer.locator('.tx a').first()
    const href = (await link.getAttribute('href')) ?? ''
    assert.match(href, /^\/console\/#\/ledger\/transactions\/[0-9a-f]{64}$/)
    const ledger = await page.context().newPage()
    await ledger.goto(`${plinth.url}${href}`)
    await ledger.getByRole('heading', { name: /^Transaction / }).waitFor()
  })
})
