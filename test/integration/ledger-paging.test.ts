import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Keypair } from '@stellar/stellar-base'
import type { FastifyInstance } from 'fastify'
import { buildPayment, ledgerAccount, submitEnvelope } from '../helpers/ledger.js'
import { startNodes } from '../helpers/nodes.js'
import { TEST_DB } from '../helpers/platform.js'

/**
 * Paging never skips a record: followers that page the ledger by paging_token, in ascending
 * order as wallets do, while many senders on several processes apply transactions, see every
 * applied transaction exactly once, in increasing paging-token order.
 */
const POSTGRES = TEST_DB === 'postgres'
const PROCESSES = POSTGRES ? 3 : 1
const SENDERS = POSTGRES ? 9 : 4
const SEND_MS = POSTGRES ? 10_000 : 4_000
/** Small pages: a follower asks again often, so it meets more commits in flight. */
const PAGE = 3

interface Record_ {
  hash: string
  paging_token: string
}

describe(`ledger paging (${POSTGRES ? `${PROCESSES} server processes on one PostgreSQL` : 'in process, on PGlite'})`, () => {
  let nodes: FastifyInstance[] = []
  let query: <T>(text: string) => Promise<T[]>
  let cleanup: () => Promise<void> = async () => {}

  before(async () => {
    const started = await startNodes({ processes: PROCESSES, env: { PLINTH_PUBLIC_URL: 'http://plinth.test' } })
    nodes = started.nodes
    query = (text) => started.query(text)
    cleanup = () => started.close()
  })

  after(() => cleanup())

  const node = (i: number): FastifyInstance => nodes[i % nodes.length] as FastifyInstance

  async function funded(amount: string): Promise<Keypair> {
    const key = Keypair.random()
    const response = await node(0).inject({ method: 'POST', url: '/sandbox/ledger/fund', payload: { address: key.publicKey(), amount } })
    assert.equal(response.statusCode, 200, response.body)
    return key
  }

  /** Sends payments to `to` from its own account until `until`; answers the hashes the ledger applied. */
  async function sender(index: number, to: string, until: number): Promise<string[]> {
    const key = await funded('1000')
    const applied: string[] = []
    let sequence = (await ledgerAccount(node(index), key.publicKey()))?.sequence
    for (let n = 0; Date.now() < until; n++) {
      const app = node(index + n)
      if (sequence === undefined) throw new Error('no sequence')
      const next = (BigInt(sequence) + 1n).toString()
      const envelope = await buildPayment(app, { seed: key.secret(), to, amount: '0.01', sequence })
      const { status, body } = await submitEnvelope(app, envelope)
      if (status === 200 && typeof body.hash === 'string') {
        applied.push(body.hash)
        sequence = next
      } else {
        sequence = (await ledgerAccount(app, key.publicKey()))?.sequence
      }
    }
    return applied
  }

  /** Pages `path` ascending by paging_token on `app` until `done()` and a page after it comes back empty. */
  async function follower(app: FastifyInstance, path: string, done: () => boolean): Promise<Record_[]> {
    const seen: Record_[] = []
    let cursor: string | undefined
    for (;;) {
      const finished = done()
      const params = new URLSearchParams({ order: 'asc', limit: String(PAGE), ...(cursor === undefined ? {} : { cursor }) })
      const response = await app.inject({ method: 'GET', url: `${path}?${params.toString()}` })
      assert.equal(response.statusCode, 200, response.body)
      const records = (response.json() as { _embedded: { records: Record_[] } })._embedded.records
      for (const record of records) seen.push({ hash: record.hash, paging_token: record.paging_token })
      cursor = records.at(-1)?.paging_token ?? cursor
      if (records.length === 0 && finished) return seen
      // In process (PGlite), let the senders' macrotasks run between pages.
      await new Promise((resolve) => setImmediate(resolve))
    }
  }

  it('every applied transaction is seen exactly once, in increasing paging-token order, by every follower', {
    timeout: 180_000,
  }, async () => {
    const receiver = await funded('1')
    let sending = true
    const until = Date.now() + SEND_MS
    const senders = Promise.all(Array.from({ length: SENDERS }, (_, i) => sender(i, receiver.publicKey(), until))).finally(() => {
      sending = false
    })
    const lists = ['/ledger/transactions', `/ledger/accounts/${receiver.publicKey()}/transactions`]
    const followers = nodes.flatMap((app) => lists.map(async (path) => ({ path, seen: await follower(app, path, () => !sending) })))
    const journal = (await senders).flat()
    const results = await Promise.all(followers)

    const stored = new Set((await query<{ hash: string }>('select hash from ledger_transactions')).map((row) => row.hash))
    for (const hash of journal) assert.ok(stored.has(hash), `the ledger answered ${hash} as applied but did not store it`)
    const tallies = results.map(({ path, seen }) => {
      const hashes = new Set(seen.map((record) => record.hash))
      const missing = [...stored].filter((hash) => !hashes.has(hash))
      return {
        path,
        seen,
        hashes,
        missing,
        figure: `${path.startsWith('/ledger/accounts') ? 'receiver' : 'all'}: seen ${seen.length}, missing ${missing.length}`,
      }
    })
    const figures = `${stored.size} transactions applied by ${SENDERS} senders over ${nodes.length} process(es); ${tallies.map((t) => t.figure).join('; ')}`
    console.log(`ledger paging: ${figures}`)
    for (const { path, seen, hashes, missing } of tallies) {
      assert.equal(hashes.size, seen.length, `${path}: a transaction was seen twice`)
      for (let i = 1; i < seen.length; i++) {
        const [previous, current] = [seen[i - 1], seen[i]] as [Record_, Record_]
        assert.ok(BigInt(current.paging_token) > BigInt(previous.paging_token), `${path}: paging tokens out of order at ${i}`)
      }
      assert.equal(missing.length, 0, `${path}: ${missing.length} of ${stored.size} applied transactions never seen (${figures})`)
    }
    assert.ok(journal.length > 0)
  })
})
