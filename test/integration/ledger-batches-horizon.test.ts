import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { Account, Asset, Keypair, Operation, TransactionBuilder, xdr } from '@stellar/stellar-base'
import { sql } from 'kysely'
import { HorizonAxiosClient, Server } from 'stellar-sdk'
import { ledgerCloserLimits } from '../../src/config.js'
import { transactionResultXdr } from '../../src/ledger/stellar/result-xdr.js'
import { buildPayment, submitEnvelope } from '../helpers/ledger.js'
import { startPlatform, TEST_DB, type TestPlatform } from '../helpers/platform.js'
import { openSse } from '../helpers/sse.js'

/**
 * Horizon's reads when a ledger holds many transactions: every collection pages its records in
 * (ledger, application order, operation) order, which is paging-token order, exactly once, both
 * ways, from any cursor; a ledger shows its transactions' counts; stellar-sdk pages them.
 *
 * Ledgers of several transactions come two ways: concurrent submits, which the ledger closer
 * applies together (how many share a ledger is up to it), and batches of known shapes (several
 * operations a transaction) closed here as the closer closes one: rows queued in `ledger_pending`
 * in one database transaction, which the deferred trigger closes as one ledger at COMMIT. Those
 * move no balance (these are reads), so the books are not checked.
 */
const INT64_MAX = 2n ** 63n - 1n
/** Horizon's TOID, written out here rather than taken from the module under test. */
const toid = (ledger: bigint, order: bigint, operation: bigint) => (ledger << 32n) | (order << 12n) | operation
/** The operations of each transaction, per ledger closed here: ledgers of several transactions, and of one. */
const BATCHES = [[1, 2, 1], [2], [1, 1, 1, 1], [3, 1]]
/** Senders submitting at once, per round, until the closer has put two of them in one ledger. */
const CONCURRENT = 6

interface Paged {
  paging_token: string
  [field: string]: unknown
}

interface StoredTransaction {
  hash: string
  ledger: string
  application_order: number
  operation_count: number
  created_at: Date
  fee_pool: string
}

interface StoredOperation {
  transaction_hash: string
  ledger: string
  application_order: number
  index: number
  from: string
  to: string
}

/** A paging token as the tuple Horizon compares: a TOID, or an effect's (TOID, order); a TOID alone is after all its effects. */
function tokenTuple(token: string): [bigint, bigint] {
  const [operation, order] = token.split('-')
  return [BigInt(operation ?? ''), order === undefined ? INT64_MAX : BigInt(order)]
}

function compareTokens(a: string, b: string): number {
  const [x, y] = [tokenTuple(a), tokenTuple(b)]
  if (x[0] !== y[0]) return x[0] > y[0] ? 1 : -1
  return x[1] === y[1] ? 0 : x[1] > y[1] ? 1 : -1
}

/** The page Horizon answers: the records strictly after (asc) or before (desc) the cursor, nearest first. */
function expectedPage(all: string[], cursor: string, order: 'asc' | 'desc'): string[] {
  return order === 'asc'
    ? all.filter((token) => compareTokens(token, cursor) > 0)
    : all.filter((token) => compareTokens(token, cursor) < 0).reverse()
}

const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex')

describe(`Horizon reads of ledgers holding many transactions (${TEST_DB})`, () => {
  let platform: TestPlatform
  let base: string
  const receiver = Keypair.random()
  const senders = [Keypair.random(), Keypair.random(), Keypair.random(), Keypair.random()]
  const sequences = new Map<string, bigint>()
  let transactions: StoredTransaction[] = []
  let operations: StoredOperation[] = []
  /** Each collection's path and its records' paging tokens in (ledger, order, operation) order, as the database holds them. */
  let collections: Array<{ path: string; tokens: string[] }> = []
  let ledgers: string[] = []
  const rewrite = { id: -1 }

  async function fund(address: string): Promise<void> {
    const response = await platform.app.inject({ method: 'POST', url: '/sandbox/ledger/fund', payload: { address, amount: '1000' } })
    assert.equal(response.statusCode, 200, response.body)
  }

  /** A signed payment transaction of `operationCount` operations from `sender` to the receiver, on the sender's next sequence. */
  function paymentTransaction(sender: Keypair, operationCount: number) {
    const sequence = sequences.get(sender.publicKey()) ?? 0n
    sequences.set(sender.publicKey(), sequence + 1n)
    const builder = new TransactionBuilder(new Account(sender.publicKey(), sequence.toString()), {
      fee: String(100 * operationCount),
      networkPassphrase: 'Pi Testnet',
    }).setTimeout(0)
    for (let i = 0; i < operationCount; i++) {
      builder.addOperation(Operation.payment({ destination: receiver.publicKey(), asset: Asset.native(), amount: `${i + 1}.0000000` }))
    }
    const tx = builder.build()
    tx.sign(sender)
    return { tx, sender, operationCount }
  }

  /** Closes one ledger of these transactions, in this application order, as the closer does: queued together, closed at COMMIT. */
  async function closeLedger(batch: Array<ReturnType<typeof paymentTransaction>>): Promise<void> {
    await platform.db.transaction().execute(async (trx) => {
      for (const [i, { tx, sender, operationCount }] of batch.entries()) {
        const amounts = Array.from({ length: operationCount }, (_, k) => `${k + 1}.0000000`)
        const fee = BigInt(100 * operationCount)
        await sql`
          insert into ledger_pending (hash, application_order, network, source_account, source_account_sequence, fee_charged, max_fee,
              operation_count, memo, memo_type, envelope_xdr, result_xdr, created_at,
              fee_meta, fee_meta_ledger_at, result_meta, result_meta_ledger_at, op_from, op_to, op_amount, accounts)
          values (${tx.hash().toString('hex')}, ${i + 1}, 'Pi Testnet', ${sender.publicKey()}, ${tx.sequence}::bigint, ${fee.toString()}::bigint,
              ${tx.fee}::bigint, ${operationCount}, null, 'none', ${tx.toEnvelope().toXDR('base64')},
              ${transactionResultXdr(
                fee,
                'tx_success',
                amounts.map(() => 'op_success'),
              )}, now(),
              ''::bytea, '{}'::integer[], ''::bytea, '{}'::integer[], ${amounts.map(() => sender.publicKey())}::text[],
              ${amounts.map(() => receiver.publicKey())}::text[], ${amounts}::numeric[], ${[sender.publicKey(), receiver.publicKey()]}::text[])`.execute(
          trx,
        )
      }
    })
  }

  /** Whether some ledger holds two transactions or more. */
  async function closerShared(): Promise<boolean> {
    const { rows } = await sql<{ n: number }>`
      select count(*)::integer as n from ledger_transactions group by ledger order by count(*) desc limit 1`.execute(platform.db)
    return (rows[0]?.n ?? 0) >= 2
  }

  async function page(path: string, query: Record<string, string>): Promise<Paged[]> {
    const response = await platform.app.inject({ method: 'GET', url: `${path}?${new URLSearchParams(query).toString()}` })
    assert.equal(response.statusCode, 200, `${path} ${JSON.stringify(query)}: ${response.body}`)
    const body = response.json() as { _links: { next: { href: string } }; _embedded: { records: Paged[] } }
    const last = body._embedded.records.at(-1)
    if (last !== undefined)
      assert.equal(new URL(body._links.next.href).searchParams.get('cursor'), last.paging_token, 'next carries the last token')
    return body._embedded.records
  }

  /** Follows a collection page after page from `cursor` until an empty page; answers every token seen. */
  async function walk(path: string, order: 'asc' | 'desc', limit: number, cursor?: string): Promise<string[]> {
    const seen: string[] = []
    let at = cursor
    for (;;) {
      const records = await page(path, { order, limit: String(limit), ...(at === undefined ? {} : { cursor: at }) })
      if (records.length === 0) return seen
      assert.ok(records.length <= limit)
      seen.push(...records.map((record) => record.paging_token))
      at = records.at(-1)?.paging_token
    }
  }

  before(async () => {
    // The closer gathers for a moment before closing a ledger, so submits sent at once share one.
    platform = await startPlatform({ ledgerCloser: { ...ledgerCloserLimits(), maxWaitMs: 50 } })
    await platform.app.listen({ port: 0, host: '127.0.0.1' })
    base = `http://127.0.0.1:${(platform.app.server.address() as AddressInfo).port}`
    // stellar-sdk follows the absolute `next` links, which name the public URL: send them to this server.
    rewrite.id = HorizonAxiosClient.interceptors.request.use((config) => ({
      ...config,
      url: config.url?.replace('http://plinth.test', base),
    }))
    for (const key of [receiver, ...senders]) await fund(key.publicKey())

    // Senders of their own: a transaction closed by hand moves no sequence, so the same sender would sign the same envelope again.
    const submitters = Array.from({ length: CONCURRENT }, () => Keypair.random())
    for (const key of submitters) await fund(key.publicKey())
    for (let round = 0; round < 5 && !(await closerShared()); round++) {
      const envelopes = await Promise.all(
        submitters.map((key) =>
          buildPayment(platform.app, { seed: key.secret(), to: receiver.publicKey(), amount: '1', sequence: String(round) }),
        ),
      )
      const results = await Promise.all(envelopes.map((envelope) => submitEnvelope(platform.app, envelope)))
      for (const { status, body } of results) assert.equal(status, 200, JSON.stringify(body))
    }
    for (const [b, batch] of BATCHES.entries()) {
      await closeLedger(batch.map((operationCount, i) => paymentTransaction(senders[(b + i) % senders.length] as Keypair, operationCount)))
    }

    const db = platform.db
    transactions = (
      await sql<StoredTransaction>`
        select t.hash, t.ledger::text as ledger, t.application_order, t.operation_count, t.created_at, t.fee_pool::text as fee_pool
        from ledger_transactions t order by t.ledger, t.application_order`.execute(db)
    ).rows
    operations = (
      await sql<StoredOperation>`
        select o.transaction_hash, t.ledger::text as ledger, t.application_order, o.index, o."from", o."to"
        from ledger_operations o join ledger_transactions t on t.hash = o.transaction_hash
        order by t.ledger, t.application_order, o.index`.execute(db)
    ).rows
    ledgers = [...new Set(transactions.map((tx) => tx.ledger))]
    const txToken = (tx: { ledger: string; application_order: number }) =>
      toid(BigInt(tx.ledger), BigInt(tx.application_order), 0n).toString()
    const opToken = (op: StoredOperation) => toid(BigInt(op.ledger), BigInt(op.application_order), BigInt(op.index) + 1n).toString()
    const effectTokens = (ops: StoredOperation[]) => ops.flatMap((op) => [`${opToken(op)}-1`, `${opToken(op)}-2`])
    const ofLedger = <T extends { ledger: string }>(rows: T[], ledger: string) => rows.filter((row) => row.ledger === ledger)
    const r = receiver.publicKey()
    const mine = operations.filter((op) => op.to === r || op.from === r)
    collections = [
      { path: '/ledger/ledgers', tokens: ledgers.map((ledger) => toid(BigInt(ledger), 0n, 0n).toString()) },
      { path: '/ledger/transactions', tokens: transactions.map(txToken) },
      { path: '/ledger/operations', tokens: operations.map(opToken) },
      { path: '/ledger/payments', tokens: operations.map(opToken) },
      { path: '/ledger/effects', tokens: effectTokens(operations) },
      {
        path: `/ledger/accounts/${r}/transactions`,
        tokens: transactions.filter((tx) => mine.some((op) => op.transaction_hash === tx.hash)).map(txToken),
      },
      { path: `/ledger/accounts/${r}/payments`, tokens: mine.map(opToken) },
      // The receiver's effects: only its credits (order 1).
      { path: `/ledger/accounts/${r}/effects`, tokens: mine.map((op) => `${opToken(op)}-1`) },
      ...ledgers.flatMap((ledger) => [
        { path: `/ledger/ledgers/${ledger}/transactions`, tokens: ofLedger(transactions, ledger).map(txToken) },
        { path: `/ledger/ledgers/${ledger}/operations`, tokens: ofLedger(operations, ledger).map(opToken) },
        { path: `/ledger/ledgers/${ledger}/payments`, tokens: ofLedger(operations, ledger).map(opToken) },
        { path: `/ledger/ledgers/${ledger}/effects`, tokens: effectTokens(ofLedger(operations, ledger)) },
      ]),
    ]
  })

  after(async () => {
    HorizonAxiosClient.interceptors.request.eject(rewrite.id)
    await platform.close()
  })

  it('holds ledgers of several transactions, from the closer and closed by hand, in application order from 1', () => {
    const sizes = ledgers.map((ledger) => transactions.filter((tx) => tx.ledger === ledger).length)
    assert.deepEqual(
      sizes.slice(-BATCHES.length),
      BATCHES.map((batch) => batch.length),
    )
    assert.ok(
      sizes.slice(0, -BATCHES.length).some((size) => size >= 2),
      `the closer put concurrent submits in one ledger: ${sizes}`,
    )
    for (const ledger of ledgers) {
      const orders = transactions.filter((tx) => tx.ledger === ledger).map((tx) => tx.application_order)
      assert.deepEqual(
        orders,
        orders.map((_, i) => i + 1),
        `ledger ${ledger}`,
      )
    }
    for (const collection of collections) {
      for (let i = 1; i < collection.tokens.length; i++)
        assert.ok(
          compareTokens(collection.tokens[i] ?? '', collection.tokens[i - 1] ?? '') > 0,
          `${collection.path}: stored order is token order`,
        )
    }
  })

  it('pages every collection with small limits, ascending and descending, each record exactly once in (ledger, order, index) order', async () => {
    for (const { path, tokens } of collections) {
      for (const limit of [1, 3]) {
        assert.deepEqual(await walk(path, 'asc', limit), tokens, `${path} asc, limit ${limit}`)
        assert.deepEqual(await walk(path, 'desc', limit), [...tokens].reverse(), `${path} desc, limit ${limit}`)
      }
    }
  })

  it('pages from any record’s token, any other record kind’s, and hostile cursors', async () => {
    const [, middle = '1'] = ledgers.slice(-BATCHES.length)
    const l = BigInt(middle)
    const everyKind = [
      ...ledgers.map((ledger) => toid(BigInt(ledger), 0n, 0n).toString()),
      ...transactions.map((tx) => toid(BigInt(tx.ledger), BigInt(tx.application_order), 0n).toString()),
      ...operations.map((op) => toid(BigInt(op.ledger), BigInt(op.application_order), BigInt(op.index) + 1n).toString()),
    ]
    const hostile = [
      '0',
      INT64_MAX.toString(),
      ((l << 32n) | 1n).toString(),
      ((l << 32n) | 0x1001n).toString(),
      ((l << 32n) | 0x2fffn).toString(),
      ((l << 32n) | 0x80000001n).toString(),
      ((l << 32n) | 0xfffff000n).toString(),
      ((l << 32n) | 0xffffffffn).toString(),
      (((l - 1n) << 32n) | 0xffffffffn).toString(),
    ]
    for (const { path, tokens } of collections) {
      // Every kind of token against the whole lists; a ledger's lists from their own tokens and the hostile ones.
      const global = !path.startsWith('/ledger/ledgers/')
      const cursors = [...new Set([...tokens, ...(global ? everyKind : []), ...hostile])]
      for (const cursor of cursors) {
        for (const order of ['asc', 'desc'] as const) {
          const records = await page(path, { order, limit: '200', cursor })
          assert.deepEqual(
            records.map((record) => record.paging_token),
            expectedPage(tokens, cursor, order),
            `${path} ${order} from ${cursor}`,
          )
        }
      }
      // From each record's token, a walk with a small limit reaches the end, in order.
      if (!global) continue
      for (const cursor of tokens)
        assert.deepEqual(await walk(path, 'asc', 3, cursor), expectedPage(tokens, cursor, 'asc'), `${path} from ${cursor}`)
    }
  })

  it('shows each ledger with its transaction and operation counts, close time, fee pool and hashes', async () => {
    const list = (await page('/ledger/ledgers', { order: 'asc', limit: '200' })) as Array<Paged & Record<string, unknown>>
    let previous: string | undefined
    for (const [i, ledger] of ledgers.entries()) {
      const rows = transactions.filter((tx) => tx.ledger === ledger)
      const first = rows.find((tx) => tx.application_order === 1)
      assert.ok(first !== undefined, `ledger ${ledger} has a transaction of order 1`)
      const operationCount = rows.reduce((sum, tx) => sum + tx.operation_count, 0)
      const record = list[i] as Record<string, unknown>
      const hash = sha256Hex(`plinth-ledger:${ledger}:${first.hash}`)
      assert.equal(record.sequence, Number(ledger))
      assert.equal(record.hash, hash, 'made from the number and the first transaction')
      assert.equal(record.prev_hash, previous)
      assert.equal(record.successful_transaction_count, rows.length)
      assert.equal(record.failed_transaction_count, 0)
      assert.equal(record.operation_count, operationCount)
      assert.equal(record.tx_set_operation_count, operationCount)
      assert.equal(record.max_tx_set_size, 256)
      for (const tx of rows) {
        assert.equal(tx.created_at.getTime(), first.created_at.getTime(), 'one close time per ledger')
        assert.equal(tx.fee_pool, first.fee_pool, 'one fee pool per ledger')
      }
      assert.equal(record.closed_at, first.created_at.toISOString().replace(/\.\d{3}Z$/, 'Z'))
      assert.equal(record.fee_pool, (Number(first.fee_pool) / 1e7).toFixed(7))
      const header = xdr.LedgerHeader.fromXDR(String(record.header_xdr), 'base64')
      assert.equal(header.ledgerSeq(), Number(ledger))
      assert.equal(header.scpValue().txSetHash().toString('hex'), first.hash, 'the first transaction stands in for the set')
      const one = await platform.app.inject({ method: 'GET', url: `/ledger/ledgers/${ledger}` })
      assert.equal(one.statusCode, 200)
      assert.deepEqual(one.json(), record, 'the ledger alone as in the list')
      previous = hash
    }
    const fees = transactions.reduce((sum, tx) => sum + 100n * BigInt(tx.operation_count), 0n)
    assert.equal(transactions.at(-1)?.fee_pool, fees.toString(), 'the last fee pool counts every fee')
  })

  it('gives each transaction and operation the token of its place, and finds each operation by it', async () => {
    for (const tx of transactions) {
      const response = await platform.app.inject({ method: 'GET', url: `/ledger/transactions/${tx.hash}` })
      assert.equal(response.statusCode, 200)
      const token = toid(BigInt(tx.ledger), BigInt(tx.application_order), 0n).toString()
      assert.equal(response.json().paging_token, token)
      assert.equal(response.json().ledger, Number(tx.ledger))
      assert.match(response.json()._links.precedes.href, new RegExp(`cursor=${token}$`))
      // A transaction's TOID is no operation's.
      assert.equal((await platform.app.inject({ method: 'GET', url: `/ledger/operations/${token}` })).statusCode, 404)
    }
    for (const op of operations) {
      const id = toid(BigInt(op.ledger), BigInt(op.application_order), BigInt(op.index) + 1n).toString()
      const response = await platform.app.inject({ method: 'GET', url: `/ledger/operations/${id}` })
      assert.equal(response.statusCode, 200, id)
      assert.equal(response.json().id, id)
      assert.equal(response.json().transaction_hash, op.transaction_hash)
      const effects = await page(`/ledger/operations/${id}/effects`, {})
      assert.deepEqual(
        effects.map((effect) => effect.paging_token),
        [`${id}-1`, `${id}-2`],
      )
    }
    const [last] = operations.slice(-1)
    assert.ok(last !== undefined)
    const past = toid(BigInt(last.ledger), BigInt(last.application_order), BigInt(last.index) + 2n).toString()
    assert.equal((await platform.app.inject({ method: 'GET', url: `/ledger/operations/${past}` })).statusCode, 404)
  })

  it('stellar-sdk pages a ledger’s transactions and the ledgers, following next and prev', async () => {
    const server = new Server(`${base}/ledger`, { allowHttp: true })
    for (const ledger of ledgers) {
      const expected = transactions.filter((tx) => tx.ledger === ledger).map((tx) => tx.hash)
      const seen: string[] = []
      let current = await server.transactions().forLedger(ledger).order('asc').limit(1).call()
      while (current.records.length > 0) {
        seen.push(...current.records.map((record) => record.hash))
        current = await current.next()
      }
      assert.deepEqual(seen, expected, `ledger ${ledger}`)
      // Back from the empty page past the last: the one before the last (limit 1), as Horizon answers.
      const back = await current.prev()
      assert.deepEqual(
        back.records.map((record) => record.hash),
        expected.slice(-2, -1),
      )
    }
    const sequences: number[] = []
    let pageOfLedgers = await server.ledgers().order('desc').limit(2).call()
    while (pageOfLedgers.records.length > 0) {
      for (const record of pageOfLedgers.records) {
        sequences.push(record.sequence)
        assert.equal(record.successful_transaction_count, transactions.filter((tx) => tx.ledger === String(record.sequence)).length)
      }
      pageOfLedgers = await pageOfLedgers.next()
    }
    assert.deepEqual(sequences, ledgers.map(Number).reverse())
  })

  it('streams every transaction and payment of ledgers closed while it waits, once, in order', async () => {
    const latest = BigInt(ledgers.at(-1) ?? '0')
    const batches = [
      [1, 2, 1],
      [2, 1],
    ]
    const streams = await Promise.all([
      openSse(`${base}/ledger/transactions?cursor=now&limit=${batches.flat().length}`),
      openSse(`${base}/ledger/payments?cursor=now&limit=${batches.flat().reduce((a, b) => a + b, 0)}`),
    ])
    try {
      // The hello goes once the stream has its cursor: what closes after it is after `now`.
      for (const stream of streams) assert.equal((await stream.next(10_000)).event, 'open')
      for (const [b, batch] of batches.entries()) {
        await closeLedger(
          batch.map((operationCount, i) => paymentTransaction(senders[(b + i) % senders.length] as Keypair, operationCount)),
        )
      }
      const rows = (
        await sql<StoredOperation>`
          select o.transaction_hash, t.ledger::text as ledger, t.application_order, o.index, o."from", o."to"
          from ledger_operations o join ledger_transactions t on t.hash = o.transaction_hash
          where t.ledger > ${latest.toString()}::bigint order by t.ledger, t.application_order, o.index`.execute(platform.db)
      ).rows
      assert.equal(new Set(rows.map((op) => op.ledger)).size, batches.length)
      const expected = [
        [...new Set(rows.map((op) => toid(BigInt(op.ledger), BigInt(op.application_order), 0n).toString()))],
        rows.map((op) => toid(BigInt(op.ledger), BigInt(op.application_order), BigInt(op.index) + 1n).toString()),
      ]
      for (const [s, stream] of streams.entries()) {
        const want = expected[s] ?? []
        const ids: string[] = []
        while (ids.length < want.length) {
          const event = await stream.next(10_000)
          assert.equal(event.event, undefined, JSON.stringify(event))
          ids.push(event.id ?? '')
        }
        assert.deepEqual(ids, want)
        assert.equal((await stream.next(10_000)).event, 'close', 'nothing after the last record')
      }
    } finally {
      for (const stream of streams) stream.close()
    }
  })
})
