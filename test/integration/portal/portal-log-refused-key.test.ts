/**
 * A mistyped server API key leaves a trace in the portal's request log of the app it belongs to
 * (#41 U21/U22, docs/portal.md): production, the developer reads it at
 * `GET /portal/apps/{app_id}/requests` as a 401 `invalid_api_key` under the app's key, and the
 * log keeps no key.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { adminOf, signedUp } from '../../helpers/accounts.js'
import { usePlatform } from '../../helpers/platform.js'

describe("the portal's request log: a mistyped key", () => {
  const platform = usePlatform({ mode: 'production', requestLog: true })
  const app = () => platform.app

  it("shows the refused call under the app's key, and no key", async () => {
    const dev = await signedUp(app)
    await adminOf(platform).grant(dev.username, 'developer')
    const made = await dev.call('POST', '/portal/apps', { name: 'Log Shop', url: 'https://log.example.com/' })
    assert.equal(made.status, 201, JSON.stringify(made.body))
    const appId = (made.body.app as { app_id: string }).app_id
    const key = await dev.call('POST', `/portal/apps/${appId}/keys`, { name: 'server' })
    assert.equal(key.status, 201, JSON.stringify(key.body))
    const apiKey = String(key.body.api_key)
    const mistyped = `${apiKey.slice(0, -1)}${apiKey.at(-1) === 'A' ? 'B' : 'A'}`
    const refused = await app().inject({
      method: 'GET',
      url: '/v2/payments/incomplete_server_payments',
      headers: { authorization: `Key ${mistyped}` },
    })
    assert.equal(refused.statusCode, 401)
    const log = await dev.call('GET', `/portal/apps/${appId}/requests`)
    assert.equal(log.status, 200, JSON.stringify(log.body))
    const rows = log.body.requests as Array<{ key_id: string | null; status: number; error_code: string | null; path: string }>
    const entry = rows.find((r) => r.path === '/v2/payments/incomplete_server_payments')
    assert.deepEqual([entry?.status, entry?.error_code, entry?.key_id], [401, 'invalid_api_key', String(key.body.key_id)])
    assert.ok(!JSON.stringify(rows).includes(mistyped) && !JSON.stringify(rows).includes(apiKey), 'no key is stored')
  })
})
