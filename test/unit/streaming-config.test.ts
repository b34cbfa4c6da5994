import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { FastifyRequest } from 'fastify'
import { ConfigError, loadConfig } from '../../src/config.js'
import { acceptsEventStream } from '../../src/ledger/horizon/streaming.js'

describe('ledger streams: configuration and negotiation', () => {
  it('has the documented bounds by default and reads PLINTH_STREAM_*', () => {
    assert.deepEqual(loadConfig({}, '/srv').streams, {
      maxOpen: 1000,
      maxPerClient: 20,
      heartbeatSeconds: 10,
      maxLifetimeSeconds: 3600,
      pollMs: 1000,
    })
    const set = loadConfig(
      {
        PLINTH_STREAM_MAX_OPEN: '5',
        PLINTH_STREAM_MAX_PER_CLIENT: '2',
        PLINTH_STREAM_HEARTBEAT_SECONDS: '3',
        PLINTH_STREAM_MAX_LIFETIME_SECONDS: '60',
        PLINTH_STREAM_POLL_MS: '250',
      },
      '/srv',
    )
    assert.deepEqual(set.streams, { maxOpen: 5, maxPerClient: 2, heartbeatSeconds: 3, maxLifetimeSeconds: 60, pollMs: 250 })
  })

  it('refuses a bound out of range, naming the variable', () => {
    for (const [name, value] of [
      ['PLINTH_STREAM_HEARTBEAT_SECONDS', '0'],
      ['PLINTH_STREAM_POLL_MS', '10'],
      ['PLINTH_STREAM_MAX_OPEN', '-1'],
      ['PLINTH_STREAM_MAX_LIFETIME_SECONDS', '100000'],
    ] as const) {
      assert.throws(
        () => loadConfig({ [name]: value }, '/srv'),
        (error: unknown) => error instanceof ConfigError && error.message.includes(name),
      )
    }
  })

  it('streams when Accept names text/event-stream, unless with q=0', () => {
    const accepts = (accept?: string) => acceptsEventStream({ headers: accept === undefined ? {} : { accept } } as FastifyRequest)
    assert.equal(accepts('text/event-stream'), true)
    assert.equal(accepts('application/json, Text/Event-Stream;q=0.5'), true)
    assert.equal(accepts('text/event-stream;q=0'), false)
    assert.equal(accepts('text/event-stream; q=0.0'), false)
    assert.equal(accepts('application/json'), false)
    assert.equal(accepts('*/*'), false)
    assert.equal(accepts(undefined), false)
  })
})
