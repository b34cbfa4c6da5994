import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { Static } from 'typebox'
import { keyPrincipal } from '../../src/http/auth.js'
import type { UserDTOSchema } from '../../src/identity/me-routes.js'
import { type AuthFixture, authCases } from '../helpers/auth-cases.js'
import { SANDBOX_CLIENT, sandbox, startPlatform, TEST_DB, type TestPlatform } from '../helpers/platform.js'

type UserDTO = Static<typeof UserDTOSchema>

describe('GET /v2/me', () => {
  let platform: TestPlatform
  let fixture: AuthFixture
  let sb: ReturnType<typeof sandbox>

  before(async () => {
    platform = await startPlatform({
      // A key-protected route, so the shared key cases run against the real auth mechanism.
      extend: (app) => app.get('/test/whoami', { config: { auth: 'key' } }, async (request) => keyPrincipal(request)),
    })
    sb = sandbox(platform.app)
    const app = await sb.createApp()
    const user = await sb.createUser()
    const revokedKey = await sb.createKey(app.app_id)
    await sb.revokeKey(app.app_id, revokedKey.key_id)
    const { accessToken } = await sb.authenticate(app.app_id, user.user_id)
    const revoked = await sb.authenticate(app.app_id, user.user_id)
    await sb.revokeToken(revoked.accessToken)
    fixture = { app: platform.app, apiKey: app.api_key, accessToken, revokedKey: revokedKey.api_key, revokedToken: revoked.accessToken }
  })
  after(() => platform.close())

  const me = (token: string) => platform.app.inject({ method: 'GET', url: '/v2/me', headers: { authorization: `Bearer ${token}` } })

  describe('authentication', () => {
    authCases('token', { method: 'GET', url: '/v2/me' }, () => fixture)
    authCases('key', { method: 'GET', url: '/test/whoami' }, () => fixture)
  })

  it('returns the UserDTO with username when the username scope was granted', async () => {
    const app = await sb.createApp()
    const user = await sb.createUser()
    const auth = await sb.authenticate(app.app_id, user.user_id, ['username', 'payments'], 600)
    const response = await me(auth.accessToken)
    assert.equal(response.statusCode, 200)
    assert.match(String(response.headers['content-type'] ?? ''), /^application\/json/)
    const body = response.json() as UserDTO
    assert.deepEqual(Object.keys(body).sort(), ['credentials', 'uid', 'username'])
    assert.equal(body.uid, auth.user.uid)
    assert.equal(body.username, user.username)
    assert.deepEqual(body.credentials.scopes, ['payments', 'username'])
    const { timestamp, iso8601 } = body.credentials.valid_until
    assert.ok(Number.isInteger(timestamp), 'timestamp is whole seconds')
    assert.equal(new Date(iso8601).getTime(), timestamp * 1000, 'timestamp and iso8601 name the same instant')
    assert.equal(iso8601, auth.expires_at)
    const expected = Math.floor(platform.clock.now().getTime() / 1000) + 600
    assert.ok(Math.abs(timestamp - expected) <= 2, `expires ${timestamp}, expected about ${expected}`)
  })

  it('leaves username out when the username scope was not granted', async () => {
    const app = await sb.createApp()
    const user = await sb.createUser()
    const auth = await sb.authenticate(app.app_id, user.user_id, ['payments'])
    assert.equal(auth.user.username, undefined)
    const body = (await me(auth.accessToken)).json() as UserDTO
    assert.equal(body.username, undefined)
    assert.equal('username' in body, false)
    assert.deepEqual(body.credentials.scopes, ['payments'])
  })

  it('gives the same user a different uid in each app, and the same uid again in one app', async () => {
    const appA = await sb.createApp()
    const appB = await sb.createApp()
    const user = await sb.createUser()
    const a1 = await sb.authenticate(appA.app_id, user.user_id)
    const a2 = await sb.authenticate(appA.app_id, user.user_id, ['payments'])
    const b = await sb.authenticate(appB.app_id, user.user_id)
    assert.equal(a1.user.uid, a2.user.uid)
    assert.notEqual(a1.user.uid, b.user.uid)
    assert.match(a1.user.uid, /^[0-9a-f-]{36}$/)
    assert.notEqual(a1.user.uid, user.user_id)
    assert.equal(((await me(b.accessToken)).json() as UserDTO).uid, b.user.uid)
  })

  it("does not let app A's token act as app B: the uid it proves is app A's", async () => {
    const appA = await sb.createApp()
    const appB = await sb.createApp()
    const user = await sb.createUser()
    const a = await sb.authenticate(appA.app_id, user.user_id)
    const b = await sb.authenticate(appB.app_id, user.user_id)
    const body = (await me(a.accessToken)).json() as UserDTO
    assert.equal(body.uid, a.user.uid)
    assert.notEqual(body.uid, b.user.uid)
  })

  it('refuses a token once the platform clock passes its expiry, with token_expired', async () => {
    const app = await sb.createApp()
    const user = await sb.createUser()
    const auth = await sb.authenticate(app.app_id, user.user_id, ['username'], 60)
    assert.equal((await me(auth.accessToken)).statusCode, 200)
    // Fifteen seconds of margin: on a loaded machine, wall time passes between the steps too.
    await sb.advanceClock(45)
    assert.equal((await me(auth.accessToken)).statusCode, 200, 'still valid before expiry')
    await sb.advanceClock(16)
    const response = await me(auth.accessToken)
    assert.equal(response.statusCode, 401)
    assert.equal((response.json() as { error: string }).error, 'token_expired')
  })

  it('refuses a revoked token, and revoking one token leaves the others working', async () => {
    const app = await sb.createApp()
    const user = await sb.createUser()
    const first = await sb.authenticate(app.app_id, user.user_id)
    const second = await sb.authenticate(app.app_id, user.user_id)
    await sb.revokeToken(first.accessToken)
    const response = await me(first.accessToken)
    assert.equal(response.statusCode, 401)
    assert.equal((response.json() as { error: string }).error, 'invalid_access_token')
    assert.equal((await me(second.accessToken)).statusCode, 200)
    // Revoking again is idempotent.
    assert.deepEqual(await sb.revokeToken(first.accessToken), { revoked: true })
  })

  it('keeps scopes per token: a later grant adds consent but does not widen an earlier token', async () => {
    const app = await sb.createApp()
    const user = await sb.createUser()
    const narrow = await sb.authenticate(app.app_id, user.user_id, ['payments'])
    await sb.authenticate(app.app_id, user.user_id, ['username', 'in_app_notifications'])
    const body = (await me(narrow.accessToken)).json() as UserDTO
    assert.deepEqual(body.credentials.scopes, ['payments'])
    assert.equal(body.username, undefined)
  })
})

describe('credential cache and revocation across processes', () => {
  let platform: TestPlatform
  before(async () => {
    platform = await startPlatform()
  })
  after(() => platform.close())

  const me = (app: TestPlatform['app'], token: string) =>
    app.inject({ method: 'GET', url: '/v2/me', headers: { authorization: `Bearer ${token}` } })

  it('withdrawing consent ends every token of the user for that app, and only that app', async () => {
    const sb = sandbox(platform.app)
    const appA = await sb.createApp()
    const appB = await sb.createApp()
    const user = await sb.createUser()
    const a1 = await sb.authenticate(appA.app_id, user.user_id, ['username'])
    const a2 = await sb.authenticate(appA.app_id, user.user_id, ['payments'])
    const b = await sb.authenticate(appB.app_id, user.user_id, ['username'])
    for (const token of [a1, a2, b]) assert.equal((await me(platform.app, token.accessToken)).statusCode, 200, 'cached')
    const withdrawn = await platform.app.inject({
      method: 'DELETE',
      url: `/sandbox/apps/${appA.app_id}/users/${user.user_id}/consent`,
      headers: SANDBOX_CLIENT,
    })
    assert.deepEqual(withdrawn.json(), { withdrawn: true })
    assert.equal((await me(platform.app, a1.accessToken)).statusCode, 401)
    assert.equal((await me(platform.app, a2.accessToken)).statusCode, 401)
    assert.equal((await me(platform.app, b.accessToken)).statusCode, 200)
    const again = await sb.authenticate(appA.app_id, user.user_id, ['username'])
    assert.equal(again.user.uid, a1.user.uid, 'the uid stays')
    assert.equal((await me(platform.app, again.accessToken)).statusCode, 200)
    const unknown = await platform.app.inject({
      method: 'DELETE',
      url: `/sandbox/apps/${appB.app_id}/users/usr_nobody/consent`,
      headers: SANDBOX_CLIENT,
    })
    assert.equal(unknown.statusCode, 404)
  })

  it('a revocation made by another process takes effect here within a second', {
    skip: TEST_DB !== 'postgres' && 'PGlite is one process',
  }, async () => {
    const other = await startPlatform({ sharing: platform })
    try {
      const sb = sandbox(platform.app)
      const app = await sb.createApp()
      const user = await sb.createUser()
      const token = await sb.authenticate(app.app_id, user.user_id, ['username'])
      const member = await sb.authenticate(app.app_id, user.user_id, ['username'])
      // Both processes have verified (and cached) both tokens.
      for (const t of [token, member]) {
        assert.equal((await me(platform.app, t.accessToken)).statusCode, 200)
        assert.equal((await me(other.app, t.accessToken)).statusCode, 200)
      }
      for (const [revoke, victim] of [
        [() => sandbox(other.app).revokeToken(token.accessToken), token],
        [
          () =>
            other.app.inject({
              method: 'DELETE',
              url: `/sandbox/apps/${app.app_id}/users/${user.user_id}/consent`,
              headers: SANDBOX_CLIENT,
            }),
          member,
        ],
      ] as const) {
        await revoke()
        const revokedAt = Date.now()
        let status = 200
        while (status === 200 && Date.now() - revokedAt < 3000) {
          status = (await me(platform.app, victim.accessToken)).statusCode
          if (status === 200) await new Promise((resolve) => setTimeout(resolve, 20))
        }
        const took = Date.now() - revokedAt
        assert.equal(status, 401)
        assert.ok(took <= 1000, `refused after ${took} ms`)
      }
    } finally {
      await other.close()
    }
  })
})
