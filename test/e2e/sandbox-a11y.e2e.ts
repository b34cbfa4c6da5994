import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Browser, Frame, Page } from 'playwright-core'
import { servePayingApp } from './fixture-app.js'
import {
  appFrame,
  type CreatedApp,
  type CreatedUser,
  closePagesAfterEach,
  inFrame,
  launchBrowser,
  newPage,
  openSandbox,
  type RunningPlinth,
  type Served,
  screenshot,
  startPlinth,
  waitFor,
} from './harness.js'

/**
 * The sandbox page with the keyboard only (WAI-ARIA's dialog pattern) and on a phone-sized
 * screen: focus never drops to <body> after choosing a user, opening an app or consenting; the
 * dialogs take the focus, keep Tab inside, cancel on Escape and give the focus back; the top bar
 * fits 390×844 and 1180×860 without overflow, the user chip whole on screen.
 */
/** A bounding box as the page's DOMRect.toJSON() answers it. */
interface Box {
  left: number
  top: number
  right: number
  bottom: number
  width: number
}

describe('the sandbox page with the keyboard only, and at two screen sizes', () => {
  let plinth: RunningPlinth
  let browser: Browser
  let served: Served
  let app: CreatedApp

  /** An app a keyboard can drive: Sign in and Buy buttons, and a backend that approves and completes. */
  const appPage = (sdk: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>Keyboard Shop</title>
<script src="${sdk}"></script></head>
<body>
  <h1>Keyboard Shop</h1>
  <button id="signin" type="button">Sign in</button>
  <button id="buy" type="button">Buy a sticker pack</button>
  <p id="last">none</p>
  <script>
    window.events = []
    const log = (name) => { window.events.push(name); document.getElementById('last').textContent = name }
    Pi.init({ version: '2.0', sandbox: true })
    const post = (path, body) => fetch(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    document.getElementById('signin').addEventListener('click', () =>
      Pi.authenticate(['username', 'payments']).then(() => log('signed-in'), (error) => log('auth-error ' + error.code)))
    document.getElementById('buy').addEventListener('click', () =>
      Pi.createPayment({ amount: 1, memo: 'Sticker pack', metadata: {} }, {
        onReadyForServerApproval: (paymentId) => post('/approve', { paymentId }),
        onReadyForServerCompletion: (paymentId, txid) => post('/complete', { paymentId, txid }).then(() => log('completed')),
        onCancel: () => log('cancelled'),
        onError: (error) => log('error ' + error.code),
      }).catch(() => {}))
  </script>
</body></html>`

  before(async () => {
    plinth = await startPlinth()
    ;({ served, app } = await servePayingApp(plinth, 'Keyboard Shop', appPage))
    browser = await launchBrowser()
  })
  closePagesAfterEach(() => browser)
  after(async () => {
    await browser?.close()
    await served?.close()
    await plinth?.close()
  })

  /** What has the focus in the sandbox page: `#id`, `role=dialog > button "Allow"`, `h1 "…"`, or `body`. */
  const focused = (page: Page) =>
    page.evaluate<string>(`(() => {
      const el = document.activeElement
      if (el === null || el === document.body) return 'body'
      const inDialog = el.closest('[role="dialog"]') ? 'dialog ' : ''
      if (el.id) return inDialog + '#' + el.id
      return inDialog + el.tagName.toLowerCase() + ' "' + (el.getAttribute('aria-label') || el.textContent.trim()).slice(0, 60) + '"'
    })()`)
  /** Presses Tab (or Shift+Tab) until `check()` holds: at most `max` presses. */
  async function tabUntil(page: Page, check: () => Promise<boolean>, what: string, max = 40, key = 'Tab') {
    for (let i = 0; i < max; i++) {
      if (await check()) return
      await page.keyboard.press(key)
    }
    assert.ok(await check(), `Tab never reached ${what}; focus is on ${await focused(page)}`)
  }
  const inApp = (frame: Frame, id: string) => async () => (await inFrame<string>(frame, 'document.activeElement?.id ?? ""')) === id
  const events = (frame: Frame) => inFrame<string[]>(frame, 'window.events')
  const waitEvent = (frame: Frame, name: string) =>
    waitFor(async () => (await events(frame)).includes(name) || undefined, `the app's "${name}"`)

  it('choose a user, open the app, consent, pay and cancel: keyboard only, the focus always somewhere useful', async () => {
    const user: CreatedUser = await plinth.createUser()
    const { page, errors } = await newPage(browser)
    await openSandbox(page, plinth.url)
    await page.getByRole('button', { name: `Sign in as ${user.username}` }).waitFor()

    // Choose the user: the focus goes to the next view's heading, not <body>.
    await tabUntil(page, async () => (await focused(page)) === `button "Sign in as ${user.username}"`, 'the user')
    await page.keyboard.press('Enter')
    await waitFor(async () => (await focused(page)) === 'h1 "Open an app"' || undefined, 'the focus on "Open an app"')

    // Open the app: the focus goes into its frame.
    await tabUntil(page, async () => (await focused(page)) === `button "Open ${app.name}"`, 'Open')
    await page.keyboard.press('Enter')
    await waitFor(async () => (await focused(page)) === '#app-frame' || undefined, 'the focus on the app frame')
    const frame = await appFrame(page, served.url)
    await page.getByTestId('sdk-status').getByText('SDK connected').waitFor()

    // Sign in from the app: the consent dialog takes the focus and keeps Tab inside.
    await tabUntil(page, inApp(frame, 'signin'), "the app's Sign in")
    await page.keyboard.press('Enter')
    await waitFor(async () => (await focused(page)) === 'dialog button "Allow"' || undefined, 'the focus on Allow')
    for (const key of ['Tab', 'Tab', 'Tab', 'Shift+Tab', 'Shift+Tab', 'Shift+Tab']) {
      await page.keyboard.press(key)
      assert.match(await focused(page), /^dialog /, `${key} left the consent dialog`)
    }
    assert.equal(
      await page.evaluate('document.querySelector(".topbar").inert && document.querySelector("#browser-view .appbar").inert'),
      true,
      'the page behind the dialog is inert',
    )
    await tabUntil(page, async () => (await focused(page)) === 'dialog button "Allow"', 'Allow')
    await page.keyboard.press('Enter')
    await waitEvent(frame, 'signed-in')
    // Consenting gives the focus back to the app that asked.
    assert.equal(await focused(page), '#app-frame')
    assert.equal(await inFrame(frame, 'document.activeElement.id'), 'signin')

    // Pay: the payment dialog takes the focus at once (its buttons still disabled), Tab reaches Pay.
    await tabUntil(page, inApp(frame, 'buy'), "the app's Buy")
    await page.keyboard.press('Enter')
    await waitFor(async () => (await focused(page)).startsWith('dialog') || undefined, 'the focus in the payment dialog')
    const pay = page.getByRole('dialog').getByRole('button', { name: 'Pay' })
    await waitFor(async () => (await pay.isEnabled()) || undefined, 'the approval')
    await tabUntil(page, async () => (await focused(page)) === 'dialog button "Pay"', 'Pay')
    await page.keyboard.press('Enter')
    await waitEvent(frame, 'completed')
    await page.getByRole('dialog').waitFor({ state: 'detached' })
    await waitFor(async () => (await focused(page)) === '#app-frame' || undefined, 'the focus back on the app')

    // Escape cancels a payment, as the docs say, and the focus goes back to the app.
    await tabUntil(page, inApp(frame, 'buy'), "the app's Buy")
    await page.keyboard.press('Enter')
    const cancel = page.getByRole('dialog').getByRole('button', { name: 'Cancel' })
    await waitFor(async () => (await cancel.isEnabled()) || undefined, 'Cancel enabled')
    await page.keyboard.press('Escape')
    await waitEvent(frame, 'cancelled')
    await page.getByRole('dialog').waitFor({ state: 'detached' })
    assert.equal(await focused(page), '#app-frame')
    assert.equal(await inFrame(frame, 'document.activeElement.id'), 'buy', "back on the app's own Buy button")

    // The wallet drawer: its title takes the focus, Escape closes it and gives the focus back.
    await page.locator('#wallet-button').focus()
    await page.keyboard.press('Enter')
    await waitFor(async () => (await focused(page)) === '#drawer-title' || undefined, 'the focus on the wallet')
    await page.keyboard.press('Escape')
    await page.locator('#drawer').waitFor({ state: 'hidden' })
    assert.equal(await focused(page), '#wallet-button')

    // Closing the app (its ← button) lands on the picker's heading, not <body>.
    await page.locator('#back-button').focus()
    await page.keyboard.press('Enter')
    await waitFor(async () => (await focused(page)) === 'h1 "Open an app"' || undefined, 'the focus on the picker')
    assert.deepEqual(errors, [])
  })

  for (const size of [
    { name: 'desktop', width: 1180, height: 860 },
    { name: 'mobile', width: 390, height: 844 },
  ]) {
    it(`at ${size.width}×${size.height} the top bar fits on one line, nothing overflows sideways, the user chip is whole`, async () => {
      // A long name: the chip shortens it with an ellipsis, on screen.
      const user = await plinth.createUser(`a_rather_long_username_${size.name}`.slice(0, 32))
      const { page } = await newPage(browser)
      await page.setViewportSize({ width: size.width, height: size.height })
      const check = async (where: string) => {
        const layout = await page.evaluate<{ scroll: number; client: number; topbar: number; chip: Box; line: number }>(`(() => {
          const chip = document.getElementById('user-chip').getBoundingClientRect()
          return {
            scroll: document.documentElement.scrollWidth,
            client: document.documentElement.clientWidth,
            topbar: document.querySelector('.topbar').getBoundingClientRect().height,
            chip: chip.toJSON(),
            line: chip.height,
          }
        })()`)
        assert.ok(layout.scroll <= layout.client, `${where}: no horizontal overflow (${layout.scroll} > ${layout.client})`)
        const { chip } = layout
        assert.ok(
          chip.width > 0 && chip.left >= 0 && chip.top >= 0 && chip.right <= size.width && chip.bottom <= size.height,
          `${where}: the user chip is inside the viewport: ${JSON.stringify(chip)}`,
        )
        // One row of the top bar: no taller than its tallest control and the padding around it.
        assert.ok(layout.topbar <= layout.line + 28, `${where}: the top bar is one line (${layout.topbar} px for a ${layout.line} px chip)`)
      }
      await openSandbox(page, plinth.url, { user: user.user_id })
      await page.getByRole('heading', { name: 'Open an app' }).waitFor()
      await page.locator('#wallet-button').getByText('π').waitFor()
      await check('the app picker')
      await openSandbox(page, plinth.url, { user: user.user_id, app: app.app_id })
      await appFrame(page, served.url)
      await page.getByTestId('sdk-status').getByText('SDK connected').waitFor()
      await page.locator('#wallet-button').getByText('π').waitFor()
      await check('an open app')
      await screenshot(page, `sandbox-${size.name}`)
    })
  }
})
