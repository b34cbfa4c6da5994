import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { json, type SandboxApp, sandbox, startPlatform, type TestPlatform } from '../helpers/platform.js'

interface Overview {
  app_id: string
  name: string
  payments: { count: number; volume: string; by_state: Array<{ state: string; count: number; volume: string }> }
  last_hour: { requests: number; client_errors: number; server_errors: number; error_rate: number | null }
  totals: { payments: number; users: number; requests: number; ads: number; notifications: number; active_keys: number }
  request_log_enabled: boolean
}

describe("GET /sandbox/apps/{app_id}/overview: an app's payments by state, last hour's error rate, list totals", () => {
  let platform: TestPlatform
  let shop: SandboxApp
  before(async () => {
    platform = await startPlatform({ approvalWindowSeconds: 3600 })
    const sb = sandbox(platform.app)
    shop = await sb.createApp()
  })
  after(() => platform.close())

  const overview = async (appId: string) => {
    const answer = await platform.app.inject({ method: 'GET', url: `/sandbox/apps/${appId}/overview` })
    assert.equal(answer.statusCode, 200, answer.body)
    return json<Overview>(answer)
  }
  const key = () => ({ authorization: `Key ${shop.api_key}` })

  it('starts at zero: every state listed, no calls, no rate', async () => {
    const empty = await overview(shop.app_id)
    assert.deepEqual(
      empty.payments.by_state.map((s) => [s.state, s.count, s.volume]),
      ['created', 'approved', 'transaction_linked', 'verified', 'completed', 'cancelled'].map((s) => [s, 0, '0']),
    )
    assert.equal(empty.payments.volume, '0')
    assert.deepEqual(empty.last_hour, { requests: 0, client_errors: 0, server_errors: 0, error_rate: null })
    assert.equal(empty.totals.active_keys, 1)
    assert.equal(empty.request_log_enabled, true)
  })

  it('counts payments and sums their amounts exactly by state; counts 4xx and 5xx of the last hour only', async () => {
    const sb = sandbox(platform.app)
    const amounts = ['0.1', '0.2', '1.0000001']
    const ids: string[] = []
    for (const amount of amounts) {
      const user = await sb.createUser()
      const { accessToken } = await sb.authenticate(shop.app_id, user.user_id)
      const created = await platform.app.inject({
        method: 'POST',
        url: '/v2/client/payments',
        headers: { authorization: `Bearer ${accessToken}` },
        payload: { amount: Number(amount), memo: 'm', metadata: {} },
      })
      assert.equal(created.statusCode, 201, created.body)
      ids.push(json<{ identifier: string }>(created).identifier)
    }
    assert.equal((await platform.app.inject({ method: 'POST', url: `/v2/payments/${ids[0]}/approve`, headers: key() })).statusCode, 200)
    assert.equal((await platform.app.inject({ method: 'POST', url: `/v2/payments/${ids[1]}/cancel`, headers: key() })).statusCode, 200)
    // Two refusals (404 and 409) among six calls so far: the five /v2 calls above and this one.
    assert.equal((await platform.app.inject({ method: 'GET', url: '/v2/payments/none', headers: key() })).statusCode, 404)
    assert.equal((await platform.app.inject({ method: 'POST', url: `/v2/payments/${ids[1]}/approve`, headers: key() })).statusCode, 409)

    const seen = await overview(shop.app_id)
    const state = (name: string) => seen.payments.by_state.find((s) => s.state === name)
    assert.deepEqual(state('created'), { state: 'created', count: 1, volume: '1.0000001' })
    assert.deepEqual(state('approved'), { state: 'approved', count: 1, volume: '0.1' })
    assert.deepEqual(state('cancelled'), { state: 'cancelled', count: 1, volume: '0.2' })
    assert.equal(seen.payments.count, 3)
    assert.equal(seen.payments.volume, '1.3000001', 'summed as decimals, not floats')
    assert.deepEqual(seen.last_hour, { requests: 7, client_errors: 2, server_errors: 0, error_rate: 0.2857 })
    assert.deepEqual(
      { payments: seen.totals.payments, users: seen.totals.users, requests: seen.totals.requests },
      { payments: 3, users: 3, requests: 7 },
    )

    // An hour and more later (platform time), the calls are out of the window; the payments stay.
    await sb.advanceClock(3601)
    const later = await overview(shop.app_id)
    assert.deepEqual(later.last_hour, { requests: 0, client_errors: 0, server_errors: 0, error_rate: null })
    assert.equal(later.totals.requests, 7)
    // The approved payment's window (an hour) passed: it reads as cancelled, as the payments API answers.
    assert.equal(later.payments.by_state.find((s) => s.state === 'cancelled')?.count, 2)
  })

  it('is 404 app_not_found for an unknown app', async () => {
    const answer = await platform.app.inject({ method: 'GET', url: '/sandbox/apps/app_none/overview' })
    assert.equal(answer.statusCode, 404)
    assert.equal(json(answer).error, 'app_not_found')
  })
})

describe('list totals', () => {
  let platform: TestPlatform
  before(async () => {
    platform = await startPlatform()
  })
  after(() => platform.close())

  it('apps, payments and the request log answer a total of every match, as users do', async () => {
    const sb = sandbox(platform.app)
    const shop = await sb.createApp()
    await sb.createApp()
    const apps = json<{ apps: unknown[]; total: number }>(await platform.app.inject({ method: 'GET', url: '/sandbox/apps?limit=1' }))
    assert.equal(apps.apps.length, 1)
    assert.ok(apps.total >= 2, 'both apps are counted')
    assert.equal(apps.total, (await platform.db.selectFrom('apps').select('id').execute()).length)
    const payments = json<{ total: number }>(
      await platform.app.inject({ method: 'GET', url: `/sandbox/apps/${shop.app_id}/payments?limit=1` }),
    )
    assert.equal(payments.total, 0)
    const requests = json<{ total: number }>(await platform.app.inject({ method: 'GET', url: `/sandbox/apps/${shop.app_id}/requests` }))
    assert.equal(requests.total, 0)
  })
})
