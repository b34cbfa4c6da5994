/**
 * A web page must not drive the sandbox (docs/security.md, "Requests from other sites"): every
 * state-changing route that is not a Key or Bearer route refuses what a browser sends for another
 * site, and no CORS "simple request" (the requests a page may send without asking) changes state.
 * The routes come from the route table, so a new one is covered as soon as it is declared; a route
 * the OpenAPI document hides is covered too (the last test adds one).
 */
import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import type { InjectOptions } from 'fastify'
import { sandbox, stableState, startPlatform, type TestPlatform } from '../helpers/platform.js'
import { rawRequest } from '../helpers/raw-http.js'
import { fill, label, type Operation, routeTable } from '../helpers/route-table.js'

const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])
/** What an HTML form, `fetch(url, {mode: 'no-cors'})` or a body-less POST sends: no header a page must ask for. */
const SIMPLE_FORMS: Array<{ name: string; headers: Record<string, string>; payload?: string }> = [
  { name: 'no body, no Content-Type', headers: {} },
  { name: 'no body, text/plain', headers: { 'content-type': 'text/plain;charset=UTF-8' } },
  { name: 'a text/plain body', headers: { 'content-type': 'text/plain' }, payload: '{"name":"evil","advance_seconds":60}' },
  { name: 'an urlencoded form', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'name=evil&txid=00' },
  {
    name: 'a multipart form',
    headers: { 'content-type': 'multipart/form-data; boundary=XyZ' },
    payload: '--XyZ\r\nContent-Disposition: form-data; name="name"\r\n\r\nevil\r\n--XyZ--\r\n',
  },
  { name: 'no body, empty urlencoded', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: '' },
]
/** What the browser says of a page on another site, or another port of this host (same-site). */
const FOREIGN: Array<{ name: string; headers: Record<string, string> }> = [
  { name: 'cross-site (fetch metadata)', headers: { origin: 'http://evil.example', 'sec-fetch-site': 'cross-site' } },
  { name: 'another port (same-site)', headers: { origin: 'http://localhost:9999', 'sec-fetch-site': 'same-site' } },
  { name: 'an Origin without fetch metadata', headers: { origin: 'http://evil.example' } },
  { name: 'Origin null', headers: { origin: 'null' } },
  { name: 'another port, Origin only', headers: { origin: 'http://localhost:9999' } },
]

describe('cross-site requests to the sandbox API', () => {
  let platform: TestPlatform
  let guarded: Operation[]
  let paths: Map<Operation, string>

  before(async () => {
    platform = await startPlatform()
    const operations = await routeTable(platform)
    guarded = operations.filter((op) => UNSAFE.has(op.method) && op.auth !== 'key' && op.auth !== 'token' && !op.path.startsWith('/ledger'))
    // Real objects in every path, so that a request let through would act.
    const sb = sandbox(platform.app, { 'x-plinth-client': 'test' })
    const app = await sb.createApp()
    const user = await sb.createUser()
    await sb.authenticate(app.app_id, user.user_id)
    paths = new Map(
      guarded.map((op) => [
        op,
        fill(op, {
          app_id: app.app_id,
          user_id: user.user_id,
          key_id: app.key_id,
          name: 'snap',
          fault_id: 'f',
          payment_id: 'p',
          adId: 'a',
        }),
      ]),
    )
  })
  after(async () => platform?.close())

  it('covers the sandbox API, which is all of them but the ledger submission', () => {
    assert.ok(guarded.length >= 25, `only ${guarded.length} routes`)
    assert.ok(
      guarded.every((op) => op.path.startsWith('/sandbox/')),
      guarded.map(label).join(', '),
    )
    for (const path of [
      '/sandbox/reset',
      '/sandbox/apps',
      '/sandbox/apps/{app_id}/keys',
      '/sandbox/clock',
      '/sandbox/snapshots/{name}/restore',
    ]) {
      assert.ok(
        guarded.some((op) => op.path === path && op.method === 'POST'),
        path,
      )
    }
  })

  it('refuses every simple request form from a foreign page, and leaves the state as it was', async () => {
    const before = await stableState(platform.db)
    for (const op of guarded) {
      for (const form of SIMPLE_FORMS) {
        for (const foreign of FOREIGN) {
          const options: InjectOptions = {
            method: op.method,
            url: paths.get(op) ?? '',
            headers: { ...form.headers, ...foreign.headers },
            ...(form.payload === undefined ? {} : { payload: form.payload }),
          }
          const response = await platform.app.inject(options)
          const what = `${label(op)}, ${form.name}, ${foreign.name}: ${response.body}`
          assert.equal(response.statusCode, 403, what)
          assert.equal(response.json().error, 'cross_site_request', what)
          assert.match(response.json().error_message, /another site|this server's own origin/, what)
        }
      }
    }
    assert.equal(await stableState(platform.db), before)
  })

  it('refuses a simple request without any browser header too (neither JSON nor X-Plinth-Client)', async () => {
    const before = await stableState(platform.db)
    for (const op of guarded) {
      for (const form of SIMPLE_FORMS) {
        const response = await platform.app.inject({
          method: op.method,
          url: paths.get(op) ?? '',
          headers: form.headers,
          ...(form.payload === undefined ? {} : { payload: form.payload }),
        })
        const what = `${label(op)}, ${form.name}: ${response.body}`
        assert.equal(response.statusCode, 415, what)
        assert.equal(response.json().error, 'client_header_required', what)
        assert.match(response.json().error_message, /X-Plinth-Client/, what)
      }
    }
    assert.equal(await stableState(platform.db), before)
  })

  it('serves its own pages, curl, the CLI and the SDKs: same-origin, a typed URL, or no browser header', async () => {
    const allowed: Array<Record<string, string>> = [
      {},
      { 'sec-fetch-site': 'same-origin', origin: 'http://localhost:80' },
      { 'sec-fetch-site': 'none' },
      { origin: 'http://localhost:80' },
      { origin: 'http://plinth.test' },
    ]
    for (const headers of allowed) {
      const json = await platform.app.inject({ method: 'POST', url: '/sandbox/clock', headers, payload: { advance_seconds: 1 } })
      assert.equal(json.statusCode, 200, `${JSON.stringify(headers)}: ${json.body}`)
      const bodyless = await platform.app.inject({
        method: 'POST',
        url: '/sandbox/clock/reset',
        headers: { ...headers, 'x-plinth-client': 'curl' },
      })
      assert.equal(bodyless.statusCode, 200, `${JSON.stringify(headers)}: ${bodyless.body}`)
    }
    // JSON with a charset parameter is JSON.
    const charset = await platform.app.inject({
      method: 'POST',
      url: '/sandbox/users',
      headers: { 'content-type': 'application/json; charset=utf-8' },
      payload: JSON.stringify({ username: 'charset_user' }),
    })
    assert.equal(charset.statusCode, 201, charset.body)
  })

  it('leaves reads of the sandbox to same-origin pages and non-browser clients', async () => {
    const foreign = await platform.app.inject({
      method: 'GET',
      url: '/sandbox/apps',
      headers: { 'sec-fetch-site': 'cross-site', 'sec-fetch-dest': 'image' },
    })
    assert.equal(foreign.statusCode, 403, foreign.body)
    assert.equal(foreign.json().error, 'cross_site_request')
    assert.equal((await platform.app.inject({ method: 'GET', url: '/sandbox/apps' })).statusCode, 200)
    // The sandbox page itself may be linked to from anywhere.
    const page = await platform.app.inject({ method: 'GET', url: '/sandbox/', headers: { 'sec-fetch-site': 'cross-site' } })
    assert.equal(page.statusCode, 200)
  })
})

describe('a route declared later is guarded too', () => {
  it('refuses a cross-site or simple request to a new unauthenticated POST route, hidden from the document', async () => {
    let calls = 0
    const platform = await startPlatform({
      extend: (app) => {
        app.post('/sandbox/new-thing', { schema: { hide: true } }, async () => {
          calls += 1
          return { ok: true }
        })
      },
    })
    try {
      const cross = await platform.app.inject({ method: 'POST', url: '/sandbox/new-thing', headers: { 'sec-fetch-site': 'cross-site' } })
      assert.equal(cross.statusCode, 403, cross.body)
      const simple = await platform.app.inject({ method: 'POST', url: '/sandbox/new-thing', headers: { 'content-type': 'text/plain' } })
      assert.equal(simple.statusCode, 415, simple.body)
      assert.equal(calls, 0)
      const ok = await platform.app.inject({ method: 'POST', url: '/sandbox/new-thing', headers: { 'x-plinth-client': 'test' } })
      assert.equal(ok.statusCode, 200, ok.body)
    } finally {
      await platform.close()
    }
  })
})

describe('Host (DNS rebinding)', () => {
  let platform: TestPlatform
  let port: number
  const request = async (host: string | undefined, path = '/sandbox/apps', body = '{"name":"rebound"}') => {
    const head = [
      `POST ${path} HTTP/1.1`,
      ...(host === undefined ? [] : [`Host: ${host}`]),
      'Content-Type: application/json',
      `Content-Length: ${Buffer.byteLength(body)}`,
      'Connection: close',
    ]
    return rawRequest(port, `${head.join('\r\n')}\r\n\r\n${body}`)
  }

  before(async () => {
    platform = await startPlatform({ allowedHosts: ['plinth.lan', '[fd00::7]'] })
    await platform.app.listen({ port: 0, host: '127.0.0.1' })
    port = (platform.app.server.address() as AddressInfo).port
  })
  after(async () => platform?.close())

  it('refuses a foreign Host with 421 misdirected_request, before anything is created', async () => {
    const before = await stableState(platform.db)
    for (const host of [
      'attacker.example',
      `attacker.example:${port}`,
      'attacker.example.',
      'ATTACKER.EXAMPLE',
      'localhost.attacker.example',
      '127.0.0.1.nip.io',
      '[::2]',
      '127.0.0.2',
      '0.0.0.0',
      'localhost..',
      'local host',
      'plinth.test.evil',
    ]) {
      const answer = await request(host)
      assert.equal(answer.status, 421, `${host}: ${answer.text}`)
      const body = JSON.parse(answer.body) as { error: string; error_message: string }
      assert.equal(body.error, 'misdirected_request', host)
      assert.match(body.error_message, /PLINTH_ALLOWED_HOSTS/)
      assert.doesNotMatch(answer.body, /api_key|seed/)
      // A read too: a rebound page could read the answer of anything it may send.
      assert.equal((await rawRequest(port, `GET /sandbox/apps HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`)).status, 421, host)
    }
    assert.equal(await stableState(platform.db), before)
  })

  it('serves the loopback names on any port, the public URL host and PLINTH_ALLOWED_HOSTS, in any case, with a trailing dot', async () => {
    for (const host of [
      `127.0.0.1:${port}`,
      '127.0.0.1',
      `localhost:${port}`,
      'LOCALHOST:1',
      'localhost.',
      `localhost.:${port}`,
      '[::1]',
      `[::1]:${port}`,
      'plinth.test',
      'Plinth.Test.:443',
      'plinth.lan',
      'PLINTH.LAN:8080',
      '[FD00::7]:80',
    ]) {
      const answer = await request(host)
      assert.equal(answer.status, 201, `${host}: ${answer.text}`)
    }
  })

  it('answers health checks whatever the Host (load balancers probe by address)', async () => {
    for (const path of ['/healthz', '/readyz']) {
      const answer = await rawRequest(port, `GET ${path} HTTP/1.1\r\nHost: 10.0.0.7:8080\r\nConnection: close\r\n\r\n`)
      assert.equal(answer.status, 200, `${path}: ${answer.text}`)
    }
  })

  it('still refuses a request without Host as before (400)', async () => {
    assert.equal((await request(undefined)).status, 400)
  })
})

describe('Host in production', () => {
  it('serves loopback and the public URL host only when PLINTH_ALLOWED_HOSTS is unset', async () => {
    const platform = await startPlatform({ mode: 'production' })
    try {
      await platform.app.listen({ port: 0, host: '127.0.0.1' })
      const port = (platform.app.server.address() as AddressInfo).port
      const get = (host: string) => rawRequest(port, `GET /v2/me HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`)
      assert.equal((await get('attacker.example')).status, 421)
      assert.equal((await get('plinth.test')).status, 401)
      assert.equal((await get(`127.0.0.1:${port}`)).status, 401)
    } finally {
      await platform.close()
    }
  })
})
