import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'kysely'
import { parseCsv } from '../helpers/csv-parse.js'
import { json, type SandboxApp, sandbox, startPlatform, type TestPlatform, uniqueName } from '../helpers/platform.js'

/** Hostile memos and metadata: what a developer's test data can hold (the API refuses NUL and lone surrogates). */
const MEMOS = [
  '=HYPERLINK("http://evil.example","click")',
  '+1 and, a comma',
  '-2 "quoted" text',
  '@SUM(A1:A9)',
  'line one\nline two\r\nline three',
  '\uFEFFstarts with a BOM',
  '\uFEFF=BOM then a formula',
  'plain 😀 é',
]

describe('exports of payments, users and the request log (CSV and JSON)', () => {
  let platform: TestPlatform
  let shop: SandboxApp
  const tag = uniqueName('exp')
  const paymentIds: string[] = []

  before(async () => {
    platform = await startPlatform()
    const sb = sandbox(platform.app)
    shop = await sb.createApp()
    for (const [i, memo] of MEMOS.entries()) {
      const user = await sb.createUser(`${tag}_${i}`)
      const { accessToken } = await sb.authenticate(shop.app_id, user.user_id)
      const created = await platform.app.inject({
        method: 'POST',
        url: '/v2/client/payments',
        headers: { authorization: `Bearer ${accessToken}` },
        payload: { amount: i + 0.5, memo, metadata: { note: memo, n: i } },
      })
      assert.equal(created.statusCode, 201, created.body)
      paymentIds.push(json<{ identifier: string }>(created).identifier)
    }
    await platform.app.inject({ method: 'GET', url: '/v2/payments/nope', headers: { authorization: `Key ${shop.api_key}` } })
  })
  after(() => platform.close())

  const get = (url: string) => platform.app.inject({ method: 'GET', url })

  it('payments as CSV: one well-formed row a payment, hostile text intact and formulas defused', async () => {
    const answer = await get(`/sandbox/apps/${shop.app_id}/payments/export?format=csv`)
    assert.equal(answer.statusCode, 200, answer.body)
    assert.equal(answer.headers['content-type'], 'text/csv; charset=utf-8')
    assert.equal(answer.headers['content-disposition'], `attachment; filename="${shop.app_id}-payments.csv"`)
    assert.equal(answer.headers['x-plinth-export-truncated'], 'false')
    const [header, ...rows] = parseCsv(answer.body)
    assert.ok(header)
    assert.deepEqual(header.slice(0, 6), ['identifier', 'direction', 'state', 'amount', 'memo', 'metadata'])
    assert.equal(rows.length, MEMOS.length)
    const memoAt = header.indexOf('memo')
    const byId = new Map(rows.map((row) => [row[0], row]))
    for (const [i, memo] of MEMOS.entries()) {
      const row = byId.get(paymentIds[i])
      assert.ok(row, `payment ${i} is exported`)
      const defused = /^[\uFEFF\s]*[=+\-@]/.test(memo) ? `'${memo}` : memo
      assert.equal(row[memoAt], defused, JSON.stringify(memo))
      assert.deepEqual(JSON.parse(row[header.indexOf('metadata')] ?? ''), { note: memo, n: i })
      assert.equal(row[header.indexOf('amount')], String(i + 0.5))
      assert.equal(row[header.indexOf('state')], 'created')
    }
    // No cell a spreadsheet would run: each starts with ' or with no formula character, but for the
    // columns of identifiers the platform made (a payment identifier may start with -), kept exact.
    const ids = new Set(['identifier', 'user_id', 'user_uid', 'txid', 'from_address', 'to_address'].map((name) => header.indexOf(name)))
    for (const row of rows)
      for (const [at, cell] of row.entries()) if (!ids.has(at)) assert.doesNotMatch(cell, /^[\uFEFF\s]*[=+@]|^-[^0-9]/, cell)
  })

  it('payments as JSON: each as the list answers it; filters apply', async () => {
    const answer = await get(`/sandbox/apps/${shop.app_id}/payments/export`)
    assert.equal(answer.statusCode, 200)
    assert.match(String(answer.headers['content-type']), /^application\/json/)
    assert.equal(answer.headers['content-disposition'], `attachment; filename="${shop.app_id}-payments.json"`)
    const body = json<{ payments: Array<{ identifier: string; memo: string; state: string }>; exported: number; truncated: boolean }>(
      answer,
    )
    assert.equal(body.exported, MEMOS.length)
    assert.equal(body.truncated, false)
    assert.deepEqual(new Set(body.payments.map((p) => p.memo)), new Set(MEMOS), 'JSON keeps the text exactly')
    const filtered = json<{ payments: unknown[] }>(await get(`/sandbox/apps/${shop.app_id}/payments/export?state=completed`))
    assert.equal(filtered.payments.length, 0)
    const one = json<{ payments: Array<{ identifier: string }> }>(
      await get(`/sandbox/apps/${shop.app_id}/payments/export?q=${paymentIds[2]}`),
    )
    assert.deepEqual(
      one.payments.map((p) => p.identifier),
      [paymentIds[2]],
    )
  })

  it("users as CSV and JSON, with the list's q", async () => {
    const csv = await get(`/sandbox/users/export?format=csv&q=${tag}`)
    assert.equal(csv.statusCode, 200)
    assert.equal(csv.headers['content-disposition'], 'attachment; filename="users.csv"')
    const [header, ...rows] = parseCsv(csv.body)
    assert.deepEqual(header, ['user_id', 'username', 'wallet_address', 'created_at'])
    assert.equal(rows.length, MEMOS.length)
    assert.ok(rows.every((row) => row[1]?.startsWith(tag)))
    const body = json<{ users: Array<{ username: string }>; exported: number }>(await get(`/sandbox/users/export?q=${tag}`))
    assert.equal(body.exported, MEMOS.length)
  })

  it("the request log as CSV and JSON, with the list's filters", async () => {
    const csv = await get(`/sandbox/apps/${shop.app_id}/requests/export?format=csv`)
    assert.equal(csv.statusCode, 200)
    assert.equal(csv.headers['content-disposition'], `attachment; filename="${shop.app_id}-requests.csv"`)
    const [header, ...rows] = parseCsv(csv.body)
    assert.ok(header?.includes('request_body') && header.includes('status'))
    assert.equal(rows.length, MEMOS.length + 1)
    const errors = json<{ requests: Array<{ status: number; path: string }>; exported: number }>(
      await get(`/sandbox/apps/${shop.app_id}/requests/export?status=4xx`),
    )
    assert.deepEqual(
      errors.requests.map((r) => [r.status, r.path]),
      [[404, '/v2/payments/nope']],
    )
    // A memo with a newline inside a JSON body stays one cell.
    const bodies = rows.map((row) => row[header?.indexOf('request_body') ?? -1] ?? '')
    assert.ok(bodies.some((b) => b.includes('line one\\nline two')))
  })

  it('holds the newest 10,000 rows at most, and says when it left older ones out', async () => {
    const busy = await sandbox(platform.app).createApp()
    await sql`
      insert into request_log (app_id, at, method, path, route, status, latency_ms, request_id)
      select ${busy.app_id}, now(), 'GET', '/v2/me', '/v2/me', 200, 1, 'bulk-' || n from generate_series(1, 10001) n`.execute(platform.db)
    const csv = await get(`/sandbox/apps/${busy.app_id}/requests/export?format=csv`)
    assert.equal(csv.headers['x-plinth-export-truncated'], 'true')
    const rows = parseCsv(csv.body)
    assert.equal(rows.length, 10_001, 'the header and 10,000 rows')
    assert.equal(rows[1]?.[rows[0]?.indexOf('request_id') ?? -1], 'bulk-10001', 'newest first')
    const body = json<{ exported: number; truncated: boolean }>(await get(`/sandbox/apps/${busy.app_id}/requests/export?status=2xx`))
    assert.deepEqual(body, { ...body, exported: 10_000, truncated: true })
    const small = await get(`/sandbox/apps/${busy.app_id}/requests/export?status=4xx`)
    assert.equal(small.headers['x-plinth-export-truncated'], 'false')
  })

  it('refuses a bad format, an unknown app, and an over-long q', async () => {
    for (const url of [
      `/sandbox/apps/${shop.app_id}/payments/export?format=xlsx`,
      '/sandbox/users/export?format=CSV',
      `/sandbox/apps/${shop.app_id}/requests/export?format=`,
      `/sandbox/users/export?q=${'x'.repeat(33)}`,
    ]) {
      const answer = await get(url)
      assert.equal(answer.statusCode, 400, url)
      assert.equal(json(answer).error, 'invalid_arguments', url)
    }
    for (const url of ['/sandbox/apps/app_none/payments/export', '/sandbox/apps/app_none/requests/export?format=csv']) {
      const answer = await get(url)
      assert.equal(answer.statusCode, 404, url)
      assert.equal(json(answer).error, 'app_not_found')
    }
  })
})

describe('exports behind the admin token', () => {
  let platform: TestPlatform
  const adminToken = 'export-admin-token-0123456789'
  before(async () => {
    platform = await startPlatform({ adminToken })
  })
  after(() => platform.close())

  it('need X-Admin-Token', async () => {
    const shop = await sandbox(platform.app, { 'x-admin-token': adminToken }).createApp()
    for (const url of [
      '/sandbox/users/export?format=csv',
      `/sandbox/apps/${shop.app_id}/payments/export`,
      `/sandbox/apps/${shop.app_id}/requests/export`,
    ]) {
      const refused = await platform.app.inject({ method: 'GET', url })
      assert.equal(refused.statusCode, 401, url)
      assert.equal(json(refused).error, 'invalid_admin_token')
      const allowed = await platform.app.inject({ method: 'GET', url, headers: { 'x-admin-token': adminToken } })
      assert.equal(allowed.statusCode, 200, url)
    }
  })
})
