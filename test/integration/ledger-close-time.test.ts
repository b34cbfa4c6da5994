import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Keypair, xdr } from '@stellar/stellar-base'
import type { FastifyInstance } from 'fastify'
import type { Kysely } from 'kysely'
import { up as closeTimeMigration } from '../../src/db/migrations/0015-ledger-close-time.js'
import { buildPayment, ledgerAccount, pay, submitEnvelope } from '../helpers/ledger.js'
import { startNodes } from '../helpers/nodes.js'
import { json, SANDBOX_CLIENT, startPlatform, TEST_DB, type TestPlatform } from '../helpers/platform.js'

/**
 * A ledger never closes before the ledger it follows (docs/ledger.md, "Close times never go back"): whichever
 * process applies it, however commits interleave, and across a sandbox clock move back. Every
 * place that reports a ledger's close time (the ledger's `closed_at` and `header_xdr`, its
 * transaction's and operations' `created_at`, the root) reports the same one.
 */
const POSTGRES = TEST_DB === 'postgres'
const PROCESSES = POSTGRES ? 3 : 1
const SENDERS = POSTGRES ? 9 : 6
const ROUNDS = POSTGRES ? 25 : 15

interface LedgerRecord {
  sequence: number
  closed_at: string
  header_xdr: string
  paging_token: string
}
interface TransactionRecord {
  hash: string
  ledger: number
  created_at: string
  paging_token: string
}
interface OperationRecord {
  transaction_hash: string
  created_at: string
  paging_token: string
}

/** Every record of an ascending collection, page by page. */
async function walk<T extends { paging_token: string }>(app: FastifyInstance, path: string): Promise<T[]> {
  const all: T[] = []
  let cursor: string | undefined
  for (;;) {
    const params = new URLSearchParams({ order: 'asc', limit: '200', ...(cursor === undefined ? {} : { cursor }) })
    const response = await app.inject({ method: 'GET', url: `${path}?${params.toString()}` })
    assert.equal(response.statusCode, 200, response.body)
    const records = json<{ _embedded: { records: T[] } }>(response)._embedded.records
    all.push(...records)
    if (records.length < 200) return all
    cursor = records.at(-1)?.paging_token
  }
}

/** The close time a ledger's header_xdr carries, in seconds. */
const headerCloseTime = (headerXdr: string): number =>
  Number(xdr.LedgerHeader.fromXDR(headerXdr, 'base64').scpValue().closeTime().toString())

/** Where consecutive close times (ISO strings, or milliseconds) go back, as "ledger a → b: −Δ". */
function backwards(points: ReadonlyArray<{ ledger: string | number; at: number }>): string[] {
  const found: string[] = []
  for (let i = 1; i < points.length; i++) {
    const [previous, current] = [points[i - 1], points[i]] as [(typeof points)[number], (typeof points)[number]]
    if (current.at < previous.at) found.push(`${previous.ledger} → ${current.ledger}: −${previous.at - current.at} ms`)
  }
  return found
}

/**
 * Checks every ledger's close time against its predecessor's and against the other places
 * that report it; answers the ledgers' close times by sequence (ISO, whole seconds).
 */
async function assertCloseTimes(app: FastifyInstance, query: <T>(text: string) => Promise<T[]>): Promise<Map<number, string>> {
  // Milliseconds, as stored: the API shows whole seconds, which hides most of a step back.
  // A ledger holds a batch (docs/ledger.md): its transactions share one close time.
  const rows = await query<{ ledger: string; ms: string; ops: string }>(
    `select t.ledger::text as ledger, (extract(epoch from t.created_at) * 1000)::bigint::text as ms,
       (select count(*) from ledger_operations o where o.transaction_hash = t.hash and o.created_at <> t.created_at)::text as ops
     from ledger_transactions t order by t.ledger, t.application_order`,
  )
  const stored = [...new Map(rows.map((row) => [row.ledger, row])).values()]
  for (const row of rows) {
    assert.equal(
      row.ms,
      stored.find((first) => first.ledger === row.ledger)?.ms,
      `ledger ${row.ledger}: one close time for its transactions`,
    )
  }
  const back = backwards(stored.map((row) => ({ ledger: row.ledger, at: Number(row.ms) })))
  const worst = back.reduce((most, line) => Math.max(most, Number(/−(\d+) ms/.exec(line)?.[1] ?? 0)), 0)
  console.log(`ledger close times: ${stored.length} ledgers, ${back.length} went back (by up to ${worst} ms)`)
  assert.deepEqual(back, [], `close times went back in ${back.length} of ${stored.length} ledgers`)
  assert.deepEqual(
    rows.filter((row) => row.ops !== '0').map((row) => row.ledger),
    [],
    'operations carry their ledger close time',
  )

  const ledgers = await walk<LedgerRecord>(app, '/ledger/ledgers')
  assert.equal(ledgers.length, stored.length)
  const closedAt = new Map(ledgers.map((l) => [l.sequence, l.closed_at]))
  assert.deepEqual(backwards(ledgers.map((l) => ({ ledger: l.sequence, at: Date.parse(l.closed_at) }))), [], '/ledger/ledgers closed_at')
  for (const l of ledgers) {
    assert.equal(headerCloseTime(l.header_xdr) * 1000, Date.parse(l.closed_at), `ledger ${l.sequence}: header_xdr's closeTime is closed_at`)
  }

  const transactions = await walk<TransactionRecord>(app, '/ledger/transactions')
  assert.equal(transactions.length, rows.length)
  assert.deepEqual(
    backwards(transactions.map((t) => ({ ledger: t.ledger, at: Date.parse(t.created_at) }))),
    [],
    '/ledger/transactions created_at',
  )
  for (const t of transactions)
    assert.equal(t.created_at, closedAt.get(t.ledger), `transaction of ledger ${t.ledger}: created_at is closed_at`)
  const byHash = new Map(transactions.map((t) => [t.hash, t]))
  for (const op of await walk<OperationRecord>(app, '/ledger/operations')) {
    assert.equal(op.created_at, byHash.get(op.transaction_hash)?.created_at, `operation ${op.paging_token}: created_at is its ledger's`)
  }

  const root = json<{ history_latest_ledger: number; history_latest_ledger_closed_at: string }>(
    await app.inject({ method: 'GET', url: '/ledger' }),
  )
  assert.equal(root.history_latest_ledger_closed_at, closedAt.get(root.history_latest_ledger))
  return closedAt
}

describe(`ledger close times never go back (${POSTGRES ? `${PROCESSES} server processes on one PostgreSQL` : 'in process, on PGlite'})`, () => {
  let nodes: FastifyInstance[] = []
  let query: <T>(text: string) => Promise<T[]>
  let cleanup: () => Promise<void> = async () => {}

  before(async () => {
    // Three processes starting at once on a loaded machine can take a while to be ready.
    const started = await startNodes({ processes: PROCESSES, env: { PLINTH_PUBLIC_URL: 'http://plinth.test' }, timeoutMs: 150_000 })
    nodes = started.nodes
    query = (text) => started.query(text)
    cleanup = () => started.close()
  })
  after(() => cleanup())

  const node = (i: number): FastifyInstance => nodes[i % nodes.length] as FastifyInstance

  it('concurrent submits on every process, round after round: each ledger closes no earlier than the one before', {
    timeout: 240_000,
  }, async () => {
    const receiver = Keypair.random()
    const fund = async (key: Keypair) => {
      const response = await node(0).inject({
        method: 'POST',
        url: '/sandbox/ledger/fund',
        payload: { address: key.publicKey(), amount: '1000' },
      })
      assert.equal(response.statusCode, 200, response.body)
    }
    await fund(receiver)
    const senders = Array.from({ length: SENDERS }, () => Keypair.random())
    await Promise.all(senders.map(fund))
    const sequences = await Promise.all(
      senders.map(async (key) => BigInt((await ledgerAccount(node(0), key.publicKey()))?.sequence ?? '0')),
    )

    let applied = 0
    for (let round = 0; round < ROUNDS; round++) {
      // Every sender pays the one receiver at once, each through another process each round:
      // they queue on the receiver's row lock and commit in an order of their own.
      const answers = await Promise.all(
        senders.map(async (key, i) => {
          const app = node(i + round)
          const sequence = (sequences[i] as bigint).toString()
          const envelope = await buildPayment(app, { seed: key.secret(), to: receiver.publicKey(), amount: '0.01', sequence })
          const { status, body } = await submitEnvelope(app, envelope)
          assert.equal(status, 200, JSON.stringify(body))
          sequences[i] = (sequences[i] as bigint) + 1n
        }),
      )
      applied += answers.length
    }
    assert.equal(applied, SENDERS * ROUNDS)
    await assertCloseTimes(node(1), query)
  })
})

describe(`a sandbox clock move back holds the close time (${TEST_DB})`, () => {
  let platform: TestPlatform
  let source: Keypair
  let target: Keypair
  const query = async <T>(text: string): Promise<T[]> => {
    const { sql } = await import('kysely')
    return (await sql.raw<T>(text).execute(platform.db)).rows
  }

  before(async () => {
    platform = await startPlatform()
    source = Keypair.random()
    target = Keypair.random()
    for (const key of [source, target]) {
      const response = await platform.app.inject({
        method: 'POST',
        url: '/sandbox/ledger/fund',
        payload: { address: key.publicKey(), amount: '1000' },
      })
      assert.equal(response.statusCode, 200, response.body)
    }
  })
  after(() => platform.close())

  const platformNow = async (): Promise<number> =>
    Date.parse(json<{ now: string }>(await platform.app.inject({ method: 'GET', url: '/sandbox/clock' })).now)
  const payOnce = async (): Promise<{ ledger: number; closedAt: number }> => {
    const hash = await pay(platform.app, { seed: source.secret(), to: target.publicKey(), amount: '1' })
    const tx = json<{ ledger: number }>(await platform.app.inject({ method: 'GET', url: `/ledger/transactions/${hash}` }))
    const [row] = await query<{ ms: string }>(
      `select (extract(epoch from created_at) * 1000)::bigint::text as ms from ledger_transactions where hash = '${hash}'`,
    )
    return { ledger: tx.ledger, closedAt: Number(row?.ms) }
  }

  it('after a reset to real time, ledgers close at the last close time until the platform clock passes it, then follow the clock', async () => {
    const first = await payOnce()
    const ahead = await platform.app.inject({ method: 'POST', url: '/sandbox/clock', payload: { advance_seconds: 3600 } })
    assert.equal(ahead.statusCode, 200, ahead.body)
    const moved = await payOnce()
    assert.ok(moved.closedAt >= first.closedAt + 3_599_000, 'the close time follows the clock forward')

    const reset = await platform.app.inject({ method: 'POST', url: '/sandbox/clock/reset', headers: SANDBOX_CLIENT })
    assert.equal(reset.statusCode, 200, reset.body)
    assert.ok((await platformNow()) < moved.closedAt - 3_500_000, 'the platform clock is back to real time')
    const held = await payOnce()
    assert.equal(held.closedAt, moved.closedAt, 'a ledger closed after the move back keeps the last close time')
    const heldAgain = await payOnce()
    assert.equal(heldAgain.closedAt, moved.closedAt)

    // Two hours ahead of real time is an hour past the held close time: close times follow the clock again.
    const forward = await platform.app.inject({ method: 'POST', url: '/sandbox/clock', payload: { advance_seconds: 7200 } })
    assert.equal(forward.statusCode, 200, forward.body)
    const before = await platformNow()
    const resumed = await payOnce()
    const afterwards = await platformNow()
    assert.ok(resumed.closedAt > moved.closedAt + 3_000_000, 'past the held close time')
    assert.ok(resumed.closedAt >= before - 1_000 && resumed.closedAt <= afterwards + 1_000, 'at the platform time of its commit')

    const closedAt = await assertCloseTimes(platform.app, query)
    assert.equal(closedAt.get(held.ledger), closedAt.get(moved.ledger))
    // An account's last_modified_time is the close time of its last_modified_ledger.
    const account = json<{ last_modified_ledger: number; last_modified_time: string }>(
      await platform.app.inject({ method: 'GET', url: `/ledger/accounts/${source.publicKey()}` }),
    )
    assert.equal(account.last_modified_ledger, resumed.ledger)
    assert.equal(account.last_modified_time, closedAt.get(resumed.ledger))
  })

  it('the migration brings ledgers closed before it to the rule: each takes the latest close time up to it', async () => {
    // History as the old trigger could leave it: the first ledger closing a day after the ones that follow it.
    const [first] = await query<{ ledger: string; ms: string }>(
      `update ledger_transactions set created_at = created_at + interval '1 day'
       where ledger = (select min(ledger) from ledger_transactions)
       returning ledger::text as ledger, (extract(epoch from created_at) * 1000)::bigint::text as ms`,
    )
    assert.ok(first !== undefined)
    await closeTimeMigration(platform.db as unknown as Kysely<unknown>)
    const rows = await query<{ ledger: string; ms: string }>(
      `select ledger::text as ledger, (extract(epoch from created_at) * 1000)::bigint::text as ms from ledger_transactions order by ledger`,
    )
    assert.ok(rows.length > 1)
    for (const row of rows) assert.equal(row.ms, first.ms, `ledger ${row.ledger} takes the first ledger's later close time`)
    await assertCloseTimes(platform.app, query)
  })
})
