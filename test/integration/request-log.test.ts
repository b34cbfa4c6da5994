import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Keypair } from '@stellar/stellar-base'
import { json, sandbox, startPlatform, type TestPlatform } from '../helpers/platform.js'
import { loggedForms, storedForms } from '../helpers/secret-forms.js'

interface Entry {
  id: string
  at: string
  method: string
  path: string
  route: string
  operation_id: string | null
  key_id: string | null
  user_uid: string | null
  status: number
  error_code: string | null
  latency_ms: number
  request_id: string
  request_body: string | null
  response_body: string | null
  fault: string | null
}
interface Page {
  requests: Entry[]
  next_cursor: string | null
  newest_cursor: string
  enabled: boolean
  dropped: number
}

describe('request log', () => {
  let platform: TestPlatform
  before(async () => {
    platform = await startPlatform({
      extend: (app) =>
        app.addHook('onRequest', async (request) => {
          const fault = request.headers['x-test-fault']
          if (typeof fault === 'string') request.injectedFault = fault
        }),
    })
  })
  after(() => platform.close())

  const list = async (appId: string, query = '') => {
    const response = await platform.app.inject({ method: 'GET', url: `/sandbox/apps/${appId}/requests${query}` })
    return { status: response.statusCode, body: json<Page>(response), raw: response.json() as Record<string, unknown> }
  }

  it('records the calls of an app: key and token calls, status, error code, route, request id, latency, fault', async () => {
    const sb = sandbox(platform.app)
    const shop = await sb.createApp()
    const user = await sb.createUser()
    const { accessToken, user: member } = await sb.authenticate(shop.app_id, user.user_id)
    const me = await platform.app.inject({
      method: 'GET',
      url: '/v2/me',
      headers: { authorization: `Bearer ${accessToken}`, 'x-request-id': 'req-me-1' },
    })
    assert.equal(me.statusCode, 200)
    const refused = await platform.app.inject({
      method: 'POST',
      url: '/v2/payments/nope123/approve',
      headers: { authorization: `Key ${shop.api_key}`, 'x-test-fault': 'slow_db' },
    })
    assert.equal(refused.statusCode, 404)
    // Not attributed to any app: never logged.
    const anonymous = await platform.app.inject({ method: 'GET', url: '/v2/me' })
    assert.equal(anonymous.statusCode, 401)
    const unknownKey = await platform.app.inject({
      method: 'GET',
      url: '/v2/payments/incomplete_server_payments',
      headers: { authorization: 'Key nope' },
    })
    assert.equal(unknownKey.statusCode, 401)

    const { status, body } = await list(shop.app_id)
    assert.equal(status, 200)
    assert.equal(body.enabled, true)
    assert.equal(body.requests.length, 2)
    const [approve, meEntry] = body.requests
    assert.ok(approve && meEntry)
    assert.equal(approve.method, 'POST')
    assert.equal(approve.path, '/v2/payments/nope123/approve')
    assert.equal(approve.route, '/v2/payments/:payment_id/approve')
    assert.equal(approve.operation_id, 'approvePayment')
    assert.equal(approve.key_id, shop.key_id)
    assert.equal(approve.user_uid, null)
    assert.equal(approve.status, 404)
    assert.equal(approve.error_code, 'payment_not_found')
    assert.equal(approve.fault, 'slow_db')
    assert.equal(approve.request_id, refused.headers['x-request-id'])
    assert.match(approve.response_body ?? '', /payment_not_found/)
    assert.equal(meEntry.user_uid, member.uid)
    assert.equal(meEntry.key_id, null)
    assert.equal(meEntry.request_id, 'req-me-1')
    assert.equal(meEntry.status, 200)
    assert.equal(meEntry.error_code, null)
    assert.equal(meEntry.fault, null)
    assert.ok(meEntry.latency_ms >= 0)
    assert.ok(Number.isFinite(Date.parse(meEntry.at)))

    const one = await platform.app.inject({ method: 'GET', url: `/sandbox/apps/${shop.app_id}/requests/${approve.id}` })
    assert.equal(one.statusCode, 200)
    assert.deepEqual(json(one), approve)

    // Filters.
    assert.deepEqual(
      (await list(shop.app_id, '?status=4xx')).body.requests.map((e) => e.id),
      [approve.id],
    )
    assert.deepEqual(
      (await list(shop.app_id, '?request_id=req-me-1')).body.requests.map((e) => e.id),
      [meEntry.id],
    )
    assert.deepEqual(
      (await list(shop.app_id, '?status=200')).body.requests.map((e) => e.id),
      [meEntry.id],
    )
    assert.deepEqual(
      (await list(shop.app_id, '?error=payment_not_found')).body.requests.map((e) => e.id),
      [approve.id],
    )
    assert.deepEqual(
      (await list(shop.app_id, `?user=${member.uid}`)).body.requests.map((e) => e.id),
      [meEntry.id],
    )
    assert.deepEqual(
      (await list(shop.app_id, '?route=getMe')).body.requests.map((e) => e.id),
      (await list(shop.app_id, '?route=/v2/me')).body.requests.map((e) => e.id),
    )
    assert.deepEqual(
      (await list(shop.app_id, '?route=/v2/payments/:payment_id/approve')).body.requests.map((e) => e.id),
      [approve.id],
    )
  })

  it('records a call refused for its scope under its app and user', async () => {
    const sb = sandbox(platform.app)
    const shop = await sb.createApp()
    const user = await sb.createUser()
    const { accessToken, user: member } = await sb.authenticate(shop.app_id, user.user_id, ['username'])
    const refused = await platform.app.inject({
      method: 'POST',
      url: '/v2/client/payments',
      headers: { authorization: `Bearer ${accessToken}` },
      payload: { amount: 1, memo: 'm', metadata: {} },
    })
    assert.equal(refused.statusCode, 401)
    const [entry, ...rest] = (await list(shop.app_id)).body.requests
    assert.equal(rest.length, 0)
    assert.equal(entry?.error_code, 'missing_scope')
    assert.equal(entry?.user_uid, member.uid)
    assert.equal(entry?.status, 401)
  })

  it('keeps no call whose credential did not resolve to the app: the key with the wrong scheme, an unknown key', async () => {
    const sb = sandbox(platform.app)
    const shop = await sb.createApp()
    for (const authorization of [`Bearer ${shop.api_key}`, 'Key not-a-key-at-all', '']) {
      const answer = await platform.app.inject({
        method: 'GET',
        url: '/v2/payments/incomplete_server_payments',
        headers: authorization === '' ? {} : { authorization },
      })
      assert.equal(answer.statusCode, 401, authorization)
    }
    assert.deepEqual((await list(shop.app_id)).body.requests, [])
  })

  it('pages back with before, tails with after, and refuses cursors it did not give', async () => {
    const sb = sandbox(platform.app)
    const shop = await sb.createApp()
    const other = await sb.createApp()
    const call = () =>
      platform.app.inject({
        method: 'GET',
        url: '/v2/payments/incomplete_server_payments',
        headers: { authorization: `Key ${shop.api_key}` },
      })
    for (let i = 0; i < 7; i++) assert.equal((await call()).statusCode, 200)
    const seen: string[] = []
    let cursor: string | null = null
    do {
      const page: { body: Page } = await list(shop.app_id, `?limit=3${cursor === null ? '' : `&before=${cursor}`}`)
      seen.push(...page.body.requests.map((e) => e.id))
      cursor = page.body.next_cursor
    } while (cursor !== null)
    assert.equal(seen.length, 7)
    assert.equal(new Set(seen).size, 7)
    assert.deepEqual(
      [...seen].sort((a, b) => Number(b) - Number(a)),
      seen,
      'newest first',
    )

    const start = (await list(shop.app_id, '?limit=1')).body.newest_cursor
    const empty = await list(shop.app_id, `?after=${start}`)
    assert.deepEqual(empty.body.requests, [])
    assert.equal(empty.body.next_cursor, start)
    await call()
    await call()
    const tail = await list(shop.app_id, `?after=${start}`)
    assert.equal(tail.body.requests.length, 2)
    assert.ok(Number(tail.body.requests[0]?.id) < Number(tail.body.requests[1]?.id), 'after answers oldest first')
    assert.deepEqual((await list(shop.app_id, `?after=${tail.body.next_cursor}`)).body.requests, [])

    const otherCursor = (await list(other.app_id)).body.newest_cursor
    const hostile = [
      otherCursor,
      'garbage',
      '-1',
      Buffer.from(`requests|${shop.app_id}|9223372036854775808|`).toString('base64url'),
      Buffer.from(`requests|${shop.app_id}|-1|`).toString('base64url'),
      Buffer.from(`payments|${shop.app_id}|1|`).toString('base64url'),
      '%00',
    ]
    for (const bad of hostile) {
      for (const name of ['before', 'after']) {
        const answer = await list(shop.app_id, `?${name}=${encodeURIComponent(bad)}`)
        assert.equal(answer.status, 400, `${name}=${bad}`)
        assert.equal(answer.raw.error, 'invalid_arguments')
        assert.equal(typeof answer.raw.error_message, 'string')
      }
    }
    assert.equal((await list(shop.app_id, `?before=${start}&after=${start}`)).status, 400)
    assert.equal((await list(shop.app_id, '?status=99')).status, 400)
  })

  it("never shows one app's entries to another", async () => {
    const sb = sandbox(platform.app)
    const a = await sb.createApp()
    const b = await sb.createApp()
    await platform.app.inject({
      method: 'GET',
      url: '/v2/payments/incomplete_server_payments',
      headers: { authorization: `Key ${a.api_key}` },
    })
    const mine = (await list(a.app_id)).body.requests
    assert.equal(mine.length, 1)
    assert.deepEqual((await list(b.app_id)).body.requests, [])
    const cross = await platform.app.inject({ method: 'GET', url: `/sandbox/apps/${b.app_id}/requests/${mine[0]?.id}` })
    assert.equal(cross.statusCode, 404)
    assert.equal(json(cross).error, 'request_not_found')
    for (const id of ['0', '-1', 'abc', '9223372036854775808']) {
      const answer = await platform.app.inject({ method: 'GET', url: `/sandbox/apps/${a.app_id}/requests/${id}` })
      assert.equal(answer.statusCode, 404, id)
    }
    assert.equal((await list('app_nope')).status, 404)
  })

  it('stores no secret in any form: not the Authorization header, not keys, tokens or seeds sent in bodies', async () => {
    const sb = sandbox(platform.app)
    const shop = await sb.createApp()
    const user = await sb.createUser()
    const { accessToken } = await sb.authenticate(shop.app_id, user.user_id, ['username', 'payments', 'wallet_address'])
    const seed = Keypair.random().secret()
    const secrets = [shop.api_key, accessToken, seed, user.wallet.seed, shop.wallet.seed]
    const metadata = {
      note: `key ${shop.api_key}`,
      accessToken,
      nested: { wallet_seed: seed, other: user.wallet.seed },
      s: shop.wallet.seed,
    }
    const created = await platform.app.inject({
      method: 'POST',
      url: '/v2/client/payments',
      headers: { authorization: `Bearer ${accessToken}` },
      payload: { amount: 1, memo: `memo ${accessToken}`, metadata },
    })
    assert.equal(created.statusCode, 201, created.body)
    const a2u = await platform.app.inject({
      method: 'POST',
      url: '/v2/payments',
      headers: { authorization: `Key ${shop.api_key}` },
      payload: { payment: { amount: 1, memo: 'm', uid: 'nobody', metadata: { api_key: shop.api_key, token: accessToken } } },
    })
    assert.equal(a2u.statusCode, 404)
    const form = await platform.app.inject({
      method: 'POST',
      url: `/v2/payments/${json<{ identifier: string }>(created).identifier}/complete`,
      headers: { authorization: `Key ${shop.api_key}`, 'content-type': 'application/x-www-form-urlencoded' },
      payload: `txid=${'a'.repeat(64)}&access_token=${accessToken}`,
    })
    assert.ok(form.statusCode >= 400)
    const entries = (await list(shop.app_id)).body.requests
    assert.equal(entries.length, 3)
    const rows = await platform.db.selectFrom('request_log').selectAll().where('app_id', '=', shop.app_id).execute()
    const stored = JSON.stringify(rows)
    for (const secret of secrets) {
      for (const form of storedForms(secret)) assert.equal(stored.includes(form), false, `a form of a secret is stored: ${form}`)
    }
    assert.match(stored, /\[redacted\]/)
    // What is not secret stays readable: the memo's words, the wallet addresses, the txid.
    assert.match(stored, /memo /)
    assert.ok(stored.includes(user.wallet.address) && stored.includes(shop.wallet.address))
    assert.match(stored, new RegExp('a'.repeat(64)))
  })

  it('bounds stored bodies to 8 KiB', async () => {
    const sb = sandbox(platform.app)
    const shop = await sb.createApp()
    const user = await sb.createUser()
    const { accessToken } = await sb.authenticate(shop.app_id, user.user_id)
    const answer = await platform.app.inject({
      method: 'POST',
      url: '/v2/client/payments',
      headers: { authorization: `Bearer ${accessToken}` },
      payload: { amount: 1, memo: 'x', metadata: { blob: 'word '.repeat(4000) } },
    })
    // Refused (metadata over 4 KiB), and logged with the body it was sent.
    assert.equal(answer.statusCode, 400, answer.body)
    const [entry] = (await list(shop.app_id)).body.requests
    assert.ok(entry?.request_body && entry.request_body.length <= 8 * 1024 + 20)
    assert.match(entry.request_body, /truncated/)
  })
})

describe('request log redaction over real HTTP', () => {
  let platform: TestPlatform
  let url: string
  before(async () => {
    platform = await startPlatform()
    await platform.app.listen({ port: 0, host: '127.0.0.1' })
    const address = platform.app.server.address()
    assert.ok(typeof address === 'object' && address !== null)
    url = `http://127.0.0.1:${address.port}`
  })
  after(() => platform.close())

  const b64 = (secret: string) => Buffer.from(secret, 'base64url').toString('base64')
  const percentAll = (text: string) => [...Buffer.from(text)].map((byte) => `%${byte.toString(16).padStart(2, '0').toUpperCase()}`).join('')

  it('stores no form of a key, token or seed sent in the path, the query, the request id, a JSON array or a form body, and keeps ids, txids and addresses', async () => {
    const sb = sandbox(platform.app)
    const shop = await sb.createApp()
    const user = await sb.createUser()
    const { accessToken } = await sb.authenticate(shop.app_id, user.user_id, ['username', 'payments', 'wallet_address'])
    const seed = Keypair.random().secret()
    const secrets = [shop.api_key, accessToken, seed, user.wallet.seed, shop.wallet.seed]
    const key = { authorization: `Key ${shop.api_key}` }
    const bearer = { authorization: `Bearer ${accessToken}` }
    const send = async (method: string, path: string, headers: Record<string, string>, body?: string) => {
      const response = await fetch(`${url}${path}`, { method, headers, ...(body === undefined ? {} : { body }) })
      await response.arrayBuffer()
      return response.status
    }

    const created = await fetch(`${url}/v2/client/payments`, {
      method: 'POST',
      headers: { ...bearer, 'content-type': 'application/json' },
      body: JSON.stringify({
        amount: 1,
        memo: 'order 7',
        metadata: {
          token: [accessToken, shop.api_key],
          nested: [[shop.api_key, [seed]], { seeds: [user.wallet.seed] }],
          to: shop.wallet.address,
        },
      }),
    })
    assert.equal(created.status, 201)
    const paymentId = ((await created.json()) as { identifier: string }).identifier
    assert.equal(await send('GET', `/v2/payments/${paymentId}`, key), 200)
    // Keys, tokens and seeds where paths and queries hold ids, in every encoding a client may give them.
    assert.equal(await send('GET', `/v2/payments/${shop.api_key}`, key), 404)
    assert.equal(await send('GET', `/v2/payments/${percentAll(accessToken)}`, key), 404)
    assert.equal(await send('POST', `/v2/payments/${encodeURIComponent(b64(shop.api_key))}/approve`, key), 404)
    assert.equal(
      await send('POST', `/v2/payments/${seed}/cancel?api_key=${shop.api_key}&t=${encodeURIComponent(b64(accessToken))}`, key),
      404,
    )
    assert.equal(await send('GET', `/v2/payments/${paymentId}`, { ...key, 'x-request-id': accessToken }), 200)
    const txid = 'c0ffee'.repeat(10).concat('c0ff')
    const form = await send(
      'POST',
      `/v2/payments/${paymentId}/complete`,
      { ...key, 'content-type': 'application/x-www-form-urlencoded' },
      `txid=${txid}&access_token=${accessToken}&memo=${encodeURIComponent(`seed ${user.wallet.seed}`)}&note=${shop.api_key}`,
    )
    assert.ok(form >= 400)

    const entries = (await platform.app.inject({ method: 'GET', url: `/sandbox/apps/${shop.app_id}/requests` })).json() as Page
    assert.equal(entries.requests.length, 8)
    const rows = await platform.db.selectFrom('request_log').selectAll().where('app_id', '=', shop.app_id).execute()
    const stored = JSON.stringify(rows)
    for (const secret of secrets) {
      for (const form of loggedForms(secret)) assert.equal(stored.includes(form), false, `a form of a secret is stored: ${form}`)
    }
    const paths = rows.map((row) => row.path).sort()
    assert.deepEqual(
      paths,
      [
        '/v2/client/payments',
        `/v2/payments/${paymentId}`,
        `/v2/payments/${paymentId}`,
        `/v2/payments/${paymentId}/complete`,
        '/v2/payments/[redacted]',
        '/v2/payments/[redacted]',
        '/v2/payments/[redacted]/approve',
        '/v2/payments/[redacted]/cancel',
      ].sort(),
    )
    const [withId] = rows.filter((row) => row.request_id === '[redacted]')
    assert.ok(withId, 'the secret sent as a request id is not kept')
    // A JSON body is still JSON, the arrays under secret names redacted whole.
    const createdRow = rows.find((row) => row.path === '/v2/client/payments')
    const body = JSON.parse(createdRow?.request_body ?? '') as { memo: string; metadata: Record<string, unknown> }
    assert.equal(body.memo, 'order 7')
    assert.equal(body.metadata.token, '[redacted]')
    assert.deepEqual(body.metadata.nested, [['[redacted]', ['[redacted]']], { seeds: '[redacted]' }])
    assert.equal(body.metadata.to, shop.wallet.address)
    // What one debugs with stays: payment ids, the txid, wallet addresses.
    assert.ok(stored.includes(txid))
    assert.ok(stored.includes(user.wallet.address))
    assert.ok(rows.some((row) => row.response_body?.includes(paymentId)))
  })
})

describe('request log retention', () => {
  it("keeps each app's newest rows and none older than the age bound", async () => {
    const platform = await startPlatform()
    try {
      const { requestLogRepo } = await import('../../src/request-log/request-log-repo.js')
      const { sql } = await import('kysely')
      const sb = sandbox(platform.app)
      const [a, b] = [await sb.createApp(), await sb.createApp()]
      const call = (key: string) =>
        platform.app.inject({ method: 'GET', url: '/v2/payments/incomplete_server_payments', headers: { authorization: `Key ${key}` } })
      for (let i = 0; i < 5; i++) await Promise.all([call(a.api_key), call(b.api_key)])
      const ids = async (appId: string) =>
        json<Page>(await platform.app.inject({ method: 'GET', url: `/sandbox/apps/${appId}/requests` })).requests.map((e) => e.id)
      const [aIds, bIds] = [await ids(a.app_id), await ids(b.app_id)]
      assert.equal(aIds.length, 5)
      const repo = requestLogRepo(platform.db)
      await repo.prune([a.app_id], 2, 7 * 86_400)
      assert.deepEqual(await ids(a.app_id), aIds.slice(0, 2), 'the newest two of app a')
      assert.deepEqual(await ids(b.app_id), bIds, 'app b untouched')
      // Age: rows written more than 7 days ago (database time) go, whichever app.
      await sql`update request_log set logged_at = now() - interval '8 days' where id <= ${Number(bIds[2])}`.execute(platform.db)
      await repo.prune([], 10_000, 7 * 86_400)
      const left = await ids(b.app_id)
      assert.ok(left.every((id) => Number(id) > Number(bIds[2])))
      assert.equal(left.length, 2)
    } finally {
      await platform.close()
    }
  })
})

describe('request log switched off, and production mode', () => {
  it('writes nothing when off, and production mode has no such route', async () => {
    for (const options of [{ requestLog: false }, { mode: 'production' as const }]) {
      const platform = await startPlatform(options)
      try {
        const sb = sandbox(platform.app)
        if (options.mode === 'production') {
          const answer = await platform.app.inject({ method: 'GET', url: '/sandbox/apps/app_x/requests' })
          assert.equal(answer.statusCode, 404)
          assert.equal(json(answer).error, 'not_found')
          const one = await platform.app.inject({ method: 'GET', url: '/sandbox/apps/app_x/requests/1' })
          assert.equal(one.statusCode, 404)
          continue
        }
        const shop = await sb.createApp()
        await platform.app.inject({
          method: 'GET',
          url: '/v2/payments/incomplete_server_payments',
          headers: { authorization: `Key ${shop.api_key}` },
        })
        const page = json<Page>(await platform.app.inject({ method: 'GET', url: `/sandbox/apps/${shop.app_id}/requests` }))
        assert.equal(page.enabled, false)
        assert.deepEqual(page.requests, [])
      } finally {
        await platform.close()
      }
    }
  })

  it('production mode writes the log when PLINTH_REQUEST_LOG=on, and flushes the buffer when the app closes', async () => {
    const platform = await startPlatform({ mode: 'production', requestLog: true })
    const { sql } = await import('kysely')
    // Production has no sandbox API: make an app and a key as the migrations' tables hold them.
    const { sha256Hex, newSecret } = await import('../../src/lib/crypto.js')
    const key = newSecret()
    await sql`insert into apps (id, name, network, wallet_address, created_at) values ('app_prod', 'P', 'Pi Testnet', 'GPROD', now())`.execute(
      platform.db,
    )
    await sql`insert into api_keys (id, app_id, key_hash, key_prefix, created_at) values ('key_prod', 'app_prod', ${sha256Hex(key)}, 'x', now())`.execute(
      platform.db,
    )
    const answer = await platform.app.inject({
      method: 'GET',
      url: '/v2/payments/incomplete_server_payments',
      headers: { authorization: `Key ${key}` },
    })
    assert.equal(answer.statusCode, 200)
    await platform.app.close()
    const rows = await platform.db.selectFrom('request_log').selectAll().execute()
    assert.equal(rows.length, 1)
    assert.equal(rows[0]?.key_id, 'key_prod')
    await platform.close().catch(() => undefined)
  })
})
