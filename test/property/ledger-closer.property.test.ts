/**
 * The ledger closer (docs/ledger.md) under rounds of payments over a few shared accounts, sent at
 * once in a random interleaving: on PostgreSQL spread over three server processes on one schema,
 * on PGlite (one process by design) all into the one platform, where its closer batches them.
 *
 * Whatever the interleaving, the ledger must hold a serial history: every acknowledged
 * transaction exactly once and nothing else, in (ledger, application order) an order in which
 * each was valid where it stands (the sequence numbers of each source 1, 2, 3… with no gap),
 * balances and sequences as that replay leaves them and fees burned as charged. A refusal that
 * no order can lift carries its own code; one that depends on the order must be what the rules
 * make of a state its source went through. A copy of an applied envelope answers its result.
 */
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { Keypair } from '@stellar/stellar-base'
import fc from 'fast-check'
import { formatAmount } from '../../src/ledger/amounts.js'
import {
  type AccountState,
  type Applied,
  amountOf,
  envelopeOf,
  FEE,
  ORDER_FREE_CODE,
  outcomeAt,
  type PlannedTx,
  type Round,
  refusalCode,
  replay,
  roundArb,
  STATE_CODES,
  toid,
} from '../helpers/closer-model.js'
import { assertProperty, FUZZ_SEED, fcParams, fuzzRuns } from '../helpers/fuzz.js'
import type { AccountBody, Problem, TransactionBody } from '../helpers/ledger-client.js'
import { TEST_DB } from '../helpers/platform.js'
import { type Answer, hashOf, PROCESSES, stroops, useRaceNodes } from '../helpers/race-nodes.js'
import { sleep } from '../helpers/server-process.js'

/** Rounds of the property: each funds its own accounts and sends 10 to 48 envelopes. */
const RUNS = fuzzRuns(8)
/** Small pages, so that paging by cursor crosses ledgers that hold several transactions. */
const PAGE = 10

interface Collection<T> {
  _links: { next: { href: string } }
  _embedded: { records: T[] }
}

interface Books {
  ok: boolean
  total_funded: string
  total_fees: string
  total_balances: string
}

describe(`the ledger closer, ${TEST_DB === 'postgres' ? `${PROCESSES} server processes on one PostgreSQL` : 'in process, on PGlite'} (property)`, () => {
  const { call, submit, invariants } = useRaceNodes()
  /** How the submissions ended, over every round, for the log. */
  const tally = new Map<string, number>()
  const count = (what: string) => tally.set(what, (tally.get(what) ?? 0) + 1)
  after(() => {
    console.log(`# ledger closer: ${JSON.stringify(Object.fromEntries([...tally].sort()))} (runs ${RUNS}, seed ${FUZZ_SEED})`)
  })

  async function get<T>(url: string): Promise<T> {
    const answer = await call('read', 'GET', url)
    assert.equal(answer.status, 200, `GET ${url}: ${JSON.stringify(answer.body)}`)
    return answer.body as unknown as T
  }

  async function accountState(address: string): Promise<AccountState> {
    const body = await get<AccountBody>(`/ledger/accounts/${address}`)
    const native = body.balances.find((b) => b.asset_type === 'native')
    return { balance: stroops(native?.balance ?? ''), sequence: BigInt(body.sequence) }
  }

  async function fund(address: string, amount: bigint): Promise<void> {
    const answer = await call('fund', 'POST', '/sandbox/ledger/fund', undefined, { address, amount: formatAmount(amount) })
    assert.equal(answer.status, 200, JSON.stringify(answer.body))
  }

  const books = () => get<Books>('/sandbox/ledger/check')

  /** The paging token of the newest transaction on the ledger (undefined before the first). */
  async function newestToken(): Promise<string | undefined> {
    return (await get<Collection<TransactionBody>>('/ledger/transactions?order=desc&limit=1'))._embedded.records[0]?.paging_token
  }

  /** Every transaction after `cursor`, in ledger order, paged as a wallet pages: by the next link, to an empty page. */
  async function transactionsAfter(cursor: string | undefined): Promise<TransactionBody[]> {
    const records: TransactionBody[] = []
    let url = `/ledger/transactions?order=asc&limit=${PAGE}${cursor === undefined ? '' : `&cursor=${cursor}`}`
    for (;;) {
      const page = await get<Collection<TransactionBody>>(url)
      if (page._embedded.records.length === 0) return records
      records.push(...page._embedded.records)
      const next = new URL(page._links.next.href)
      url = `${next.pathname}${next.search}`
    }
  }

  async function playRound(round: Round): Promise<void> {
    const keys = round.funding.map(() => Keypair.random())
    const addresses = keys.map((key) => key.publicKey())
    const booksBefore = await books()
    const cursor = await newestToken()
    await Promise.all(addresses.map((address, i) => fund(address, round.funding[i] ?? 0n)))
    const start = new Map<string, AccountState>()
    for (const address of addresses) start.set(address, await accountState(address))
    for (const [i, address] of addresses.entries()) assert.deepEqual(start.get(address), { balance: round.funding[i], sequence: 0n })

    // Valid for 10 minutes of wall time: the platform clock is never behind it (docs/ledger.md).
    const maxTime = Math.floor(Date.now() / 1000) + 600
    const envelopes = round.txs.map((tx) => envelopeOf(tx, round.funding, keys, 0n, maxTime))
    const hashes = envelopes.map((envelope) => hashOf(envelope))
    const sequenceOf = (tx: PlannedTx) => BigInt(tx.k)
    const describeTx = (i: number) => {
      const tx = round.txs[i] as PlannedTx
      return `tx ${i} (${tx.kind} ${tx.from}→${tx.to}, sequence ${tx.k}, ${amountOf(tx, round.funding)} stroops, ${hashes[i]})`
    }

    // At once, each on the next process, each after its own short delay; a follower once the
    // first submission of its source's previous sequence number has answered.
    const slot = (tx: PlannedTx, k: number) => `${tx.from}/${k}`
    const answered = new Map<string, { promise: Promise<void>; resolve: () => void }>()
    for (const { tx: i } of round.submissions) {
      const tx = round.txs[i] as PlannedTx
      // Only a payment can move the sequence number on: the others are refused whatever came before.
      if (tx.kind !== 'payment' || answered.has(slot(tx, tx.k))) continue
      let resolve = () => {}
      const promise = new Promise<void>((done) => {
        resolve = done
      })
      answered.set(slot(tx, tx.k), { promise, resolve })
    }
    const answers = await Promise.all(
      round.submissions.map(async ({ tx: i, delayMs, follows }, position): Promise<Answer> => {
        const tx = round.txs[i] as PlannedTx
        if (follows) await answered.get(slot(tx, tx.k - 1))?.promise
        await sleep(delayMs)
        const answer = await submit(envelopes[i] ?? '', position)
        if (tx.kind === 'payment') answered.get(slot(tx, tx.k))?.resolve()
        return answer
      }),
    )

    /** The ledger each acknowledged hash was answered with. */
    const acknowledged = new Map<string, number>()
    const stateRefusals: Array<{ i: number; code: string }> = []
    for (const [position, { tx: i }] of round.submissions.entries()) {
      const tx = round.txs[i] as PlannedTx
      const answer = answers[position] as Answer
      const context = `${describeTx(i)} via process ${answer.via}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 400)}`
      if (answer.status === 200) {
        count('applied')
        assert.equal(tx.kind, 'payment', `no order makes it valid: ${context}`)
        assert.equal(answer.body.hash, hashes[i], context)
        const ledger = Number(answer.body.ledger)
        const earlier = acknowledged.get(hashes[i] ?? '')
        assert.ok(
          earlier === undefined || earlier === ledger,
          `copies of one envelope answered ledgers ${earlier} and ${ledger}: ${context}`,
        )
        acknowledged.set(hashes[i] ?? '', ledger)
        continue
      }
      assert.equal(answer.status, 400, context)
      const problem = answer.body as unknown as Problem
      assert.equal(problem.type, 'https://stellar.org/horizon-errors/transaction_failed', context)
      const code = refusalCode(problem.extras?.result_codes)
      count(code)
      if (tx.kind === 'payment') {
        assert.ok(STATE_CODES.includes(code), `a payment refused by something other than the state it met: ${context}`)
        stateRefusals.push({ i, code })
      } else assert.equal(code, ORDER_FREE_CODE[tx.kind], context)
    }

    // A copy sent once its envelope applied answers its earlier result, on any process, and changes nothing.
    const appliedIndexes = hashes.flatMap((hash, i) => (acknowledged.has(hash) ? [i] : []))
    for (const [n, i] of appliedIndexes.slice(0, 3).entries()) {
      const again = await submit(envelopes[i] ?? '', n + 1)
      assert.equal(again.status, 200, `resubmitted ${describeTx(i)}: ${JSON.stringify(again.body)}`)
      assert.equal(again.body.hash, hashes[i])
      assert.equal(Number(again.body.ledger), acknowledged.get(hashes[i] ?? ''), `resubmitted ${describeTx(i)}`)
    }

    // What the ledger holds: the acknowledged transactions, each once with the ledger it was answered with, and nothing else.
    const records = await transactionsAfter(cursor)
    const applied: Applied[] = []
    let previous: { ledger: bigint; order: bigint } | undefined
    for (const record of records) {
      const i = hashes.indexOf(record.hash)
      assert.ok(i >= 0, `the ledger holds ${record.hash}, which the round did not send`)
      const tx = round.txs[i] as PlannedTx
      const context = `${describeTx(i)} in ledger ${record.ledger}`
      assert.equal(acknowledged.get(record.hash), record.ledger, `on the ledger, not acknowledged with this ledger: ${context}`)
      const place = toid(record.paging_token)
      assert.equal(place.ledger, BigInt(record.ledger), `paging token ${record.paging_token}: ${context}`)
      assert.ok(place.order >= 1n, `paging token ${record.paging_token}: ${context}`)
      assert.ok(
        previous === undefined || place.ledger > previous.ledger || (place.ledger === previous.ledger && place.order > previous.order),
        `not in (ledger, application order): ${context}, order ${place.order}, after ledger ${previous?.ledger} order ${previous?.order}`,
      )
      if (previous?.ledger === place.ledger) count('closed after another in its ledger')
      previous = place
      assert.equal(record.successful, true, context)
      assert.equal(record.source_account, addresses[tx.from], context)
      assert.equal(record.source_account_sequence, String(sequenceOf(tx)), context)
      assert.equal(record.fee_charged, String(FEE), `the fee charged: ${context}`)
      applied.push({
        hash: record.hash,
        source: addresses[tx.from] ?? '',
        sequence: sequenceOf(tx),
        destination: addresses[tx.to] ?? '',
        amount: amountOf(tx, round.funding),
        fee: BigInt(record.fee_charged),
      })
    }
    assert.deepEqual(
      applied.map((a) => a.hash).sort(),
      [...acknowledged.keys()].sort(),
      'the ledger holds exactly the acknowledged transactions, each once',
    )

    // Serially, in ledger order, each was valid where it stands; the accounts are where that replay leaves them.
    const histories = replay(start, applied)
    for (const address of addresses) {
      assert.deepEqual(await accountState(address), histories.get(address)?.at(-1), `the balance and sequence of ${address}`)
      const sequences = applied.filter((a) => a.source === address).map((a) => a.sequence)
      assert.deepEqual(
        sequences,
        sequences.map((_, n) => BigInt(n) + 1n),
        `the sequences ${address} applied, in ledger order`,
      )
    }
    for (const { i, code } of stateRefusals) {
      const tx = round.txs[i] as PlannedTx
      const states = histories.get(addresses[tx.from] ?? '') ?? []
      const payment = { sequence: sequenceOf(tx), amount: amountOf(tx, round.funding), fee: FEE }
      assert.ok(
        states.some((state) => outcomeAt(state, payment) === code),
        `${describeTx(i)} was refused with ${code}, which no state of its source calls for: ${states.map((s) => `${s.sequence}/${s.balance}`).join(', ')}`,
      )
    }

    // The books: funding created the round's Pi, fees burned exactly what the applied transactions were charged.
    const booksAfter = await books()
    assert.equal(booksAfter.ok, true, JSON.stringify(booksAfter))
    const funded = round.funding.reduce((sum, amount) => sum + amount, 0n)
    assert.equal(stroops(booksAfter.total_funded) - stroops(booksBefore.total_funded), funded)
    assert.equal(stroops(booksAfter.total_fees) - stroops(booksBefore.total_fees), FEE * BigInt(applied.length))
    assert.equal(stroops(booksAfter.total_balances) - stroops(booksBefore.total_balances), funded - FEE * BigInt(applied.length))
    await invariants()
  }

  it('rounds of valid and invalid payments over shared accounts, at once: the ledger holds a serial history of the acknowledged ones', async () => {
    // Each run costs about a second and its timing does not repeat, so shrinking would mostly meet
    // passing runs: the first failing round is reported as it failed, with the seed to replay it
    // and the assertion that failed.
    await assertProperty(fc.asyncProperty(roundArb, playRound), {
      ...fcParams<[Round]>(RUNS),
      endOnFailure: true,
      includeErrorInReport: true,
    })
  })

  it('payments submitted at once to one process close at least one ledger holding several of them', async () => {
    // Each from an account of its own: nothing orders them, so only the closer decides what shares a ledger.
    const senders = Array.from({ length: 24 }, () => Keypair.random())
    const funding = senders.map(() => 100_000_000n)
    await Promise.all(senders.map((key, i) => fund(key.publicKey(), funding[i] ?? 0n)))
    const maxTime = Math.floor(Date.now() / 1000) + 600
    const envelopes = senders.map((_, i) =>
      envelopeOf({ kind: 'payment', from: i, to: (i + 1) % senders.length, k: 1, percent: 10 }, funding, senders, 0n, maxTime),
    )
    const answers = await Promise.all(envelopes.map((envelope) => submit(envelope, 0)))
    for (const answer of answers) assert.equal(answer.status, 200, JSON.stringify(answer.body))
    const records = await Promise.all(answers.map((answer) => get<TransactionBody>(`/ledger/transactions/${String(answer.body.hash)}`)))
    const perLedger = new Map<number, TransactionBody[]>()
    for (const record of records) perLedger.set(record.ledger, [...(perLedger.get(record.ledger) ?? []), record])
    const sizes = [...perLedger.values()].map((held) => held.length)
    assert.ok(Math.max(...sizes) >= 2, `${records.length} payments at once closed ${perLedger.size} ledgers of one each`)
    for (const [ledger, held] of perLedger) {
      const orders = held.map((record) => toid(record.paging_token).order)
      assert.equal(new Set(orders).size, held.length, `ledger ${ledger}: one place each`)
      const summary = await get<{ successful_transaction_count: number }>(`/ledger/ledgers/${ledger}`)
      assert.equal(summary.successful_transaction_count, held.length, `ledger ${ledger}`)
    }
    await invariants()
  })
})
