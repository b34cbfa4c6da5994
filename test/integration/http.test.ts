import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { InjectOptions } from 'fastify'
import { ApiError } from '../../src/core/errors.js'
import { SANDBOX_CLIENT, sandbox, startPlatform, type TestPlatform } from '../helpers/platform.js'

describe('HTTP conventions', () => {
  let platform: TestPlatform
  const logLines: string[] = []

  before(async () => {
    platform = await startPlatform({
      logStream: { write: (line: string) => logLines.push(line) },
      extend: (app) => {
        app.get('/test/boom', async () => {
          throw new Error('database exploded at /secret/path')
        })
        app.get('/test/busy', async () => {
          throw new ApiError('wallet_busy', 'Busy; try again.').retryAfter(1)
        })
      },
    })
  })
  after(() => platform.close())

  const inject = (options: InjectOptions) => platform.app.inject(options)

  it('answers an unknown route with 404 not_found in the error shape', async () => {
    const response = await inject({ method: 'GET', url: '/v2/nothing-here?x=1' })
    assert.equal(response.statusCode, 404)
    assert.deepEqual(response.json(), { error: 'not_found', error_message: 'No route GET /v2/nothing-here' })
    assert.match(String(response.headers['content-type'] ?? ''), /^application\/json/)
  })

  it('answers a retryable error with its status and Retry-After', async () => {
    const response = await inject({ method: 'GET', url: '/test/busy' })
    assert.equal(response.statusCode, 503)
    assert.equal(response.headers['retry-after'], '1')
    assert.deepEqual(response.json(), { error: 'wallet_busy', error_message: 'Busy; try again.' })
  })

  it('gives every response an X-Request-Id, keeping a well-formed one from the caller', async () => {
    const generated = await inject({ method: 'GET', url: '/healthz' })
    assert.match(String(generated.headers['x-request-id']), /^[0-9a-f-]{36}$/)
    const kept = await inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'trace-123.abc' } })
    assert.equal(kept.headers['x-request-id'], 'trace-123.abc')
    const replaced = await inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'bad id\u0001' } })
    assert.match(String(replaced.headers['x-request-id']), /^[0-9a-f-]{36}$/)
    const errored = await inject({ method: 'GET', url: '/nope', headers: { 'x-request-id': 'err-1' } })
    assert.equal(errored.headers['x-request-id'], 'err-1')
  })

  it('answers malformed JSON with 400 invalid_json', async () => {
    const response = await inject({
      method: 'POST',
      url: '/sandbox/users',
      headers: { 'content-type': 'application/json' },
      payload: '{"username": ',
    })
    assert.equal(response.statusCode, 400)
    assert.equal(response.json().error, 'invalid_json')
  })

  it('refuses prototype-pollution keys with 400', async () => {
    const response = await inject({
      method: 'POST',
      url: '/sandbox/users',
      headers: { 'content-type': 'application/json' },
      payload: '{"username": "proto_user", "__proto__": {"admin": true}}',
    })
    assert.equal(response.statusCode, 400)
    assert.ok(['invalid_json', 'bad_request'].includes(response.json().error))
  })

  it('answers a body of another content type with 415 unsupported_media_type', async () => {
    const response = await inject({
      method: 'POST',
      url: '/sandbox/users',
      // A client that names itself: what is left to refuse is the body's type.
      headers: { ...SANDBOX_CLIENT, 'content-type': 'text/plain' },
      payload: 'username=x',
    })
    assert.equal(response.statusCode, 415)
    assert.equal(response.json().error, 'unsupported_media_type')
  })

  it('answers a body over 1 MiB with 413 payload_too_large', async () => {
    const response = await inject({
      method: 'POST',
      url: '/sandbox/users',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ username: 'x'.repeat(1024 * 1024) }),
    })
    assert.equal(response.statusCode, 413)
    assert.equal(response.json().error, 'payload_too_large')
  })

  it('answers a schema violation with 400 invalid_arguments naming the field', async () => {
    const short = await inject({ method: 'POST', url: '/sandbox/users', payload: { username: 'ab' } })
    assert.equal(short.statusCode, 400)
    assert.equal(short.json().error, 'invalid_arguments')
    assert.match(short.json().error_message, /username/)
    const wrongType = await inject({ method: 'POST', url: '/sandbox/clock', payload: { advance_seconds: '60' } })
    assert.equal(wrongType.statusCode, 400)
    assert.match(wrongType.json().error_message, /advance_seconds/)
    const missing = await inject({ method: 'POST', url: '/sandbox/users', headers: SANDBOX_CLIENT })
    assert.equal(missing.statusCode, 400)
    assert.equal(missing.json().error, 'invalid_arguments')
  })

  it('takes an empty body with a JSON content type as no payload', async () => {
    const app = await sandbox(platform.app).createApp()
    const response = await inject({
      method: 'POST',
      url: `/sandbox/apps/${app.app_id}/keys`,
      headers: { 'content-type': 'application/json' },
      payload: '',
    })
    assert.equal(response.statusCode, 201)
  })

  it('answers an unexpected failure with a generic 500 and logs it in full with the request id', async () => {
    const response = await inject({ method: 'GET', url: '/test/boom', headers: { 'x-request-id': 'boom-1' } })
    assert.equal(response.statusCode, 500)
    const body = response.json()
    assert.deepEqual(body, { error: 'unknown_error', error_message: 'An unexpected error occurred.', request_id: 'boom-1' })
    assert.doesNotMatch(response.body, /exploded|secret\/path|at /)
    const line = logLines.map((l) => JSON.parse(l)).find((l) => l.reqId === 'boom-1' && l.level === 50 && l.err !== undefined)
    assert.ok(line, 'an error line with the request id')
    assert.match(line.err.stack, /database exploded/)
  })

  it('never logs the Authorization header, the admin token or a credential', async () => {
    const sb = sandbox(platform.app)
    const app = await sb.createApp()
    const user = await sb.createUser()
    const { accessToken } = await sb.authenticate(app.app_id, user.user_id)
    await inject({ method: 'GET', url: '/v2/me', headers: { authorization: `Bearer ${accessToken}`, 'x-request-id': 'me-1' } })
    await inject({ method: 'GET', url: '/v2/me', headers: { authorization: `Key ${app.api_key}` } })
    await inject({ method: 'GET', url: '/test/boom', headers: { authorization: `Bearer ${accessToken}` } })
    const all = logLines.join('\n')
    assert.ok(all.includes('"reqId":"me-1"'), 'request lines carry the request id')
    assert.equal(all.includes(accessToken), false)
    assert.equal(all.includes(app.api_key), false)
    assert.equal(/authorization/i.test(all), false)
  })

  it('serves health, readiness, the OpenAPI document and the docs page', async () => {
    assert.deepEqual((await inject({ method: 'GET', url: '/healthz' })).json(), { status: 'ok' })
    assert.deepEqual((await inject({ method: 'GET', url: '/readyz' })).json(), { status: 'ready' })
    const openapi = (await inject({ method: 'GET', url: '/v2/openapi.json' })).json()
    assert.match(openapi.openapi, /^3\./)
    assert.equal(openapi.paths['/v2/me'].get.operationId, 'getMe')
    assert.deepEqual(openapi.paths['/v2/me'].get.security, [{ AccessToken: [] }])
    assert.ok(openapi.paths['/sandbox/apps/{app_id}/authenticate'].post)
    for (const [path, methods] of Object.entries(openapi.paths as Record<string, Record<string, { operationId?: string }>>)) {
      if (path.startsWith('/test/')) continue
      for (const [method, operation] of Object.entries(methods)) {
        assert.ok(operation.operationId, `${method.toUpperCase()} ${path} has an operationId`)
      }
    }
    const docs = await inject({ method: 'GET', url: '/docs/' })
    assert.equal(docs.statusCode, 200)
    assert.match(String(docs.headers['content-type'] ?? ''), /text\/html/)
  })

  it('answers readiness with 503 when the database is gone', async () => {
    const broken = await startPlatform()
    await broken.db.destroy()
    const response = await broken.app.inject({ method: 'GET', url: '/readyz' })
    assert.equal(response.statusCode, 503)
    assert.equal(response.json().error, 'service_unavailable')
    await broken.app.close()
    broken.clock.stop()
  })
})
