import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { Keypair } from '@stellar/stellar-base'
import { sql } from 'kysely'
import { afterLedgerToken } from '../../src/ledger/paging-tokens.js'
import { pay } from '../helpers/ledger.js'
import { json, startPlatform, type TestPlatform } from '../helpers/platform.js'
import { openSse, type SseStream } from '../helpers/sse.js'

/**
 * The newest ledger is the one with the greatest number, as a number: past 99, 999 and 9,999
 * ledgers (where "99" > "220" and "9999" > "10000" as text) the root, fee_stats, `cursor=now` on
 * every collection and a `cursor=now` stream all name the true tip and replay nothing.
 * The ledger-number sequence (migration 0002, drawn at COMMIT by migration 0014's
 * `ledger_close`) is moved ahead with setval, as if that many transactions had closed.
 */
interface Paged {
  paging_token: string
  [field: string]: unknown
}

async function funded(platform: TestPlatform): Promise<Keypair> {
  const key = Keypair.random()
  const response = await platform.app.inject({
    method: 'POST',
    url: '/sandbox/ledger/fund',
    payload: { address: key.publicKey(), amount: '1000' },
  })
  assert.equal(response.statusCode, 200, response.body)
  return key
}

/** Makes the next ledger drawn be `next`. */
async function nextLedgerIs(platform: TestPlatform, next: number): Promise<void> {
  await sql`select setval('ledger_numbers', ${next - 1})`.execute(platform.db)
}

async function firstRecord(stream: SseStream): Promise<Paged> {
  for (;;) {
    const event = await stream.next()
    if (event.event === 'open') continue
    assert.equal(event.event, undefined, `a record event, not ${JSON.stringify(event)}`)
    return JSON.parse(event.data) as Paged
  }
}

describe('the ledger tip is the greatest ledger number, as a number', () => {
  let platform: TestPlatform
  let base: string
  let source: Keypair
  let target: Keypair

  before(async () => {
    platform = await startPlatform()
    await platform.app.listen({ port: 0, host: '127.0.0.1' })
    base = `http://127.0.0.1:${(platform.app.server.address() as AddressInfo).port}`
    source = await funded(platform)
    target = await funded(platform)
  })
  after(() => platform.close())

  const collections = (tip: string, hash: string) => {
    const a = source.publicKey()
    return [
      '/ledger/transactions',
      '/ledger/operations',
      '/ledger/payments',
      '/ledger/effects',
      '/ledger/ledgers',
      `/ledger/accounts/${a}/transactions`,
      `/ledger/accounts/${a}/operations`,
      `/ledger/accounts/${a}/payments`,
      `/ledger/accounts/${a}/effects`,
      `/ledger/ledgers/${tip}/transactions`,
      `/ledger/ledgers/${tip}/operations`,
      `/ledger/ledgers/${tip}/payments`,
      `/ledger/ledgers/${tip}/effects`,
      `/ledger/transactions/${hash}/operations`,
      `/ledger/transactions/${hash}/payments`,
      `/ledger/transactions/${hash}/effects`,
    ]
  }

  /** Every place that names the newest ledger names `tip`, and `cursor=now` replays nothing. */
  async function assertTip(tip: number, hash: string): Promise<void> {
    const root = json<Record<string, unknown>>(await platform.app.inject({ method: 'GET', url: '/ledger' }))
    assert.equal(root.history_latest_ledger, tip, 'history_latest_ledger')
    assert.equal(root.core_latest_ledger, tip, 'core_latest_ledger')
    assert.equal(root.ingest_latest_ledger, tip, 'ingest_latest_ledger')
    const tipLedger = json<{ closed_at: string }>(await platform.app.inject({ method: 'GET', url: `/ledger/ledgers/${tip}` }))
    assert.equal(root.history_latest_ledger_closed_at, tipLedger.closed_at, 'the root closes at the tip ledger')
    const fees = json<{ last_ledger: string }>(await platform.app.inject({ method: 'GET', url: '/ledger/fee_stats' }))
    assert.equal(fees.last_ledger, String(tip), 'fee_stats.last_ledger')

    const newest = json<{ _embedded: { records: Array<{ sequence: number }> } }>(
      await platform.app.inject({ method: 'GET', url: '/ledger/ledgers?order=desc&limit=1' }),
    )
    assert.equal(newest._embedded.records[0]?.sequence, tip, 'the newest ledger, descending')

    const now = afterLedgerToken(BigInt(tip))
    for (const path of collections(String(tip), hash)) {
      const response = await platform.app.inject({ method: 'GET', url: `${path}?cursor=now&limit=200` })
      assert.equal(response.statusCode, 200, `${path}: ${response.body}`)
      const body = json<{ _links: { next: { href: string } }; _embedded: { records: Paged[] } }>(response)
      assert.deepEqual(
        body._embedded.records.map((r) => r.paging_token),
        [],
        `${path}?cursor=now replays nothing`,
      )
      assert.equal(new URL(body._links.next.href).searchParams.get('cursor'), now, `${path}: next waits after ledger ${tip}`)
    }
  }

  /** Opens `cursor=now` streams, closes one more ledger, and checks each stream's first record is of it. */
  async function assertStreamsStartAtTip(tip: number): Promise<void> {
    const a = source.publicKey()
    const paths = [
      '/ledger/transactions',
      '/ledger/operations',
      '/ledger/payments',
      '/ledger/effects',
      '/ledger/ledgers',
      `/ledger/accounts/${a}/transactions`,
      `/ledger/accounts/${a}/payments`,
      `/ledger/accounts/${a}/operations`,
      `/ledger/accounts/${a}/effects`,
    ]
    const streams = await Promise.all(paths.map((path) => openSse(`${base}${path}?cursor=now`)))
    try {
      // Each stream has taken its start (the hello is written once the cursor is resolved).
      for (const stream of streams) assert.equal((await stream.next()).event, 'open')
      const hash = await pay(platform.app, { seed: source.secret(), to: target.publicKey(), amount: '1' })
      for (const [i, stream] of streams.entries()) {
        const record = await firstRecord(stream)
        // An effect's token is "<operation TOID>-<order>".
        const toid = BigInt(record.paging_token.split('-')[0] ?? '')
        assert.ok(
          toid > BigInt(afterLedgerToken(BigInt(tip))),
          `${paths[i]}: the first streamed record (${record.paging_token}) is after ledger ${tip}`,
        )
        assert.equal(toid >> 32n, BigInt(tip + 1), `${paths[i]}: a record of the new ledger`)
        if (paths[i] === '/ledger/ledgers') assert.equal(record.sequence, tip + 1)
        else if (paths[i]?.endsWith('/transactions') === true) assert.equal(record.hash, hash)
        else if (paths[i]?.endsWith('/effects') !== true)
          assert.equal(record.transaction_hash, hash, `${paths[i]}: the new transaction's record`)
      }
    } finally {
      for (const stream of streams) stream.close()
    }
  }

  for (const [next, label] of [
    [99, 'at ledger 99 then 220 ("99" > "220" as text)'],
    [1_000, 'past 1,000'],
    [9_999, 'past 10,000 ("9999" > "10000" as text)'],
  ] as const) {
    it(label, async () => {
      // A few low ledgers, then a jump: the low ones sort above the high ones as text.
      await pay(platform.app, { seed: source.secret(), to: target.publicKey(), amount: '1' })
      await nextLedgerIs(platform, next)
      let hash = await pay(platform.app, { seed: source.secret(), to: target.publicKey(), amount: '1' })
      hash = await pay(platform.app, { seed: target.secret(), to: source.publicKey(), amount: '1' })
      await assertTip(next + 1, hash)
      if (next === 99) {
        await nextLedgerIs(platform, 220)
        hash = await pay(platform.app, { seed: source.secret(), to: target.publicKey(), amount: '1' })
        await assertTip(220, hash)
        await assertStreamsStartAtTip(220)
      } else {
        await assertStreamsStartAtTip(next + 1)
      }
    })
  }
})
