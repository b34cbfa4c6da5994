import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { json, SANDBOX_CLIENT, sandbox, startPlatform, type TestPlatform } from '../helpers/platform.js'
import { storedForms } from '../helpers/secret-forms.js'

interface Entry {
  id: string
  method: string
  path: string
  status: number
  key_id: string | null
  request_id: string
  query: string | null
  request_headers: Record<string, string> | null
  response_headers: Record<string, string> | null
  replay_of: string | null
  request_body: string | null
  fault: string | null
}
interface Replay {
  replay_of: string
  key_id: string
  status: number
  request_id: string
  response_body: string | null
  entry: Entry | null
}

/** The request log entry page's data (headers, query) and the replay of a logged call (docs/api.md, "Request log"). */
describe('request log: headers, query string and replay', () => {
  let platform: TestPlatform
  before(async () => {
    platform = await startPlatform()
  })
  after(() => platform.close())

  const entries = async (appId: string, query = '') => {
    const response = await platform.app.inject({ method: 'GET', url: `/sandbox/apps/${appId}/requests${query}` })
    assert.equal(response.statusCode, 200, response.body)
    return json<{ requests: Entry[]; total: number }>(response)
  }
  const replay = (appId: string, id: string, headers: Record<string, string> = SANDBOX_CLIENT) =>
    platform.app.inject({ method: 'POST', url: `/sandbox/apps/${appId}/requests/${id}/replay`, headers })

  it('stores the query string and both sets of headers, redacted, and never the key', async () => {
    const sb = sandbox(platform.app)
    const shop = await sb.createApp()
    const secret = shop.api_key
    const answer = await platform.app.inject({
      method: 'GET',
      url: `/v2/payments/incomplete_server_payments?page=2&token=${secret}&note=hello`,
      headers: { authorization: `Key ${secret}`, 'x-custom': 'visible', cookie: `session=${secret}`, 'x-api-key': 'abc' },
    })
    assert.equal(answer.statusCode, 200, answer.body)
    const [entry] = (await entries(shop.app_id)).requests
    assert.ok(entry)
    assert.equal(entry.query, 'page=2&token=[redacted]&note=hello')
    assert.equal(entry.request_headers?.authorization, 'Key [redacted]')
    assert.equal(entry.request_headers?.cookie, '[redacted]')
    assert.equal(entry.request_headers?.['x-api-key'], '[redacted]')
    assert.equal(entry.request_headers?.['x-custom'], 'visible')
    assert.match(entry.response_headers?.['content-type'] ?? '', /^application\/json/)
    assert.equal(entry.response_headers?.['x-request-id'], entry.request_id)
    const one = await platform.app.inject({ method: 'GET', url: `/sandbox/apps/${shop.app_id}/requests/${entry.id}` })
    assert.deepEqual(json<Entry>(one).request_headers, entry.request_headers)
    const rows = await platform.db.selectFrom('request_log').selectAll().where('app_id', '=', shop.app_id).execute()
    const stored = JSON.stringify(rows)
    for (const form of storedForms(secret)) assert.equal(stored.includes(form), false, `a form of the key is stored: ${form}`)
  })

  it("stores the answer's headers as written to the connection, and a large request body cut at capture", async () => {
    const sb = sandbox(platform.app)
    const shop = await sb.createApp()
    const user = await sb.createUser()
    const address = await platform.app.listen({ port: 0, host: '127.0.0.1' })
    const answer = await fetch(`${address}/v2/payments`, {
      method: 'POST',
      headers: { authorization: `Key ${shop.api_key}`, 'content-type': 'application/json', 'x-request-id': 'wire-1' },
      body: JSON.stringify({ payment: { amount: 1, memo: 'x'.repeat(40_000), metadata: {}, uid: user.user_id } }),
    })
    const body = await answer.text()
    const [entry] = (await entries(shop.app_id, '?request_id=wire-1')).requests
    assert.ok(entry, body)
    assert.equal(entry.status, answer.status)
    // Node adds Date, Connection and Keep-Alive when it writes the header block; the log shows what went.
    assert.equal(entry.response_headers?.date, answer.headers.get('date'))
    assert.equal(entry.response_headers?.connection, answer.headers.get('connection'))
    assert.equal(entry.response_headers?.['content-length'], String(Buffer.byteLength(body)))
    assert.equal(entry.response_headers?.['x-request-id'], 'wire-1')
    assert.equal(entry.request_headers?.['content-type'], 'application/json')
    // Past the capture's 16 KiB the body was cut on arrival, then stored at its 8 KiB bound.
    assert.ok(entry.request_body !== null && entry.request_body.length <= 8 * 1024 + 20, `${entry.request_body?.length}`)
    assert.match(entry.request_body ?? '', /^\{"payment":\{"amount":1,"memo":"xxx/)
  })

  it('replays a key call as the key that made it, logs the replay as a new entry linked to the first', async () => {
    const sb = sandbox(platform.app)
    const shop = await sb.createApp()
    const user = await sb.createUser()
    const { user: member } = await sb.authenticate(shop.app_id, user.user_id, ['username', 'payments', 'wallet_address'])
    const created = await platform.app.inject({
      method: 'POST',
      url: '/v2/payments',
      headers: { authorization: `Key ${shop.api_key}` },
      payload: { payment: { amount: 1, memo: 'first', metadata: { n: 1 }, uid: member.uid } },
    })
    assert.equal(created.statusCode, 200, created.body)
    const paymentId = json<{ identifier: string }>(created).identifier
    const [logged] = (await entries(shop.app_id)).requests
    assert.ok(logged)
    assert.equal(logged.path, '/v2/payments')

    // Sent again: the app already has an open payment to that user, so the replay is refused as the call would be.
    const answer = await replay(shop.app_id, logged.id)
    assert.equal(answer.statusCode, 200, answer.body)
    const body = json<Replay>(answer)
    assert.equal(body.replay_of, logged.id)
    assert.equal(body.key_id, shop.key_id)
    assert.equal(body.status, 409)
    assert.match(body.response_body ?? '', /ongoing_payment_found/)
    assert.ok(body.entry, 'the replay has its own entry')
    assert.notEqual(body.entry.id, logged.id)
    assert.equal(body.entry.replay_of, logged.id)
    assert.equal(body.entry.key_id, shop.key_id)
    assert.equal(body.entry.request_id, body.request_id)
    assert.equal(body.entry.request_body, logged.request_body)
    // Read back: the new entry is in the list, linked.
    const listed = (await entries(shop.app_id)).requests.find((e) => e.id === body.entry?.id)
    assert.equal(listed?.replay_of, logged.id)

    // A GET with its query: replayed whole.
    const get = await platform.app.inject({
      method: 'GET',
      url: `/v2/payments/${paymentId}`,
      headers: { authorization: `Key ${shop.api_key}`, 'x-shop-trace': 'abc', cookie: 'a=b', 'x-secret-thing': 'zzz' },
    })
    assert.equal(get.statusCode, 200)
    const [getEntry] = (await entries(shop.app_id, '?route=getPayment')).requests
    assert.ok(getEntry)
    const again = json<Replay>(await replay(shop.app_id, getEntry.id))
    assert.equal(again.status, 200)
    assert.equal(JSON.parse(again.response_body ?? '{}').identifier, paymentId)
    // Its own headers go again; the cookie, a redacted header and the request id do not.
    assert.equal(again.entry?.request_headers?.['x-shop-trace'], 'abc')
    assert.equal(again.entry?.request_headers?.cookie, undefined)
    assert.equal(again.entry?.request_headers?.['x-secret-thing'], undefined)
    assert.equal(again.entry?.request_headers?.['x-request-id'], again.request_id)

    // The replay gets every check a call from outside gets: an injected fault answers it.
    const fault = await platform.app.inject({
      method: 'POST',
      url: '/sandbox/faults',
      payload: { app_id: shop.app_id, match: { operation_id: 'getPayment' }, effect: { status: 503 }, times: 1 },
    })
    assert.equal(fault.statusCode, 201, fault.body)
    const faulted = json<Replay>(await replay(shop.app_id, getEntry.id))
    assert.equal(faulted.status, 503)
    assert.equal(faulted.entry?.fault !== null, true)

    // The key that made the call is revoked: the app's newest active key sends it.
    const fresh = await sb.createKey(shop.app_id)
    await sb.revokeKey(shop.app_id, shop.key_id)
    const rotated = json<Replay>(await replay(shop.app_id, getEntry.id))
    assert.equal(rotated.key_id, fresh.key_id)
    assert.equal(rotated.status, 200)
    // No active key at all: refused.
    await sb.revokeKey(shop.app_id, fresh.key_id)
    const none = await replay(shop.app_id, getEntry.id)
    assert.equal(none.statusCode, 409)
    assert.equal(json(none).error, 'request_not_replayable')
    assert.match(String(json(none).error_message), /no active server API key/)
  })

  it('refuses what cannot be sent again as it was made: token calls, redacted parts; 404 for an unknown entry', async () => {
    const sb = sandbox(platform.app)
    const shop = await sb.createApp()
    const user = await sb.createUser()
    const { accessToken } = await sb.authenticate(shop.app_id, user.user_id)
    const me = await platform.app.inject({ method: 'GET', url: '/v2/me', headers: { authorization: `Bearer ${accessToken}` } })
    assert.equal(me.statusCode, 200)
    const redacted = await platform.app.inject({
      method: 'GET',
      url: `/v2/payments/incomplete_server_payments?secret=${shop.api_key}`,
      headers: { authorization: `Key ${shop.api_key}` },
    })
    assert.equal(redacted.statusCode, 200)
    const { requests } = await entries(shop.app_id)
    const byToken = requests.find((e) => e.path === '/v2/me')
    const withSecret = requests.find((e) => e.query !== null)
    assert.ok(byToken && withSecret)
    const before = await entries(shop.app_id)
    for (const [entry, reason] of [
      [byToken, /access token, which Plinth does not keep/],
      [withSecret, /redacted from its path or query/],
    ] as const) {
      const answer = await replay(shop.app_id, entry.id)
      assert.equal(answer.statusCode, 409, answer.body)
      assert.equal(json(answer).error, 'request_not_replayable')
      assert.match(String(json(answer).error_message), reason)
    }
    assert.equal((await entries(shop.app_id)).total, before.total, 'a refused replay sends nothing')
    for (const id of ['999999', 'abc']) {
      const missing = await replay(shop.app_id, id)
      assert.equal(missing.statusCode, 404)
      assert.equal(json(missing).error, 'request_not_found')
    }
    const other = await sb.createApp()
    const elsewhere = await replay(other.app_id, byToken.id)
    assert.equal(json(elsewhere).error, 'request_not_found', "another app's entry is not found")
    const noClient = await platform.app.inject({ method: 'POST', url: `/sandbox/apps/${shop.app_id}/requests/${byToken.id}/replay` })
    assert.equal(noClient.statusCode, 415)
  })

  it('replays a form-encoded call with its body as the log keeps it (JSON)', async () => {
    const shop = await sandbox(platform.app).createApp()
    const form = await platform.app.inject({
      method: 'POST',
      url: '/v2/payments/nope/complete',
      headers: { authorization: `Key ${shop.api_key}`, 'content-type': 'application/x-www-form-urlencoded' },
      payload: `txid=${'a'.repeat(64)}`,
    })
    assert.equal(form.statusCode, 404)
    const [logged] = (await entries(shop.app_id)).requests
    assert.ok(logged)
    assert.equal(logged.request_body, JSON.stringify({ txid: 'a'.repeat(64) }))
    const again = json<Replay>(await replay(shop.app_id, logged.id))
    assert.equal(again.status, 404, again.response_body ?? '')
    assert.match(again.response_body ?? '', /payment_not_found/)
  })

  it('counts the entries that match a list (total), on every page', async () => {
    const sb = sandbox(platform.app)
    const shop = await sb.createApp()
    for (let i = 0; i < 3; i++) {
      await platform.app.inject({ method: 'GET', url: '/v2/payments/nope', headers: { authorization: `Key ${shop.api_key}` } })
    }
    await platform.app.inject({
      method: 'GET',
      url: '/v2/payments/incomplete_server_payments',
      headers: { authorization: `Key ${shop.api_key}` },
    })
    const page = await entries(shop.app_id, '?limit=1&status=4xx')
    assert.equal(page.requests.length, 1)
    assert.equal(page.total, 3)
    assert.equal((await entries(shop.app_id)).total, 4)
  })
})

describe('request log replay behind the admin token', () => {
  let platform: TestPlatform
  const adminToken = 'replay-admin-token-0123456789'
  before(async () => {
    platform = await startPlatform({ adminToken })
  })
  after(() => platform.close())

  it('needs X-Admin-Token, like every sandbox route; the replayed /v2 call needs none', async () => {
    const sb = sandbox(platform.app, { 'x-admin-token': adminToken })
    const shop = await sb.createApp()
    await platform.app.inject({
      method: 'GET',
      url: '/v2/payments/incomplete_server_payments',
      headers: { authorization: `Key ${shop.api_key}` },
    })
    const list = await platform.app.inject({
      method: 'GET',
      url: `/sandbox/apps/${shop.app_id}/requests`,
      headers: { 'x-admin-token': adminToken },
    })
    const [entry] = json<{ requests: Entry[] }>(list).requests
    assert.ok(entry)
    const url = `/sandbox/apps/${shop.app_id}/requests/${entry.id}/replay`
    for (const headers of [{}, { 'x-admin-token': 'wrong-admin-token-0123456789' }, { authorization: `Key ${shop.api_key}` }]) {
      const refused = await platform.app.inject({ method: 'POST', url, headers: { ...SANDBOX_CLIENT, ...headers } })
      assert.equal(refused.statusCode, 401)
      assert.equal(json(refused).error, 'invalid_admin_token')
    }
    const allowed = await platform.app.inject({ method: 'POST', url, headers: { ...SANDBOX_CLIENT, 'x-admin-token': adminToken } })
    assert.equal(allowed.statusCode, 200, allowed.body)
    assert.equal(json<Replay>(allowed).status, 200)
  })
})
