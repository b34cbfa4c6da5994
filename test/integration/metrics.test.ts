import assert from 'node:assert/strict'
import crypto, { createHash, randomBytes } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { syncBuiltinESMExports } from 'node:module'
import { after, before, describe, it, mock } from 'node:test'
import { sandbox, startPlatform, TEST_DB, type TestPlatform, usePlatform } from '../helpers/platform.js'
import { openSse } from '../helpers/sse.js'

/** Prometheus' text format, parsed strictly: every line a comment (HELP/TYPE) or `name{labels} value`. */
function parse(text: string): Map<string, number> {
  const samples = new Map<string, number>()
  const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*",?)*\})? (-?[0-9.e+-]+|[Nn]a[Nn]|\+Inf|-Inf)$/
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('# HELP ') || line.startsWith('# TYPE ')) continue
    const match = sample.exec(line)
    assert.ok(match, `not a sample line of the text format: ${line}`)
    samples.set(`${match[1]}${match[2] ?? ''}`, Number(match[3]))
  }
  return samples
}

async function scrape(
  platform: TestPlatform,
  headers: Record<string, string> = {},
): Promise<{ text: string; samples: Map<string, number> }> {
  const response = await platform.app.inject({ method: 'GET', url: '/metrics', headers })
  assert.equal(response.statusCode, 200, response.body)
  assert.match(String(response.headers['content-type']), /^text\/plain; version=0\.0\.4/)
  return { text: response.body, samples: parse(response.body) }
}

const requestCount = (samples: Map<string, number>, method: string, route: string, status: number) =>
  samples.get(`plinth_http_request_duration_seconds_count{method="${method}",route="${route}",status="${status}"}`) ?? 0

describe(`GET /metrics (${TEST_DB})`, () => {
  let platform: TestPlatform
  let apiKey: string
  let accessToken: string
  let paymentId: string

  before(async () => {
    platform = await startPlatform({
      extend: (app) => app.metrics.gauge('plinth_test_buffer_size', 'A gauge another part registers', () => 42),
    })
    const s = sandbox(platform.app)
    const app = await s.createApp()
    const user = await s.createUser()
    const signedIn = await s.authenticate(app.app_id, user.user_id, ['username', 'payments', 'wallet_address'])
    apiKey = app.api_key
    accessToken = signedIn.accessToken
    const created = await platform.app.inject({
      method: 'POST',
      url: '/v2/payments',
      headers: { authorization: `Key ${apiKey}` },
      payload: { payment: { amount: 1, memo: 'metrics', metadata: {}, uid: signedIn.user.uid } },
    })
    assert.equal(created.statusCode, 200, created.body)
    paymentId = created.json<{ identifier: string }>().identifier
  })
  after(() => platform.close())

  it('exposes every metric the docs name (ARCHITECTURE.md, RELIABILITY.md, README.md, docs/*.md)', async () => {
    const root = new URL('../../', import.meta.url)
    const docs = readdirSync(new URL('docs/', root)).filter((name) => name.endsWith('.md'))
    const files = ['ARCHITECTURE.md', 'RELIABILITY.md', 'README.md', ...docs.map((name) => `docs/${name}`)]
    const named = new Map<string, string>()
    for (const file of files) {
      const text = readFileSync(new URL(file, root), 'utf8')
      // A name ending in `_` or followed by `*` or `<` is a prefix (`plinth_`, the schemas `plinth_chaos_*`), not a metric;
      // one inside another name (the session cookie `__Host-plinth_session`) is not one either, nor
      // one followed by `:`, a JSON field (the snapshot file's `{ plinth_snapshot: 1, … }`).
      for (const match of text.matchAll(/(?<![\w-])plinth_[a-z_]+(?![a-z_*<:])/g)) if (!match[0].endsWith('_')) named.set(match[0], file)
    }
    assert.ok(named.size >= 10, `the docs name metrics: ${[...named.keys()].join(', ')}`)
    const { text } = await scrape(platform)
    const exposed = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((match) => match[1]))
    const missing = [...named].filter(([name]) => !exposed.has(name)).map(([name, file]) => `${name} (${file})`)
    assert.deepEqual(missing, [], 'metrics named in the docs but not exposed by GET /metrics')
  })

  it('answers the text format, with the process, event-loop, pool and registered gauges', async () => {
    const { samples } = await scrape(platform)
    assert.ok(samples.has('plinth_nodejs_eventloop_lag_seconds'), 'event-loop lag')
    assert.ok(samples.has('plinth_process_resident_memory_bytes'), 'resident memory')
    assert.ok((samples.get('plinth_db_connections') ?? 0) >= 1, 'open connections')
    assert.equal(samples.get('plinth_db_connections_waiting'), 0)
    assert.equal(samples.get('plinth_test_buffer_size'), 42)
    assert.ok((samples.get('plinth_credential_cache_entries') ?? 0) >= 1)
  })

  it("shows the ledger streams open and the request log's buffer", async () => {
    const address = await platform.app.listen({ port: 0, host: '127.0.0.1' })
    const before = (await scrape(platform)).samples
    assert.equal(before.get('plinth_ledger_streams_open'), 0)
    assert.equal(before.get('plinth_request_log_dropped'), 0)
    assert.ok(before.has('plinth_request_log_buffered'))
    const stream = await openSse(`${address}/ledger/transactions?cursor=now`)
    try {
      assert.equal((await stream.next()).data, '"hello"')
      const during = (await scrape(platform)).samples
      assert.equal(during.get('plinth_ledger_streams_open'), 1)
      assert.equal(during.get('plinth_ledger_stream_clients'), 1)
      // The buffer is written every 250 ms: a scrape right after a call sees it waiting (tried a few times, for a slow machine).
      let seen = 0
      for (let attempt = 0; attempt < 5 && seen === 0; attempt++) {
        await platform.app.inject({ method: 'GET', url: '/v2/me', headers: { authorization: `Bearer ${accessToken}` } })
        seen = (await scrape(platform)).samples.get('plinth_request_log_buffered') ?? 0
      }
      assert.ok(seen >= 1, 'a /v2/me call waits in the buffer')
    } finally {
      stream.close()
    }
    for (let i = 0; i < 100 && (await scrape(platform)).samples.get('plinth_ledger_streams_open') !== 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    assert.equal((await scrape(platform)).samples.get('plinth_ledger_streams_open'), 0, 'a closed stream is no longer counted')
  })

  it('counts requests by route pattern and status, never by raw URL', async () => {
    const before = (await scrape(platform)).samples
    for (let i = 0; i < 3; i++) {
      const me = await platform.app.inject({ method: 'GET', url: '/v2/me', headers: { authorization: `Bearer ${accessToken}` } })
      assert.equal(me.statusCode, 200)
    }
    const got = await platform.app.inject({ method: 'GET', url: `/v2/payments/${paymentId}`, headers: { authorization: `Key ${apiKey}` } })
    assert.equal(got.statusCode, 200)
    const missing = await platform.app.inject({ method: 'GET', url: '/v2/payments/nope', headers: { authorization: `Key ${apiKey}` } })
    assert.equal(missing.statusCode, 404)
    const { text, samples } = await scrape(platform)
    assert.equal(requestCount(samples, 'GET', '/v2/me', 200) - requestCount(before, 'GET', '/v2/me', 200), 3)
    assert.equal(
      requestCount(samples, 'GET', '/v2/payments/:payment_id', 200) - requestCount(before, 'GET', '/v2/payments/:payment_id', 200),
      1,
    )
    assert.equal(
      requestCount(samples, 'GET', '/v2/payments/:payment_id', 404) - requestCount(before, 'GET', '/v2/payments/:payment_id', 404),
      1,
    )
    assert.ok(!text.includes(paymentId), 'no payment id in any label')
    assert.ok(!text.includes('nope'))
  })

  it('counts credential-cache hits and misses, and times statements by kind', async () => {
    const read = (samples: Map<string, number>, kind: string, outcome: string) =>
      samples.get(`plinth_credential_cache_lookups_total{kind="${kind}",outcome="${outcome}"}`) ?? 0
    const before = (await scrape(platform)).samples
    const s = sandbox(platform.app)
    const app = await s.createApp()
    for (let i = 0; i < 2; i++) {
      const response = await platform.app.inject({
        method: 'GET',
        url: `/v2/payments/${paymentId}`,
        headers: { authorization: `Key ${app.api_key}` },
      })
      assert.equal(response.statusCode, 404, 'another app does not see the payment')
    }
    const { samples } = await scrape(platform)
    assert.equal(read(samples, 'key', 'miss') - read(before, 'key', 'miss'), 1, 'the first use of a new key misses')
    assert.equal(read(samples, 'key', 'hit') - read(before, 'key', 'hit'), 1, 'the second hits')
    assert.ok(
      (samples.get('plinth_db_query_duration_seconds_count{kind="select"}') ?? 0) >
        (before.get('plinth_db_query_duration_seconds_count{kind="select"}') ?? 0),
    )
    assert.ok((samples.get('plinth_db_query_duration_seconds_count{kind="insert"}') ?? 0) > 0)
  })

  it('holds no credential in any label or value', async () => {
    const { text } = await scrape(platform)
    for (const secret of [apiKey, accessToken]) {
      assert.ok(!text.includes(secret))
      assert.ok(!text.includes(createHash('sha256').update(secret).digest('hex')))
      assert.ok(!text.includes(secret.slice(0, 16)))
    }
  })

  it('keeps its series bounded under a fuzz of random URLs and methods', async () => {
    const series = (text: string) => text.split('\n').filter((line) => line.startsWith('plinth_http_request_duration_seconds_count')).length
    // One pass of the fuzz makes the series it can (unmatched 404, 405s of known routes); a second, ten times longer, adds none.
    const fuzz = async (count: number) => {
      const segments: string[] = []
      for (let i = 0; i < count; i++) {
        const segment = randomBytes(6).toString('hex')
        segments.push(segment)
        const method = (['GET', 'POST', 'PUT', 'DELETE', 'PATCH'] as const)[i % 5] ?? 'GET'
        const url = [`/${segment}`, `/v2/${segment}`, `/v2/payments/${segment}/x`, `/ledger/${segment}`, `/v2/me/${segment}`][i % 5] ?? '/'
        await platform.app.inject({ method, url: `${url}?q=${segment}` })
      }
      return segments
    }
    await fuzz(50)
    const settled = series((await scrape(platform)).text)
    const segments = await fuzz(500)
    const { text } = await scrape(platform)
    assert.equal(series(text), settled, 'no new series')
    assert.ok(settled < 60, `${settled} request series`)
    for (const segment of segments) assert.ok(!text.includes(segment), `the URL segment ${segment} is in no label`)
  })
})

describe(`GET /metrics in production (${TEST_DB})`, () => {
  const token = `metrics-${randomBytes(16).toString('hex')}`
  const production = usePlatform({ mode: 'production' })

  it('is not served without PLINTH_METRICS_TOKEN', async () => {
    const response = await production.app.inject({ method: 'GET', url: '/metrics' })
    assert.equal(response.statusCode, 404)
  })

  it('refuses a missing, wrong-scheme or wrong token with 401 invalid_metrics_token, comparing in constant time', async () => {
    // A config variant: a second app over the same database costs no new one.
    const platform = await startPlatform({ mode: 'production', metricsToken: token, sharing: production })
    const timingSafeEqual = mock.method(crypto, 'timingSafeEqual')
    // src/lib/crypto.ts imports it by name: make the named export the spy.
    syncBuiltinESMExports()
    const digest = (text: string) => createHash('sha256').update(text).digest()
    try {
      for (const authorization of [undefined, `Basic ${token}`, `Bearer ${token}x`, `Bearer ${token.slice(0, -1)}`, 'Bearer x']) {
        const response = await platform.app.inject({
          method: 'GET',
          url: '/metrics',
          headers: authorization === undefined ? {} : { authorization },
        })
        assert.equal(response.statusCode, 401, String(authorization))
        assert.equal(response.json<{ error: string }>().error, 'invalid_metrics_token')
        assert.ok(!response.body.includes('plinth_'), 'no metric leaks in a refusal')
      }
      const given = `${token}x`
      const compared = timingSafeEqual.mock.calls.filter(
        (call) => digest(given).equals(call.arguments[0] as Buffer) && digest(token).equals(call.arguments[1] as Buffer),
      )
      assert.equal(compared.length, 1, 'a token of another length is compared by digest')
      const { samples } = await scrape(platform, { authorization: `Bearer ${token}` })
      assert.ok(samples.has('plinth_nodejs_eventloop_lag_seconds'))
      assert.ok(!(await scrape(platform, { authorization: `bearer ${token}` })).text.includes(token), 'the token is in no label')
    } finally {
      timingSafeEqual.mock.restore()
      syncBuiltinESMExports()
      await platform.close()
    }
  })
})
