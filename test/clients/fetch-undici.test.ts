import assert from 'node:assert/strict'
import { Readable } from 'node:stream'
import { after, before, describe, it } from 'node:test'
import { Pool, request } from 'undici'
import { type ClientPlatform, type PaymentDTO, type SignedIn, signedIn, startClientPlatform } from './client-platform.js'

/**
 * Node's fetch and undici (request() and a Pool) against a real Plinth process, with what they
 * send by default: fetch sends a string body as `text/plain;charset=UTF-8`, and an empty one too.
 */
describe('fetch and undici against a real Plinth process', () => {
  let platform: ClientPlatform
  let s: SignedIn
  let key: Record<string, string>
  let bearer: Record<string, string>
  let pool: Pool

  before(async () => {
    platform = await startClientPlatform()
    s = await signedIn(platform)
    key = { authorization: `Key ${s.app.api_key}` }
    bearer = { authorization: `Bearer ${s.token}` }
    pool = new Pool(platform.base, { connections: 2 })
  })
  after(async () => {
    await pool.close()
    await platform.close()
  })

  const fetchJson = async <T = PaymentDTO>(path: string, init: RequestInit = {}) => {
    const response = await fetch(`${platform.base}${path}`, init)
    return { status: response.status, headers: response.headers, body: (await response.json()) as T & { error?: string } }
  }
  const createU2A = async (body: Record<string, unknown> = { amount: 1, memo: 'fetch', metadata: {} }) => {
    const created = await fetchJson('/v2/client/payments', {
      method: 'POST',
      headers: { ...bearer, 'content-type': 'application/json; charset=utf-8' },
      body: JSON.stringify(body),
    })
    assert.equal(created.status, 201, JSON.stringify(created.body))
    return created.body
  }

  it('fetch: a U2A lifecycle with empty text/plain bodies and JSON with a charset', async () => {
    const { identifier: id } = await createU2A()
    // fetch(url, { method: 'POST', body: '' }) sends Content-Type: text/plain;charset=UTF-8 with no body.
    const approved = await fetchJson(`/v2/payments/${id}/approve`, { method: 'POST', headers: key, body: '' })
    assert.equal(approved.status, 200, JSON.stringify(approved.body))
    const paid = await fetchJson(`/v2/client/payments/${id}/submit`, { method: 'POST', headers: bearer, body: '' })
    assert.equal(paid.status, 200, JSON.stringify(paid.body))
    const txid = paid.body.transaction?.txid ?? ''
    const completed = await fetchJson(`/v2/payments/${id}/complete`, {
      method: 'POST',
      headers: { ...key, 'content-type': 'application/json; charset=UTF-8' },
      body: JSON.stringify({ txid }),
    })
    assert.equal(completed.status, 200, JSON.stringify(completed.body))
    assert.equal(completed.body.status.developer_completed, true)
  })

  it('fetch: cancel and the user cancel with empty bodies of any type; complete with a form body', async () => {
    const first = (await createU2A()).identifier
    const cancelled = await fetchJson(`/v2/payments/${first}/cancel`, {
      method: 'POST',
      headers: { ...key, 'content-type': 'application/octet-stream' },
      body: '',
    })
    assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body))
    const second = (await createU2A({ amount: '0.5', memo: 'string amount', metadata: {} })).identifier
    const userCancelled = await fetchJson(`/v2/client/payments/${second}/cancel`, { method: 'POST', headers: bearer, body: '' })
    assert.equal(userCancelled.body.status.user_cancelled, true)

    const third = (await createU2A()).identifier
    await fetchJson(`/v2/payments/${third}/approve`, { method: 'POST', headers: key })
    const txid = (await fetchJson(`/v2/client/payments/${third}/submit`, { method: 'POST', headers: bearer })).body.transaction?.txid ?? ''
    // A body of URLSearchParams is sent as application/x-www-form-urlencoded;charset=UTF-8.
    const completed = await fetchJson(`/v2/payments/${third}/complete`, {
      method: 'POST',
      headers: key,
      body: new URLSearchParams({ txid }),
    })
    assert.equal(completed.status, 200, JSON.stringify(completed.body))
    // A form field is read as the JSON one is: a NUL or a malformed txid is refused, not stored.
    const nul = await fetchJson(`/v2/payments/${third}/complete`, { method: 'POST', headers: key, body: 'txid=%00' })
    assert.equal(nul.status, 400, 'a text/plain body is JSON, not a form')
    assert.equal(nul.body.error, 'invalid_json')
    const badForm = await fetchJson(`/v2/payments/${third}/complete`, {
      method: 'POST',
      headers: { ...key, 'content-type': 'application/x-www-form-urlencoded' },
      body: `txid=${txid.slice(0, 63)}%00`,
    })
    assert.equal(badForm.status, 400)
    assert.equal(badForm.body.error, 'invalid_arguments')
    const noTxid = await fetchJson(`/v2/payments/${third}/complete`, {
      method: 'POST',
      headers: { ...key, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'tx=1',
    })
    assert.equal(noTxid.body.error, 'missing_txid')
  })

  it('fetch: JSON sent as text/plain (a string body, no Content-Type) to create, approve, complete, cancel, A2U and notify', async () => {
    // fetch sends a string body with no Content-Type as text/plain;charset=UTF-8, as the live platform reads it: JSON.
    const created = await fetchJson('/v2/client/payments', {
      method: 'POST',
      headers: bearer,
      body: JSON.stringify({ amount: 1, memo: 'text/plain', metadata: { via: 'fetch' } }),
    })
    assert.equal(created.status, 201, JSON.stringify(created.body))
    assert.deepEqual(created.body.metadata, { via: 'fetch' })
    const id = created.body.identifier
    const approved = await fetchJson(`/v2/payments/${id}/approve`, { method: 'POST', headers: key, body: '{}' })
    assert.equal(approved.status, 200, JSON.stringify(approved.body))
    const paid = await fetchJson(`/v2/client/payments/${id}/submit`, { method: 'POST', headers: bearer, body: '{}' })
    assert.equal(paid.status, 200, JSON.stringify(paid.body))
    const txid = paid.body.transaction?.txid
    const completed = await fetchJson(`/v2/payments/${id}/complete`, {
      method: 'POST',
      headers: { ...key, 'content-type': 'text/plain;charset=UTF-8' },
      body: JSON.stringify({ txid }),
    })
    assert.equal(completed.status, 200, JSON.stringify(completed.body))
    assert.equal(completed.body.transaction?.txid, txid)
    assert.equal(completed.body.status.developer_completed, true)

    const cancelled = await fetchJson(`/v2/payments/${(await createU2A()).identifier}/cancel`, { method: 'POST', headers: key, body: '{}' })
    assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body))
    assert.equal(cancelled.body.status.cancelled, true)

    const a2u = await fetchJson('/v2/payments', {
      method: 'POST',
      headers: key,
      body: JSON.stringify({ payment: { amount: 1, memo: 'text/plain A2U', metadata: {}, uid: s.uid } }),
    })
    assert.equal(a2u.status, 200, JSON.stringify(a2u.body))
    assert.equal(a2u.body.direction, 'app_to_user')
    const a2uCancelled = await fetchJson(`/v2/payments/${a2u.body.identifier}/cancel`, { method: 'POST', headers: key, body: '' })
    assert.equal(a2uCancelled.body.status.cancelled, true)

    // A user of the same app who let it notify them.
    const reader = await platform.sb.authenticate(s.app.app_id, (await platform.sb.createUser()).user_id, ['in_app_notifications'])
    const notified = await fetchJson<{ success: boolean; delivered_notifications: unknown[] }>('/v2/in_app_notifications/notify', {
      method: 'POST',
      headers: key,
      body: JSON.stringify({ notifications: [{ title: 'Hello', body: 'as text/plain', user_uid: reader.user.uid, subroute: '/' }] }),
    })
    assert.equal(notified.status, 201, JSON.stringify(notified.body))
    assert.equal(notified.body.delivered_notifications.length, 1)
  })

  it('fetch: text/plain that is not JSON is 400 invalid_json; a body of another type is 415; neither changes the payment', async () => {
    const { identifier: id } = await createU2A()
    for (const body of ['approve please', '{"txid":', 'txid=00']) {
      const text = await fetchJson(`/v2/payments/${id}/approve`, { method: 'POST', headers: key, body })
      assert.equal(text.status, 400, body)
      assert.deepEqual(Object.keys(text.body).sort(), ['error', 'error_message'])
      assert.equal(text.body.error, 'invalid_json')
    }
    const xml = await fetchJson(`/v2/payments/${id}/approve`, {
      method: 'POST',
      headers: { ...key, 'content-type': 'application/xml' },
      body: '<approve/>',
    })
    assert.equal(xml.status, 415)
    assert.equal(xml.body.error, 'unsupported_media_type')
    // What a page of another site could send: no credential, so nothing is read.
    const forged = await fetchJson(`/v2/payments/${id}/approve`, { method: 'POST', body: '{}' })
    assert.equal(forged.status, 401)
    const notify = await fetchJson<{ error: string }>('/v2/in_app_notifications/notify', {
      method: 'POST',
      headers: key,
      body: '{"notifications":',
    })
    assert.equal(notify.status, 422, 'notify answers a body it cannot read as its other bad bodies')
    assert.equal(typeof notify.body.error, 'string')
    const unchanged = await fetchJson(`/v2/payments/${id}`, { headers: key })
    assert.equal(unchanged.body.status.developer_approved, false)
    await fetchJson(`/v2/payments/${id}/cancel`, { method: 'POST', headers: key })
  })

  it('undici request(): an empty text/plain approve and submit, a chunked empty body, 405 with Allow', async () => {
    const { identifier: id } = await createU2A()
    const approve = await request(`${platform.base}/v2/payments/${id}/approve`, {
      method: 'POST',
      headers: { ...key, 'content-type': 'text/plain' },
      body: '',
    })
    assert.equal(approve.statusCode, 200, await approve.body.text())
    // An empty body sent chunked (no Content-Length) is no body either.
    const submit = await request(`${platform.base}/v2/client/payments/${id}/submit`, {
      method: 'POST',
      headers: { ...bearer, 'content-type': 'text/plain' },
      body: Readable.from([]),
    })
    const paid = (await submit.body.json()) as PaymentDTO
    assert.equal(submit.statusCode, 200, JSON.stringify(paid))
    const complete = await request(`${platform.base}/v2/payments/${id}/complete`, {
      method: 'POST',
      headers: { ...key, 'content-type': 'application/json;charset=utf-8' },
      body: JSON.stringify({ txid: paid.transaction?.txid }),
    })
    assert.equal(complete.statusCode, 200, await complete.body.text())

    const wrong = await request(`${platform.base}/v2/payments/${id}`, { method: 'DELETE', headers: key })
    assert.equal(wrong.statusCode, 405)
    assert.equal(wrong.headers.allow, 'GET, HEAD')
    assert.equal(((await wrong.body.json()) as { error: string }).error, 'method_not_allowed')
  })

  it('undici Pool: concurrent reads over kept-alive connections, trailing slashes included', async () => {
    const { identifier: id } = await createU2A()
    const paths = [`/v2/payments/${id}`, `/v2/payments/${id}/`, `/v2//payments/${id}`, '/v2/payments/incomplete_server_payments/']
    const answers = await Promise.all(
      Array.from({ length: 12 }, async (_, i) => {
        const response = await pool.request({ path: paths[i % paths.length] ?? '/', method: 'GET', headers: key })
        return { status: response.statusCode, body: (await response.body.json()) as { identifier?: string } }
      }),
    )
    for (const [i, answer] of answers.entries()) {
      assert.equal(answer.status, 200, `${paths[i % paths.length]}: ${JSON.stringify(answer.body)}`)
      if (i % paths.length < 3) assert.equal(answer.body.identifier, id)
    }
    const cancel = await pool.request({
      path: `/v2/payments/${id}/cancel`,
      method: 'POST',
      headers: { ...key, 'content-type': 'text/plain' },
      body: '',
    })
    assert.equal(cancel.statusCode, 200, await cancel.body.text())
  })

  it('rewarded ads: the verdict is there when showAd resolves (no verdict delay by default)', async () => {
    const shown = await fetchJson<{ result: string; adId?: string }>('/v2/client/ads/rewarded/show', {
      method: 'POST',
      headers: { ...bearer, 'content-type': 'application/json' },
      body: '{}',
    })
    assert.equal(shown.body.result, 'AD_REWARDED')
    // What typical app code does: check once, right away.
    const status = await fetchJson<{ mediator_ack_status: string | null; mediator_granted_at: string | null }>(
      `/v2/ads_network/status/${shown.body.adId}`,
      { headers: key },
    )
    assert.equal(status.body.mediator_ack_status, 'granted')
    assert.ok(status.body.mediator_granted_at !== null)
    // And the console's list says the same.
    const listed = await fetchJson<{ ads: Array<{ identifier: string; mediator_ack_status: string | null }> }>(
      `/sandbox/apps/${s.app.app_id}/ads`,
    )
    assert.equal(listed.body.ads.find((ad) => ad.identifier === shown.body.adId)?.mediator_ack_status, 'granted')
  })

  it('CORS: /ledger and the Bearer routes allow any origin; a Key route refuses the preflight', async () => {
    const origin = { origin: 'http://app.example' }
    const ledger = await fetch(`${platform.base}/ledger/accounts/${s.app.wallet.address}`, { headers: origin })
    assert.equal(ledger.headers.get('access-control-allow-origin'), '*')
    const me = await fetch(`${platform.base}/v2/me`, { headers: { ...origin, ...bearer } })
    assert.equal(me.headers.get('access-control-allow-origin'), '*')
    assert.equal(me.headers.get('access-control-allow-credentials'), null)

    const preflight = (path: string, method: string, headers: string) =>
      fetch(`${platform.base}${path}`, {
        method: 'OPTIONS',
        headers: { ...origin, 'access-control-request-method': method, 'access-control-request-headers': headers },
      })
    const mePreflight = await preflight('/v2/me', 'GET', 'authorization')
    assert.equal(mePreflight.status, 204)
    assert.equal(mePreflight.headers.get('access-control-allow-origin'), '*')
    assert.match(mePreflight.headers.get('access-control-allow-headers') ?? '', /Authorization/)
    assert.match(mePreflight.headers.get('access-control-allow-methods') ?? '', /GET/)
    assert.ok(Number(mePreflight.headers.get('access-control-max-age')) > 0)
    const ledgerPreflight = await preflight('/ledger/transactions', 'POST', 'content-type,x-client-name')
    assert.equal(ledgerPreflight.status, 204)
    assert.equal(ledgerPreflight.headers.get('access-control-allow-headers'), 'content-type,x-client-name')

    const keyPreflight = await preflight('/v2/payments/incomplete_server_payments', 'GET', 'authorization')
    assert.equal(keyPreflight.status, 405)
    assert.equal(keyPreflight.headers.get('access-control-allow-origin'), null)
    const keyRead = await fetch(`${platform.base}/v2/payments/incomplete_server_payments`, { headers: { ...origin, ...key } })
    assert.equal(keyRead.status, 200)
    assert.equal(keyRead.headers.get('access-control-allow-origin'), null)
  })
})
