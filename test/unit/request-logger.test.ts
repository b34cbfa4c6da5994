import assert from 'node:assert/strict'
import { describe, it, mock } from 'node:test'
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify'
import { requestChildLogger, writes } from '../../src/http/request-logger.js'

/** A Fastify app logging at `level` into `lines`, with redaction as app.ts has it, and request.log made by requestChildLogger. */
function appLoggingAt(level: string, lines: Record<string, unknown>[]): FastifyInstance {
  return Fastify({
    logger: {
      level,
      redact: { paths: ['headers["authorization"]', '*.headers["authorization"]'], censor: '[redacted]' },
      stream: { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) },
    },
    childLoggerFactory: requestChildLogger,
  })
}

describe('request.log, made on first use (src/http/request-logger.ts)', () => {
  it('builds no pino child for a request that logs nothing at the level in force', async () => {
    const lines: Record<string, unknown>[] = []
    const app = appLoggingAt('warn', lines)
    app.get('/quiet', async (request) => {
      for (let i = 0; i < 100; i++) request.log.info({ i }, 'not written at warn')
      request.log.debug('nor this')
      return { enabled: writes(request.log, 'info'), warn: writes(request.log, 'warn'), level: request.log.level }
    })
    await app.ready()
    const child = mock.method(app.log, 'child')
    try {
      const response = await app.inject({ method: 'GET', url: '/quiet' })
      assert.deepEqual(response.json(), { enabled: false, warn: true, level: 'warn' })
      assert.equal(child.mock.callCount(), 0, 'no child logger was built')
      assert.deepEqual(lines, [])
    } finally {
      child.mock.restore()
      await app.close()
    }
  })

  it('writes what an eager child writes: the request id, the message, redaction', async () => {
    const lines: Record<string, unknown>[] = []
    const app = appLoggingAt('warn', lines)
    app.get('/loud', async (request) => {
      request.log.warn({ headers: { authorization: 'Bearer s3cret' } }, 'first')
      request.log.error({ upstream: { headers: { authorization: 'Key s3cret' } } }, 'second')
      request.log.child({ part: 'inner' }).warn('third')
      return { id: request.id }
    })
    await app.ready()
    try {
      const response = await app.inject({ method: 'GET', url: '/loud' })
      const { id } = response.json<{ id: string }>()
      assert.equal(lines.length, 3)
      const [first, second, third] = lines
      assert.equal(first?.reqId, id)
      assert.equal(first?.msg, 'first')
      assert.deepEqual(first?.headers, { authorization: '[redacted]' })
      assert.equal(second?.reqId, id)
      assert.deepEqual(second?.upstream, { headers: { authorization: '[redacted]' } })
      assert.equal(third?.reqId, id)
      assert.equal(third?.part, 'inner')
      assert.ok(!JSON.stringify(lines).includes('s3cret'))
      // Byte for byte what pino's own child writes, apart from the time.
      const eager: Record<string, unknown>[] = []
      const reference = appLoggingAt('warn', eager)
      await reference.ready()
      ;(reference.log as FastifyBaseLogger).child({ reqId: id }).warn({ headers: { authorization: 'Bearer s3cret' } }, 'first')
      await reference.close()
      assert.deepEqual({ ...first, time: 0 }, { ...eager[0], time: 0 })
    } finally {
      await app.close()
    }
  })

  it('gives a route with its own log level a child at that level', async () => {
    const lines: Record<string, unknown>[] = []
    const app = appLoggingAt('warn', lines)
    app.get('/debugging', { logLevel: 'debug' }, async (request) => {
      request.log.debug('written: the route logs at debug')
      return { level: request.log.level }
    })
    await app.ready()
    try {
      const response = await app.inject({ method: 'GET', url: '/debugging' })
      assert.deepEqual(response.json(), { level: 'debug' })
      const written = lines.filter((line) => line.msg === 'written: the route logs at debug')
      assert.equal(written.length, 1)
      assert.equal(typeof written[0]?.reqId, 'string')
    } finally {
      await app.close()
    }
  })

  it('follows a change of the application level made while it runs', async () => {
    const lines: Record<string, unknown>[] = []
    const app = appLoggingAt('warn', lines)
    app.get('/info', async (request) => {
      request.log.info('an info line')
      return {}
    })
    await app.ready()
    try {
      await app.inject({ method: 'GET', url: '/info' })
      assert.equal(lines.length, 0)
      app.log.level = 'info'
      await app.inject({ method: 'GET', url: '/info' })
      // Fastify's own request lines are written through request.log too, with the same request id.
      const written = lines.filter((line) => line.msg === 'an info line')
      assert.equal(written.length, 1)
      assert.equal(typeof written[0]?.reqId, 'string')
      const incoming = lines.filter((line) => line.msg === 'incoming request')
      assert.equal(incoming.length, 1)
      assert.equal(incoming[0]?.reqId, written[0]?.reqId)
    } finally {
      await app.close()
    }
  })
})
