/**
 * Production's accounts as users meet them: the platform page that serves them, their absence in
 * sandbox mode, and what a user does with an app (consent, payments). Sign-up, sign-in, sessions
 * and passkeys are in accounts.test.ts.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { accountBrowser, adminOf, freshName, signedUp } from '../../helpers/accounts.js'
import { assertError } from '../../helpers/payments-client.js'
import { usePlatform } from '../../helpers/platform.js'

describe('the platform page (production)', () => {
  const platform = usePlatform({ mode: 'production' })
  const get = (url: string) => platform.app.inject({ method: 'GET', url })

  it('serves the page at / with the sandbox page’s headers, its files under /ui/, and no sandbox page', async () => {
    const page = await get('/')
    assert.equal(page.statusCode, 200)
    assert.equal(page.headers['content-type'], 'text/html; charset=utf-8')
    const csp = String(page.headers['content-security-policy'])
    for (const rule of ["default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'", "form-action 'none'"]) {
      assert.ok(csp.includes(rule), rule)
    }
    assert.equal(page.headers['x-frame-options'], 'DENY')
    assert.doesNotMatch(page.body, /<script>|\son[a-z]+="/, 'no inline script or handler')
    assert.deepEqual((await get('/ui/platform.json')).json(), {
      mode: 'production',
      approval_window_seconds: 60,
      payment_step_up_amount: '100',
      // PLINTH_DEVELOPER_SIGNUP's default (docs/portal.md, "Becoming a developer")
      developer_signup: 'operator',
    })
    for (const file of ['main.js', 'platform.js', 'account/account-panel.js', 'platform.css', 'vendor/webauthn.js']) {
      const response = await get(`/ui/${file}`)
      assert.equal(response.statusCode, 200, file)
      assert.ok(response.headers['content-security-policy'], file)
    }
    assert.match((await get('/ui/vendor/webauthn.js')).body, /SimpleWebAuthnBrowser/)
    for (const url of ['/sandbox/', '/sandbox/ui/main.js', '/console/', '/sandbox/users'])
      assert.equal((await get(url)).statusCode, 404, url)
  })
})

describe('accounts are production only', () => {
  const sandboxPlatform = usePlatform()
  it('answers 404 for /account routes in sandbox mode', async () => {
    const answer = await accountBrowser(() => sandboxPlatform.app).signup(freshName())
    assertError(answer, 404, 'not_found')
  })
})

describe('consent and the user’s payments (production)', () => {
  const platform = usePlatform({ mode: 'production' })
  const app = () => platform.app
  const admin = () => adminOf(platform)

  const world = async () => {
    const developer = await signedUp(app)
    await admin().grant(developer.username, 'developer')
    const shop = await admin().createApp({ owner: developer.username, name: 'Shop', url: 'https://shop.example' })
    const user = await signedUp(app)
    return { shop, user }
  }
  const v2 = (headers: Record<string, string>) => ({
    get: (url: string) => platform.app.inject({ method: 'GET', url, headers }),
    post: (url: string, payload?: unknown) =>
      platform.app.inject({
        method: 'POST',
        url,
        headers: { ...headers, 'content-type': 'application/json' },
        payload: JSON.stringify(payload ?? {}),
      }),
  })

  it('the user allows an app: its token verifies on /v2/me; withdrawing the consent revokes it', async () => {
    const { shop, user } = await world()
    const allowed = await user.call('POST', `/account/apps/${shop.app_id}/authenticate`, { scopes: ['username', 'payments'] })
    assert.equal(allowed.status, 200, JSON.stringify(allowed.body))
    const token = String(allowed.body.accessToken)
    const me = await v2({ authorization: `Bearer ${token}` }).get('/v2/me')
    assert.equal(me.statusCode, 200)
    assert.equal(me.json().username, user.username)
    const account = await user.account()
    assert.deepEqual(
      (account.body.consents as Array<{ app_id: string; scopes: string[] }>).map((c) => [c.app_id, c.scopes]),
      [[shop.app_id, ['payments', 'username']]],
    )
    assertError(await user.call('POST', '/account/apps/app_missing/authenticate', { scopes: [] }), 404, 'app_not_found')

    assert.equal((await user.call('DELETE', `/account/apps/${shop.app_id}/consent`)).status, 200)
    const refused = await v2({ authorization: `Bearer ${token}` }).get('/v2/me')
    assert.equal(refused.statusCode, 401)
    assert.equal(refused.json().error, 'invalid_access_token')
  })

  it('a user-to-app payment: the app creates it with the token, its backend approves, only the user pays, in the account API', async () => {
    const { shop, user } = await world()
    await admin().issue({ target: user.username, amount: '50', reason: 'test money' })
    const token = String((await user.call('POST', `/account/apps/${shop.app_id}/authenticate`, { scopes: ['payments'] })).body.accessToken)
    const client = v2({ authorization: `Bearer ${token}` })
    const server = v2({ authorization: `Key ${shop.api_key}` })
    const created = await client.post('/v2/client/payments', { amount: 3.5, memo: 'a teapot', metadata: { sku: 't1' } })
    assert.equal(created.statusCode, 201, created.body)
    const id = created.json().identifier as string

    // Before the app approves, the user cannot pay it.
    assertError(await user.call('POST', `/account/payments/${id}/pay`), 409, 'not_approved')
    assert.equal((await server.post(`/v2/payments/${id}/approve`)).statusCode, 200)

    // The app's token can read it but cannot pay: 403 in production.
    const bySdk = await client.post(`/v2/client/payments/${id}/submit`)
    assert.equal(bySdk.statusCode, 403)
    assert.equal(bySdk.json().error, 'user_confirmation_required')

    // Another user does not see it.
    const stranger = await signedUp(app)
    assertError(await stranger.call('GET', `/account/payments/${id}`), 404, 'payment_not_found')
    assertError(await stranger.call('POST', `/account/payments/${id}/pay`), 404, 'payment_not_found')

    const shown = await user.call('GET', `/account/payments/${id}`)
    assert.equal(shown.status, 200)
    assert.equal(shown.body.app_name, 'Shop')
    const paid = await user.call('POST', `/account/payments/${id}/pay`)
    assert.equal(paid.status, 200, JSON.stringify(paid.body))
    const txid = (paid.body.transaction as { txid: string }).txid
    assert.match(txid, /^[0-9a-f]{64}$/)
    assert.equal((await server.post(`/v2/payments/${id}/complete`, { txid })).statusCode, 200)
    const balance = ((await user.account()).body.wallet as { balance: string }).balance
    assert.equal(balance, '46.4999900', '50 issued, 3.5 paid, a 0.00001 fee')
    // Paying again replays: nothing moves twice.
    assert.equal((await user.call('POST', `/account/payments/${id}/pay`)).status, 200)
    assert.equal(((await user.account()).body.wallet as { balance: string }).balance, '46.4999900')
  })
})
