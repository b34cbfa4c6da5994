import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { json, sandbox, startPlatform, type TestPlatform, uniqueName } from '../helpers/platform.js'

describe('sandbox views', () => {
  let platform: TestPlatform
  before(async () => {
    platform = await startPlatform()
  })
  after(() => platform.close())
  const get = async <T = Record<string, unknown>>(url: string) => {
    const response = await platform.app.inject({ method: 'GET', url })
    return { status: response.statusCode, body: json<T>(response) }
  }

  it("shows apps with their URL and keys, users with their consent, and each app's payments, ads and notifications", async () => {
    const sb = sandbox(platform.app)
    const created = await platform.app.inject({
      method: 'POST',
      url: '/sandbox/apps',
      payload: { name: 'Shop', url: 'http://localhost:3000/' },
    })
    assert.equal(created.statusCode, 201)
    const app = json<{ app_id: string; api_key: string; key_id: string; url: string }>(created)
    assert.equal(app.url, 'http://localhost:3000/')
    const badUrl = await platform.app.inject({
      method: 'POST',
      url: '/sandbox/apps',
      payload: { name: 'Shop', url: 'javascript:alert(1)' },
    })
    assert.equal(badUrl.statusCode, 400)
    await sb.revokeKey(app.app_id, app.key_id)

    const apps = await get<{ apps: Array<{ app_id: string; url: string | null }> }>('/sandbox/apps')
    assert.equal(apps.body.apps.find((a) => a.app_id === app.app_id)?.url, 'http://localhost:3000/')
    const detail = await get<{ keys: Array<{ key_id: string; prefix: string; revoked_at: string | null }> }>(`/sandbox/apps/${app.app_id}`)
    assert.equal(detail.body.keys.length, 1)
    assert.equal(detail.body.keys[0]?.prefix, app.api_key.slice(0, 8))
    assert.ok(detail.body.keys[0]?.revoked_at)
    assert.equal(JSON.stringify(detail.body).includes(app.api_key), false, 'never the key itself')
    assert.equal((await get('/sandbox/apps/app_nope')).status, 404)

    const username = uniqueName('viewer')
    const user = await sb.createUser(username)
    const found = await get<{ users: Array<{ user_id: string }> }>(`/sandbox/users?username=${username.toUpperCase()}`)
    assert.deepEqual(
      found.body.users.map((u) => u.user_id),
      [user.user_id],
    )
    const key = await sb.createKey(app.app_id)
    const auth = await sb.authenticate(app.app_id, user.user_id, ['username', 'payments', 'in_app_notifications'])
    const member = await get<{ apps: Array<{ app_id: string; uid: string; scopes: string[]; notifications_enabled: boolean }> }>(
      `/sandbox/users/${user.user_id}`,
    )
    assert.deepEqual(member.body.apps, [
      {
        app_id: app.app_id,
        name: 'Shop',
        uid: auth.user.uid,
        scopes: ['in_app_notifications', 'payments', 'username'],
        notifications_enabled: true,
      },
    ])

    const bearer = { authorization: `Bearer ${auth.accessToken}` }
    await platform.app.inject({
      method: 'POST',
      url: '/v2/client/payments',
      headers: bearer,
      payload: { amount: 1, memo: 'm', metadata: {} },
    })
    const ad = json<{ adId: string }>(await platform.app.inject({ method: 'POST', url: '/v2/client/ads/rewarded/show', headers: bearer }))
    await platform.app.inject({
      method: 'POST',
      url: '/v2/in_app_notifications/notify',
      headers: { authorization: `Key ${key.api_key}` },
      payload: { notifications: [{ title: 't', body: 'b', user_uid: auth.user.uid, subroute: '/' }] },
    })
    const payments = await get<{ payments: Array<{ user_id: string; direction: string }> }>(`/sandbox/apps/${app.app_id}/payments`)
    assert.deepEqual(
      payments.body.payments.map((p) => [p.user_id, p.direction]),
      [[user.user_id, 'user_to_app']],
    )
    const ads = await get<{ ads: Array<{ identifier: string }> }>(`/sandbox/apps/${app.app_id}/ads`)
    assert.deepEqual(
      ads.body.ads.map((a) => a.identifier),
      [ad.adId],
    )
    const notes = await get<{ notifications: Array<{ user_uid: string }> }>(`/sandbox/apps/${app.app_id}/notifications`)
    assert.deepEqual(
      notes.body.notifications.map((n) => n.user_uid),
      [auth.user.uid],
    )
  })
})
