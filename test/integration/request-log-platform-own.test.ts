/**
 * The platform page's own notification centre is not an app's call (docs/api.md, "Request log";
 * #41 U6): its polls of /v2/client/notifications…, which name themselves with
 * `X-Plinth-Client: platform-page`, stay out of the app's request log, while the same routes
 * called by anyone else, and the page's other /v2 calls (those it makes for the app's SDK), are
 * recorded.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { sandbox, usePlatform } from '../helpers/platform.js'

describe('request log: the platform page’s own notification centre', () => {
  const platform = usePlatform()
  const PAGE = { 'x-plinth-client': 'platform-page' }

  const call = (method: 'GET' | 'PUT', url: string, token: string, headers: Record<string, string> = {}, payload?: unknown) =>
    platform.app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${token}`, ...headers, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
    })
  const logged = async (appId: string) => {
    const page = await platform.app.inject({ method: 'GET', url: `/sandbox/apps/${appId}/requests?limit=200` })
    assert.equal(page.statusCode, 200, page.body)
    return (page.json() as { requests: Array<{ path: string; method: string }> }).requests.map((r) => `${r.method} ${r.path}`)
  }

  it('leaves out the page’s notification calls, and keeps the same calls from anyone else and the page’s other calls', async () => {
    const sb = sandbox(platform.app)
    const shop = await sb.createApp()
    const user = await sb.createUser()
    const { accessToken } = await sb.authenticate(shop.app_id, user.user_id, ['username', 'in_app_notifications'])

    // The page: a poll, the settings read and written, and a call it makes for the SDK.
    for (let i = 0; i < 3; i++) assert.equal((await call('GET', '/v2/client/notifications?limit=20', accessToken, PAGE)).statusCode, 200)
    assert.equal((await call('GET', '/v2/client/notifications/settings', accessToken, PAGE)).statusCode, 200)
    assert.equal((await call('PUT', '/v2/client/notifications/settings', accessToken, PAGE, { enabled: true })).statusCode, 200)
    assert.equal((await call('GET', '/v2/me', accessToken, PAGE)).statusCode, 200)
    // Anyone else (the app's frontend, a script): recorded.
    assert.equal((await call('GET', '/v2/client/notifications?limit=5', accessToken)).statusCode, 200)
    assert.equal((await call('GET', '/v2/client/notifications', accessToken, { 'x-plinth-client': 'console' })).statusCode, 200)

    assert.deepEqual((await logged(shop.app_id)).sort(), ['GET /v2/client/notifications', 'GET /v2/client/notifications', 'GET /v2/me'])
  })
})
