import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { loadCredentials } from '../../examples/shop/credentials.js'
import type { PaymentDTO } from '../../examples/shop/plinth.js'
import { createShop } from '../../examples/shop/shop.js'
import { json, type SandboxApp, sandbox, startPlatform, type TestPlatform } from '../helpers/platform.js'

/**
 * The Demo Shop's backend (examples/shop) driven through its own HTTP API, against a Plinth
 * listening on a real port, as it runs with `npm run demo`. What the client SDK would do for the
 * user (consent, the payment dialog, the ad player) is done here with the sandbox and client APIs.
 */

interface ShopState {
  uid: string
  username: string | null
  items: Array<{ id: string; name: string; count: number }>
  coins: number
  pi_rewards: string
}
interface Answer {
  status: number
  body: Record<string, unknown> & { state?: ShopState; error?: string }
}

const SCOPES_ALL = ['username', 'payments', 'wallet_address', 'in_app_notifications']

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

describe('demo shop (examples/shop) against a running Plinth', () => {
  let platform: TestPlatform
  let plinthUrl: string
  let app: SandboxApp
  const shops: Server[] = []
  let shopUrl: string

  const sb = () => sandbox(platform.app)

  before(async () => {
    platform = await startPlatform()
    await platform.app.listen({ port: 0, host: '127.0.0.1' })
    plinthUrl = `http://127.0.0.1:${(platform.app.server.address() as AddressInfo).port}`
    app = await sb().createApp('Demo Shop')
    shopUrl = await startShop({})
  })
  after(async () => {
    for (const server of shops) {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
    await platform.close()
  })

  async function startShop(options: { adVerdictTimeoutMs?: number }): Promise<string> {
    const { server } = createShop({
      plinthUrl,
      apiKey: app.api_key,
      walletSeed: app.wallet.seed,
      adPollIntervalMs: 100,
      adVerdictTimeoutMs: options.adVerdictTimeoutMs ?? 8000,
    })
    shops.push(server)
    return listen(server)
  }

  async function shop(method: string, path: string, options: { session?: string; body?: unknown; url?: string } = {}): Promise<Answer> {
    const response = await fetch(`${options.url ?? shopUrl}${path}`, {
      method,
      headers: {
        ...(options.session === undefined ? {} : { authorization: `Bearer ${options.session}` }),
        ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    })
    return { status: response.status, body: (await response.json()) as Answer['body'] }
  }

  /** A new user who accepted the consent dialog: what Pi.authenticate hands the frontend, then the shop's sign-in. */
  async function signIn(scopes = SCOPES_ALL, url = shopUrl) {
    const user = await sb().createUser()
    const auth = await sb().authenticate(app.app_id, user.user_id, scopes)
    const answer = await shop('POST', '/api/signin', { body: { accessToken: auth.accessToken }, url })
    assert.equal(answer.status, 200, JSON.stringify(answer.body))
    return { user, token: auth.accessToken, uid: auth.user.uid, session: String(answer.body.session), url }
  }

  // What the client SDK does for the user, with the user's access token.
  const client = async (token: string, method: 'GET' | 'POST' | 'PUT', url: string, payload?: object) => {
    const response = await platform.app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${token}` },
      ...(payload ? { payload } : {}),
    })
    return { status: response.statusCode, body: json(response) }
  }
  const startPayment = async (token: string, amount: number, itemId: string) => {
    const created = await client(token, 'POST', '/v2/client/payments', { amount, memo: 'Demo Shop', metadata: { item_id: itemId } })
    assert.equal(created.status, 201, JSON.stringify(created.body))
    return String(created.body.identifier)
  }
  const serverPayment = async (paymentId: string) =>
    json<PaymentDTO>(
      await platform.app.inject({ method: 'GET', url: `/v2/payments/${paymentId}`, headers: { authorization: `Key ${app.api_key}` } }),
    )
  const owned = async (session: string, itemId: string, url = shopUrl) => {
    const me = await shop('GET', '/api/me', { session, url })
    assert.equal(me.status, 200)
    return me.body.state?.items.find((item) => item.id === itemId)?.count
  }
  const balance = async (address: string) => {
    const account = json<{ balances: Array<{ balance: string }> }>(
      await platform.app.inject({ method: 'GET', url: `/ledger/accounts/${address}` }),
    )
    return account.balances[0]?.balance
  }
  const showAd = async (token: string, userAction: 'watched' | 'skipped' = 'watched') =>
    (await client(token, 'POST', '/v2/client/ads/rewarded/show', { user_action: userAction })).body as { result: string; adId?: string }

  it('serves its frontend, which loads the client SDK from Plinth', async () => {
    const page = await fetch(`${shopUrl}/`)
    assert.equal(page.status, 200)
    const html = await page.text()
    assert.ok(html.includes(`<script src="${plinthUrl}/sdk/pi-sdk.js"></script>`))
    const csp = String(page.headers.get('content-security-policy'))
    assert.match(csp, new RegExp(`frame-ancestors 'self' ${plinthUrl}`), 'only the platform frames it')
    assert.match(csp, new RegExp(`script-src 'self' ${plinthUrl}`))
    assert.equal((await fetch(`${shopUrl}/shop.js`)).status, 200)
    assert.equal((await shop('GET', '/api/nope')).status, 404)
    const catalogue = await shop('GET', '/api/catalogue')
    assert.ok(Array.isArray(catalogue.body.items))
  })

  it('signs a user in only with an access token the platform vouches for (GET /v2/me)', async () => {
    const { user, uid, session, token } = await signIn()
    const me = await shop('GET', '/api/me', { session })
    assert.equal(me.body.state?.uid, uid)
    assert.equal(me.body.state?.username, user.username)

    const tampered = `${token.slice(0, -2)}${token.endsWith('AA') ? 'BB' : 'AA'}`
    assert.equal((await shop('POST', '/api/signin', { body: { accessToken: tampered } })).status, 401)
    assert.equal((await shop('POST', '/api/signin', { body: {} })).status, 400)
    await sb().revokeToken(token)
    assert.equal((await shop('POST', '/api/signin', { body: { accessToken: token } })).status, 401)

    assert.equal((await shop('GET', '/api/me')).status, 401)
    assert.equal((await shop('GET', '/api/me', { session: 'not-a-session' })).status, 401)
    assert.equal((await shop('POST', '/api/rewards/pi')).status, 401)
  })

  it('sells an item through U2A: approve, pay, complete; the item is granted only after completion, once', async () => {
    const { token, session } = await signIn()
    const paymentId = await startPayment(token, 3.14, 'pi-mug')

    const approved = await shop('POST', '/api/payments/approve', { session, body: { paymentId } })
    assert.equal(approved.status, 200, JSON.stringify(approved.body))
    assert.equal(approved.body.approved, true)
    assert.equal((await serverPayment(paymentId)).status.developer_approved, true)
    assert.equal(await owned(session, 'pi-mug'), 0, 'nothing on approval')

    // A completion before the user paid is refused by the platform: still nothing.
    const early = await shop('POST', '/api/payments/complete', { session, body: { paymentId, txid: randomBytes(32).toString('hex') } })
    assert.equal(early.status, 409)
    assert.equal(early.body.error, 'verification_failed')
    assert.equal(await owned(session, 'pi-mug'), 0)

    // The user pays in the payment dialog: the platform signs and submits the transaction.
    const paid = await client(token, 'POST', `/v2/client/payments/${paymentId}/submit`)
    assert.equal(paid.status, 200)
    const txid = (paid.body.transaction as { txid: string }).txid

    const completed = await shop('POST', '/api/payments/complete', { session, body: { paymentId, txid } })
    assert.equal(completed.status, 200, JSON.stringify(completed.body))
    assert.equal(completed.body.granted, true)
    assert.equal(await owned(session, 'pi-mug'), 1)
    const payment = await serverPayment(paymentId)
    assert.equal(payment.status.developer_completed, true)
    assert.equal(payment.transaction?.txid, txid)

    // The SDK re-sends its callbacks: a replay grants nothing more.
    assert.equal((await shop('POST', '/api/payments/complete', { session, body: { paymentId, txid } })).status, 200)
    assert.equal((await shop('POST', '/api/payments/approve', { session, body: { paymentId } })).status, 200)
    assert.equal(await owned(session, 'pi-mug'), 1)
  })

  it('grants nothing for a cancelled payment, and cancels one it will not approve', async () => {
    const { token, session } = await signIn()

    // The user cancels in the payment dialog after the shop approved (onCancel).
    const cancelledId = await startPayment(token, 1, 'sticker-pack')
    assert.equal((await shop('POST', '/api/payments/approve', { session, body: { paymentId: cancelledId } })).status, 200)
    assert.equal((await client(token, 'POST', `/v2/client/payments/${cancelledId}/cancel`)).status, 200)
    const cancelled = await shop('POST', '/api/payments/cancel', { session, body: { paymentId: cancelledId } })
    assert.equal(cancelled.status, 200)
    assert.equal(cancelled.body.granted, false)
    assert.equal(await owned(session, 'sticker-pack'), 0)
    const late = await shop('POST', '/api/payments/complete', { session, body: { paymentId: cancelledId, txid: 'a'.repeat(64) } })
    assert.equal(late.status, 409)
    assert.equal(await owned(session, 'sticker-pack'), 0)

    // onError before approval: the shop cancels the payment on the platform.
    const erroredId = await startPayment(token, 1, 'sticker-pack')
    assert.equal((await shop('POST', '/api/payments/cancel', { session, body: { paymentId: erroredId } })).status, 200)
    assert.equal((await serverPayment(erroredId)).status.cancelled, true)

    // A payment of the wrong amount for the item: not approved, and cancelled so it blocks nothing.
    const cheapId = await startPayment(token, 0.01, 'golden-ticket')
    const cheap = await shop('POST', '/api/payments/approve', { session, body: { paymentId: cheapId } })
    assert.equal(cheap.status, 400)
    assert.equal(cheap.body.error, 'wrong_price')
    const cheapPayment = await serverPayment(cheapId)
    assert.equal(cheapPayment.status.developer_approved, false)
    assert.equal(cheapPayment.status.cancelled, true)

    // Another user's payment is unknown to this user.
    const other = await signIn()
    const othersId = await startPayment(other.token, 1, 'sticker-pack')
    assert.equal((await shop('POST', '/api/payments/approve', { session, body: { paymentId: othersId } })).status, 404)
    assert.equal((await serverPayment(othersId)).status.developer_approved, false)
    assert.equal((await shop('POST', '/api/payments/approve', { session, body: { paymentId: 'no-such-payment' } })).status, 404)
  })

  it('finishes a paid but uncompleted purchase reported at sign-in (onIncompletePaymentFound)', async () => {
    const { token, session } = await signIn()
    const paymentId = await startPayment(token, 1, 'sticker-pack')
    await shop('POST', '/api/payments/approve', { session, body: { paymentId } })
    assert.equal((await client(token, 'POST', `/v2/client/payments/${paymentId}/submit`)).status, 200)
    // The shop never heard onReadyForServerCompletion (the page closed): the SDK reports the payment at the next sign-in.
    const incomplete = await client(token, 'GET', '/v2/client/payments/incomplete')
    assert.equal((incomplete.body.payment as { identifier: string }).identifier, paymentId)
    const finished = await shop('POST', '/api/payments/incomplete', { session, body: { paymentId } })
    assert.equal(finished.status, 200, JSON.stringify(finished.body))
    assert.equal(finished.body.granted, true)
    assert.equal(await owned(session, 'sticker-pack'), 1)
    assert.equal((await serverPayment(paymentId)).status.developer_completed, true)
  })

  it('pays a Pi reward through A2U: create, sign and submit from the app wallet, complete', async () => {
    const { user, session, uid } = await signIn()
    const before = await balance(user.wallet.address)

    const reward = await shop('POST', '/api/rewards/pi', { session })
    assert.equal(reward.status, 200, JSON.stringify(reward.body))
    assert.equal(reward.body.amount, 0.5)
    assert.equal(reward.body.state?.pi_rewards, '0.5')
    const payment = await serverPayment(String(reward.body.paymentId))
    assert.equal(payment.direction, 'app_to_user')
    assert.equal(payment.user_uid, uid)
    assert.equal(payment.from_address, app.wallet.address)
    assert.equal(payment.status.developer_completed, true)
    assert.equal(payment.transaction?.txid, reward.body.txid)
    assert.equal(payment.transaction?.verified, true)
    assert.equal(await balance(user.wallet.address), (Number(before) + 0.5).toFixed(7))

    // A reward left half-done (created, never paid) is finished by the next claim, not duplicated.
    const stuck = await platform.app.inject({
      method: 'POST',
      url: '/v2/payments',
      headers: { authorization: `Key ${app.api_key}` },
      payload: { payment: { amount: 0.5, memo: 'Demo Shop reward', metadata: { kind: 'reward' }, uid } },
    })
    assert.equal(stuck.statusCode, 200)
    const again = await shop('POST', '/api/rewards/pi', { session })
    assert.equal(again.status, 200, JSON.stringify(again.body))
    assert.equal(again.body.paymentId, json<PaymentDTO>(stuck).identifier)
    assert.equal(again.body.state?.pi_rewards, '1')
    assert.equal(await balance(user.wallet.address), (Number(before) + 1).toFixed(7))

    const check = json<{ ok: boolean }>(await platform.app.inject({ method: 'GET', url: '/sandbox/ledger/check' }))
    assert.equal(check.ok, true)
  })

  it('pays no Pi reward to a user who did not share a wallet address', async () => {
    const { session } = await signIn(['username', 'payments'])
    const refused = await shop('POST', '/api/rewards/pi', { session })
    assert.equal(refused.status, 403)
    assert.equal(refused.body.error, 'missing_scope')
    const open = json<{ incomplete_server_payments: unknown[] }>(
      await platform.app.inject({
        method: 'GET',
        url: '/v2/payments/incomplete_server_payments',
        headers: { authorization: `Key ${app.api_key}` },
      }),
    )
    assert.deepEqual(open.incomplete_server_payments, [])
  })

  it('rewards a watched ad only once the ad network says granted', async () => {
    const { token, session } = await signIn()
    const watched = await showAd(token)
    assert.equal(watched.result, 'AD_REWARDED')
    // The mediator grants about 2 s after the ad: the shop waits for its verdict.
    const granted = await shop('POST', '/api/ads/reward', { session, body: { adId: watched.adId } })
    assert.equal(granted.status, 200, JSON.stringify(granted.body))
    assert.equal(granted.body.granted, true)
    assert.equal(granted.body.state?.coins, 10)
    const replay = await shop('POST', '/api/ads/reward', { session, body: { adId: watched.adId } })
    assert.equal(replay.status, 409, 'an ad pays once')

    // The ad network fails the next ad: no reward.
    const script = await platform.app.inject({
      method: 'PUT',
      url: `/sandbox/apps/${app.app_id}/ads/script`,
      payload: { result: 'AD_REWARDED', mediator_ack_status: 'failed', count: 1 },
    })
    assert.equal(script.statusCode, 200)
    const failedAd = await showAd(token)
    assert.equal(failedAd.result, 'AD_REWARDED')
    const failed = await shop('POST', '/api/ads/reward', { session, body: { adId: failedAd.adId } })
    assert.equal(failed.status, 200)
    assert.equal(failed.body.granted, false)
    assert.equal(failed.body.status, 'failed')
    assert.equal(failed.body.state?.coins, 10)

    // A skipped ad has no adId; an unknown one is refused.
    const skipped = await showAd(token, 'skipped')
    assert.equal(skipped.result, 'AD_CLOSED')
    assert.equal(skipped.adId, undefined)
    assert.equal((await shop('POST', '/api/ads/reward', { session, body: { adId: 'no-such-ad' } })).status, 404)
    assert.equal((await owned(session, 'sticker-pack')) ?? -1, 0)
    assert.equal((await shop('GET', '/api/me', { session })).body.state?.coins, 10)
  })

  it('waits for a pending verdict without granting, and grants when the ad is granted later', async () => {
    const impatientUrl = await startShop({ adVerdictTimeoutMs: 600 })
    const { token, session } = await signIn(SCOPES_ALL, impatientUrl)
    await platform.app.inject({
      method: 'PUT',
      url: `/sandbox/apps/${app.app_id}/ads/script`,
      payload: { result: 'AD_REWARDED', mediator_ack_status: 'pending', count: 1 },
    })
    const ad = await showAd(token)
    const pending = await shop('POST', '/api/ads/reward', { session, body: { adId: ad.adId }, url: impatientUrl })
    assert.equal(pending.status, 200)
    assert.equal(pending.body.granted, false)
    assert.equal(pending.body.status, null)
    assert.equal(pending.body.state?.coins, 0)

    const moved = await platform.app.inject({
      method: 'POST',
      url: `/sandbox/ads/${ad.adId}/status`,
      payload: { mediator_ack_status: 'granted' },
    })
    assert.equal(moved.statusCode, 200)
    const later = await shop('POST', '/api/ads/reward', { session, body: { adId: ad.adId }, url: impatientUrl })
    assert.equal(later.body.granted, true)
    assert.equal(later.body.state?.coins, 10)
  })

  it("sends a notification to the user's notification centre", async () => {
    const { user, token, session } = await signIn()
    const sent = await shop('POST', '/api/notify', { session })
    assert.equal(sent.status, 200, JSON.stringify(sent.body))
    assert.equal(sent.body.delivered, true)
    const centre = json<{ notifications: Array<{ title: string; app_id: string }> }>(
      await platform.app.inject({ method: 'GET', url: `/sandbox/users/${user.user_id}/notifications?app_id=${app.app_id}` }),
    )
    assert.equal(centre.notifications.length, 1)
    assert.equal(centre.notifications[0]?.title, 'Hello from Demo Shop')

    // The user turns this app's notifications off: nothing is delivered.
    assert.equal((await client(token, 'PUT', '/v2/client/notifications/settings', { enabled: false })).status, 200)
    const off = await shop('POST', '/api/notify', { session })
    assert.equal(off.status, 200)
    assert.equal(off.body.delivered, false)

    const withoutScope = await signIn(['username', 'payments'])
    const refused = await shop('POST', '/api/notify', { session: withoutScope.session })
    assert.equal(refused.status, 403)
    assert.equal(refused.body.error, 'missing_scope')
  })

  it('creates its app on first run, keeps the credentials in a file of mode 600, and recreates the app when its key is refused', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'shop-credentials-'))
    const file = join(dir, '.shop-credentials.json')
    try {
      const options = { plinthUrl, file, shopUrl: 'http://127.0.0.1:3999/', env: {} }
      const first = await loadCredentials(options)
      assert.equal(first.source, 'created')
      assert.equal(statSync(file).mode & 0o777, 0o600)
      assert.equal(JSON.parse(readFileSync(file, 'utf8')).apiKey, first.credentials.apiKey)
      const created = json<{ name: string; url: string }>(
        await platform.app.inject({ method: 'GET', url: `/sandbox/apps/${first.credentials.appId}` }),
      )
      assert.equal(created.name, 'Demo Shop')
      assert.equal(created.url, 'http://127.0.0.1:3999/')

      const second = await loadCredentials(options)
      assert.equal(second.source, 'file')
      assert.equal(second.credentials.apiKey, first.credentials.apiKey)

      const detail = json<{ keys: Array<{ key_id: string }> }>(
        await platform.app.inject({ method: 'GET', url: `/sandbox/apps/${first.credentials.appId}` }),
      )
      for (const key of detail.keys) await sb().revokeKey(String(first.credentials.appId), key.key_id)
      const third = await loadCredentials(options)
      assert.equal(third.source, 'created')
      assert.notEqual(third.credentials.appId, first.credentials.appId)

      const fromEnv = await loadCredentials({ ...options, env: { SHOP_API_KEY: 'k', SHOP_WALLET_SEED: 's', SHOP_APP_ID: 'app_x' } })
      assert.deepEqual(fromEnv, { source: 'environment', credentials: { plinthUrl, appId: 'app_x', apiKey: 'k', walletSeed: 's' } })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
