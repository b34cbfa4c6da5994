import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { after, before, describe, it } from 'node:test'
import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import { ConfigError, loadConfig } from '../../src/config.js'
import { windowCounters } from '../../src/http/rate-limit.js'
import { type SandboxApp, sandbox, startPlatform, type TestPlatform } from '../helpers/platform.js'

const KEY_LIMIT = 3
const TOKEN_LIMIT = 2
const key = (app: SandboxApp | { api_key: string }) => ({ authorization: `Key ${app.api_key}` })
const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
const INCOMPLETE = '/v2/payments/incomplete_server_payments'

/** The parts of an error answer that must never leak: stacks, file paths, framework banners. */
function assertCleanError(response: LightMyRequestResponse, what: string): void {
  assert.ok(response.statusCode >= 400, `${what}: ${response.statusCode}`)
  assert.match(String(response.headers['content-type']), /^application\/(problem\+)?json/, `${what}: content type`)
  assert.equal(response.headers['x-content-type-options'], 'nosniff', `${what}: nosniff`)
  assert.equal(response.headers['x-powered-by'], undefined, `${what}: x-powered-by`)
  assert.equal(response.headers.server, undefined, `${what}: server`)
  const body = response.json() as Record<string, unknown>
  assert.equal(typeof body, 'object', what)
  assert.equal('stack' in body, false, `${what}: stack field`)
  assert.doesNotMatch(response.body, /\bat [^ ]+ \(|\.[jt]s:\d+|node_modules|\/work\/|\/secret\//, `${what}: ${response.body}`)
}

describe('rate limits', () => {
  let platform: TestPlatform
  let now = 1_000_000
  const inject = (options: InjectOptions) => platform.app.inject(options)

  before(async () => {
    platform = await startPlatform({ rateLimits: { keyPerMinute: KEY_LIMIT, tokenPerMinute: TOKEN_LIMIT, now: () => now } })
  })
  after(() => platform.close())

  it('answers 429 rate_limited with Retry-After once a key is past its limit, and only for that key, until the minute ends', async () => {
    const s = sandbox(platform.app)
    const first = await s.createApp()
    const second = await s.createKey(first.app_id)
    const other = await s.createApp()

    for (let i = 1; i <= KEY_LIMIT; i++) {
      const ok = await inject({ method: 'GET', url: INCOMPLETE, headers: key(first) })
      assert.equal(ok.statusCode, 200)
      assert.equal(ok.headers['x-ratelimit-limit'], String(KEY_LIMIT))
      assert.equal(ok.headers['x-ratelimit-remaining'], String(KEY_LIMIT - i))
    }
    const refused = await inject({ method: 'GET', url: INCOMPLETE, headers: key(first) })
    assert.equal(refused.statusCode, 429)
    assert.equal(refused.headers['retry-after'], '60')
    assert.match(String(refused.headers['content-type']), /^application\/json/)
    const body = refused.json() as { error: string; error_message: string }
    assert.equal(body.error, 'rate_limited')
    assert.match(body.error_message, /server API key.*at most 3 a minute/)
    assertCleanError(refused, 'rate limited')

    // The limit is counted before the body is read or validated: a bad body is refused as 429 too.
    const badBody = await inject({ method: 'POST', url: '/v2/payments', headers: key(first), payload: { nonsense: true } })
    assert.equal(badBody.statusCode, 429)

    // Another key of the same app, and another app's key, have their own budgets.
    assert.equal((await inject({ method: 'GET', url: INCOMPLETE, headers: key(second) })).statusCode, 200)
    assert.equal((await inject({ method: 'GET', url: INCOMPLETE, headers: key(other) })).statusCode, 200)

    now += 45_000
    const later = await inject({ method: 'GET', url: INCOMPLETE, headers: key(first) })
    assert.equal(later.statusCode, 429)
    assert.equal(later.headers['retry-after'], '15')

    now += 15_000
    const reset = await inject({ method: 'GET', url: INCOMPLETE, headers: key(first) })
    assert.equal(reset.statusCode, 200)
    assert.equal(reset.headers['x-ratelimit-remaining'], String(KEY_LIMIT - 1))
  })

  it('limits each access token on its own, apart from the keys of its app', async () => {
    const s = sandbox(platform.app)
    const app = await s.createApp()
    const user = await s.createUser()
    const { accessToken } = await s.authenticate(app.app_id, user.user_id)
    const { accessToken: otherToken } = await s.authenticate(app.app_id, user.user_id)

    for (let i = 0; i < TOKEN_LIMIT; i++) {
      assert.equal((await inject({ method: 'GET', url: '/v2/me', headers: bearer(accessToken) })).statusCode, 200)
    }
    const refused = await inject({ method: 'GET', url: '/v2/me', headers: bearer(accessToken) })
    assert.equal(refused.statusCode, 429)
    assert.equal(refused.headers['retry-after'], '60')
    assert.equal(refused.json().error, 'rate_limited')
    assert.match(refused.json().error_message, /access token.*at most 2 a minute/)
    // Client routes with the same token share its budget (one the token has the scope for: payments).
    assert.equal((await inject({ method: 'GET', url: '/v2/client/payments/incomplete', headers: bearer(accessToken) })).statusCode, 429)
    // A route the token lacks the scope for refuses it before the limiter counts (docs/security.md).
    const unscoped = await inject({ method: 'GET', url: '/v2/client/notifications', headers: bearer(accessToken) })
    assert.equal(unscoped.statusCode, 401)
    assert.equal(unscoped.json().error, 'missing_scope')

    assert.equal((await inject({ method: 'GET', url: '/v2/me', headers: bearer(otherToken) })).statusCode, 200)
    assert.equal((await inject({ method: 'GET', url: INCOMPLETE, headers: key(app) })).statusCode, 200)

    now += 60_000
    assert.equal((await inject({ method: 'GET', url: '/v2/me', headers: bearer(accessToken) })).statusCode, 200)
  })

  it('answers notify past the limit in its own {error} shape', async () => {
    const app = await sandbox(platform.app).createApp()
    const notify = () =>
      inject({ method: 'POST', url: '/v2/in_app_notifications/notify', headers: key(app), payload: { notifications: [] } })
    for (let i = 0; i < KEY_LIMIT; i++) assert.equal((await notify()).statusCode, 422)
    const refused = await notify()
    assert.equal(refused.statusCode, 429)
    assert.equal(refused.headers['retry-after'], '60')
    assert.deepEqual(Object.keys(refused.json()), ['error'])
    assert.match(refused.json().error, /Too many requests with this server API key/)
    assertCleanError(refused, 'notify rate limited')
  })

  it('does not limit requests that fail authentication, nor the sandbox API', async () => {
    for (let i = 0; i < KEY_LIMIT + 2; i++) {
      const response = await inject({ method: 'GET', url: INCOMPLETE, headers: { authorization: `Key ${'x'.repeat(43)}` } })
      assert.equal(response.statusCode, 401)
      assert.equal(response.headers['x-ratelimit-limit'], undefined)
    }
    for (let i = 0; i < KEY_LIMIT + 2; i++) {
      const response = await inject({ method: 'GET', url: '/sandbox/apps?limit=1' })
      assert.equal(response.statusCode, 200)
      assert.equal(response.headers['x-ratelimit-limit'], undefined)
    }
  })

  it('documents the 429 of limited routes in the OpenAPI document', async () => {
    const paths = (await inject({ method: 'GET', url: '/v2/openapi.json' })).json().paths
    const limited = paths[INCOMPLETE].get.responses['429']
    assert.ok(limited, 'key route documents 429')
    assert.ok(paths['/v2/me'].get.responses['429'], 'token route documents 429')
    const notify429 = JSON.stringify(paths['/v2/in_app_notifications/notify'].post.responses['429'])
    assert.ok(notify429.includes('error') && !notify429.includes('error_message'), `notify documents its own shape: ${notify429}`)
    assert.equal(paths['/sandbox/apps'].post.responses['429'], undefined, 'the sandbox API is not limited')
  })
})

describe('the rate limit counters', () => {
  const take = (store: { incr: (...args: never[]) => void }, key: string, windowMs = 60_000) => {
    let result: { current: number; ttl: number } | undefined
    ;(store.incr as (k: string, cb: (e: Error | null, r?: { current: number; ttl: number }) => void, w: number, m: number) => void)(
      key,
      (_error, value) => {
        result = value
      },
      windowMs,
      10,
    )
    assert.ok(result)
    return result
  }

  it('count in fixed windows and keep at most the configured number of keys, dropping the oldest window first', () => {
    let now = 0
    const Store = windowCounters(() => now, 2)
    const store = new Store({})
    assert.deepEqual(take(store, 'a'), { current: 1, ttl: 60_000 })
    now = 10_000
    assert.deepEqual(take(store, 'a'), { current: 2, ttl: 50_000 })
    take(store, 'b')
    take(store, 'c') // a third key: 'a', whose window is the oldest, is dropped
    assert.equal(take(store, 'b').current, 2)
    assert.equal(take(store, 'c').current, 2)
    assert.equal(take(store, 'a').current, 1, 'a was forgotten')
    now = 70_000
    assert.equal(take(store, 'c').current, 1, 'a new window')
  })
})

describe('the rate limit configuration', () => {
  it('defaults to 60000 a minute per key and 1200 per token, and takes 0 for off', () => {
    const defaults = loadConfig({}, '/srv')
    assert.equal(defaults.rateLimitKeyPerMinute, 60_000)
    assert.equal(defaults.rateLimitTokenPerMinute, 1_200)
    const set = loadConfig({ PLINTH_RATE_LIMIT_KEY_PER_MINUTE: '0', PLINTH_RATE_LIMIT_TOKEN_PER_MINUTE: '30' }, '/srv')
    assert.equal(set.rateLimitKeyPerMinute, 0)
    assert.equal(set.rateLimitTokenPerMinute, 30)
  })

  for (const [name, value] of [
    ['PLINTH_RATE_LIMIT_KEY_PER_MINUTE', 'lots'],
    ['PLINTH_RATE_LIMIT_TOKEN_PER_MINUTE', '-1'],
    ['PLINTH_RATE_LIMIT_TOKEN_PER_MINUTE', '2000000000'],
  ] as const) {
    it(`refuses ${name}=${value}, naming the variable`, () => {
      assert.throws(
        () => loadConfig({ [name]: value }, '/srv'),
        (error: unknown) => error instanceof ConfigError && error.message.startsWith(name),
      )
    })
  }
})

describe('response hardening', () => {
  let platform: TestPlatform
  let app: SandboxApp
  const inject = (options: InjectOptions) => platform.app.inject(options)

  before(async () => {
    platform = await startPlatform({
      extend: (fastify) => {
        fastify.get('/test/boom', async () => {
          throw new Error('exploded in /secret/place.ts:12')
        })
      },
    })
    app = await sandbox(platform.app).createApp()
  })
  after(() => platform.close())

  it('answers every kind of error in JSON, with nosniff, without a stack, a path or a banner', async () => {
    const cases: Array<[string, InjectOptions]> = [
      ['unknown route', { method: 'GET', url: '/nothing/here' }],
      ['unknown /v2 route', { method: 'DELETE', url: '/v2/me' }],
      ['no credential', { method: 'GET', url: '/v2/me' }],
      ['wrong scheme', { method: 'GET', url: '/v2/me', headers: key(app) }],
      ['unknown key', { method: 'GET', url: INCOMPLETE, headers: { authorization: 'Key nope' } }],
      ['invalid JSON', { method: 'POST', url: '/sandbox/users', headers: { 'content-type': 'application/json' }, payload: '{"username":' }],
      ['not JSON', { method: 'POST', url: '/sandbox/users', headers: { 'content-type': 'text/plain' }, payload: 'hello' }],
      ['too large', { method: 'POST', url: '/sandbox/users', payload: { username: 'x'.repeat(1024 * 1024 + 10) } }],
      ['schema', { method: 'POST', url: '/sandbox/users', payload: { username: 5 } }],
      ['bad query', { method: 'GET', url: '/sandbox/apps?limit=100000' }],
      ['not found', { method: 'GET', url: '/v2/payments/nope', headers: key(app) }],
      ['unexpected', { method: 'GET', url: '/test/boom' }],
      ['notify without a key', { method: 'POST', url: '/v2/in_app_notifications/notify', payload: {} }],
      ['notify bad body', { method: 'POST', url: '/v2/in_app_notifications/notify', headers: key(app), payload: { x: 1 } }],
      ['ledger', { method: 'GET', url: '/ledger/accounts/GNOPE' }],
      ['ledger route', { method: 'GET', url: '/ledger/nothing' }],
    ]
    for (const [what, options] of cases) assertCleanError(await inject(options), what)
    const boom = await inject({ method: 'GET', url: '/test/boom' })
    assert.deepEqual(Object.keys(boom.json()).sort(), ['error', 'error_message', 'request_id'])
    assert.equal(boom.json().error, 'unknown_error')
  })

  it('sends nosniff and no banner on successful API answers, and no rate limit headers when limits are off', async () => {
    for (const url of ['/healthz', INCOMPLETE, '/v2/openapi.json']) {
      const response = await inject({ method: 'GET', url, headers: key(app) })
      assert.equal(response.statusCode, 200, url)
      assert.equal(response.headers['x-content-type-options'], 'nosniff', url)
      assert.equal(response.headers['x-powered-by'], undefined, url)
      assert.equal(response.headers.server, undefined, url)
      assert.equal(response.headers['x-ratelimit-limit'], undefined, url)
    }
  })

  it('answers what the HTTP parser refuses in the error shape too', async () => {
    const address = await platform.app.listen({ port: 0, host: '127.0.0.1' })
    const { port } = new URL(address)
    const raw = (request: string) =>
      new Promise<string>((resolve, reject) => {
        const socket = connect(Number(port), '127.0.0.1', () => socket.write(request))
        let received = ''
        socket.on('data', (chunk) => {
          received += chunk.toString('utf8')
        })
        socket.on('error', reject)
        socket.on('close', () => resolve(received))
      })
    const parse = (text: string) => {
      const [head = '', body = ''] = text.split('\r\n\r\n')
      return { status: Number(head.split(' ')[1]), head: head.toLowerCase(), body: JSON.parse(body) as Record<string, unknown> }
    }

    const garbage = parse(await raw('NOT HTTP AT ALL\r\n\r\n'))
    assert.equal(garbage.status, 400)
    assert.equal(garbage.body.error, 'bad_request')
    assert.match(garbage.head, /content-type: application\/json/)
    assert.match(garbage.head, /x-content-type-options: nosniff/)

    const big = parse(await raw(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`))
    assert.equal(big.status, 431)
    assert.deepEqual(Object.keys(big.body), ['error', 'error_message'])
    assert.equal(big.body.error, 'headers_too_large')
  })

  it('gives the web pages and the SDK their security headers', async () => {
    for (const url of ['/sandbox/', '/console/', '/docs', '/sdk/pi-sdk.js']) {
      const response = await inject({ method: 'GET', url })
      assert.equal(response.statusCode, 200, url)
      assert.equal(response.headers['x-content-type-options'], 'nosniff', url)
      assert.equal(response.headers['referrer-policy'], 'no-referrer', url)
      const csp = String(response.headers['content-security-policy'] ?? '')
      assert.match(csp, /frame-ancestors 'none'/, url)
      assert.doesNotMatch(csp, /'unsafe-eval'|script-src[^;]*'unsafe-inline'/, url)
      if (url !== '/sdk/pi-sdk.js') {
        assert.equal(response.headers['x-frame-options'], 'DENY', url)
        assert.match(csp, /script-src 'self'/, url)
      }
    }
    // The files of the pages are not pages, but are not sniffed either.
    for (const url of ['/sandbox/ui/main.js', '/console/js/main.js', '/docs/static/swagger-ui-bundle.js']) {
      const response = await inject({ method: 'GET', url })
      assert.equal(response.statusCode, 200, url)
      assert.equal(response.headers['x-content-type-options'], 'nosniff', url)
    }
    const sandboxCsp = String((await inject({ method: 'GET', url: '/sandbox/' })).headers['content-security-policy'])
    assert.match(sandboxCsp, /frame-src http: https:/, 'the sandbox frames apps on any http(s) origin')
    const docsCsp = String((await inject({ method: 'GET', url: '/docs' })).headers['content-security-policy'])
    assert.match(docsCsp, /connect-src 'self' http:\/\/plinth\.test/, '"Try it out" may call the public URL')
  })

  it('serves pages that run under their CSP: no inline script, handler or style', async () => {
    for (const url of ['/sandbox/', '/console/', '/docs']) {
      const html = (await inject({ method: 'GET', url })).body
      assert.ok(html.includes('<script'), `${url} loads scripts`)
      for (const tag of html.match(/<script\b[^>]*>/g) ?? []) assert.match(tag, /\ssrc="/, `${url}: inline script ${tag}`)
      assert.doesNotMatch(html, /<style\b|\sstyle="|\son[a-z]+="|javascript:/i, url)
      for (const ref of html.match(/\s(?:src|href)="[^"]*"/g) ?? []) {
        assert.doesNotMatch(ref, /="(?:https?:)?\/\//, `${url} loads only its own files: ${ref}`)
      }
    }
  })
})
