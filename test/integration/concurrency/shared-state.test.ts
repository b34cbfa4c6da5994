/**
 * Concurrency across real Plinth processes on one PostgreSQL: three `src/server.ts` children
 * share a fresh schema and the secret key, and every case fires its requests spread over them.
 * On PGlite (one process by design) the same cases run in process, interleaved on one platform.
 *
 * Every racing request must end as exactly one outcome: the move that won, replays of it (200
 * with the same body) or its documented refusals; never a 5xx. After every case the ledger and
 * payment invariants are checked through the sandbox API and in SQL.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { TransactionBuilder } from '@stellar/stellar-base'
import type { FastifyInstance } from 'fastify'
import pg from 'pg'
import { openDatabase } from '../../src/db/database.js'
import { buildPayment, ledgerAccount, submitEnvelope } from '../helpers/ledger.js'
import { startNodes } from '../helpers/nodes.js'
import { type SandboxApp, type SandboxUser, sandbox, TEST_DB } from '../helpers/platform.js'

const PROCESSES = 3
/** Racing requests of each kind in a case. */
const N = 6
/** Concurrent payments of one wallet to as many apps (the platform signs each with the wallet's sequence). */
const WALLET_PAYMENTS = 64
/** The racy payment mixes run this many times each, on fresh payments, to meet more interleavings. */
const ROUNDS = 3
/**
 * Then twice more, in a forced order: each side alone first (answered), then the other. Both
 * branches of every race are met whatever the timing, and the last test asserts that they were.
 */
type Round = number | 'first side first' | 'second side first'
const RACY_ROUNDS: Round[] = [...Array.from({ length: ROUNDS }, (_, i) => i + 1), 'first side first', 'second side first']
/** The racy cases and their two branches, as tallied. */
const BRANCHES: Record<string, [string, string]> = {
  'approve+cancel': ['approve first', 'cancel first'],
  'user cancel+approve': ['cancel first', 'approve first'],
  'submit+cancel': ['paid', 'cancelled'],
  'a2u tx+cancel': ['linked', 'cancelled'],
  'submit+create': ['paid', 'replaced'],
}
const PUBLIC_URL = 'http://plinth.test'
const SCOPES = ['username', 'payments', 'wallet_address', 'in_app_notifications']

interface PaymentDTO {
  identifier: string
  amount: number
  from_address: string
  to_address: string
  status: {
    developer_approved: boolean
    transaction_verified: boolean
    developer_completed: boolean
    cancelled: boolean
    user_cancelled: boolean
  }
  transaction: null | { txid: string; verified: boolean; _link: string }
}
interface Answer {
  status: number
  body: Record<string, unknown> & { error?: unknown; payment?: PaymentDTO; verification_error?: unknown }
  via: number
  what: string
}

/** Pi with up to 7 decimals as stroops, exactly. */
function stroops(amount: string): bigint {
  const negative = amount.startsWith('-')
  const [whole = '0', fraction = ''] = (negative ? amount.slice(1) : amount).split('.')
  const value = BigInt(whole) * 10_000_000n + BigInt(fraction.padEnd(7, '0').slice(0, 7) || '0')
  return negative ? -value : value
}

const hashOf = (envelope: string, network = 'Pi Testnet') => TransactionBuilder.fromXDR(envelope, network).hash().toString('hex')

describe(`concurrency (${TEST_DB === 'postgres' ? `${PROCESSES} server processes on one PostgreSQL` : 'in process, on PGlite'})`, () => {
  let nodes: FastifyInstance[] = []
  let query: <T>(text: string) => Promise<T[]>
  let cleanup: () => Promise<void> = async () => {}
  let turn = 0
  let requests = 0
  const serverErrors: string[] = []
  /** Which side won each racy case, for the figures. */
  const outcomes = new Map<string, number>()
  /** Counts which branch of a racy case a round met; a forced round must meet the branch its order forces. */
  const branch = (round: Round, racy: keyof typeof BRANCHES, met: string) => {
    const [whenFirst, whenSecond] = BRANCHES[racy] as [string, string]
    assert.ok(met === whenFirst || met === whenSecond, `${racy}: unknown branch ${met}`)
    if (round === 'first side first') assert.equal(met, whenFirst, `${racy}, ${round}`)
    if (round === 'second side first') assert.equal(met, whenSecond, `${racy}, ${round}`)
    const outcome = `${racy}: ${met}`
    outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1)
  }

  before(async () => {
    const started = await startNodes({
      processes: PROCESSES,
      env: { PLINTH_PUBLIC_URL: PUBLIC_URL, PLINTH_APPROVAL_WINDOW_SECONDS: '600' },
    })
    nodes = started.nodes
    query = (text) => started.query(text)
    cleanup = () => started.close()
  })

  after(async () => {
    console.log(`concurrency: ${requests} requests over ${nodes.length} process(es); outcomes ${JSON.stringify([...outcomes])}`)
    await cleanup()
  })

  const pick = (via?: number): number => (via ?? turn++) % nodes.length
  const node = (via?: number): FastifyInstance => nodes[pick(via)] as FastifyInstance

  async function call(
    what: string,
    method: 'GET' | 'POST' | 'PUT',
    url: string,
    auth?: string,
    payload?: unknown,
    via?: number,
  ): Promise<Answer> {
    const index = pick(via)
    const response = await node(index).inject({
      method,
      url,
      headers: auth === undefined ? {} : { authorization: auth },
      ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }),
    })
    requests += 1
    const body = response.json() as Answer['body']
    if (response.statusCode >= 500) serverErrors.push(`${what} via ${index}: ${response.statusCode} ${response.body}`)
    return { status: response.statusCode, body, via: index, what }
  }

  async function submit(envelope: string, via?: number): Promise<Answer> {
    const index = pick(via)
    const { status, body } = await submitEnvelope(node(index), envelope)
    requests += 1
    if (status >= 500) serverErrors.push(`ledger submit via ${index}: ${status} ${JSON.stringify(body)}`)
    return { status, body, via: index, what: 'submit tx' }
  }

  const resultCode = (answer: Answer) =>
    (answer.body.extras as { result_codes?: { transaction?: string } } | undefined)?.result_codes?.transaction

  /**
   * The answers to copies of one envelope: it applied once. Every 200 carries the same hash and
   * ledger (a copy arriving after it applied answers its earlier result, as Horizon answers a
   * duplicate); every other answer is tx_bad_seq.
   */
  function appliedOnce(answers: Answer[], label: string): void {
    const applied = answers.filter((a) => a.status === 200)
    assert.ok(applied.length >= 1, `${label}: ${describeAnswers(answers)}`)
    assert.equal(new Set(applied.map((a) => `${a.body.hash}@${a.body.ledger}`)).size, 1, `${label}: ${describeAnswers(answers)}`)
    for (const refused of answers.filter((a) => a.status !== 200)) assert.equal(resultCode(refused), 'tx_bad_seq')
  }

  interface Scene {
    app: SandboxApp
    user: SandboxUser
    uid: string
    key: string
    bearer: string
  }
  async function scene(app?: SandboxApp): Promise<Scene> {
    const sb = sandbox(node())
    const theApp = app ?? (await sb.createApp())
    const user = await sandbox(node()).createUser()
    const auth = await sandbox(node()).authenticate(theApp.app_id, user.user_id, SCOPES)
    return { app: theApp, user, uid: auth.user.uid, key: `Key ${theApp.api_key}`, bearer: `Bearer ${auth.accessToken}` }
  }

  const server = (s: Scene, id: string, move: 'approve' | 'cancel', via?: number) =>
    call(`server ${move}`, 'POST', `/v2/payments/${id}/${move}`, s.key, undefined, via)
  const complete = (s: Scene, id: string, txid: string, via?: number) =>
    call('complete', 'POST', `/v2/payments/${id}/complete`, s.key, { txid }, via)
  const client = (s: Scene, id: string, move: 'submit' | 'cancel', via?: number) =>
    call(`user ${move}`, 'POST', `/v2/client/payments/${id}/${move}`, s.bearer, undefined, via)
  const read = async (s: Scene, id: string): Promise<PaymentDTO> => {
    const answer = await call('read', 'GET', `/v2/payments/${id}`, s.key)
    assert.equal(answer.status, 200)
    return answer.body as unknown as PaymentDTO
  }

  async function createU2A(s: Scene, amount = 1): Promise<PaymentDTO> {
    const answer = await call('u2a create', 'POST', '/v2/client/payments', s.bearer, { amount, memo: 'race', metadata: {} })
    assert.equal(answer.status, 201, JSON.stringify(answer.body))
    return answer.body as unknown as PaymentDTO
  }
  async function createA2U(s: Scene, amount = 1): Promise<PaymentDTO> {
    const answer = await call('a2u create', 'POST', '/v2/payments', s.key, { payment: { amount, memo: 'race', metadata: {}, uid: s.uid } })
    assert.equal(answer.status, 200, JSON.stringify(answer.body))
    return answer.body as unknown as PaymentDTO
  }
  async function approved(s: Scene): Promise<PaymentDTO> {
    const p = await createU2A(s)
    assert.equal((await server(s, p.identifier, 'approve')).status, 200)
    return p
  }
  async function paidU2A(s: Scene): Promise<{ p: PaymentDTO; txid: string }> {
    const p = await approved(s)
    const paid = await client(s, p.identifier, 'submit')
    assert.equal(paid.status, 200, JSON.stringify(paid.body))
    const txid = (paid.body as unknown as PaymentDTO).transaction?.txid
    assert.ok(txid)
    return { p, txid }
  }
  /** The app's backend signs an A2U payment's transaction, as it would with stellar-sdk. */
  async function a2uEnvelope(s: Scene, p: PaymentDTO, options: { sequence?: string; memo?: string } = {}): Promise<string> {
    const sequence = options.sequence ?? (await ledgerAccount(node(), s.app.wallet.address))?.sequence
    return buildPayment(node(), {
      seed: s.app.wallet.seed,
      to: p.to_address,
      amount: String(p.amount),
      memo: options.memo ?? p.identifier,
      ...(sequence === undefined ? {} : { sequence }),
    })
  }
  async function paidA2U(s: Scene): Promise<{ p: PaymentDTO; txid: string }> {
    const p = await createA2U(s)
    const applied = await submit(await a2uEnvelope(s, p))
    assert.equal(applied.status, 200, JSON.stringify(applied.body))
    return { p, txid: String(applied.body.hash) }
  }

  /** Fires every request at once (each on the next process) and waits for all. */
  const race = async (...fires: Array<() => Promise<Answer>>): Promise<Answer[]> => {
    // Fired in a random order (answers keep the order given), so each side gets to go first.
    const order = fires.map((_, i) => i)
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1))
      ;[order[i], order[j]] = [order[j] as number, order[i] as number]
    }
    const answers: Array<Promise<Answer>> = []
    for (const i of order) answers[i] = (fires[i] as () => Promise<Answer>)()
    return Promise.all(answers)
  }
  const times = (n: number, fire: (i: number) => Promise<Answer>): Array<() => Promise<Answer>> =>
    Array.from({ length: n }, (_, i) => () => fire(i))
  /**
   * Holds a side back a little in later rounds: a move that needs more work (signing, applying a
   * transaction) then also gets to win, so both branches of a race are met. Nothing asserts timing.
   */
  const heldBack = (round: number, fire: () => Promise<Answer>) => async () => {
    await new Promise((resolve) => setTimeout(resolve, (round - 1) * 60))
    return fire()
  }
  /**
   * One round of a race between two sides: at once in numbered rounds (the second side held back
   * a little in later ones when `holdBack`), or in a forced order, one side answered before the
   * other starts. Answers come back first side, then second side.
   */
  async function contest(
    round: Round,
    first: Array<() => Promise<Answer>>,
    second: Array<() => Promise<Answer>>,
    options: { holdBack?: boolean } = {},
  ): Promise<Answer[]> {
    const all = (fires: Array<() => Promise<Answer>>) => Promise.all(fires.map((fire) => fire()))
    if (round === 'first side first') {
      const a = await all(first)
      return [...a, ...(await all(second))]
    }
    if (round === 'second side first') {
      const b = await all(second)
      return [...(await all(first)), ...b]
    }
    return race(...first, ...(options.holdBack === true ? second.map((fire) => heldBack(round, fire)) : second))
  }

  const describeAnswers = (answers: Answer[]) =>
    answers.map((a) => `${a.what}@${a.via}: ${a.status} ${String(a.body.error ?? '')}`).join('; ')

  /**
   * Every answer of one move is either a 200 (and then every 200 of that move has the same
   * body: one outcome, the rest replays) or one of its documented refusals.
   */
  function oneOutcome(answers: Answer[], refusals: readonly string[]): PaymentDTO | undefined {
    const context = describeAnswers(answers)
    for (const answer of answers) {
      assert.ok(answer.status < 500, `a 5xx: ${context}`)
      if (answer.status === 200) continue
      assert.equal(answer.status, 409, context)
      assert.ok(refusals.includes(String(answer.body.error)), `unexpected refusal ${String(answer.body.error)}: ${context}`)
      assert.equal(typeof answer.body.error_message, 'string')
      assert.ok(answer.body.payment?.identifier, 'a state refusal carries the payment')
    }
    const wins = answers.filter((a) => a.status === 200).map((a) => a.body as unknown as PaymentDTO)
    for (const win of wins) assert.deepEqual(win, wins[0], `200s with different bodies: ${context}`)
    return wins[0]
  }

  async function invariants(): Promise<void> {
    assert.deepEqual(serverErrors, [], 'no request answered 5xx')
    const check = (await call('ledger check', 'GET', '/sandbox/ledger/check')).body as {
      ok: boolean
      negative_balances: number
      mismatched_accounts: number
      total_balances: string
      total_funded: string
      total_fees: string
    }
    assert.equal(check.ok, true, JSON.stringify(check))
    assert.equal(check.negative_balances, 0)
    assert.equal(check.mismatched_accounts, 0)
    assert.equal(stroops(check.total_balances), stroops(check.total_funded) - stroops(check.total_fees), 'total supply = funding - fees')

    const [supply] = await query<{ balances: string; funded: string; fees: string; negative: number }>(`
      select (select coalesce(sum(balance), 0)::text from ledger_accounts) as balances,
             (select coalesce(sum(amount), 0)::text from ledger_fundings) as funded,
             (select coalesce(sum(fee_charged), 0)::text from ledger_transactions) as fees,
             (select count(*)::int from ledger_accounts where balance < 0) as negative`)
    assert.ok(supply)
    assert.equal(Number(supply.negative), 0)
    assert.equal(stroops(supply.balances), stroops(supply.funded) - BigInt(supply.fees), 'in SQL: balances = funded - fees')

    const badCompleted = await query<{ identifier: string }>(`
      select p.identifier from payments p
      where p.developer_completed and (
        p.txid is null or p.tx_verified is not true
        or (select count(*) from ledger_transactions t
            where t.hash = p.txid and t.memo = p.identifier and t.source_account = p.from_address) <> 1)`)
    assert.deepEqual(badCompleted, [], 'every completed payment has exactly one verified transaction, from its payer with its memo')
    const doubleLinked = await query<{ txid: string }>('select txid from payments where txid is not null group by txid having count(*) > 1')
    assert.deepEqual(doubleLinked, [], 'no transaction hash is linked to two payments')
    const dangling = await query<{ identifier: string }>(`
      select p.identifier from payments p
      where p.txid is not null and not exists (select 1 from ledger_transactions t where t.hash = p.txid and t.memo = p.identifier)`)
    assert.deepEqual(dangling, [], 'every linked hash is a ledger transaction carrying the payment identifier')
    const cancelledPaid = await query<{ identifier: string }>(
      'select identifier from payments where (cancelled or user_cancelled) and txid is not null and tx_verified',
    )
    assert.deepEqual(cancelledPaid, [], 'no payment is cancelled with its transaction verified')
    const twoOpen = await query<{ n: number }>(`
      select count(*)::int as n from payments
      where not developer_completed and not cancelled and not user_cancelled
      group by app_id, user_id, direction having count(*) > 1`)
    assert.deepEqual(twoOpen, [], 'at most one open payment per user, app and direction')
  }

  describe('one payment, racing moves', () => {
    for (const round of RACY_ROUNDS) {
      const forced = typeof round === 'string'
      it(`approve ×${N} + cancel ×${N} of a new U2A payment: cancel wins once; approve wins or is cancelled_payment (round ${round})`, async () => {
        const s = await scene()
        const p = await createU2A(s)
        const answers = await contest(
          round,
          times(N, () => server(s, p.identifier, 'approve')),
          times(N, () => server(s, p.identifier, 'cancel')),
        )
        const approve = oneOutcome(
          answers.filter((a) => a.what === 'server approve'),
          ['cancelled_payment'],
        )
        const cancel = oneOutcome(
          answers.filter((a) => a.what === 'server cancel'),
          [],
        )
        assert.ok(cancel?.status.cancelled)
        branch(round, 'approve+cancel', approve === undefined ? 'cancel first' : 'approve first')
        if (approve !== undefined) assert.equal(approve.status.cancelled, false)
        // No lost update: the cancel saw the approval exactly when an approve succeeded (before it).
        assert.equal(cancel.status.developer_approved, approve !== undefined)
        assert.deepEqual(await read(s, p.identifier), cancel)
        await invariants()
      })

      // One outcome whatever the order: the numbered rounds are enough.
      if (!forced)
        it(`complete ×${N} + cancel ×${N} of a paid A2U payment: completes once; cancel is refused (round ${round})`, async () => {
          const s = await scene()
          const { p, txid } = await paidA2U(s)
          const answers = await race(
            ...times(N, () => complete(s, p.identifier, txid)),
            ...times(N, () => server(s, p.identifier, 'cancel')),
          )
          const done = oneOutcome(
            answers.filter((a) => a.what === 'complete'),
            [],
          )
          assert.equal(done?.status.developer_completed, true)
          assert.equal(done?.transaction?.txid, txid)
          const cancel = oneOutcome(
            answers.filter((a) => a.what === 'server cancel'),
            ['payment_tx_present', 'already_completed'],
          )
          assert.equal(cancel, undefined, 'a verified payment is never cancelled')
          assert.deepEqual(await read(s, p.identifier), done)
          await invariants()
        })

      // One outcome whatever the order: the numbered rounds are enough.
      if (!forced)
        it(`complete ×${N} + cancel ×${N} of an unpaid A2U payment: cancel wins once; complete is refused (round ${round})`, async () => {
          const s = await scene()
          const p = await createA2U(s)
          const answers = await race(
            ...times(N, () => complete(s, p.identifier, 'ab'.repeat(32))),
            ...times(N, () => server(s, p.identifier, 'cancel')),
          )
          assert.equal(
            oneOutcome(
              answers.filter((a) => a.what === 'complete'),
              ['verification_failed', 'cancelled_payment'],
            ),
            undefined,
          )
          const cancel = oneOutcome(
            answers.filter((a) => a.what === 'server cancel'),
            [],
          )
          assert.equal(cancel?.status.cancelled, true)
          await invariants()
        })

      it(`user cancel ×${N} + server approve ×${N} of a new U2A payment (round ${round})`, async () => {
        const s = await scene()
        const p = await createU2A(s)
        const answers = await contest(
          round,
          times(N, () => client(s, p.identifier, 'cancel')),
          times(N, () => server(s, p.identifier, 'approve')),
        )
        const approve = oneOutcome(
          answers.filter((a) => a.what === 'server approve'),
          ['cancelled_payment'],
        )
        const userCancel = oneOutcome(
          answers.filter((a) => a.what === 'user cancel'),
          [],
        )
        assert.equal(userCancel?.status.user_cancelled, true)
        branch(round, 'user cancel+approve', approve === undefined ? 'cancel first' : 'approve first')
        assert.equal(userCancel.status.developer_approved, approve !== undefined)
        assert.deepEqual(await read(s, p.identifier), userCancel)
        await invariants()
      })

      it(`user submit ×${N} + server cancel ×${N} of an approved U2A payment: paid once or cancelled, never both (round ${round})`, async () => {
        const s = await scene()
        const p = await approved(s)
        const before = await ledgerAccount(node(), s.user.wallet.address)
        const answers = await contest(
          round,
          times(N, () => client(s, p.identifier, 'submit')),
          times(N, () => server(s, p.identifier, 'cancel')),
          { holdBack: true },
        )
        const paid = oneOutcome(
          answers.filter((a) => a.what === 'user submit'),
          ['cancelled_payment'],
        )
        const cancelled = oneOutcome(
          answers.filter((a) => a.what === 'server cancel'),
          ['payment_tx_present'],
        )
        assert.ok((paid === undefined) !== (cancelled === undefined), `exactly one side wins: ${describeAnswers(answers)}`)
        branch(round, 'submit+cancel', paid === undefined ? 'cancelled' : 'paid')
        const afterwards = await ledgerAccount(node(), s.user.wallet.address)
        const onLedger = await query<{ hash: string }>(`select hash from ledger_transactions where memo = '${p.identifier}'`)
        if (paid !== undefined) {
          assert.equal(paid.transaction?.verified, true)
          assert.deepEqual(
            onLedger.map((t) => t.hash),
            [paid.transaction?.txid],
          )
          assert.equal(stroops(before?.balance ?? '') - stroops(afterwards?.balance ?? ''), stroops('1') + 100n, 'paid once: amount + fee')
          assert.deepEqual(await read(s, p.identifier), paid)
        } else {
          assert.deepEqual(onLedger, [], 'a cancelled payment moved no money')
          assert.equal(afterwards?.balance, before?.balance)
          assert.deepEqual(await read(s, p.identifier), cancelled)
        }
        await invariants()
      })

      it(`the app's transaction + cancel ×${N} of an A2U payment: linked or cancelled, never both (round ${round})`, async () => {
        const s = await scene()
        const p = await createA2U(s)
        const envelope = await a2uEnvelope(s, p)
        const answers = await contest(
          round,
          times(3, () => submit(envelope)),
          times(N, () => server(s, p.identifier, 'cancel')),
          { holdBack: true },
        )
        const submits = answers.filter((a) => a.what === 'submit tx')
        appliedOnce(submits, 'the transaction applies once')
        const cancelled = oneOutcome(
          answers.filter((a) => a.what === 'server cancel'),
          ['payment_tx_present'],
        )
        const now = await read(s, p.identifier)
        branch(round, 'a2u tx+cancel', cancelled === undefined ? 'linked' : 'cancelled')
        if (cancelled === undefined) {
          assert.equal(now.transaction?.txid, hashOf(envelope))
          assert.equal(now.transaction?.verified, true)
        } else {
          // The app's transfer happened on the ledger but, the payment being cancelled first, it links nothing.
          assert.equal(now.transaction, null)
          assert.deepEqual(now, cancelled)
        }
        await invariants()
      })
      it(`user submit ×${N} + a new U2A create ×${N} while approved: paid (creates refused) or replaced (submits refused) (round ${round})`, async () => {
        const s = await scene()
        const p = await approved(s)
        const answers = await contest(
          round,
          times(N, () => client(s, p.identifier, 'submit')),
          times(N, () => call('u2a create', 'POST', '/v2/client/payments', s.bearer, { amount: 2, memo: 'next', metadata: {} })),
        )
        const submits = answers.filter((a) => a.what === 'user submit')
        const creates = answers.filter((a) => a.what === 'u2a create')
        const paid = oneOutcome(submits, ['cancelled_payment'])
        const now = await read(s, p.identifier)
        branch(round, 'submit+create', paid === undefined ? 'replaced' : 'paid')
        if (paid !== undefined) {
          assert.equal(paid.transaction?.verified, true)
          for (const a of creates) {
            assert.equal(a.status, 409, describeAnswers(answers))
            assert.equal(a.body.error, 'ongoing_payment_found')
            assert.equal(a.body.payment?.identifier, p.identifier)
          }
          assert.deepEqual(now, paid)
        } else {
          assert.ok(
            creates.every((a) => a.status === 201),
            describeAnswers(answers),
          )
          assert.equal(now.status.cancelled, true)
          assert.equal(now.transaction, null)
          assert.deepEqual(await query(`select hash from ledger_transactions where memo = '${p.identifier}'`), [])
        }
        await invariants()
      })
    }

    it('met both branches of every racy case (the forced rounds guarantee it; the numbered ones add interleavings)', () => {
      for (const [racy, [one, other]] of Object.entries(BRANCHES)) {
        for (const met of [one, other]) assert.ok((outcomes.get(`${racy}: ${met}`) ?? 0) > 0, `${racy}: never met "${met}"`)
      }
    })

    it(`complete ×${N * 2} of a paid U2A payment: one completion, the rest replays`, async () => {
      const s = await scene()
      const { p, txid } = await paidU2A(s)
      const answers = await race(...times(N * 2, () => complete(s, p.identifier, txid)))
      assert.ok(
        answers.every((a) => a.status === 200),
        describeAnswers(answers),
      )
      const done = oneOutcome(answers, [])
      assert.equal(done?.status.developer_completed, true)
      const [row] = await query<{ completed_at: Date }>(`select completed_at from payments where identifier = '${p.identifier}'`)
      assert.ok(row?.completed_at)
      await invariants()
    })

    it(`cancel ×${N * 2} of an approved U2A payment: one cancellation, the rest replays`, async () => {
      const s = await scene()
      const p = await approved(s)
      const answers = await race(...times(N * 2, () => server(s, p.identifier, 'cancel')))
      assert.ok(
        answers.every((a) => a.status === 200),
        describeAnswers(answers),
      )
      assert.equal(oneOutcome(answers, [])?.status.cancelled, true)
      await invariants()
    })

    it(`submit ×${N * 2} of an approved U2A payment: the user pays once`, async () => {
      const s = await scene()
      const p = await approved(s)
      const before = await ledgerAccount(node(), s.user.wallet.address)
      const answers = await race(...times(N * 2, () => client(s, p.identifier, 'submit')))
      assert.ok(
        answers.every((a) => a.status === 200),
        describeAnswers(answers),
      )
      const paid = oneOutcome(answers, [])
      assert.equal(paid?.transaction?.verified, true)
      const afterwards = await ledgerAccount(node(), s.user.wallet.address)
      assert.equal(stroops(before?.balance ?? '') - stroops(afterwards?.balance ?? ''), stroops('1') + 100n)
      await invariants()
    })
  })

  describe('transactions and payments', () => {
    it(`one user pays ${WALLET_PAYMENTS} apps at once from one wallet: every payment is paid once, none refused`, async () => {
      // Issue 12, item 7: the platform read the wallet's sequence outside the applying transaction and
      // retried, so under contention some submits answered 400 transaction_failed. Its signing is now
      // serialised per wallet: contention is never reported as a refusal.
      const first = await scene()
      // The apps and the user's sign-ins to them, made at once over the processes.
      const others = await Promise.all(
        Array.from({ length: WALLET_PAYMENTS - 1 }, async (): Promise<Scene> => {
          const app = await sandbox(node()).createApp()
          const auth = await sandbox(node()).authenticate(app.app_id, first.user.user_id, SCOPES)
          return { app, user: first.user, uid: auth.user.uid, key: `Key ${app.api_key}`, bearer: `Bearer ${auth.accessToken}` }
        }),
      )
      const scenes = [first, ...others]
      const payments = await Promise.all(scenes.map((s) => approved(s)))
      const before = await ledgerAccount(node(), first.user.wallet.address)
      // The platform signs each with the user's one sequence number: the submits race for it.
      const answers = await race(...scenes.map((s, i) => () => client(s, payments[i]?.identifier ?? '', 'submit')))
      const refused = answers.filter((a) => a.status !== 200)
      assert.deepEqual(
        refused.map((a) => `${a.status} ${String(a.body.error)}: ${String(a.body.error_message)}`),
        [],
        `all ${WALLET_PAYMENTS} paid`,
      )
      for (const a of answers) assert.equal((a.body as unknown as PaymentDTO).transaction?.verified, true)
      const afterwards = await ledgerAccount(node(), first.user.wallet.address)
      assert.equal(BigInt(afterwards?.sequence ?? '0'), BigInt(before?.sequence ?? '0') + BigInt(WALLET_PAYMENTS))
      assert.equal(stroops(before?.balance ?? '') - stroops(afterwards?.balance ?? ''), BigInt(WALLET_PAYMENTS) * (stroops('1') + 100n))
      const paid = await query<{ n: number }>(
        `select count(*)::int as n from payments where from_address = '${first.user.wallet.address}' and tx_verified`,
      )
      assert.equal(Number(paid[0]?.n), WALLET_PAYMENTS)
      await invariants()
    })

    it('one txid offered to complete three payments: only its own payment completes', async () => {
      const own = await scene()
      const unpaid = await scene(own.app)
      const otherPaid = await scene(own.app)
      const { p, txid } = await paidA2U(own)
      const q = await createA2U(unpaid)
      const { p: r, txid: rTxid } = await paidA2U(otherPaid)
      const answers = await race(
        ...times(N, () => complete(own, p.identifier, txid)),
        ...times(N, () => complete(own, q.identifier, txid)),
        ...times(N, () => complete(own, r.identifier, txid)),
      )
      const forP = answers.slice(0, N)
      const forQ = answers.slice(N, 2 * N)
      const forR = answers.slice(2 * N)
      assert.ok(forP.every((a) => a.status === 200))
      assert.equal(oneOutcome(forP, [])?.status.developer_completed, true)
      for (const a of forQ) {
        assert.equal(a.status, 409)
        assert.equal(a.body.error, 'verification_failed')
        assert.equal(a.body.verification_error, 'tx_memo_payment_identifier_mismatch')
      }
      for (const a of forR) {
        assert.equal(a.status, 409)
        assert.equal(a.body.error, 'txid_mismatch')
      }
      assert.equal((await read(own, q.identifier)).transaction, null)
      const rNow = await read(own, r.identifier)
      assert.equal(rNow.status.developer_completed, false)
      assert.equal(rNow.transaction?.txid, rTxid)
      assert.equal((await complete(own, r.identifier, rTxid)).status, 200)
      await invariants()
    })

    it("the payer's and a stranger's transactions with one payment's memo, at once: both apply once, the payer's links", async () => {
      const s = await scene()
      const stranger = await sandbox(node()).createUser()
      const p = await createA2U(s)
      const payer = await a2uEnvelope(s, p)
      const other = await buildPayment(node(), {
        seed: stranger.wallet.seed,
        to: p.to_address,
        amount: String(p.amount),
        memo: p.identifier,
      })
      const answers = await race(...times(3, () => submit(payer)), ...times(3, () => submit(other)))
      for (const envelope of [payer, other]) {
        const mine = answers.filter((_, i) => (i < 3 ? payer : other) === envelope)
        appliedOnce(mine, 'applies once')
      }
      const now = await read(s, p.identifier)
      assert.equal(now.transaction?.txid, hashOf(payer))
      assert.equal(now.transaction?.verified, true)
      assert.deepEqual(await query(`select identifier from payments where txid = '${hashOf(other)}'`), [])
      await invariants()
    })

    it("two of the payer's transactions with one payment's memo (consecutive sequences), at once: each applies once, the first links", async () => {
      const s = await scene()
      const p = await createA2U(s)
      const sequence = BigInt((await ledgerAccount(node(), s.app.wallet.address))?.sequence ?? '0')
      const first = await a2uEnvelope(s, p, { sequence: String(sequence) })
      const second = await a2uEnvelope(s, p, { sequence: String(sequence + 1n) })
      const applied = new Map<string, Set<string>>()
      const all: Answer[] = []
      // The second can only apply after the first: submit both at once, again and again, until both are on the ledger.
      for (let attempt = 0; attempt < 10 && applied.size < 2; attempt++) {
        const answers = await race(...times(3, () => submit(first)), ...times(3, () => submit(second)))
        all.push(...answers)
        for (const a of answers.filter((x) => x.status === 200)) {
          const ledgers = applied.get(String(a.body.hash)) ?? new Set<string>()
          applied.set(String(a.body.hash), ledgers.add(String(a.body.ledger)))
        }
      }
      // Each applied in exactly one ledger (a copy after that answers the earlier result).
      assert.deepEqual(
        [...applied.entries()].map(([hash, ledgers]) => [hash, ledgers.size]).sort(),
        [
          [hashOf(first), 1],
          [hashOf(second), 1],
        ].sort(),
        `each applies exactly once: ${describeAnswers(all)}`,
      )
      for (const refused of all.filter((a) => a.status !== 200)) assert.equal(resultCode(refused), 'tx_bad_seq')
      const now = await read(s, p.identifier)
      assert.equal(now.transaction?.txid, hashOf(first))
      assert.deepEqual(await query(`select identifier from payments where txid = '${hashOf(second)}'`), [])
      const refused = await complete(s, p.identifier, hashOf(second))
      assert.equal(refused.status, 409)
      assert.equal(refused.body.error, 'txid_mismatch')
      assert.equal((await complete(s, p.identifier, hashOf(first))).status, 200)
      await invariants()
    })

    it('two transactions on one account sequence, at once: exactly one applies, the other is tx_bad_seq', async () => {
      const s = await scene()
      const other = await sandbox(node()).createUser()
      const account = await ledgerAccount(node(), s.user.wallet.address)
      assert.ok(account)
      const toApp = await buildPayment(node(), {
        seed: s.user.wallet.seed,
        to: s.app.wallet.address,
        amount: '2',
        sequence: account.sequence,
      })
      const toOther = await buildPayment(node(), {
        seed: s.user.wallet.seed,
        to: other.wallet.address,
        amount: '3',
        sequence: account.sequence,
      })
      const answers = await race(...times(N, (i) => submit(i % 2 === 0 ? toApp : toOther)))
      const wins = answers.filter((a) => a.status === 200)
      // One envelope wins; its other copies answer its result (as Horizon answers a duplicate), the other envelope's are tx_bad_seq.
      assert.equal(new Set(wins.map((a) => `${a.body.hash}@${a.body.ledger}`)).size, 1, describeAnswers(answers))
      for (const refused of answers.filter((a) => a.status !== 200)) {
        assert.equal(refused.status, 400)
        assert.equal(resultCode(refused), 'tx_bad_seq')
      }
      const winner = String(wins[0]?.body.hash)
      const loser = winner === hashOf(toApp) ? hashOf(toOther) : hashOf(toApp)
      assert.equal((await node().inject({ method: 'GET', url: `/ledger/transactions/${loser}` })).statusCode, 404)
      const afterwards = await ledgerAccount(node(), s.user.wallet.address)
      assert.equal(BigInt(afterwards?.sequence ?? '0'), BigInt(account.sequence) + 1n)
      const moved = winner === hashOf(toApp) ? '2' : '3'
      assert.equal(stroops(account.balance) - stroops(afterwards?.balance ?? ''), stroops(moved) + 100n)
      await invariants()
    })
  })

  describe('one open payment per user', () => {
    it(`A2U create ×${N * 2} for one user: exactly one payment, the others 409 ongoing_payment_found with it`, async () => {
      const s = await scene()
      const answers = await race(
        ...times(N * 2, (i) =>
          call('a2u create', 'POST', '/v2/payments', s.key, { payment: { amount: i + 1, memo: 'race', metadata: {}, uid: s.uid } }),
        ),
      )
      const created = answers.filter((a) => a.status === 200)
      assert.equal(created.length, 1, describeAnswers(answers))
      const id = String(created[0]?.body.identifier)
      for (const a of answers.filter((x) => x.status !== 200)) {
        assert.equal(a.status, 409)
        assert.equal(a.body.error, 'ongoing_payment_found')
        assert.equal(a.body.payment?.identifier, id)
      }
      const rows = await query<{ identifier: string }>(
        `select p.identifier from payments p join apps a on a.id = p.app_id where a.id = '${s.app.app_id}'`,
      )
      assert.deepEqual(
        rows.map((r) => r.identifier),
        [id],
      )
      await invariants()
    })

    it(`U2A create ×${N * 2} for one user: every create answers, exactly one stays open`, async () => {
      const s = await scene()
      const answers = await race(
        ...times(N * 2, (i) => call('u2a create', 'POST', '/v2/client/payments', s.bearer, { amount: i + 1, memo: 'race', metadata: {} })),
      )
      for (const a of answers) {
        assert.ok(a.status === 201 || (a.status === 409 && a.body.error === 'ongoing_payment_found'), describeAnswers(answers))
      }
      const open = await query<{ identifier: string }>(
        `select identifier from payments where app_id = '${s.app.app_id}' and not cancelled and not user_cancelled and not developer_completed`,
      )
      assert.equal(open.length, 1)
      const created = answers.filter((a) => a.status === 201).map((a) => String(a.body.identifier))
      assert.ok(created.includes(open[0]?.identifier ?? ''), 'the open one is one the user was told about')
      await invariants()
    })
  })

  describe('ads and credentials', () => {
    it(`a script of 5 unavailable ads under ${N * 4} concurrent shows: exactly 5 are used up`, async () => {
      const s = await scene()
      const scripted = await call('script', 'PUT', `/sandbox/apps/${s.app.app_id}/ads/script`, undefined, {
        result: 'AD_NOT_AVAILABLE',
        count: 5,
      })
      assert.equal(scripted.status, 200, JSON.stringify(scripted.body))
      const answers = await race(...times(N * 4, () => call('show', 'POST', '/v2/client/ads/rewarded/show', s.bearer, {})))
      assert.ok(
        answers.every((a) => a.status === 200),
        describeAnswers(answers),
      )
      const results = answers.map((a) => String(a.body.result))
      assert.equal(results.filter((r) => r === 'AD_NOT_AVAILABLE').length, 5, results.join())
      assert.equal(results.filter((r) => r === 'AD_REWARDED').length, N * 4 - 5)
      const ads = answers.map((a) => a.body.adId).filter((id) => id !== undefined)
      assert.equal(new Set(ads).size, N * 4 - 5, 'every rewarded ad has an id of its own')
      await invariants()
    })

    it('a key revoked on one process is refused by every process soon after', async () => {
      const s = await scene()
      const extra = await sandbox(node()).createKey(s.app.app_id)
      const path = '/v2/payments/incomplete_server_payments'
      // Every process has verified (and cached) the key.
      for (let i = 0; i < nodes.length; i++)
        assert.equal((await call('read', 'GET', path, `Key ${extra.api_key}`, undefined, i)).status, 200)
      await sandbox(node(0)).revokeKey(s.app.app_id, extra.key_id)
      assert.equal((await call('read', 'GET', path, `Key ${extra.api_key}`, undefined, 0)).status, 401, 'at once where revoked')
      const deadline = Date.now() + 5_000
      for (let i = 0; i < nodes.length; i++) {
        for (;;) {
          const answer = await call('read', 'GET', path, `Key ${extra.api_key}`, undefined, i)
          if (answer.status === 401) {
            assert.equal(answer.body.error, 'invalid_api_key')
            break
          }
          assert.equal(answer.status, 200)
          assert.ok(Date.now() < deadline, `process ${i} still accepts the revoked key`)
          await new Promise((resolve) => setTimeout(resolve, 50))
        }
      }
      // The app's other key is untouched.
      assert.equal((await call('read', 'GET', path, s.key)).status, 200)
      await invariants()
    })
  })

  describe('notification quota', () => {
    it('100 single-notification requests for one user at once deliver exactly 48', async () => {
      const s = await scene()
      const answers = await race(
        ...times(100, (i) =>
          call('notify', 'POST', '/v2/in_app_notifications/notify', s.key, {
            notifications: [{ title: `n${i}`, body: 'race', user_uid: s.uid, subroute: '/' }],
          }),
        ),
      )
      const delivered = answers.filter((a) => a.status === 201)
      const refused = answers.filter((a) => a.status === 403)
      assert.equal(delivered.length, 48, describeAnswers(answers))
      assert.equal(refused.length, 52)
      for (const a of refused) assert.match(String(a.body.error), /^Notification quota exceeded for users: /)
      const [count] = await query<{ n: number }>(`select count(*)::int as n from notifications where app_id = '${s.app.app_id}'`)
      assert.equal(Number(count?.n), 48)
      await invariants()
    })

    it('60 batches to the same 4 users in opposite orders, at once: no deadlock, every user gets exactly 48', async () => {
      const first = await scene()
      const members = [first]
      for (let i = 1; i < 4; i++) members.push(await scene(first.app))
      const uids = members.map((m) => m.uid)
      // 60 requests of one notification for each of the 4: 60 a user asked for, 48 allowed; all or nothing per request.
      const answers = await race(
        ...times(60, (i) =>
          call('notify', 'POST', '/v2/in_app_notifications/notify', first.key, {
            notifications: (i % 2 === 0 ? uids : [...uids].reverse()).map((uid) => ({
              title: `n${i}`,
              body: 'race',
              user_uid: uid,
              subroute: '/',
            })),
          }),
        ),
      )
      assert.ok(
        answers.every((a) => a.status === 201 || a.status === 403),
        describeAnswers(answers),
      )
      assert.equal(answers.filter((a) => a.status === 201).length, 48)
      const counts = await query<{ n: number }>(
        `select count(*)::int as n from notifications where app_id = '${first.app.app_id}' group by user_id`,
      )
      assert.deepEqual(
        counts.map((c) => Number(c.n)),
        [48, 48, 48, 48],
      )
      await invariants()
    })
  })
})

describe('opening one new schema from several processes at once', {
  skip: TEST_DB === 'postgres' ? false : 'PostgreSQL only: PGlite has one process',
}, () => {
  it('every opener succeeds: creating the schema and migrating it race safely', async () => {
    const databaseUrl = process.env.DATABASE_URL ?? ''
    for (let round = 0; round < 5; round++) {
      const schema = `plinth_test_open_${process.pid}_${randomBytes(4).toString('hex')}`
      try {
        const opened = await Promise.allSettled(Array.from({ length: 4 }, () => openDatabase({ databaseUrl, schema, poolSize: 2 })))
        for (const result of opened) if (result.status === 'fulfilled') await result.value.close()
        const failures = opened.flatMap((result) => (result.status === 'rejected' ? [String(result.reason)] : []))
        assert.deepEqual(failures, [], `round ${round}`)
      } finally {
        const admin = new pg.Client({ connectionString: databaseUrl })
        await admin.connect()
        await admin.query(`drop schema if exists "${schema}" cascade`)
        await admin.end()
      }
    }
  })
})
