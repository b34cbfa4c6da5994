import assert from 'node:assert/strict'
import crypto, { createHash } from 'node:crypto'
import { syncBuiltinESMExports } from 'node:module'
import { after, before, describe, it, mock } from 'node:test'
import { Keypair } from '@stellar/stellar-base'
import { keyPrincipal } from '../../src/http/auth.js'
import { json, SANDBOX_CLIENT, sandbox, startPlatform, type TestPlatform, uniqueName } from '../helpers/platform.js'

const whoami = (app: TestPlatform['app'], key: string) =>
  app.inject({ method: 'GET', url: '/test/whoami', headers: { authorization: `Key ${key}` } })

describe('sandbox API', () => {
  let platform: TestPlatform
  let sb: ReturnType<typeof sandbox>

  before(async () => {
    platform = await startPlatform({
      extend: (app) => app.get('/test/whoami', { config: { auth: 'key' } }, async (request) => keyPrincipal(request)),
    })
    sb = sandbox(platform.app)
  })
  after(() => platform.close())

  const post = (url: string, payload?: unknown) =>
    platform.app.inject({
      method: 'POST',
      url,
      headers: SANDBOX_CLIENT,
      ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }),
    })

  describe('apps', () => {
    it('creates an app on Pi Testnet by default, with a wallet and a working key', async () => {
      const name = uniqueName('shop')
      const app = await sb.createApp(name)
      assert.match(app.app_id, /^app_[0-9a-f]{32}$/)
      assert.equal(app.name, name)
      assert.equal(app.network, 'Pi Testnet')
      assert.equal(Buffer.from(app.api_key, 'base64url').length, 32)
      assert.equal(Keypair.fromSecret(app.wallet.seed).publicKey(), app.wallet.address)
      const response = await whoami(platform.app, app.api_key)
      assert.equal(response.statusCode, 200)
      assert.deepEqual(json(response), { kind: 'key', appId: app.app_id, keyId: app.key_id })
    })

    it('creates an app on Pi Network when asked', async () => {
      assert.equal((await sb.createApp(uniqueName('main'), 'Pi Network')).network, 'Pi Network')
    })

    for (const [what, body] of [
      ['no name', {}],
      ['an empty name', { name: '' }],
      ['a name over 100 characters', { name: 'n'.repeat(101) }],
      ['an unknown network', { name: 'x', network: 'Pi Mainnet' }],
      ['a name of the wrong type', { name: 42 }],
    ] as const) {
      it(`refuses ${what} with 400 invalid_arguments`, async () => {
        const response = await post('/sandbox/apps', body)
        assert.equal(response.statusCode, 400)
        assert.equal(json(response).error, 'invalid_arguments')
      })
    }
  })

  describe('server API keys', () => {
    it('rotates: a second key works, revoking the first leaves the second working', async () => {
      const app = await sb.createApp()
      const second = await sb.createKey(app.app_id)
      assert.notEqual(second.api_key, app.api_key)
      assert.equal((await whoami(platform.app, second.api_key)).statusCode, 200)
      const revoked = await sb.revokeKey(app.app_id, app.key_id)
      assert.equal(revoked.key_id, app.key_id)
      assert.ok(!Number.isNaN(Date.parse(revoked.revoked_at)))
      const refused = await whoami(platform.app, app.api_key)
      assert.equal(refused.statusCode, 401)
      assert.equal(json(refused).error, 'invalid_api_key')
      assert.equal((await whoami(platform.app, second.api_key)).statusCode, 200)
      // Revoking again answers the same revocation.
      assert.deepEqual(await sb.revokeKey(app.app_id, app.key_id), revoked)
    })

    it("cannot revoke another app's key, and says key_not_found", async () => {
      const appA = await sb.createApp()
      const appB = await sb.createApp()
      const response = await platform.app.inject({
        method: 'DELETE',
        url: `/sandbox/apps/${appA.app_id}/keys/${appB.key_id}`,
        headers: SANDBOX_CLIENT,
      })
      assert.equal(response.statusCode, 404)
      assert.equal(json(response).error, 'key_not_found')
      assert.equal((await whoami(platform.app, appB.api_key)).statusCode, 200)
    })

    it('answers an unknown app with 404 app_not_found', async () => {
      const response = await post('/sandbox/apps/app_00000000000000000000000000000000/keys')
      assert.equal(response.statusCode, 404)
      assert.equal(json(response).error, 'app_not_found')
    })
  })

  describe('users', () => {
    it('creates a user with a wallet', async () => {
      const username = uniqueName('pioneer')
      const user = await sb.createUser(username)
      assert.match(user.user_id, /^usr_[0-9a-f]{32}$/)
      assert.equal(user.username, username)
      assert.equal(Keypair.fromSecret(user.wallet.seed).publicKey(), user.wallet.address)
    })

    it('refuses a taken username, regardless of case, with 409 username_taken', async () => {
      const username = uniqueName('Taken')
      await sb.createUser(username)
      for (const again of [username, username.toUpperCase(), username.toLowerCase()]) {
        const response = await post('/sandbox/users', { username: again })
        assert.equal(response.statusCode, 409)
        assert.equal(json(response).error, 'username_taken')
      }
    })

    for (const username of ['ab', 'has space', 'emoji_😀', 'x'.repeat(33), 'semi;colon']) {
      it(`refuses the username ${JSON.stringify(username)} with 400`, async () => {
        const response = await post('/sandbox/users', { username })
        assert.equal(response.statusCode, 400)
        assert.equal(json(response).error, 'invalid_arguments')
      })
    }
  })

  describe('authenticate', () => {
    it('answers an unknown app and an unknown user with 404', async () => {
      const app = await sb.createApp()
      const user = await sb.createUser()
      const noApp = await post('/sandbox/apps/app_missing/authenticate', { user_id: user.user_id, scopes: ['payments'] })
      assert.equal(noApp.statusCode, 404)
      assert.equal(json(noApp).error, 'app_not_found')
      const noUser = await post(`/sandbox/apps/${app.app_id}/authenticate`, { user_id: 'usr_missing', scopes: ['payments'] })
      assert.equal(noUser.statusCode, 404)
      assert.equal(json(noUser).error, 'user_not_found')
    })

    for (const [what, body] of [
      ['an unknown scope', { scopes: ['payments', 'admin'] }],
      ['scopes that are not a list', { scopes: 'payments' }],
      ['no scopes field', {}],
      ['a zero lifetime', { scopes: ['payments'], expires_in: 0 }],
      ['a lifetime over 30 days', { scopes: ['payments'], expires_in: 30 * 86_400 + 1 }],
      ['a fractional lifetime', { scopes: ['payments'], expires_in: 1.5 }],
    ] as const) {
      it(`refuses ${what} with 400 invalid_arguments`, async () => {
        const app = await sb.createApp()
        const user = await sb.createUser()
        const response = await post(`/sandbox/apps/${app.app_id}/authenticate`, { user_id: user.user_id, ...body })
        assert.equal(response.statusCode, 400)
        assert.equal(json(response).error, 'invalid_arguments')
      })
    }

    it('answers revoking an unknown token with 404 token_not_found', async () => {
      const response = await post('/sandbox/tokens/revoke', { accessToken: 'not-a-token' })
      assert.equal(response.statusCode, 404)
      assert.equal(json(response).error, 'token_not_found')
    })
  })

  describe('clock', () => {
    it('tells the platform time and moves it forward', async () => {
      const before = json<{ now: string; timestamp: number; offset_seconds: number }>(
        await platform.app.inject({ method: 'GET', url: '/sandbox/clock' }),
      )
      assert.equal(Date.parse(before.now), before.timestamp * 1000)
      const after = await sb.advanceClock(3600)
      assert.equal(after.offset_seconds, before.offset_seconds + 3600)
      const moved = after.timestamp - before.timestamp
      assert.ok(moved >= 3600 && moved < 3610, `moved ${moved} s`)
    })

    for (const advance of [0, -5, '10', 20 * 366 * 86_400]) {
      it(`refuses advance_seconds ${JSON.stringify(advance)} with 400`, async () => {
        const response = await post('/sandbox/clock', { advance_seconds: advance })
        assert.equal(response.statusCode, 400)
        assert.equal(json(response).error, 'invalid_arguments')
      })
    }
  })
})

describe('sandbox API with PLINTH_ADMIN_TOKEN', () => {
  const adminToken = 'admin-token-of-at-least-16'
  let platform: TestPlatform
  before(async () => {
    platform = await startPlatform({ adminToken })
  })
  after(() => platform.close())

  it('requires the X-Admin-Token header', async () => {
    for (const headers of [{}, { 'x-admin-token': 'wrong-token-wrong-token' }, { authorization: `Bearer ${adminToken}` }]) {
      const response = await platform.app.inject({ method: 'POST', url: '/sandbox/apps', headers, payload: { name: 'x' } })
      assert.equal(response.statusCode, 401)
      assert.equal(json(response).error, 'invalid_admin_token')
    }
    const ok = await platform.app.inject({
      method: 'POST',
      url: '/sandbox/apps',
      headers: { 'x-admin-token': adminToken },
      payload: { name: 'x' },
    })
    assert.equal(ok.statusCode, 201)
  })

  it('checks the X-Admin-Token with crypto.timingSafeEqual over SHA-256 digests, a token of another length too', async () => {
    const timingSafeEqual = mock.method(crypto, 'timingSafeEqual')
    // src/lib/crypto.ts imports it by name: make the named export the spy.
    syncBuiltinESMExports()
    const digest = (text: string) => createHash('sha256').update(text).digest()
    try {
      for (const [given, status] of [
        ['x', 401],
        [`${adminToken}-and-more`, 401],
        [adminToken.replace(/.$/, '!'), 401],
        [adminToken, 201],
      ] as const) {
        const response = await platform.app.inject({
          method: 'POST',
          url: '/sandbox/apps',
          headers: { 'x-admin-token': given },
          payload: { name: 'x' },
        })
        assert.equal(response.statusCode, status, response.body)
        const compared = timingSafeEqual.mock.calls.filter(
          (call) => digest(given).equals(call.arguments[0] as Buffer) && digest(adminToken).equals(call.arguments[1] as Buffer),
        )
        assert.equal(compared.length, 1, `the token of ${given.length} characters is compared once, by digest`)
      }
    } finally {
      timingSafeEqual.mock.restore()
      syncBuiltinESMExports()
    }
  })
})

describe('production mode', () => {
  let platform: TestPlatform
  before(async () => {
    platform = await startPlatform({ mode: 'production' })
  })
  after(() => platform.close())

  it('has no sandbox API at all', async () => {
    for (const [method, url] of [
      ['POST', '/sandbox/apps'],
      ['POST', '/sandbox/users'],
      ['GET', '/sandbox/clock'],
      ['POST', '/sandbox/tokens/revoke'],
    ] as const) {
      const response = await platform.app.inject({ method, url, payload: {} })
      assert.equal(response.statusCode, 404, `${method} ${url}`)
      assert.equal(json(response).error, 'not_found')
    }
    const openapi = json<{ paths: Record<string, unknown> }>(await platform.app.inject({ method: 'GET', url: '/v2/openapi.json' }))
    assert.equal(
      Object.keys(openapi.paths).some((path) => path.startsWith('/sandbox')),
      false,
    )
    assert.ok(openapi.paths['/v2/me'])
  })
})
