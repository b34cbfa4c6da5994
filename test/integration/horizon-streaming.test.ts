import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { Keypair } from '@stellar/stellar-base'
import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import { Agent, fetch } from 'undici'
import { streamLimits } from '../../src/config.js'
import { networkStorage } from '../../src/ledger/networks.js'
import { afterLedgerToken } from '../../src/ledger/paging-tokens.js'
import { pay } from '../helpers/ledger.js'
import { startNodes } from '../helpers/nodes.js'
import { SANDBOX_CLIENT, startPlatform, TEST_DB, type TestPlatform } from '../helpers/platform.js'
import { freePort, PlinthProcess, setUpBackend, sleep } from '../helpers/server-process.js'
import { openSse, type SseEvent, type SseStream } from '../helpers/sse.js'

/**
 * The ledger's collections as Horizon's Server-Sent Events, read raw over undici: the wire
 * format, cursors and resuming, the bounds, and that nothing is left behind when streams end.
 */
interface Paged {
  paging_token: string
  [field: string]: unknown
}

const HELLO = 'retry: 1000\nevent: open\ndata: "hello"\n\n'

async function listen(platform: TestPlatform): Promise<string> {
  await platform.app.listen({ port: 0, host: '127.0.0.1' })
  return `http://127.0.0.1:${(platform.app.server.address() as AddressInfo).port}`
}

async function funded(platform: TestPlatform, amount = '1000'): Promise<Keypair> {
  const key = Keypair.random()
  const response = await platform.app.inject({ method: 'POST', url: '/sandbox/ledger/fund', payload: { address: key.publicKey(), amount } })
  assert.equal(response.statusCode, 200, response.body)
  return key
}

async function records(base: string, path: string): Promise<Paged[]> {
  const response = await fetch(`${base}${path}`, { headers: { accept: 'application/json' } })
  assert.equal(response.status, 200)
  return ((await response.json()) as { _embedded: { records: Paged[] } })._embedded.records
}

/** Reads `count` record events (after the hello), asserting each one's shape. */
async function take(stream: SseStream, count: number): Promise<Paged[]> {
  const taken: Paged[] = []
  while (taken.length < count) {
    const event = await stream.next()
    if (event.event === 'open') continue
    assert.equal(event.event, undefined, `a record event, not ${JSON.stringify(event)}`)
    const record = JSON.parse(event.data) as Paged
    assert.equal(event.id, record.paging_token, 'the id is the paging token')
    taken.push(record)
  }
  return taken
}

async function until(what: string, check: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await sleep(20)
  assert.ok(check(), what)
}

describe('ledger streaming: Server-Sent Events', () => {
  let platform: TestPlatform
  let base: string
  let source: Keypair
  let target: Keypair

  before(async () => {
    platform = await startPlatform({ streams: { ...streamLimits(), heartbeatSeconds: 1 } })
    base = await listen(platform)
    source = await funded(platform)
    target = await funded(platform)
  })
  after(() => platform.close())

  it('a request without text/event-stream is answered as before, with JSON', async () => {
    await pay(platform.app, { seed: source.secret(), to: target.publicKey(), amount: '1' })
    const response = await fetch(`${base}/ledger/transactions?limit=1`)
    assert.equal(response.status, 200)
    assert.match(response.headers.get('content-type') ?? '', /json/)
    const body = (await response.json()) as { _embedded: { records: Paged[] } }
    assert.equal(body._embedded.records.length, 1)
  })

  it('opens with Horizon headers and hello, then sends every record as the collection does, id = paging_token, in order', async () => {
    await pay(platform.app, { seed: source.secret(), to: target.publicKey(), amount: '2' })
    const expected = await records(base, `/ledger/accounts/${target.publicKey()}/payments?limit=200`)
    assert.ok(expected.length >= 2)
    const stream = await openSse(`${base}/ledger/accounts/${target.publicKey()}/payments`)
    try {
      assert.equal(stream.status, 200)
      assert.equal(stream.headers.get('content-type'), 'text/event-stream; charset=utf-8')
      assert.equal(stream.headers.get('cache-control'), 'no-cache')
      assert.equal(stream.headers.get('access-control-allow-origin'), '*')
      const hello = await stream.next()
      assert.deepEqual(hello, { retry: 1000, event: 'open', data: '"hello"' } satisfies SseEvent)
      assert.ok(stream.raw().startsWith(HELLO), stream.raw())
      const seen = await take(stream, expected.length)
      assert.deepEqual(seen, expected, 'the same JSON records as the collection, in the same order')
    } finally {
      stream.close()
    }
  })

  it('cursor=now sends only what is applied after it opened; the stream lives on between records', async () => {
    const stream = await openSse(`${base}/ledger/transactions?cursor=now`)
    try {
      assert.equal((await stream.next()).event, 'open')
      const first = await pay(platform.app, { seed: source.secret(), to: target.publicKey(), amount: '3' })
      const [one] = await take(stream, 1)
      assert.equal(one?.hash, first)
      const second = await pay(platform.app, { seed: source.secret(), to: target.publicKey(), amount: '4' })
      const [two] = await take(stream, 1)
      assert.equal(two?.hash, second)
      assert.ok(BigInt(two?.paging_token ?? 0) > BigInt(one?.paging_token ?? 0))
    } finally {
      stream.close()
    }
  })

  it('ends with close/byebye (retry 10) after `limit` records, and resumes from Last-Event-ID with exactly the missed records', async () => {
    const path = `/ledger/accounts/${target.publicKey()}/operations`
    const first = await openSse(`${base}${path}?limit=1`)
    const [head] = await take(first, 1)
    assert.deepEqual(await first.next(), { retry: 10, event: 'close', data: '"byebye"' } satisfies SseEvent)
    await first.ended
    assert.ok(first.raw().endsWith('retry: 10\nevent: close\ndata: "byebye"\n\n'))

    await pay(platform.app, { seed: source.secret(), to: target.publicKey(), amount: '5' })
    await pay(platform.app, { seed: source.secret(), to: target.publicKey(), amount: '6' })
    const missed = await records(base, `${path}?limit=200&cursor=${head?.paging_token}`)
    assert.ok(missed.length >= 2)
    // Last-Event-ID wins over the query's cursor, as in Horizon (an EventSource reconnects with the URL it began with).
    const resumed = await openSse(`${base}${path}?cursor=now&limit=${missed.length}`, { 'last-event-id': head?.paging_token ?? '' })
    assert.deepEqual(await take(resumed, missed.length), missed)
    assert.equal((await resumed.next()).event, 'close', 'nothing more than the missed records')
    await resumed.ended
  })

  it('sends a heartbeat comment while idle', async () => {
    const stream = await openSse(`${base}/ledger/ledgers?cursor=now`)
    try {
      await until('a heartbeat arrives', () => stream.comments.includes('heartbeat'))
      assert.equal(stream.events.length, 1, 'only the hello: heartbeats are comments, invisible to EventSource')
    } finally {
      stream.close()
    }
  })

  it('refuses a bad Last-Event-ID and a descending stream with Horizon problems, before streaming', async () => {
    const bad = await fetch(`${base}/ledger/transactions`, { headers: { accept: 'text/event-stream', 'last-event-id': 'abc' } })
    assert.equal(bad.status, 400)
    const problem = (await bad.json()) as { type: string; extras?: { invalid_field?: string } }
    assert.equal(problem.type, 'https://stellar.org/horizon-errors/bad_request')
    assert.equal(problem.extras?.invalid_field, 'Last-Event-ID')
    const desc = await fetch(`${base}/ledger/transactions?order=desc`, { headers: { accept: 'text/event-stream' } })
    assert.equal(desc.status, 400)
    assert.equal(((await desc.json()) as { extras?: { invalid_field?: string } }).extras?.invalid_field, 'order')
    const missing = await fetch(`${base}/ledger/accounts/${Keypair.random().publicKey()}/payments`, {
      headers: { accept: 'text/event-stream' },
    })
    assert.equal(missing.status, 404)
    assert.match(missing.headers.get('content-type') ?? '', /problem\+json/)
  })

  it('frees everything when clients disconnect: open streams and tip waiters return to zero', async () => {
    const usage = () => platform.app.ledgerStreams.usage()
    for (let round = 0; round < 3; round++) {
      const streams = await Promise.all(Array.from({ length: 15 }, () => openSse(`${base}/ledger/payments?cursor=now`)))
      for (const stream of streams) assert.equal((await stream.next()).event, 'open')
      await until('every stream is counted', () => usage().open === 15)
      await pay(platform.app, { seed: source.secret(), to: target.publicKey(), amount: '0.1' })
      for (const stream of streams) await take(stream, 1)
      for (const stream of streams) stream.close()
      await until(`every stream is freed: ${JSON.stringify(usage())}`, () => {
        const now = usage()
        return now.open === 0 && now.clients === 0 && now.tip.waiting === 0 && now.tip.holders === 0
      })
    }
  })
})

describe('ledger streaming: bounds', () => {
  let platform: TestPlatform
  let base: string
  const second = new Agent({ localAddress: '127.0.0.2' })

  before(async () => {
    platform = await startPlatform({ streams: { ...streamLimits(), maxOpen: 3, maxPerClient: 2 } })
    base = await listen(platform)
  })
  after(async () => {
    await second.close()
    await platform.close()
  })

  it('refuses a client past its streams with 429 and the process past its streams with 503, as Horizon problems', async () => {
    const url = `${base}/ledger/transactions?cursor=now`
    const mine = [await openSse(url), await openSse(url)]
    const refused = await fetch(url, { headers: { accept: 'text/event-stream' } })
    assert.equal(refused.status, 429)
    assert.match(refused.headers.get('content-type') ?? '', /application\/problem\+json/)
    const limited = (await refused.json()) as { type: string; title: string; status: number }
    assert.equal(limited.type, 'https://stellar.org/horizon-errors/rate_limit_exceeded')
    assert.equal(limited.status, 429)

    // Another client address still gets one, the process's last.
    const theirs = await openSse(url, {}, { dispatcher: second })
    assert.equal(theirs.status, 200)
    const full = await fetch(url, { headers: { accept: 'text/event-stream' }, dispatcher: second })
    assert.equal(full.status, 503)
    assert.equal(((await full.json()) as { type: string }).type, 'https://stellar.org/horizon-errors/service_unavailable')

    // A closed stream's place is free again.
    mine[0]?.close()
    await until('the closed stream is freed', () => platform.app.ledgerStreams.usage().open === 2)
    const again = await openSse(url)
    assert.equal(again.status, 200)
    for (const stream of [again, mine[1], theirs]) stream?.close()
  })
})

describe('ledger streaming: no connection held while waiting', () => {
  it('three times as many waiting streams as the pool has connections: requests are still served, and one payment reaches every stream', async () => {
    // startPlatform's pool has 10 connections (PGlite: one): a stream holding one while it waits would starve the rest.
    const platform = await startPlatform({ streams: { ...streamLimits(), maxPerClient: 100 } })
    try {
      const base = await listen(platform)
      const [source, target] = [await funded(platform), await funded(platform)]
      const streams = await Promise.all(
        Array.from({ length: 30 }, () => openSse(`${base}/ledger/accounts/${target.publicKey()}/payments?cursor=now`)),
      )
      for (const stream of streams) assert.equal((await stream.next()).event, 'open')
      assert.equal((await fetch(`${base}/ledger/ledgers?limit=1`)).status, 200)
      const hash = await pay(platform.app, { seed: source.secret(), to: target.publicKey(), amount: '1' })
      for (const stream of streams) assert.equal((await take(stream, 1))[0]?.transaction_hash, hash)
      for (const stream of streams) stream.close()
      await until('every stream is freed', () => platform.app.ledgerStreams.usage().open === 0)
    } finally {
      await platform.close()
    }
  })
})

describe('ledger streaming: the LISTEN connection', {
  skip: TEST_DB !== 'postgres' && 'PostgreSQL only (PGlite signals in process)',
}, () => {
  it('is replaced when it drops, and what was applied meanwhile still reaches the stream', async () => {
    // The poll is pushed out of the way: delivery must come from LISTEN and its reconnection.
    const platform = await startPlatform({ streams: { ...streamLimits(), pollMs: 60_000 } })
    try {
      const base = await listen(platform)
      const [source, target] = [await funded(platform), await funded(platform)]
      const stream = await openSse(`${base}/ledger/transactions?cursor=now`)
      assert.equal((await stream.next()).event, 'open')
      const { rows } = await sql
        .raw<{ channel: string }>(`select ${networkStorage('Pi Testnet').tipChannelSql} as channel`)
        .execute(platform.db)
      const listening = `listen "${rows[0]?.channel}"`
      const listeners = async () =>
        (await sql<{ pid: number }>`select pid from pg_stat_activity where query = ${listening}`.execute(platform.db)).rows
      const first = await pay(platform.app, { seed: source.secret(), to: target.publicKey(), amount: '1' })
      assert.equal((await take(stream, 1))[0]?.hash, first, 'delivered by NOTIFY (the poll is a minute away)')

      const [dropped] = await listeners()
      assert.ok(dropped !== undefined, 'one LISTEN connection')
      await sql`select pg_terminate_backend(${dropped.pid})`.execute(platform.db)
      const meanwhile = await pay(platform.app, { seed: source.secret(), to: target.publicKey(), amount: '2' })
      assert.equal((await take(stream, 1))[0]?.hash, meanwhile, 'read again once listening again')
      const after = await pay(platform.app, { seed: source.secret(), to: target.publicKey(), amount: '3' })
      assert.equal((await take(stream, 1))[0]?.hash, after, 'and notified again')
      const now = await listeners()
      assert.equal(now.length, 1)
      assert.notEqual(now[0]?.pid, dropped.pid)
      stream.close()
    } finally {
      await platform.close()
    }
  })
})

describe('ledger streaming: graceful shutdown', () => {
  it('a stopping server ends its open streams with close, and exits without waiting for them', async () => {
    const setup = await setUpBackend(TEST_DB)
    const server = PlinthProcess.spawn(await freePort(), setup.env)
    try {
      await server.waitReady()
      const streams = await Promise.all([
        openSse(`${server.base}/ledger/transactions?cursor=now`),
        openSse(`${server.base}/ledger/ledgers`),
      ])
      for (const stream of streams) assert.equal((await stream.next()).event, 'open')
      const exit = await server.stop()
      // Exit 0: the drain finished (a stop still waiting after 10 s exits 1), with nothing logged as an error.
      assert.equal(exit.code, 0, server.output())
      assert.doesNotMatch(server.output(), /"level":(50|60)/)
      for (const stream of streams) {
        await stream.ended
        assert.ok(stream.raw().endsWith('retry: 10\nevent: close\ndata: "byebye"\n\n'), stream.raw())
      }
    } finally {
      await server.kill().catch(() => {})
      await setup.cleanup()
    }
  })
})

describe('ledger streaming: across a reset or a restore', () => {
  /** Records (after the hello) until `count` are read; then what follows must be the world change's close. */
  async function closeOf(stream: SseStream): Promise<SseEvent> {
    for (;;) {
      const event = await stream.next()
      if (event.event === 'open') continue
      assert.equal(event.event, 'close', `the stream ends with close, not ${JSON.stringify(event)}`)
      await stream.ended
      return event
    }
  }

  it('a restore ends every open stream on every process; its last id, and a cursor from before, resume with every new transaction', async () => {
    const cluster = await startNodes({ processes: TEST_DB === 'postgres' ? 2 : 1 })
    const streams: SseStream[] = []
    try {
      const { nodes } = cluster
      const first = nodes[0] as FastifyInstance
      const bases = [await cluster.base(0), await cluster.base(nodes.length - 1)]
      const fund = async () => {
        const key = Keypair.random()
        const response = await first.inject({
          method: 'POST',
          url: '/sandbox/ledger/fund',
          payload: { address: key.publicKey(), amount: '100' },
        })
        assert.equal(response.statusCode, 200, response.body)
        return key
      }
      const sender = await fund()
      const receiver = (await fund()).publicKey()
      for (let i = 0; i < 2; i++) await pay(first, { seed: sender.secret(), to: receiver, amount: '1' })
      assert.equal((await first.inject({ method: 'POST', url: '/sandbox/snapshots', payload: { name: 'two' } })).statusCode, 201)
      for (let i = 0; i < 3; i++) await pay(first, { seed: sender.secret(), to: receiver, amount: '1' })

      const open = await Promise.all(bases.map((base) => openSse(`${base}/ledger/transactions`)))
      streams.push(...open)
      const seen = await Promise.all(open.map((stream) => take(stream, 5)))
      const stale = (seen[0] as Paged[])[4]?.paging_token ?? ''

      assert.equal((await first.inject({ method: 'POST', url: '/sandbox/snapshots/two/restore', headers: SANDBOX_CLIENT })).statusCode, 200)
      const closes = await Promise.all(open.map(closeOf))
      for (const close of closes) assert.equal(close.id, afterLedgerToken(2n), 'the last id is where the restored ledger ends')

      // Reconnects: with that last id (EventSource), with the cursor of the last record seen (stellar-sdk), with a stale Last-Event-ID.
      const again = await Promise.all([
        openSse(`${bases[0]}/ledger/transactions`, { 'last-event-id': closes[0]?.id ?? '' }),
        openSse(`${bases[1]}/ledger/transactions?cursor=${stale}`),
        openSse(`${bases[1]}/ledger/transactions`, { 'last-event-id': stale }),
      ])
      streams.push(...again)
      const made: string[] = []
      for (let i = 0; i < 3; i++) made.push(await pay(first, { seed: sender.secret(), to: receiver, amount: '1' }))
      for (const stream of again) {
        const records = await take(stream, 3)
        assert.deepEqual(
          records.map((record) => record.hash),
          made,
          'every transaction after the restore, none skipped',
        )
        assert.deepEqual(
          records.map((record) => record.ledger),
          [3, 4, 5],
        )
      }
    } finally {
      for (const stream of streams) stream.close()
      await cluster.close()
    }
  })

  it('a reset ends every open stream; a reconnect with its last id gets every transaction after it', async () => {
    const cluster = await startNodes({ processes: TEST_DB === 'postgres' ? 2 : 1 })
    const streams: SseStream[] = []
    try {
      const { nodes } = cluster
      const first = nodes[0] as FastifyInstance
      const base = await cluster.base(nodes.length - 1)
      const fund = async () => {
        const key = Keypair.random()
        const response = await first.inject({
          method: 'POST',
          url: '/sandbox/ledger/fund',
          payload: { address: key.publicKey(), amount: '100' },
        })
        assert.equal(response.statusCode, 200, response.body)
        return key
      }
      let sender = await fund()
      let receiver = (await fund()).publicKey()
      for (let i = 0; i < 4; i++) await pay(first, { seed: sender.secret(), to: receiver, amount: '1' })
      const stream = await openSse(`${base}/ledger/transactions?cursor=now`)
      streams.push(stream)
      assert.equal((await stream.next()).event, 'open')

      assert.equal((await first.inject({ method: 'POST', url: '/sandbox/reset', payload: { seed: 'empty' } })).statusCode, 200)
      const close = await closeOf(stream)
      assert.equal(close.id, afterLedgerToken(0n))
      const again = await openSse(`${base}/ledger/transactions?cursor=now`, { 'last-event-id': close.id ?? '' })
      streams.push(again)
      sender = await fund()
      receiver = (await fund()).publicKey()
      const made: string[] = []
      for (let i = 0; i < 3; i++) made.push(await pay(first, { seed: sender.secret(), to: receiver, amount: '1' }))
      assert.deepEqual(
        (await take(again, 3)).map((record) => record.hash),
        made,
      )
    } finally {
      for (const stream of streams) stream.close()
      await cluster.close()
    }
  })
})
