import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { json, sandbox, startPlatform, type TestPlatform } from '../helpers/platform.js'

/** The sandbox API the console reads: checklist, ad scripts and ad status, validation messages a person can act on. */
describe('sandbox API for the console', () => {
  let platform: TestPlatform
  before(async () => {
    platform = await startPlatform()
  })
  after(() => platform.close())
  const inject = async (method: string, url: string, payload?: unknown, headers: Record<string, string> = {}) => {
    const response = await platform.app.inject({
      method: method as 'GET',
      url,
      headers,
      ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }),
    })
    return { status: response.statusCode, body: json(response) }
  }

  it('says what to type when a clock move or a name is refused', async () => {
    const tooFar = await inject('POST', '/sandbox/clock', { advance_seconds: 400_000_000 })
    assert.equal(tooFar.status, 400)
    assert.equal(tooFar.body.error, 'invalid_arguments')
    assert.match(
      String(tooFar.body.error_message),
      /^body\/advance_seconds must be at most 316,224,000 \(in seconds: an hour is 3,600, a day 86,400; at most 3660 days/,
    )
    const text = await inject('POST', '/sandbox/clock', { advance_seconds: '36h' })
    assert.match(String(text.body.error_message), /must be a number \(in seconds/)
    const name = await inject('POST', '/sandbox/apps', { name: 'n'.repeat(300) })
    assert.match(String(name.body.error_message), /body\/name must be at most 60 characters/)
    const limit = await inject('GET', '/sandbox/users?limit=500')
    assert.equal(limit.body.error_message, 'querystring/limit must be at most 200')
    // The /v2 routes keep their messages and shape.
    const v2 = await inject('POST', '/v2/payments/x/complete', { txid: 'nope' }, { authorization: 'Key x' })
    assert.equal(v2.status, 401)
  })

  it("funds an app's wallet through the ledger's fund route, with the app's address", async () => {
    const app = await sandbox(platform.app).createApp()
    const before = await inject('GET', `/ledger/accounts/${app.wallet.address}`)
    const balance = (body: Record<string, unknown>) => Number((body.balances as Array<{ balance: string }>)[0]?.balance)
    const funded = await inject('POST', '/sandbox/ledger/fund', { address: app.wallet.address, amount: '12.5' })
    assert.equal(funded.status, 200)
    const after = await inject('GET', `/ledger/accounts/${app.wallet.address}`)
    assert.equal(balance(after.body), balance(before.body) + 12.5)
  })

  it('derives the setup checklist from the data', async () => {
    const sb = sandbox(platform.app)
    const app = await sb.createApp()
    const user = await sb.createUser()
    const before = await inject('GET', `/sandbox/apps/${app.app_id}/checklist`)
    assert.equal(before.status, 200)
    assert.equal((before.body.key_made as { done: boolean }).done, true)
    assert.deepEqual(before.body.url_set, { done: false, at: null })
    assert.deepEqual(before.body.first_me, { done: false, at: null })
    assert.deepEqual(before.body.first_approve, { done: false, at: null })
    const { accessToken } = await sb.authenticate(app.app_id, user.user_id)
    assert.equal((await inject('GET', '/v2/me', undefined, { authorization: `Bearer ${accessToken}` })).status, 200)
    const created = await inject(
      'POST',
      '/v2/client/payments',
      { amount: 1, memo: 'm', metadata: {} },
      { authorization: `Bearer ${accessToken}` },
    )
    await inject('POST', `/v2/payments/${created.body.identifier}/approve`, undefined, { authorization: `Key ${app.api_key}` })
    await inject('PATCH', `/sandbox/apps/${app.app_id}`, { url: 'http://127.0.0.1:3999/' })
    const after = await inject('GET', `/sandbox/apps/${app.app_id}/checklist`)
    assert.equal((after.body.url_set as { done: boolean }).done, true)
    assert.equal((after.body.first_me as { done: boolean }).done, true)
    assert.equal((after.body.first_approve as { done: boolean }).done, true)
    assert.deepEqual(after.body.first_complete, { done: false, at: null })
    assert.equal((await inject('GET', '/sandbox/apps/app_nope/checklist')).status, 404)
  })

  it('reads the active ad script, and refuses a script for a user that does not exist', async () => {
    const sb = sandbox(platform.app)
    const app = await sb.createApp()
    const user = await sb.createUser()
    const script = (userId?: string) => `/sandbox/apps/${app.app_id}${userId === undefined ? '' : `/users/${userId}`}/ads/script`
    assert.deepEqual((await inject('GET', script())).body, { script: null, applies: 'none' })
    const ghost = await inject('PUT', script('user_ghost'), { result: 'AD_NOT_AVAILABLE' })
    assert.equal(ghost.status, 404)
    assert.equal(ghost.body.error, 'user_not_found')
    assert.equal((await inject('GET', script('user_ghost'))).body.error, 'user_not_found')
    assert.equal((await inject('PUT', script(), { result: 'AD_NOT_AVAILABLE', count: 2 })).status, 200)
    const forUser = await inject('GET', script(user.user_id))
    assert.equal(forUser.body.applies, 'app')
    assert.equal((forUser.body.script as { remaining: number }).remaining, 2)
    assert.equal((await inject('PUT', script(user.user_id), { result: 'AD_CLOSED' })).status, 200)
    const own = await inject('GET', script(user.user_id))
    assert.equal(own.body.applies, 'user')
    assert.equal((own.body.script as { result: string }).result, 'AD_CLOSED')
  })

  it("reads one ad's status through the status route's path: a verdict that fell due shows at once", async () => {
    const sb = sandbox(platform.app)
    const app = await sb.createApp()
    const user = await sb.createUser()
    const { accessToken } = await sb.authenticate(app.app_id, user.user_id, ['username', 'payments'])
    const shown = await inject(
      'POST',
      '/v2/client/ads/rewarded/show',
      { user_action: 'watched' },
      { authorization: `Bearer ${accessToken}` },
    )
    assert.equal(shown.status, 200, JSON.stringify(shown.body))
    const adId = String(shown.body.adId)
    const pending = await inject('GET', `/sandbox/apps/${app.app_id}/ads/${adId}`)
    assert.equal(pending.status, 200)
    assert.equal(pending.body.mediator_ack_status, null, 'the test platform delays verdicts 2 s')
    await sb.advanceClock(3)
    const settled = await inject('GET', `/sandbox/apps/${app.app_id}/ads/${adId}`)
    assert.equal(settled.body.mediator_ack_status, 'granted')
    const v2 = await inject('GET', `/v2/ads_network/status/${adId}`, undefined, { authorization: `Key ${app.api_key}` })
    assert.deepEqual(v2.body, settled.body)
    const other = await sb.createApp()
    assert.equal((await inject('GET', `/sandbox/apps/${other.app_id}/ads/${adId}`)).body.error, 'ad_not_found')
  })
})
