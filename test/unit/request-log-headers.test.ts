import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { newSecret } from '../../src/lib/crypto.js'
import { headersOfHead, MAX_HEADER_CHARS, MAX_HEADERS, storedHeaders, storedQuery } from '../../src/request-log/redact.js'
import { replayGrants, replayProblem } from '../../src/request-log/replay.js'

const KEY = newSecret()

describe('request log: the stored headers and query string (src/request-log/redact.ts)', () => {
  it('keeps the scheme of Authorization only; cookies, the admin token and secret-named headers lose their value', () => {
    const stored = storedHeaders({
      Authorization: `Key ${KEY}`,
      'proxy-authorization': `Bearer ${KEY}`,
      cookie: 'session=abc',
      'set-cookie': ['a=1', 'b=2'],
      'x-admin-token': 'short-but-secret',
      'X-Api-Key': 'short',
      'x-session-token': 'short',
      'content-type': 'application/json',
      'x-trace': `id ${KEY}`,
      'x-list': ['one', 'two'],
    })
    assert.deepEqual(stored, {
      authorization: 'Key [redacted]',
      'proxy-authorization': 'Bearer [redacted]',
      cookie: '[redacted]',
      'set-cookie': '[redacted]',
      'x-admin-token': '[redacted]',
      'x-api-key': '[redacted]',
      'x-session-token': '[redacted]',
      'content-type': 'application/json',
      'x-trace': 'id [redacted]',
      'x-list': 'one, two',
    })
    assert.equal(storedHeaders({ authorization: KEY }).authorization, '[redacted]', 'no scheme: all of it goes')
  })

  it("reads the answer's header block as written: names lower-cased, in order, a repeated header a list, then stored as any other", () => {
    const head =
      'HTTP/1.1 201 Created\r\nContent-Type: application/json; charset=utf-8\r\nx-request-id: r-1\r\n' +
      'set-cookie: a=1\r\nSet-Cookie: b=2\r\n__proto__: x\r\nx-odd:  spaced value \r\nno colon here\r\nDate: Sun, 29 Nov 2026 07:00:00 GMT\r\n\r\n'
    const headers = headersOfHead(head)
    assert.deepEqual(Object.keys(headers), ['content-type', 'x-request-id', 'set-cookie', '__proto__', 'x-odd', 'date'])
    assert.deepEqual(headers['set-cookie'], ['a=1', 'b=2'])
    assert.equal(headers['x-odd'], 'spaced value')
    assert.equal(Object.getPrototypeOf(headers), null, 'a header named __proto__ is a header, not a prototype')
    assert.deepEqual(Object.entries(storedHeaders(headers)), [
      ['content-type', 'application/json; charset=utf-8'],
      ['x-request-id', 'r-1'],
      ['set-cookie', '[redacted]'],
      ['__proto__', 'x'],
      ['x-odd', 'spaced value'],
      ['date', 'Sun, 29 Nov 2026 07:00:00 GMT'],
    ])
    assert.deepEqual(Object.entries(headersOfHead('')), [])
  })

  it(`keeps at most ${MAX_HEADERS} headers of at most ${MAX_HEADER_CHARS} characters; NUL and lone surrogates become U+FFFD`, () => {
    const many = Object.fromEntries(Array.from({ length: 80 }, (_, i) => [`x-h${i}`, 'v']))
    assert.equal(Object.keys(storedHeaders(many)).length, MAX_HEADERS)
    assert.equal(storedHeaders({ 'x-long': 'word '.repeat(400) })['x-long']?.length, MAX_HEADER_CHARS)
    assert.equal(storedHeaders({ 'x-odd': 'a\u0000b\uD800' })['x-odd'], 'a\uFFFDb\uFFFD')
  })

  it('stores the query string redacted by name and by shape, at most 1,000 characters; null when there is none', () => {
    assert.equal(storedQuery('/v2/me'), null)
    assert.equal(storedQuery('/v2/me?'), null)
    assert.equal(storedQuery('/v2/x?page=2&note=hello%20world'), 'page=2&note=hello%20world')
    assert.equal(storedQuery(`/v2/x?api_key=abc&token=1&a=${KEY}`), 'api_key=[redacted]&token=[redacted]&a=[redacted]')
    assert.equal(storedQuery(`/v2/x?a=${encodeURIComponent(encodeURIComponent(KEY))}`)?.includes(KEY.slice(0, 20)), false)
    assert.equal(storedQuery(`/v2/x?q=${'w'.repeat(5000)}`)?.length, 1000)
  })
})

describe('request log replay: what is replayable, and the one-use grant (src/request-log/replay.ts)', () => {
  const entry = { route: '/v2/payments/:payment_id', key_id: 'key_1', path: '/v2/payments/p', query: null, request_body: null }

  it('replays key calls stored whole; refuses token calls, non-/v2 routes, redacted or cut parts', () => {
    assert.equal(replayProblem(entry), undefined)
    assert.equal(replayProblem({ ...entry, request_body: '{"a":1}' }), undefined)
    assert.match(replayProblem({ ...entry, key_id: null }) ?? '', /access token/)
    assert.match(replayProblem({ ...entry, route: '/sandbox/apps' }) ?? '', /Only \/v2 calls/)
    assert.match(replayProblem({ ...entry, path: '/v2/payments/[redacted]' }) ?? '', /path or query/)
    assert.match(replayProblem({ ...entry, query: 'token=[redacted]' }) ?? '', /path or query/)
    assert.match(replayProblem({ ...entry, request_body: '{"seed":"[redacted]"}' }) ?? '', /redacted or cut/)
    assert.match(replayProblem({ ...entry, request_body: '{"memo":"abc…' }) ?? '', /redacted or cut/)
    assert.match(replayProblem({ ...entry, request_body: 'abc…[truncated]' }) ?? '', /redacted or cut/)
  })

  it('a grant stands for its key once, for 30 seconds, and nothing else is a grant', () => {
    let now = 1_000_000
    const grants = replayGrants(() => now)
    const principal = { kind: 'key' as const, appId: 'app_1', keyId: 'key_1' }
    const once = grants.issue(principal)
    assert.equal(once.length, 43)
    assert.deepEqual(grants.take(once), principal)
    assert.equal(grants.take(once), undefined, 'used once')
    assert.equal(grants.take(KEY), undefined)
    const late = grants.issue(principal)
    now += 30_000
    assert.equal(grants.take(late), undefined, 'expired')
    const inTime = grants.issue(principal)
    now += 29_999
    assert.deepEqual(grants.take(inTime), principal)
  })
})
