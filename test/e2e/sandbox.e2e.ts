import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Browser, Frame, Page } from 'playwright-core'
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
  type Served,
  screenshot,
  serve,
  startPlinth,
  waitFor,
} from './harness.js'

interface Settled<T> {
  ok: boolean
  value?: T
  code?: string
  name?: string
  message?: string
}
interface AuthResult {
  accessToken: string
  user: { uid: string; username?: string }
}
interface SdkEvent {
  name: string
  args: unknown[]
}
interface Payment {
  identifier: string
  status: { developer_approved: boolean; developer_completed: boolean; cancelled: boolean; user_cancelled: boolean }
  transaction: null | { txid: string }
}

describe('the sandbox browser and the client SDK, in Chromium', () => {
  let plinth: RunningPlinth
  let fixture: FixtureApp
  let foreign: Served
  let browser: Browser

  before(async () => {
    plinth = await startPlinth()
    fixture = await startFixtureApp(plinth)
    foreign = await serve({ '/': '<!doctype html><title>Foreign site</title><p>Another origin</p>' })
    browser = await launchBrowser()
  })
  closePagesAfterEach(() => browser)
  after(async () => {
    await browser?.close()
    await foreign?.close()
    await fixture?.close()
    await plinth?.close()
  })

  /** A new user, signed in to the sandbox page with the fixture app open and the SDK initialised. */
  async function openApp(path = '/'): Promise<{ page: Page; frame: Frame; user: CreatedUser; errors: string[] }> {
    const user = await plinth.createUser()
    const { page, errors } = await newPage(browser)
    const query: Record<string, string> = { user: user.user_id, app: fixture.appId }
    if (path !== '/') query.url = `${fixture.url}${path}`
    await openSandbox(page, plinth.url, query)
    const frame = await appFrame(page, fixture.url)
    if (path === '/') await inFrame(frame, `Pi.init({ version: '2.0', sandbox: true })`)
    return { page, frame, user, errors }
  }

  const events = (frame: Frame) => inFrame<SdkEvent[]>(frame, 'window.events')
  const dialog = (page: Page) => page.getByRole('dialog')

  /** Starts Pi.authenticate in the app and accepts the consent dialog. */
  async function authenticate(page: Page, frame: Frame, scopes: string[], shot?: string): Promise<AuthResult> {
    await inFrame(frame, `window.authP = window.settle(Pi.authenticate(${JSON.stringify(scopes)}, window.onIncomplete)), 0`)
    await dialog(page).getByRole('button', { name: 'Allow' }).waitFor()
    if (shot !== undefined) await screenshot(page, shot)
    await dialog(page).getByRole('button', { name: 'Allow' }).click()
    const settled = await inFrame<Settled<AuthResult>>(frame, 'window.authP')
    assert.equal(settled.ok, true, `authenticate failed: ${settled.message}`)
    assert.ok(settled.value)
    return settled.value
  }

  const payment = async (id: string) =>
    expectStatus(await plinth.api<Payment>('GET', `/v2/payments/${id}`, { key: fixture.apiKey }), 200, 'get payment')

  it('signs a user in, asks for consent on the first authenticate, and hands over a token that /v2/me accepts', async () => {
    const user = await plinth.createUser()
    const { page, errors } = await newPage(browser)
    await openSandbox(page, plinth.url, { user: user.user_id })
    await page.getByRole('button', { name: `Open ${fixture.name}` }).waitFor()
    assert.equal(await page.locator('#user-chip').textContent(), user.username)
    await screenshot(page, 'sandbox-signed-in')
    await page.getByRole('button', { name: `Open ${fixture.name}` }).click()
    const frame = await appFrame(page, fixture.url)
    assert.match(page.url(), new RegExp(`app=${fixture.appId}`))
    await inFrame(frame, `Pi.init({ version: '2.0', sandbox: true })`)

    const auth = await authenticate(page, frame, ['username', 'payments'], 'sandbox-consent')
    assert.equal(auth.user.username, user.username)
    const me = expectStatus(
      await plinth.api<{ uid: string; username: string; credentials: { scopes: string[] } }>('GET', '/v2/me', { token: auth.accessToken }),
      200,
      '/v2/me',
    )
    assert.equal(me.uid, auth.user.uid)
    assert.deepEqual(me.credentials.scopes, ['payments', 'username'])
    await page.locator('#sdk-status', { hasText: 'Signed in to' }).waitFor()
    await screenshot(page, 'sandbox-app')

    // Consent given: the same scopes again need no dialog.
    const again = await inFrame<Settled<AuthResult>>(frame, `window.settle(Pi.authenticate(['username']))`)
    assert.equal(again.ok, true)
    assert.equal(again.value?.user.uid, auth.user.uid)
    assert.equal(await dialog(page).count(), 0)
    assert.deepEqual(errors, [])
  })

  it('denying consent rejects authenticate with consent_denied and records nothing', async () => {
    const { page, frame, user } = await openApp()
    await inFrame(frame, `window.authP = window.settle(Pi.authenticate(['username', 'payments'])), 0`)
    await dialog(page).getByRole('button', { name: 'Deny' }).click()
    const settled = await inFrame<Settled<AuthResult>>(frame, 'window.authP')
    assert.equal(settled.ok, false)
    assert.equal(settled.code, 'consent_denied')
    assert.equal(settled.name, 'PiSdkError')
    const detail = expectStatus(await plinth.api<{ apps: unknown[] }>('GET', `/sandbox/users/${user.user_id}`), 200, 'user')
    assert.deepEqual(detail.apps, [])
    // The app can still ask again.
    await inFrame(frame, `window.authP = window.settle(Pi.authenticate(['username'])), 0`)
    await dialog(page).getByRole('button', { name: 'Allow' }).click()
    assert.equal((await inFrame<Settled<AuthResult>>(frame, 'window.authP')).ok, true)
  })

  it('runs a U2A purchase to completion: approve and complete by the app backend, Pay in the dialog', async () => {
    const { page, frame, user, errors } = await openApp()
    await authenticate(page, frame, ['username', 'payments'])
    const before = await walletBalance(user.wallet.address)

    await inFrame(
      frame,
      `window.payP = window.settle(Pi.createPayment({ amount: 1.5, memo: 'A sword', metadata: { sku: 'sword' } }, window.paymentCallbacks)), 0`,
    )
    const created = await inFrame<Settled<Payment>>(frame, 'window.payP')
    assert.equal(created.ok, true, created.message)
    const id = created.value?.identifier ?? ''
    const pay = dialog(page).getByRole('button', { name: 'Pay' })
    await waitFor(async () => (await pay.isEnabled()) || undefined, 'the backend to approve')
    assert.equal((await payment(id)).status.developer_approved, true)
    const text = await dialog(page).textContent()
    assert.match(text ?? '', /1\.5 π/)
    assert.match(text ?? '', /A sword/)
    assert.match(text ?? '', new RegExp(fixture.name))
    assert.match(text ?? '', /approved/)
    // The user's balance, read from the ledger, beside the amount.
    await waitFor(async () => /Your balance\s*[\d,]+(\.\d+)? π/.test((await dialog(page).textContent()) ?? '') || undefined, 'the balance')
    await screenshot(page, 'sandbox-payment')

    await pay.click()
    // Paid: announced, with the transaction's receipt (#41 U23).
    const receipt = await page.getByTestId('pay-success').getByRole('link').getAttribute('href')
    const done = await waitFor(async () => {
      const current = await payment(id)
      return current.status.developer_completed ? current : undefined
    }, 'the payment to be completed')
    const txid = done.transaction?.txid ?? ''
    assert.match(txid, /^[0-9a-f]{64}$/)
    const log = await events(frame)
    assert.deepEqual(log.find((e) => e.name === 'approval')?.args, [id])
    assert.deepEqual(log.find((e) => e.name === 'completion')?.args, [id, txid])
    assert.equal(
      log.some((e) => e.name === 'cancel' || e.name === 'error'),
      false,
    )
    assert.ok(fixture.backendCalls.some((c) => c.action === 'complete' && c.paymentId === id && c.status === 200))
    // The sandbox's dialog closes itself once the app completed.
    await dialog(page).waitFor({ state: 'detached' })
    assert.equal(receipt, `/sandbox/?view=receipt&tx=${txid}`)
    const receiptPage = await page.context().newPage()
    await receiptPage.goto(`${plinth.url}${receipt}`)
    await receiptPage.getByTestId('receipt').getByText('Pi Testnet').waitFor()
    await receiptPage.close()

    // The wallet shows the new balance and the transaction, linked to its ledger page.
    const after = await walletBalance(user.wallet.address)
    assert.ok(Number(before) - Number(after) >= 1.5)
    await page.locator('#wallet-button').click()
    // Named by its app and memo, linked to the console's page of the transaction (not the API's JSON).
    const link = page.locator(`#drawer a[href="/console/#/ledger/transactions/${txid}"]`)
    await link.waitFor()
    await page.locator('#drawer').getByText(`${fixture.name}: A sword`).waitFor()
    await screenshot(page, 'sandbox-wallet')
    const ledger = await page.request.get(`${plinth.url}/ledger/transactions/${txid}`)
    assert.equal((await ledger.json()).memo, id)
    assert.deepEqual(errors, [])
  })

  it('re-sends the approval callback while waiting, and Cancel ends in onCancel with nothing completed', async () => {
    const { page, frame } = await openApp()
    await authenticate(page, frame, ['payments'])
    await inFrame(frame, 'window.autoApprove = false')
    await inFrame(frame, `window.payP = window.settle(Pi.createPayment({ amount: 2, memo: 'Never mind' }, window.paymentCallbacks)), 0`)
    const id = (await inFrame<Settled<Payment>>(frame, 'window.payP')).value?.identifier ?? ''
    await waitFor(
      async () => (await events(frame)).filter((e) => e.name === 'approval').length >= 3 || undefined,
      'three approval callbacks',
    )
    assert.match((await dialog(page).textContent()) ?? '', /Waiting for .* to approve the payment… \d+ s left/)

    await dialog(page).getByRole('button', { name: 'Cancel' }).click()
    await waitFor(async () => (await events(frame)).some((e) => e.name === 'cancel') || undefined, 'onCancel')
    const log = await events(frame)
    assert.deepEqual(log.find((e) => e.name === 'cancel')?.args, [id])
    assert.equal(
      log.some((e) => e.name === 'completion'),
      false,
    )
    const current = await payment(id)
    assert.equal(current.status.user_cancelled, true)
    assert.equal(current.status.developer_completed, false)
    assert.equal(current.transaction, null)
    assert.equal(await dialog(page).count(), 0)
    const count = log.filter((e) => e.name === 'approval').length
    await new Promise((resolve) => setTimeout(resolve, 900))
    assert.equal((await events(frame)).filter((e) => e.name === 'approval').length, count, 'no re-sends after the end')
  })

  it('re-sends the completion callback until the app completes, and hands a paid payment to onIncompletePaymentFound', async () => {
    const { page, frame } = await openApp()
    await authenticate(page, frame, ['payments'])
    await inFrame(frame, 'window.autoComplete = false')
    await inFrame(
      frame,
      `window.payP = window.settle(Pi.createPayment({ amount: 1, memo: 'Pay now, complete later' }, window.paymentCallbacks)), 0`,
    )
    const id = (await inFrame<Settled<Payment>>(frame, 'window.payP')).value?.identifier ?? ''
    const pay = dialog(page).getByRole('button', { name: 'Pay' })
    await waitFor(async () => (await pay.isEnabled()) || undefined, 'the backend to approve')
    await pay.click()
    const completions = await waitFor(async () => {
      const seen = (await events(frame)).filter((e) => e.name === 'completion')
      return seen.length >= 3 ? seen : undefined
    }, 'three completion callbacks')
    const txid = (await payment(id)).transaction?.txid
    assert.match(txid ?? '', /^[0-9a-f]{64}$/)
    for (const event of completions) assert.deepEqual(event.args, [id, txid])
    assert.equal((await payment(id)).status.developer_completed, false)

    // The app starts again (it reloads itself): authenticate hands the paid, uncompleted payment to onIncompletePaymentFound.
    await inFrame(frame, 'setTimeout(() => location.reload(), 0), 0')
    const reloaded = await waitFor(async () => {
      const current = await (await page.waitForSelector('#app-frame')).contentFrame()
      const ready = await current?.evaluate(`document.readyState === 'complete' && window.events.length === 0`).catch(() => false)
      return ready ? current : undefined
    }, 'the reloaded app')
    await inFrame(reloaded, `Pi.init({ version: '2.0' })`)
    const auth = await inFrame<Settled<AuthResult>>(reloaded, `window.settle(Pi.authenticate(['payments'], window.onIncomplete))`)
    assert.equal(auth.ok, true, auth.message)
    const incomplete = await waitFor(async () => (await events(reloaded)).find((e) => e.name === 'incomplete'), 'onIncompletePaymentFound')
    assert.deepEqual(incomplete.args, [id])
    // A new payment is refused while it is open, and the blocking payment is handed over again.
    const refused = await inFrame<Settled<Payment>>(
      reloaded,
      `window.settle(Pi.createPayment({ amount: 1, memo: 'Another' }, window.paymentCallbacks))`,
    )
    assert.equal(refused.ok, false)
    assert.equal(refused.code, 'ongoing_payment_found')
    await waitFor(
      async () => (await events(reloaded)).filter((e) => e.name === 'incomplete' && e.args[0] === id).length >= 2 || undefined,
      'the blocking payment handed over again',
    )
    await dialog(page).getByRole('button', { name: 'Close' }).click()
    await dialog(page).waitFor({ state: 'detached' })
    // The backend completes it, as onIncompletePaymentFound asks: the next authenticate finds nothing.
    const done = expectStatus(
      await plinth.api<Payment>('POST', `/v2/payments/${id}/complete`, { key: fixture.apiKey, body: { txid } }),
      200,
      'complete',
    )
    assert.equal(done.status.developer_completed, true)
    const before = (await events(reloaded)).filter((e) => e.name === 'incomplete').length
    const again = await inFrame<Settled<AuthResult>>(reloaded, `window.settle(Pi.authenticate(['payments'], window.onIncomplete))`)
    assert.equal(again.ok, true, `${again.code}: ${again.message}`)
    assert.equal((await events(reloaded)).filter((e) => e.name === 'incomplete').length, before)
  })

  it('tells the app through onError when the approval window passes', async () => {
    const { page, frame } = await openApp()
    await authenticate(page, frame, ['payments'])
    await inFrame(frame, 'window.autoApprove = false')
    await inFrame(frame, `window.payP = window.settle(Pi.createPayment({ amount: 1, memo: 'Too slow' }, window.paymentCallbacks)), 0`)
    const id = (await inFrame<Settled<Payment>>(frame, 'window.payP')).value?.identifier ?? ''
    await plinth.advanceClock(61)
    const error = await waitFor(async () => (await events(frame)).find((e) => e.name === 'error'), 'onError')
    assert.equal(error.args[0], 'payment_expired')
    assert.equal(error.args[2], id)
    assert.match((await dialog(page).textContent()) ?? '', /did not approve the payment within 60 s/)
    assert.equal((await payment(id)).status.cancelled, true)
  })

  it('plays a rewarded ad: watched gives an adId that the mediator grants', async () => {
    const { page, frame } = await openApp()
    await authenticate(page, frame, ['username', 'payments'])
    assert.deepEqual(await inFrame(frame, `Pi.Ads.isAdReady('rewarded')`), { type: 'rewarded', ready: true })
    assert.deepEqual(await inFrame(frame, `Pi.Ads.requestAd('rewarded')`), { type: 'rewarded', result: 'AD_LOADED' })
    await inFrame(frame, `window.adP = Pi.Ads.showAd('rewarded'), 0`)
    await dialog(page).getByRole('button', { name: 'Skip ad (no reward)' }).waitFor()
    await screenshot(page, 'sandbox-ad')
    const shown = await inFrame<{ type: string; result: string; adId?: string }>(frame, 'window.adP')
    assert.equal(shown.result, 'AD_REWARDED')
    assert.ok(shown.adId)
    const status = (
      await plinth.api<{ mediator_ack_status: string | null }>('GET', `/v2/ads_network/status/${shown.adId}`, { key: fixture.apiKey })
    ).body
    assert.equal(status.mediator_ack_status, null)
    await plinth.advanceClock(3)
    const settled = await waitFor(async () => {
      const answer = await plinth.api<{ mediator_ack_status: string | null }>('GET', `/v2/ads_network/status/${shown.adId}`, {
        key: fixture.apiKey,
      })
      return answer.body.mediator_ack_status ?? undefined
    }, 'the mediator verdict')
    assert.equal(settled, 'granted')
  })

  it('a skipped rewarded ad (Pi.displayAd) is AD_CLOSED without an adId', async () => {
    const { page, frame } = await openApp()
    await authenticate(page, frame, ['username', 'payments'])
    await inFrame(frame, `window.adP = Pi.displayAd('rewarded'), 0`)
    await dialog(page).getByRole('button', { name: 'Skip ad (no reward)' }).click()
    assert.deepEqual(await inFrame(frame, 'window.adP'), { type: 'rewarded', result: 'AD_CLOSED' })
  })

  it('shows a notification sent with the app key in the centre, with an unread count, seen, dismiss and the switch', async () => {
    const { page, frame } = await openApp()
    const auth = await authenticate(page, frame, ['username', 'in_app_notifications'])
    const notify = async (title: string) =>
      expectStatus(
        await plinth.api<{ delivered_notifications: unknown[] }>('POST', '/v2/in_app_notifications/notify', {
          key: fixture.apiKey,
          body: { notifications: [{ title, body: 'It arrives Tuesday.', user_uid: auth.user.uid, subroute: '/orders/42' }] },
        }),
        201,
        'notify',
      )
    await notify('Your order shipped')
    await page.locator('#badge', { hasText: '1' }).waitFor()
    assert.equal(await page.locator('#bell').getAttribute('aria-label'), 'Notifications (1 unread)')
    await page.locator('#bell').click()
    const item = page.locator('#drawer article', { hasText: 'Your order shipped' })
    await item.waitFor()
    assert.match((await item.textContent()) ?? '', /It arrives Tuesday\..*\/orders\/42/)
    await screenshot(page, 'sandbox-notifications')

    await item.getByRole('button', { name: 'Mark seen' }).click()
    await page.locator('#badge').waitFor({ state: 'hidden' })
    await item.getByRole('button', { name: 'Dismiss' }).click()
    await item.waitFor({ state: 'detached' })

    await page.getByRole('switch', { name: `Notifications from ${fixture.name}` }).click()
    await waitFor(
      async () =>
        (await plinth.api<{ enabled: boolean }>('GET', '/v2/client/notifications/settings', { token: auth.accessToken })).body.enabled ===
        false,
      'notifications off',
    )
    assert.deepEqual((await notify('Not delivered')).delivered_notifications, [])
  })

  it('rejects out-of-order and bad SDK calls with clear errors', async () => {
    const { frame } = await openApp('/?fresh')
    const settle = (code: string) => inFrame<Settled<unknown>>(frame, `window.settle((async () => ${code})())`)

    const early = await settle(`Pi.authenticate(['username'])`)
    assert.equal(early.code, 'not_initialized')
    assert.match(early.message ?? '', /Pi\.init/)
    assert.equal((await settle(`Pi.createPayment({ amount: 1, memo: 'x' }, window.paymentCallbacks)`)).code, 'not_initialized')
    assert.equal((await settle(`Pi.Ads.showAd('rewarded')`)).code, 'not_initialized')
    const badVersion = await settle(`Pi.init({ version: 2 })`)
    assert.equal(badVersion.code, 'invalid_arguments')
    assert.match(badVersion.message ?? '', /version must be a string/)
    assert.equal((await settle(`Pi.init()`)).code, 'invalid_arguments')
    assert.equal((await settle(`Pi.init({ version: '2.0', sandbox: 'yes' })`)).code, 'invalid_arguments')

    await inFrame(frame, `Pi.init({ version: '2.0', sandbox: true })`)
    const noAuth = await settle(`Pi.createPayment({ amount: 1, memo: 'x' }, window.paymentCallbacks)`)
    assert.equal(noAuth.code, 'not_authenticated')
    assert.match(noAuth.message ?? '', /Pi\.authenticate/)
    assert.deepEqual((await settle(`Pi.Ads.showAd('rewarded')`)).value, { type: 'rewarded', result: 'USER_UNAUTHENTICATED' })
    assert.equal((await settle(`Pi.Ads.showAd('banner')`)).code, 'invalid_arguments')
    assert.equal((await settle(`Pi.authenticate('username')`)).code, 'invalid_arguments')
    assert.equal((await settle(`Pi.authenticate(['username'], 'not a function')`)).code, 'invalid_arguments')
    const unknownScope = await settle(`Pi.authenticate(['superpowers'])`)
    assert.equal(unknownScope.code, 'invalid_arguments')
    assert.match(unknownScope.message ?? '', /superpowers/)
    assert.equal((await settle(`Pi.openUrlInSystemBrowser('javascript:alert(1)')`)).code, 'invalid_arguments')
    assert.deepEqual((await settle('Pi.nativeFeaturesList()')).value, ['inline_media', 'ad_network'])

    const page = frame.page()
    await inFrame(frame, `window.authP = window.settle(Pi.authenticate(['username'])), 0`)
    await dialog(page).getByRole('button', { name: 'Allow' }).click()
    await inFrame(frame, 'window.authP')
    const noScope = await settle(`Pi.createPayment({ amount: 1, memo: 'x' }, window.paymentCallbacks)`)
    assert.equal(noScope.code, 'missing_scope')
    // Ads need the payments scope too (docs/errors.md, Scopes); the platform would refuse the token.
    for (const call of [`Pi.Ads.showAd('rewarded')`, `Pi.Ads.isAdReady('rewarded')`, `Pi.Ads.requestAd('interstitial')`]) {
      const refused = await settle(call)
      assert.equal(refused.code, 'missing_scope', call)
      assert.match(refused.message ?? '', /"payments" scope/, call)
    }

    // Outside the sandbox page the SDK says so instead of waiting forever.
    const { page: alone } = await newPage(browser)
    await alone.goto(`${fixture.url}/`)
    await inFrame(alone, `Pi.init({ version: '2.0' })`)
    const outside = await inFrame<Settled<unknown>>(alone, `window.settle(Pi.authenticate(['username']))`)
    assert.equal(outside.code, 'not_in_sandbox')
    assert.match(outside.message ?? '', /\/sandbox\//)
  })

  it('validates payment arguments after authenticate', async () => {
    const { page, frame } = await openApp()
    await authenticate(page, frame, ['payments'])
    const settle = (code: string) => inFrame<Settled<unknown>>(frame, `window.settle((async () => ${code})())`)
    assert.equal((await settle(`Pi.createPayment({ amount: -1, memo: 'x' }, window.paymentCallbacks)`)).code, 'invalid_arguments')
    assert.equal((await settle(`Pi.createPayment({ amount: 1, memo: 7 }, window.paymentCallbacks)`)).code, 'invalid_arguments')
    assert.equal(
      (await settle(`Pi.createPayment({ amount: 1, memo: 'x', metadata: [] }, window.paymentCallbacks)`)).code,
      'invalid_arguments',
    )
    const missing = await settle(`Pi.createPayment({ amount: 1, memo: 'x' }, { onCancel() {} })`)
    assert.equal(missing.code, 'invalid_arguments')
    assert.match(missing.message ?? '', /onReadyForServerApproval, onReadyForServerCompletion, onError/)
    // More than 7 decimals is refused with the platform's code before any dialog opens.
    const refused = await settle(`Pi.createPayment({ amount: 0.123456789, memo: 'x' }, window.paymentCallbacks)`)
    assert.equal(refused.code, 'invalid_amount')
    assert.match(refused.message ?? '', /0\.123456789/)
    assert.equal(await dialog(page).count(), 0)
  })

  it('the ES module exports Pi and PiSdkError and talks to the page like the script', async () => {
    const { page, frame } = await openApp('/module.html')
    await waitFor(() => inFrame<boolean>(frame, `typeof window.PiModule === 'object'`), 'the module to load')
    assert.equal(await inFrame(frame, 'window.globalPi'), false)
    await inFrame(frame, `PiModule.init({ version: '2.0', sandbox: true })`)
    assert.deepEqual(await inFrame(frame, 'PiModule.nativeFeaturesList()'), ['inline_media', 'ad_network'])
    await inFrame(frame, `window.authP = window.settle(PiModule.authenticate(['username'])), 0`)
    await dialog(page).getByRole('button', { name: 'Allow' }).click()
    assert.equal((await inFrame<Settled<AuthResult>>(frame, 'window.authP')).ok, true)
    assert.equal(
      await inFrame(frame, `window.settle(PiModule.Ads.showAd('nope')).then((r) => r.name === 'PiSdkError' && r.code)`),
      'invalid_arguments',
    )
  })

  it('ignores postMessage from a foreign origin, both ways', async () => {
    const { page, frame } = await openApp('/?foreign')
    // Learn the SDK's session id the way a foreign page could not: by listening as the host.
    await inFrame(page, `window.sessions = []; window.addEventListener('message', (e) => window.sessions.push(e.data && e.data.session))`)
    await inFrame(frame, `Pi.init({ version: '2.0', sandbox: true }); Pi.nativeFeaturesList()`)
    await inFrame(frame, `window.addFrame(${JSON.stringify(`${foreign.url}/`)})`)
    const evil = await waitFor(async () => page.frames().find((f) => f.url().startsWith(foreign.url)), 'the foreign frame')
    await inFrame(evil, `window.received = []; window.addEventListener('message', (e) => window.received.push(e.data))`)
    const session = await waitFor(
      async () => (await inFrame<Array<string | null>>(page, 'window.sessions')).find((s) => typeof s === 'string'),
      'a session id',
    )
    const protocol = 'plinth-pi-sdk/1'

    // A foreign frame posing as the SDK: the sandbox page neither answers nor opens a dialog.
    await inFrame(
      evil,
      `(() => {
        const base = { protocol: ${JSON.stringify(protocol)}, session: ${JSON.stringify(session)} }
        window.top.postMessage({ ...base, type: 'hello', version: '2.0' }, '*')
        window.top.postMessage({ ...base, type: 'request', id: 1, method: 'authenticate', params: { scopes: ['username'] } }, '*')
        window.top.postMessage({ ...base, type: 'request', id: 2, method: 'showAd', params: { type: 'rewarded' } }, '*')
      })()`,
    )
    await new Promise((resolve) => setTimeout(resolve, 700))
    assert.equal(await dialog(page).count(), 0)
    assert.deepEqual(await inFrame(evil, 'window.received'), [])

    // A foreign frame posing as the sandbox page: the SDK ignores its forged answers.
    await inFrame(frame, `window.authP = window.settle(Pi.authenticate(['username'])), 0`)
    await dialog(page).getByRole('button', { name: 'Allow' }).waitFor()
    await inFrame(
      evil,
      `(() => {
        for (let id = 1; id <= 10; id++) {
          window.parent.postMessage({ protocol: ${JSON.stringify(protocol)}, session: ${JSON.stringify(session)}, type: 'result', id,
            result: { accessToken: 'forged', user: { uid: 'forged' } } }, '*')
        }
      })()`,
    )
    await new Promise((resolve) => setTimeout(resolve, 300))
    await dialog(page).getByRole('button', { name: 'Allow' }).click()
    const auth = await inFrame<Settled<AuthResult>>(frame, 'window.authP')
    assert.equal(auth.ok, true)
    assert.notEqual(auth.value?.accessToken, 'forged')
    assert.equal((await plinth.api('GET', '/v2/me', { token: auth.value?.accessToken ?? '' })).status, 200)
  })

  it('reloading the app closes what it opened, and the reloaded app must authenticate again', async () => {
    const { page, frame } = await openApp()
    await authenticate(page, frame, ['payments'])
    await inFrame(frame, 'window.autoApprove = false')
    await inFrame(frame, `window.settle(Pi.createPayment({ amount: 1, memo: 'Left behind' }, window.paymentCallbacks))`)
    await waitFor(async () => (await events(frame)).some((e) => e.name === 'approval') || undefined, 'the approval callback')
    // The app reloads itself: its new page load speaks with a new session, and what the old one opened closes.
    await inFrame(frame, 'setTimeout(() => location.reload(), 0), 0')
    const reloaded = await waitFor(async () => {
      const current = await (await page.waitForSelector('#app-frame')).contentFrame()
      const ready = await current?.evaluate(`document.readyState === 'complete' && window.events.length === 0`).catch(() => false)
      return ready ? current : undefined
    }, 'the reloaded app')
    assert.equal(await dialog(page).count(), 1, 'the old dialog stays until the new page load speaks')
    await inFrame(reloaded, `Pi.init({ version: '2.0' })`)
    await dialog(page).waitFor({ state: 'detached' })
    assert.deepEqual(await inFrame(reloaded, `Pi.Ads.showAd('rewarded')`), { type: 'rewarded', result: 'USER_UNAUTHENTICATED' })
    assert.equal(
      (
        await inFrame<Settled<unknown>>(
          reloaded,
          `window.settle((async () => Pi.createPayment({ amount: 1, memo: 'x' }, window.paymentCallbacks))())`,
        )
      ).code,
      'not_authenticated',
    )
    // Consent was given before: signing in again needs no dialog.
    assert.equal((await inFrame<Settled<AuthResult>>(reloaded, `window.settle(Pi.authenticate(['payments']))`)).ok, true)
  })

  it("refuses to frame an app served from Plinth's own origin", async () => {
    const user = await plinth.createUser()
    const { page } = await newPage(browser)
    await openSandbox(page, plinth.url, { user: user.user_id, app: fixture.appId, url: `${plinth.url}/docs` })
    await page.locator('#picker-error', { hasText: 'another origin than Plinth' }).waitFor()
    assert.equal(await page.locator('#app-frame').getAttribute('src'), null)
  })

  it('asks for the admin token when the platform has one', async () => {
    const guarded = await startPlinth({ adminToken: 'an-admin-token-of-some-length' })
    try {
      const user = await guarded.createUser()
      const { page, errors } = await newPage(browser)
      await openSandbox(page, guarded.url)
      await page.getByRole('textbox', { name: 'Admin token' }).fill('a-wrong-admin-token-indeed')
      await page.getByRole('button', { name: 'Continue' }).click()
      await page.locator('#admin-error', { hasText: 'admin token' }).waitFor()
      await page.getByRole('textbox', { name: 'Admin token' }).fill('an-admin-token-of-some-length')
      await page.getByRole('button', { name: 'Continue' }).click()
      await page.getByRole('button', { name: `Sign in as ${user.username}` }).click()
      await page.locator('#user-chip', { hasText: user.username }).waitFor()
      assert.ok(
        errors.every((e) => e.includes('401')),
        errors.join('\n'),
      )
    } finally {
      await guarded.close()
    }
  })

  async function walletBalance(address: string): Promise<string> {
    const account = expectStatus(
      await plinth.api<{ balances: Array<{ balance: string }> }>('GET', `/ledger/accounts/${address}`),
      200,
      'account',
    )
    return account.balances[0]?.balance ?? '0'
  }
})
