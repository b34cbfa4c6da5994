import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Keypair } from '@stellar/stellar-base'
import type { FastifyInstance } from 'fastify'
import { operationPagingToken, transactionPagingToken } from '../../src/ledger/paging-tokens.js'
import { buildPayment, ledgerAccount, submitEnvelope } from '../helpers/ledger.js'
import { type Nodes, startNodes } from '../helpers/nodes.js'
import { TEST_DB } from '../helpers/platform.js'
import { openSse } from '../helpers/sse.js'

/**
 * The concurrent follower: while senders on several writer processes apply payments, followers
 * on another process stream /transactions and the receiver's /payments and /operations (raw
 * Server-Sent Events, reconnecting from Last-Event-ID as EventSource does) and page the same
 * lists by cursor. Every applied record is seen exactly once, in paging-token order, with no gap:
 * checked against the database's full list at the end. PLINTH_FOLLOWER_SECONDS scales the run.
 */
const POSTGRES = TEST_DB === 'postgres'
/** Writers, plus one process that only serves the followers. */
const WRITERS = POSTGRES ? 3 : 1
const SENDERS = 8
const SEND_MS = Number(process.env.PLINTH_FOLLOWER_SECONDS ?? '5') * 1000
/** Small pages and short streams: followers ask again and reconnect often, so they meet more commits in flight. */
const PAGE = 5
const STREAM_LIMIT = 25

interface Seen {
  tokens: string[]
}

describe(`ledger follower (${POSTGRES ? `${WRITERS} writer processes and a follower process on one PostgreSQL` : 'in process, on PGlite'})`, () => {
  let cluster: Nodes
  let writers: FastifyInstance[] = []
  let followerBase = ''
  let followerNode: FastifyInstance

  before(async () => {
    cluster = await startNodes({ processes: POSTGRES ? WRITERS + 1 : 1, env: { PLINTH_PUBLIC_URL: 'http://plinth.test' } })
    writers = cluster.nodes.slice(0, WRITERS)
    const last = cluster.nodes.length - 1
    followerNode = cluster.nodes[last] as FastifyInstance
    followerBase = await cluster.base(last)
  })
  after(() => cluster.close())

  const writer = (i: number): FastifyInstance => writers[i % writers.length] as FastifyInstance

  async function funded(amount: string): Promise<Keypair> {
    const key = Keypair.random()
    const response = await writer(0).inject({ method: 'POST', url: '/sandbox/ledger/fund', payload: { address: key.publicKey(), amount } })
    assert.equal(response.statusCode, 200, response.body)
    return key
  }

  /** Pays `to` from an account of its own, round-robin over the writers, until `until`. */
  async function sender(index: number, to: string, until: number): Promise<number> {
    const key = await funded('1000')
    let applied = 0
    let sequence = (await ledgerAccount(writer(index), key.publicKey()))?.sequence
    for (let n = 0; Date.now() < until; n++) {
      const app = writer(index + n)
      if (sequence === undefined) throw new Error('no sequence')
      const envelope = await buildPayment(app, { seed: key.secret(), to, amount: '0.01', sequence })
      const { status, body } = await submitEnvelope(app, envelope)
      if (status === 200 && typeof body.hash === 'string') {
        applied += 1
        sequence = (BigInt(sequence) + 1n).toString()
      } else {
        sequence = (await ledgerAccount(app, key.publicKey()))?.sequence
      }
    }
    return applied
  }

  /**
   * Streams `path` as an EventSource would: each stream ends with `close` after STREAM_LIMIT
   * records, and the next one resumes from Last-Event-ID. Stops once `done()` says the last
   * expected token is known and it has been seen.
   */
  async function streamFollower(path: string, lastExpected: () => string | undefined): Promise<Seen> {
    const tokens: string[] = []
    const deadline = Date.now() + SEND_MS + 60_000
    while (Date.now() < deadline) {
      const last = tokens.at(-1)
      const stream = await openSse(`${followerBase}${path}?limit=${STREAM_LIMIT}`, last === undefined ? {} : { 'last-event-id': last })
      assert.equal(stream.status, 200, stream.raw())
      try {
        for (;;) {
          const target = lastExpected()
          if (target !== undefined && tokens.at(-1) === target) return { tokens }
          const event = await stream.next(2_000).catch(() => undefined)
          if (event === undefined || event.event === 'close') break
          if (event.event === 'open') continue
          assert.equal(event.id, (JSON.parse(event.data) as { paging_token: string }).paging_token)
          tokens.push(event.id ?? '')
        }
      } finally {
        stream.close()
      }
      const target = lastExpected()
      if (target !== undefined && tokens.at(-1) === target) return { tokens }
    }
    return { tokens }
  }

  /** Pages `path` ascending from the start, until the senders are done and a page after that comes back empty. */
  async function pageFollower(path: string, done: () => boolean): Promise<Seen> {
    const tokens: string[] = []
    let cursor: string | undefined
    for (;;) {
      const finished = done()
      const params = new URLSearchParams({ order: 'asc', limit: String(PAGE), ...(cursor === undefined ? {} : { cursor }) })
      const response = await followerNode.inject({ method: 'GET', url: `${path}?${params.toString()}` })
      assert.equal(response.statusCode, 200, response.body)
      const records = (response.json() as { _embedded: { records: Array<{ paging_token: string }> } })._embedded.records
      for (const record of records) tokens.push(record.paging_token)
      cursor = records.at(-1)?.paging_token ?? cursor
      if (records.length === 0 && finished) return { tokens }
      await new Promise((resolve) => setImmediate(resolve))
    }
  }

  it('every applied transaction, operation and payment is seen exactly once, in order, by streaming and paging followers', {
    timeout: SEND_MS + 240_000,
  }, async () => {
    const receiver = await funded('1')
    const r = receiver.publicKey()
    const lists = {
      transactions: '/ledger/transactions',
      payments: `/ledger/accounts/${r}/payments`,
      operations: `/ledger/accounts/${r}/operations`,
    } as const
    /** The database's own list of each, in paging-token order: known once the senders are done. */
    const expected = new Map<string, string[]>()
    let sending = true

    const followers = (Object.entries(lists) as Array<[keyof typeof lists, string]>).flatMap(([name, path]) => [
      streamFollower(path, () => expected.get(name)?.at(-1)).then((seen) => ({ name, how: 'stream', seen })),
      pageFollower(path, () => !sending).then((seen) => ({ name, how: 'page', seen })),
    ])
    const until = Date.now() + SEND_MS
    const applied = (await Promise.all(Array.from({ length: SENDERS }, (_, i) => sender(i, r, until)))).reduce((a, b) => a + b, 0)
    sending = false

    const transactions = await cluster.query<{ ledger: string; application_order: number }>(
      'select t.ledger::text as ledger, t.application_order from ledger_transactions t order by t.ledger, t.application_order',
    )
    expected.set(
      'transactions',
      transactions.map((row) => transactionPagingToken(BigInt(row.ledger), row.application_order)),
    )
    const operations = await cluster.query<{ ledger: string; application_order: number; index: number; to: string; from: string }>(
      `select t.ledger::text as ledger, t.application_order, o.index, o."to", o."from" from ledger_operations o join ledger_transactions t on t.hash = o.transaction_hash
       where o."to" = '${r}' or o."from" = '${r}' order by t.ledger, t.application_order, o.index`,
    )
    const receiverOps = operations.map((row) => operationPagingToken(BigInt(row.ledger), row.application_order, row.index))
    // Every operation here is a payment: the receiver's payments and operations are the same list.
    expected.set('payments', receiverOps)
    expected.set('operations', receiverOps)

    const results = await Promise.all(followers)
    const figures = results.map(({ name, how, seen }) => {
      const want = expected.get(name) ?? []
      const got = new Set(seen.tokens)
      const gaps = want.filter((token) => !got.has(token)).length
      const duplicates = seen.tokens.length - got.size
      const extra = [...got].filter((token) => !want.includes(token)).length
      let outOfOrder = 0
      for (let i = 1; i < seen.tokens.length; i++) if (BigInt(seen.tokens[i] ?? 0) <= BigInt(seen.tokens[i - 1] ?? 0)) outOfOrder += 1
      return { name, how, written: want.length, seen: seen.tokens.length, gaps, duplicates, extra, outOfOrder }
    })
    const summary = `${applied} payments applied by ${SENDERS} senders over ${WRITERS} writer process(es) in ${SEND_MS / 1000} s; ${figures
      .map(
        (f) =>
          `${f.how} ${f.name}: written ${f.written}, seen ${f.seen}, gaps ${f.gaps}, duplicates ${f.duplicates}, out of order ${f.outOfOrder}`,
      )
      .join('; ')}`
    console.log(`ledger follower: ${summary}`)
    assert.ok(applied > 0)
    assert.equal(expected.get('payments')?.length, applied, 'every payment the ledger answered as applied is stored')
    for (const f of figures) {
      assert.equal(f.gaps, 0, `${f.how} ${f.name}: gaps (${summary})`)
      assert.equal(f.duplicates, 0, `${f.how} ${f.name}: duplicates (${summary})`)
      assert.equal(f.extra, 0, `${f.how} ${f.name}: records the database does not hold (${summary})`)
      assert.equal(f.outOfOrder, 0, `${f.how} ${f.name}: out of paging-token order (${summary})`)
    }
  })
})
