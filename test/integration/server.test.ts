import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import pg from 'pg'
import { sandbox, TEST_DB } from '../helpers/platform.js'
import { rawRequest } from '../helpers/raw-http.js'
import { loggedForms } from '../helpers/secret-forms.js'
import { type BackendSetup, freePort, httpNode, PlinthProcess, setUpBackend, sleep } from '../helpers/server-process.js'

async function waitForOutput(server: PlinthProcess, text: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!server.output().includes(text)) {
    if (server.hasExited() || Date.now() > deadline) {
      throw new Error(`no "${text}" from the server (${server.hasExited() ? 'it exited' : 'timed out'}); it printed:\n${server.output()}`)
    }
    await sleep(50)
  }
}

const startServer = (port: number, env: Record<string, string>) => PlinthProcess.spawn(port, { LOG_LEVEL: 'info', ...env })

describe('the server process', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'plinth-test-'))
  const schema = `plinth_test_srv_${randomBytes(4).toString('hex')}`
  const backendEnv: Record<string, string> =
    TEST_DB === 'postgres'
      ? { DATABASE_URL: process.env.DATABASE_URL ?? '', PLINTH_DB_SCHEMA: schema, PLINTH_SECRET_KEY: randomBytes(32).toString('hex') }
      : { PLINTH_DATA_DIR: dataDir }

  after(async () => {
    rmSync(dataDir, { recursive: true, force: true })
    if (TEST_DB === 'postgres') {
      const client = new pg.Client({ connectionString: process.env.DATABASE_URL })
      await client.connect()
      await client.query(`drop schema if exists "${schema}" cascade`)
      await client.end()
    }
  })

  it('starts with a banner and a demo app, serves, and shuts down cleanly on SIGTERM; a second start creates nothing new', async () => {
    const port = await freePort()
    const base = `http://127.0.0.1:${port}`
    const first = startServer(port, backendEnv)
    await waitForOutput(first, 'API base URL')
    const banner = first.output()
    assert.match(banner, new RegExp(`API base URL\\s+${base}/v2`))
    assert.match(banner, new RegExp(`Docs\\s+${base}/docs`))
    // Standard output is a pipe here, not a terminal: the key is not printed, how to make one is.
    const appId = /Demo app\s+Plinth Demo, app_id (\S+)/.exec(banner)?.[1]
    assert.ok(appId, 'the first start shows the demo app')
    assert.doesNotMatch(banner, /server API key \S+\s+\(shown once/)
    const mint = new RegExp(
      `printed only to a terminal; make one: curl -s -X POST ${base}/sandbox/apps/${appId}/keys -H 'X-Plinth-Client: curl'\\n`,
    )
    assert.match(banner, mint)
    if (TEST_DB === 'pglite') {
      assert.ok(existsSync(join(dataDir, 'pgdata')))
      assert.equal(statSync(join(dataDir, 'secret.key')).mode & 0o777, 0o600)
    }

    const health = await fetch(`${base}/healthz`)
    assert.equal(health.status, 200)
    assert.ok(health.headers.get('x-request-id'))
    assert.equal((await fetch(`${base}/readyz`)).status, 200)
    const me = await fetch(`${base}/v2/me`, { headers: { authorization: 'Bearer nope' } })
    assert.equal(me.status, 401)

    // The printed command makes a working key.
    const minted = await fetch(`${base}/sandbox/apps/${appId}/keys`, { method: 'POST', headers: { 'x-plinth-client': 'curl' } })
    assert.equal(minted.status, 201)
    const { api_key: key } = (await minted.json()) as { api_key: string }
    const keyed = await fetch(`${base}/v2/payments/incomplete_server_payments`, { headers: { authorization: `Key ${key}` } })
    assert.equal(keyed.status, 200)

    first.child.kill('SIGTERM')
    assert.equal((await first.exited).code, 0)
    assert.match(first.output(), /shutting down/)
    assert.match(first.output(), /database closed; exiting/)
    assert.equal(first.output().includes(key), false, 'a key is not printed')

    const second = startServer(port, backendEnv)
    await waitForOutput(second, 'API base URL')
    assert.match(second.output(), new RegExp(`Demo app\\s+Plinth Demo, app_id ${appId}`))
    assert.match(second.output(), /shown at first start/)
    second.child.kill('SIGINT')
    assert.equal((await second.exited).code, 0)
  })

  it('refuses to start on a bad setting, naming it', async () => {
    const bad = startServer(0, { PORT: 'eighty', PLINTH_DATA_DIR: 'memory' })
    assert.equal((await bad.exited).code, 78)
    assert.match(bad.output(), /configuration error: PORT must be a whole number/)
    // An address that is no address: exit 78 naming HOST, not a TypeError's stack.
    const badHost = startServer(await freePort(), { HOST: '300.1.1.1', PLINTH_DATA_DIR: 'memory' })
    assert.equal((await badHost.exited).code, 78, badHost.output())
    assert.match(badHost.output(), /configuration error: HOST must be an IPv4 or IPv6 address or a host name, got "300.1.1.1"/)
    assert.doesNotMatch(badHost.output(), /TypeError|\n\s+at /)
  })
})

interface LogLine {
  reqId?: string
  msg?: string
  code?: string
  [field: string]: unknown
}

function logLines(text: string): LogLine[] {
  const lines: LogLine[] = []
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue
    lines.push(JSON.parse(line) as LogLine)
  }
  return lines
}

async function waitForLog(server: PlinthProcess, test: (line: LogLine) => boolean, what: string): Promise<LogLine> {
  const deadline = Date.now() + 30_000
  for (;;) {
    const found = logLines(server.output()).find(test)
    if (found !== undefined) return found
    if (server.hasExited() || Date.now() > deadline) throw new Error(`no log line ${what}; the server printed:\n${server.output()}`)
    await sleep(20)
  }
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

describe('the server process at trace level, over real sockets', () => {
  const adminToken = `admin-${randomBytes(18).toString('base64url')}`
  const cookieSecret = randomBytes(24).toString('base64url')
  let setup: BackendSetup
  let server: PlinthProcess
  let apiKey = ''
  let accessToken = ''
  /** Every credential of the run, sent on every request. */
  let credentials = ''
  const output: Buffer[] = []

  before(async () => {
    setup = await setUpBackend(TEST_DB)
    server = PlinthProcess.spawn(await freePort(), { ...setup.env, LOG_LEVEL: 'trace', PLINTH_ADMIN_TOKEN: adminToken })
    // The whole output, not the helper's last 64 KiB: every line is searched.
    server.child.stdout?.on('data', (chunk: Buffer) => output.push(chunk))
    server.child.stderr?.on('data', (chunk: Buffer) => output.push(chunk))
    await server.waitReady()
    const sb = sandbox(httpNode(server.base), { 'x-admin-token': adminToken })
    const app = await sb.createApp()
    const user = await sb.createUser()
    apiKey = app.api_key
    accessToken = (await sb.authenticate(app.app_id, user.user_id)).accessToken
    credentials =
      `Authorization: Key ${apiKey}\r\nX-Admin-Token: ${adminToken}\r\nCookie: session=${cookieSecret}\r\n` +
      `Proxy-Authorization: Bearer ${accessToken}\r\n`
  })
  after(async () => {
    await server.stop()
    await setup.cleanup()
  })

  const host = 'Host: 127.0.0.1\r\n'
  /** Requests Node's parser refuses, or that Node would answer itself: each carries every credential. */
  const refused = (): Array<{ what: string; request: string; status: number; error: string; logged?: RegExp }> => [
    {
      what: 'headers over 16 KiB',
      request: `GET /v2/me HTTP/1.1\r\n${host}${credentials}X-Pad: ${'a'.repeat(17 * 1024)}\r\n\r\n`,
      status: 431,
      error: 'headers_too_large',
      logged: /HPE_HEADER_OVERFLOW/,
    },
    {
      what: 'a control character in a header',
      request: `GET /v2/me HTTP/1.1\r\n${host}${credentials}X-Bad: a\u0001b\r\n\r\n`,
      status: 400,
      error: 'bad_request',
      logged: /HPE_/,
    },
    {
      what: 'a duplicate Content-Length',
      request: `POST /v2/payments HTTP/1.1\r\n${host}${credentials}Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}`,
      status: 400,
      error: 'bad_request',
      logged: /HPE_/,
    },
    {
      what: 'a malformed chunk',
      request: `POST /v2/payments HTTP/1.1\r\n${host}${credentials}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`,
      status: 400,
      error: 'bad_request',
    },
    {
      what: 'an Expect other than 100-continue',
      request: `POST /v2/payments HTTP/1.1\r\n${host}${credentials}Expect: foo\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`,
      status: 417,
      error: 'expectation_failed',
    },
    {
      what: 'an HTTP/1.1 request without Host',
      request: `GET /v2/me HTTP/1.1\r\n${credentials}\r\n`,
      status: 400,
      error: 'bad_request',
    },
    {
      what: 'a CONNECT',
      request: `CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n${credentials}\r\n`,
      status: 400,
      error: 'bad_request',
    },
    {
      what: 'a body over the 1 MiB limit',
      request: `POST /sandbox/users HTTP/1.1\r\n${host}${credentials}Content-Type: application/json\r\nContent-Length: ${2 * 1024 * 1024}\r\n\r\n{"username":`,
      status: 413,
      error: 'payload_too_large',
    },
    {
      what: 'a body over notify’s 4 MiB limit',
      request: `POST /v2/in_app_notifications/notify HTTP/1.1\r\n${host}${credentials}Content-Type: application/json\r\nContent-Length: ${5 * 1024 * 1024}\r\n\r\n{"notifications":`,
      status: 413,
      error: 'The request body is larger than the 4 MiB limit.',
    },
    {
      what: 'no route',
      request: `GET /nowhere HTTP/1.1\r\n${host}${credentials}Connection: close\r\n\r\n`,
      status: 404,
      error: 'not_found',
    },
    {
      what: 'a credential that is not a key',
      request: `GET /v2/payments/incomplete_server_payments HTTP/1.1\r\n${host}Authorization: Key nope\r\nConnection: close\r\n\r\n`,
      status: 401,
      error: 'invalid_api_key',
    },
    { what: 'a health check', request: `GET /healthz HTTP/1.1\r\n${host}${credentials}Connection: close\r\n\r\n`, status: 200, error: '' },
  ]

  it('answers every refused request in the platform shape, with nosniff and X-Request-Id, and logs it under that id', async () => {
    for (const { what, request, status, error, logged } of refused()) {
      const response = await rawRequest(server.port, request)
      assert.equal(response.status, status, `${what}: ${response.text.slice(0, 300)}`)
      assert.equal(response.headers['x-content-type-options'], 'nosniff', what)
      const id = response.headers['x-request-id'] ?? ''
      assert.match(id, REQUEST_ID, `${what}: X-Request-Id`)
      if (status !== 200) {
        assert.match(response.headers['content-type'] ?? '', /^application\/json/, what)
        const body = JSON.parse(response.body) as Record<string, unknown>
        if (what.includes('notify')) {
          assert.equal(body.error, error, what)
        } else {
          assert.equal(body.error, error, what)
          assert.equal(typeof body.error_message, 'string', what)
        }
      }
      const line = await waitForLog(server, (l) => l.reqId === id, `with reqId ${id} (${what})`)
      if (logged !== undefined) assert.match(String(line.code), logged, what)
    }
  })

  it('every log line a request causes carries its reqId', async () => {
    const bearer = { authorization: `Bearer ${accessToken}` }
    const key = { authorization: `Key ${apiKey}` }
    const admin = { 'x-admin-token': adminToken }
    const requests: Array<[string, RequestInit, number]> = [
      ['/healthz', {}, 200],
      ['/readyz', {}, 200],
      ['/v2/me', { headers: bearer }, 200],
      ['/v2/me', { headers: { authorization: 'Bearer nope' } }, 401],
      ['/v2/payments/incomplete_server_payments', { headers: key }, 200],
      ['/v2/payments', { method: 'POST', headers: { ...key, 'content-type': 'application/json' }, body: '{"payment":' }, 400],
      ['/v2/payments', { method: 'POST', headers: { ...key, 'content-type': 'text/plain' }, body: 'x' }, 400],
      ['/v2/payments', { method: 'POST', headers: { ...key, 'content-type': 'application/xml' }, body: 'x' }, 415],
      [
        '/sandbox/users',
        { method: 'POST', headers: { ...admin, 'content-type': 'application/json' }, body: '{"username":"reqid_user"}' },
        201,
      ],
      ['/sandbox/users', { method: 'POST', headers: { ...admin, 'content-type': 'application/json' }, body: '{"username":"x y"}' }, 400],
      ['/nowhere', {}, 404],
      ['/ledger/accounts/nope', {}, 404],
    ]
    let n = 0
    for (const [path, init, status] of requests) {
      n += 1
      const id = `reqid-test-${n}-${randomBytes(4).toString('hex')}`
      const mark = server.output().length
      const response = await fetch(`${server.base}${path}`, { ...init, headers: { ...(init.headers as object), 'x-request-id': id } })
      await response.arrayBuffer()
      assert.equal(response.status, status, path)
      assert.equal(response.headers.get('x-request-id'), id, path)
      await waitForLog(server, (l) => l.reqId === id && l.msg === 'request completed', `"request completed" of ${path}`)
      const during = logLines(server.output().slice(mark))
      assert.ok(during.length >= 1, path)
      for (const line of during) assert.equal(line.reqId, id, `${path}: a log line without its reqId: ${JSON.stringify(line)}`)
    }
  })

  it('no log line, at trace level, carries a credential in any form, whatever the request', async () => {
    // Ordinary requests with every credential, too.
    for (const path of ['/v2/me', '/v2/payments/incomplete_server_payments', '/sandbox/apps']) {
      for (const authorization of [`Key ${apiKey}`, `Bearer ${accessToken}`]) {
        const response = await fetch(`${server.base}${path}`, {
          headers: { authorization, 'x-admin-token': adminToken, cookie: `session=${cookieSecret}` },
        })
        await response.arrayBuffer()
      }
    }
    // Their answers are the test above's business: here only what they leave in the log.
    for (const { request } of refused()) await rawRequest(server.port, request, 5_000).catch(() => undefined)
    const exit = await server.stop()
    assert.equal(exit.code, 0)
    const log = Buffer.concat(output).toString()
    const lines = logLines(log)
    assert.ok(lines.length > 15, `the log is real (${lines.length} lines)`)
    for (const code of ['HPE_HEADER_OVERFLOW', 'HPE_UNEXPECTED_CONTENT_LENGTH']) {
      assert.ok(
        lines.some((line) => line.code === code || JSON.stringify(line).includes(code)),
        `the refusal ${code} is logged`,
      )
    }
    for (const secret of [apiKey, accessToken, adminToken, cookieSecret]) {
      for (const form of loggedForms(secret)) {
        assert.equal(log.includes(form), false, `the log holds a credential (${secret.slice(0, 4)}…) as ${form}`)
      }
    }
  })

  it('refuses to start on PostgreSQL without PLINTH_SECRET_KEY (processes sharing a database never generate their own keys)', async () => {
    // Nothing listens on port 1: the refusal comes before any connection.
    const keyless = startServer(0, { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/plinth' })
    assert.equal((await keyless.exited).code, 78)
    assert.match(keyless.output(), /configuration error: PLINTH_SECRET_KEY is required with DATABASE_URL/)
  })
})
