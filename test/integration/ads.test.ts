import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'kysely'
import { type AuthFixture, authCases } from '../helpers/auth-cases.js'
import { dumpState, SANDBOX_CLIENT, type SandboxApp, sandbox, startPlatform, type TestPlatform } from '../helpers/platform.js'

interface AdStatus {
  identifier: string
  mediator_ack_status: string | null
  mediator_granted_at: string | null
  mediator_revoked_at: string | null
}

describe('rewarded ads', () => {
  let platform: TestPlatform
  let sb: ReturnType<typeof sandbox>

  before(async () => {
    platform = await startPlatform()
    sb = sandbox(platform.app)
  })
  after(() => platform.close())

  async function viewer(app?: SandboxApp) {
    const a = app ?? (await sb.createApp())
    const user = await sb.createUser()
    const auth = await sb.authenticate(a.app_id, user.user_id, ['username', 'payments'])
    return { app: a, user, token: auth.accessToken }
  }
  async function show(token: string, type: string, userAction?: string) {
    const response = await platform.app.inject({
      method: 'POST',
      url: `/v2/client/ads/${type}/show`,
      headers: { authorization: `Bearer ${token}` },
      ...(userAction === undefined ? {} : { payload: { user_action: userAction } }),
    })
    return { status: response.statusCode, body: response.json() as { type: string; result: string; adId?: string; error?: string } }
  }
  async function status(app: SandboxApp, adId: string) {
    const response = await platform.app.inject({
      method: 'GET',
      url: `/v2/ads_network/status/${adId}`,
      headers: { authorization: `Key ${app.api_key}` },
    })
    return { status: response.statusCode, body: response.json() as AdStatus & { error?: string } }
  }
  const move = (adId: string, to: string) =>
    platform.app.inject({ method: 'POST', url: `/sandbox/ads/${adId}/status`, payload: { mediator_ack_status: to } })
  const script = (appId: string, body: Record<string, unknown>, userId?: string) =>
    platform.app.inject({
      method: 'PUT',
      url: userId === undefined ? `/sandbox/apps/${appId}/ads/script` : `/sandbox/apps/${appId}/users/${userId}/ads/script`,
      payload: body,
    })

  it('grants a watched rewarded ad after the mediator delay on the platform clock', async () => {
    const v = await viewer()
    const shown = await show(v.token, 'rewarded')
    assert.equal(shown.status, 200)
    assert.equal(shown.body.type, 'rewarded')
    assert.equal(shown.body.result, 'AD_REWARDED')
    const adId = shown.body.adId ?? ''
    assert.match(adId, /^[A-Za-z0-9_-]{22}$/)
    const pending = await status(v.app, adId)
    assert.equal(pending.status, 200)
    assert.deepEqual(pending.body, { identifier: adId, mediator_ack_status: null, mediator_granted_at: null, mediator_revoked_at: null })
    await sb.advanceClock(2)
    const granted = (await status(v.app, adId)).body
    assert.equal(granted.mediator_ack_status, 'granted')
    assert.ok(granted.mediator_granted_at !== null && !Number.isNaN(Date.parse(granted.mediator_granted_at)))
    assert.equal(granted.mediator_revoked_at, null)
  })

  it("lists an app's ads in the sandbox as the status route answers them: a verdict that fell due is shown, never pending", async () => {
    const v = await viewer()
    const adId = (await show(v.token, 'rewarded')).body.adId ?? ''
    const list = async () => {
      const response = await platform.app.inject({ method: 'GET', url: `/sandbox/apps/${v.app.app_id}/ads` })
      assert.equal(response.statusCode, 200)
      return (response.json() as { ads: Array<AdStatus & { settles_at: string | null }> }).ads.find((ad) => ad.identifier === adId)
    }
    assert.equal((await list())?.mediator_ack_status, null)
    await sb.advanceClock(3)
    // No one has read the ad through the API yet: the list itself applies the verdict that fell due.
    const listed = await list()
    assert.equal(listed?.mediator_ack_status, 'granted')
    assert.equal(listed?.mediator_granted_at, listed?.settles_at)
    const read = (await status(v.app, adId)).body
    assert.deepEqual(
      { status: read.mediator_ack_status, granted: read.mediator_granted_at },
      { status: listed?.mediator_ack_status, granted: listed?.mediator_granted_at },
    )
  })

  it('gives no adId for a skipped rewarded ad or an interstitial', async () => {
    const v = await viewer()
    assert.deepEqual((await show(v.token, 'rewarded', 'skipped')).body, { type: 'rewarded', result: 'AD_CLOSED' })
    assert.deepEqual((await show(v.token, 'interstitial')).body, { type: 'interstitial', result: 'AD_CLOSED' })
    const bad = await show(v.token, 'banner')
    assert.equal(bad.status, 400)
  })

  it('follows a sandbox script: the next ads of the app, a user overriding the app, a count', async () => {
    const v = await viewer()
    const other = await viewer(v.app)
    const set = await script(v.app.app_id, { result: 'AD_NOT_AVAILABLE', count: 2 })
    assert.equal(set.statusCode, 200)
    assert.deepEqual(set.json(), {
      app_id: v.app.app_id,
      user_id: null,
      result: 'AD_NOT_AVAILABLE',
      mediator_ack_status: 'granted',
      remaining: 2,
    })
    const ready = await platform.app.inject({
      method: 'GET',
      url: '/v2/client/ads/rewarded/ready',
      headers: { authorization: `Bearer ${v.token}` },
    })
    assert.deepEqual(ready.json(), { type: 'rewarded', ready: false })
    assert.equal((await show(v.token, 'rewarded')).body.result, 'AD_NOT_AVAILABLE')
    assert.equal((await show(other.token, 'rewarded')).body.result, 'AD_NOT_AVAILABLE')
    assert.equal((await show(v.token, 'rewarded')).body.result, 'AD_REWARDED', 'the count is spent: back to the default')

    await script(v.app.app_id, { result: 'AD_NETWORK_ERROR' })
    await script(v.app.app_id, { result: 'AD_DISPLAY_ERROR' }, other.user.user_id)
    assert.equal((await show(v.token, 'rewarded')).body.result, 'AD_NETWORK_ERROR')
    assert.equal((await show(other.token, 'rewarded')).body.result, 'AD_DISPLAY_ERROR')
    const cleared = await platform.app.inject({
      method: 'DELETE',
      url: `/sandbox/apps/${v.app.app_id}/ads/script`,
      headers: SANDBOX_CLIENT,
    })
    assert.deepEqual(cleared.json(), { cleared: true })
    assert.equal((await show(v.token, 'rewarded')).body.result, 'AD_REWARDED')
  })

  it('lets a script fail a watched ad or keep it pending', async () => {
    const v = await viewer()
    await script(v.app.app_id, { result: 'AD_REWARDED', mediator_ack_status: 'failed', count: 1 })
    const failed = (await show(v.token, 'rewarded')).body.adId ?? ''
    await script(v.app.app_id, { result: 'AD_REWARDED', mediator_ack_status: 'pending', count: 1 })
    const pending = (await show(v.token, 'rewarded')).body.adId ?? ''
    await sb.advanceClock(3600)
    assert.equal((await status(v.app, failed)).body.mediator_ack_status, 'failed')
    assert.equal((await status(v.app, failed)).body.mediator_granted_at, null)
    assert.equal((await status(v.app, pending)).body.mediator_ack_status, null)
  })

  it('moves statuses only as allowed: pending → granted → revoked; failed and revoked are final', async () => {
    const v = await viewer()
    await script(v.app.app_id, { result: 'AD_REWARDED', mediator_ack_status: 'pending' })
    const a = (await show(v.token, 'rewarded')).body.adId ?? ''
    const b = (await show(v.token, 'rewarded')).body.adId ?? ''

    const granted = await move(a, 'granted')
    assert.equal(granted.statusCode, 200)
    assert.equal(granted.json().mediator_ack_status, 'granted')
    assert.deepEqual((await move(a, 'granted')).json(), granted.json(), 'the same status again is a replay')
    const revoked = await move(a, 'revoked')
    assert.equal(revoked.json().mediator_ack_status, 'revoked')
    assert.ok(revoked.json().mediator_revoked_at)
    assert.equal(revoked.json().mediator_granted_at, granted.json().mediator_granted_at)
    for (const to of ['granted', 'failed']) {
      const refused = await move(a, to)
      assert.equal(refused.statusCode, 409)
      assert.equal(refused.json().error, 'invalid_status_transition')
    }

    assert.equal((await move(b, 'revoked')).statusCode, 409, 'a pending ad cannot be revoked')
    assert.equal((await move(b, 'failed')).json().mediator_ack_status, 'failed')
    assert.equal((await move(b, 'granted')).statusCode, 409)
    assert.equal((await status(v.app, b)).body.mediator_ack_status, 'failed')
    const unknown = await move('no-such-ad', 'granted')
    assert.equal(unknown.statusCode, 404)
    assert.equal(unknown.json().error, 'ad_not_found')
  })

  it("answers another app's ad with 404 ad_not_found", async () => {
    const v = await viewer()
    const intruder = await sb.createApp()
    const adId = (await show(v.token, 'rewarded')).body.adId ?? ''
    const response = await status(intruder, adId)
    assert.equal(response.status, 404)
    assert.equal(response.body.error, 'ad_not_found')
    assert.equal((await status(v.app, 'unknown-ad')).status, 404)
    assert.equal((await status(v.app, adId)).status, 200)
  })

  it('needs the payments scope: a token granted only username shows no ad and learns of none (401 missing_scope)', async () => {
    const v = await viewer()
    const { accessToken } = await sb.authenticate(v.app.app_id, v.user.user_id, ['username'])
    const before = await dumpState(platform.db)
    const shown = await show(accessToken, 'rewarded')
    assert.equal(shown.status, 401)
    assert.equal(shown.body.error, 'missing_scope')
    const ready = await platform.app.inject({
      method: 'GET',
      url: '/v2/client/ads/rewarded/ready',
      headers: { authorization: `Bearer ${accessToken}` },
    })
    assert.equal(ready.statusCode, 401)
    assert.equal((ready.json() as { error: string }).error, 'missing_scope')
    assert.equal(await dumpState(platform.db), before, 'no ad was made')
  })

  it('the state the scope check compares is not moved by the sandbox heartbeat, which runs on a timer whatever is asked', async () => {
    // The interleaving a slow run produced, forced: the heartbeat (every 5 s) lands between the two reads.
    const seenAt = async () =>
      String((await sql<{ seen_at: unknown }>`select max(seen_at) as seen_at from sandbox_processes`.execute(platform.db)).rows[0]?.seen_at)
    const before = await dumpState(platform.db)
    const beat = await seenAt()
    const deadline = Date.now() + 30_000
    while ((await seenAt()) === beat) {
      assert.ok(Date.now() < deadline, 'no heartbeat within 30 s')
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
    assert.equal(await dumpState(platform.db), before)
  })

  describe('authentication', () => {
    let fixture: AuthFixture
    let adId = ''
    before(async () => {
      const v = await viewer()
      adId = (await show(v.token, 'rewarded')).body.adId ?? ''
      const revokedKey = await sb.createKey(v.app.app_id)
      await sb.revokeKey(v.app.app_id, revokedKey.key_id)
      const revoked = await sb.authenticate(v.app.app_id, v.user.user_id, ['username', 'payments'])
      await sb.revokeToken(revoked.accessToken)
      fixture = {
        app: platform.app,
        apiKey: v.app.api_key,
        accessToken: v.token,
        revokedKey: revokedKey.api_key,
        revokedToken: revoked.accessToken,
      }
    })
    authCases('key', { method: 'GET', url: '/v2/ads_network/status/some-ad' }, () => fixture)
    authCases('token', { method: 'POST', url: '/v2/client/ads/rewarded/show' }, () => fixture)
    it('reads its own ad with the key', async () => {
      const response = await fixture.app.inject({
        method: 'GET',
        url: `/v2/ads_network/status/${adId}`,
        headers: { authorization: `Key ${fixture.apiKey}` },
      })
      assert.equal(response.statusCode, 200)
    })
  })
})
