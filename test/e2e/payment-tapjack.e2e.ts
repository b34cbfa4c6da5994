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
  payArmed,
  type RunningPlinth,
  type Served,
  startPlinth,
  waitFor,
} from './harness.js'

/**
 * Tap-jacking the payment dialog (issue 38, item 5): a "tap as fast as you can" app whose whole
 * screen is one button, and each press asks for a payment that its backend approves at once. A
 * user who taps one spot, fast, never aiming at Pay, must not pay: Pay accepts only a press that
 * began after it had been shown, enabled and still for a while, it is never left under the spot
 * being tapped, and a key held down or a focus that never moved to Pay does not pay either.
 */
describe('the payment dialog against a fast tap, in Chromium', () => {
  let plinth: RunningPlinth
  let browser: Browser
  let served: Served
  let app: CreatedApp

  /** The game: the whole page is the button; every press asks for 3 π; the backend approves at once. */
  const gamePage = (sdk: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>Tap Tap</title>
<script src="${sdk}"></script>
<style>html, body { margin: 0; height: 100% } #tap { position: fixed; inset: 0; width: 100%; height: 100%; font-size: 3rem }</style></head>
<body>
  <button id="tap" type="button">TAP AS FAST AS YOU CAN</button>
  <script>
    window.taps = 0
    window.asked = 0
    window.paid = 0
    const post = (path, body) => fetch(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    Pi.init({ version: '2.0', sandbox: true })
    window.signIn = () => Pi.authenticate(['username', 'payments'])
    document.getElementById('tap').addEventListener('click', () => {
      window.taps++
      window.asked++
      Pi.createPayment({ amount: 3, memo: 'Bonus round', metadata: {} }, {
        onReadyForServerApproval: (paymentId) => post('/approve', { paymentId }),
        onReadyForServerCompletion: (paymentId, txid) => post('/complete', { paymentId, txid }).then(() => { window.paid++ }),
        onCancel: () => {},
        onError: () => {},
      }).catch(() => {})
    })
  </script>
</body></html>`

  before(async () => {
    plinth = await startPlinth()
    ;({ served, app } = await servePayingApp(plinth, 'Tap Tap', gamePage))
    browser = await launchBrowser()
  })
  closePagesAfterEach(() => browser)
  after(async () => {
    await browser?.close()
    await served?.close()
    await plinth?.close()
  })

  const dialog = (page: Page) => page.getByRole('dialog')
  /** Waits until no press is being paid: the dialog is gone or in a state money does not move in. */
  const settled = (page: Page) =>
    waitFor(async () => {
      const stage = (await dialog(page).count()) === 0 ? 'none' : await dialog(page).locator('.status-line').getAttribute('data-stage')
      return (stage !== 'submitting' && stage !== 'paid') || undefined
    }, 'the dialog to settle')
  const balanceOf = async (address: string) => {
    const answer = await plinth.api<{ balances: Array<{ asset_type: string; balance: string }> }>('GET', `/ledger/accounts/${address}`)
    return answer.body.balances.find((b) => b.asset_type === 'native')?.balance ?? '0'
  }

  async function openGame(): Promise<{ page: Page; frame: Frame; user: CreatedUser }> {
    const user = await plinth.createUser()
    const { page } = await newPage(browser)
    await openSandbox(page, plinth.url, { user: user.user_id, app: app.app_id })
    const frame = await appFrame(page, served.url)
    await page.getByTestId('sdk-status').getByText('SDK connected').waitFor()
    await inFrame(frame, 'window.signInP = window.signIn(), 0')
    await dialog(page).getByRole('button', { name: 'Allow' }).click()
    await inFrame(frame, 'window.signInP')
    await dialog(page).waitFor({ state: 'detached' })
    return { page, frame, user }
  }

  /** Where Pay appears when the dialog opens: what an attacker learns by opening it once (in a page of its own). */
  async function whereIsPay(): Promise<{ x: number; y: number }> {
    const { page } = await openGame()
    const frameBox = await page.locator('#app-frame').boundingBox()
    assert.ok(frameBox)
    await page.mouse.click(frameBox.x + 20, frameBox.y + 20)
    const pay = dialog(page).getByRole('button', { name: 'Pay' })
    await pay.waitFor()
    const box = await pay.boundingBox()
    assert.ok(box)
    await page.context().close()
    const spot = { x: box.x + box.width / 2, y: box.y + box.height / 2 }
    assert.ok(
      spot.x > frameBox.x && spot.x < frameBox.x + frameBox.width && spot.y > frameBox.y && spot.y < frameBox.y + frameBox.height,
      "Pay opens over the app's frame: a tap there reaches the app's button first",
    )
    return spot
  }

  it('34 taps in 5 s on one spot, where Pay opens, never aimed at Pay: 0 π move; a deliberate press then pays', async () => {
    const spot = await whereIsPay()
    const { page, frame, user } = await openGame()
    const before = await balanceOf(user.wallet.address)

    const started = Date.now()
    for (let tap = 0; tap < 34; tap++) {
      const at = started + (tap * 5000) / 34
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, at - Date.now())))
      await page.mouse.click(spot.x, spot.y)
    }
    const elapsed = Date.now() - started
    // The game asked for payments, and the dialog took the taps: the attack was really tried.
    const asked = await inFrame<number>(frame, 'window.asked')
    assert.ok(asked >= 1, `the game asked for a payment (${asked})`)
    // Let any press the dialog took finish its payment before reading the ledger.
    await settled(page)
    const after = await balanceOf(user.wallet.address)
    const moved = (Number(before) - Number(after)).toFixed(7)
    console.log(`tap-jack: 34 taps in ${elapsed} ms, ${asked} payments asked, ${moved} π moved`)
    assert.equal(after, before, `${moved} π left the user's wallet`)
    assert.equal(await inFrame<number>(frame, 'window.paid'), 0)

    // The dialog is open, Pay is not under the spot that was tapped.
    const pay = dialog(page).getByRole('button', { name: 'Pay' })
    await payArmed(pay)
    const box = await pay.boundingBox()
    assert.ok(box)
    // At least 48 px from the tapped spot (pay-guard.js, AVOID_PX).
    const margin = 48
    const near =
      spot.x >= box.x - margin && spot.x <= box.x + box.width + margin && spot.y >= box.y - margin && spot.y <= box.y + box.height + margin
    assert.equal(near, false, `Pay ${JSON.stringify(box)} is 48 px or more from the tapped spot ${JSON.stringify(spot)}`)

    // A person who stops, reads and presses Pay pays, once.
    await pay.click()
    await dialog(page).getByText('Completed').waitFor()
    assert.equal((Number(before) - Number(await balanceOf(user.wallet.address))).toFixed(7), '3.0000100', 'the amount and the fee')
  })

  it('a window resize and the page coming back into view disarm Pay until it has been still again', async () => {
    const { page } = await openGame()
    const frameBox = await page.locator('#app-frame').boundingBox()
    assert.ok(frameBox)
    await page.mouse.click(frameBox.x + 20, frameBox.y + 20)
    const pay = dialog(page).getByRole('button', { name: 'Pay' })
    const armed = () => pay.getAttribute('data-armed')
    await payArmed(pay)
    await page.setViewportSize({ width: 1100, height: 820 })
    await waitFor(async () => (await armed()) === 'false' || undefined, 'Pay disarmed by the resize')
    assert.equal(await pay.isDisabled(), true)
    await payArmed(pay)
    await page.evaluate(`document.dispatchEvent(new Event('visibilitychange'))`)
    assert.equal(await armed(), 'false', 'disarmed by the page coming back into view')
    await payArmed(pay)
    await dialog(page).getByRole('button', { name: 'Cancel' }).click()
  })

  it('a press that began before Pay was armed does not pay; a new one does', async () => {
    const { page, user } = await openGame()
    const before = await balanceOf(user.wallet.address)
    const frameBox = await page.locator('#app-frame').boundingBox()
    assert.ok(frameBox)
    await page.mouse.click(frameBox.x + 20, frameBox.y + 20)
    const pay = dialog(page).getByRole('button', { name: 'Pay' })
    await pay.waitFor()
    const box = await pay.boundingBox()
    assert.ok(box)
    // The finger is down on Pay while it is not armed, and lifted once it is.
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2)
    await page.mouse.down()
    await payArmed(pay)
    await page.mouse.up()
    await settled(page)
    assert.equal(await balanceOf(user.wallet.address), before)
    assert.equal(await dialog(page).locator('.status-line').getAttribute('data-stage'), 'approved')
    await pay.click()
    await dialog(page).getByText('Completed').waitFor()
  })

  it('the keyboard: focus starts off Pay, a held Enter does not pay, Enter on Pay after moving to it does', async () => {
    const { page, user } = await openGame()
    const before = await balanceOf(user.wallet.address)
    const frameBox = await page.locator('#app-frame').boundingBox()
    assert.ok(frameBox)
    await page.mouse.click(frameBox.x + 20, frameBox.y + 20)
    const pay = dialog(page).getByRole('button', { name: 'Pay' })
    await payArmed(pay)
    const focusedText = () => page.evaluate<string>('document.activeElement?.textContent ?? ""')
    assert.notEqual(await focusedText(), 'Pay', 'Pay never takes the focus by itself')
    // Enter held down from before focus reached Pay: its repeats do not pay.
    await page.keyboard.down('Enter')
    for (let i = 0; i < 4 && (await focusedText()) !== 'Pay'; i++) await page.keyboard.press('Tab')
    assert.equal(await focusedText(), 'Pay')
    for (let i = 0; i < 5; i++) await page.keyboard.down('Enter')
    await page.keyboard.up('Enter')
    await settled(page)
    assert.equal(await balanceOf(user.wallet.address), before)
    // A fresh Enter on Pay, which the user moved to, pays.
    await page.keyboard.press('Enter')
    await dialog(page).getByText('Completed').waitFor()
    await waitFor(async () => (await balanceOf(user.wallet.address)) !== before || undefined, 'the payment')
  })
})
