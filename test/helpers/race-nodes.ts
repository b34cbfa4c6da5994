/**
 * The harness of the concurrency suites (test/integration/concurrency/): Plinth processes on one
 * PostgreSQL (or one platform in process on PGlite), requests spread over them, races fired in a
 * random or forced order, and the ledger and payment invariants checked after every case.
 */
import assert from 'node:assert/strict'
import { after, before } from 'node:test'
import { TransactionBuilder } from '@stellar/stellar-base'
import type { FastifyInstance } from 'fastify'
import type { PaymentDTO } from '../../src/payments/payment-dto.js'
import { buildPayment, ledgerAccount, submitEnvelope } from './ledger.js'
import { startNodes } from './nodes.js'
import { type SandboxApp, type SandboxUser, sandbox } from './platform.js'

export const PROCESSES = 3
/** Racing requests of each kind in a case. */
export const N = 6
/** Concurrent payments of one wallet to as many apps (the platform signs each with the wallet's sequence). */
export const WALLET_PAYMENTS = 64
/** The racy payment mixes run this many times each, on fresh payments, to meet more interleavings. */
const ROUNDS = 3
/**
 * Then twice more, in a forced order: each side alone first (answered), then the other. Both
 * branches of every race are met whatever the timing, and the last test asserts that they were.
 */
export type Round = number | 'first side first' | 'second side first'
export const RACY_ROUNDS: Round[] = [...Array.from({ length: ROUNDS }, (_, i) => i + 1), 'first side first', 'second side first']
/** The racy cases and their two branches, as tallied. */
export const BRANCHES: Record<string, [string, string]> = {
  'approve+cancel': ['approve first', 'cancel first'],
  'user cancel+approve': ['cancel first', 'approve first'],
  'submit+cancel': ['paid', 'cancelled'],
  'a2u tx+cancel': ['linked', 'cancelled'],
  'submit+create': ['paid', 'replaced'],
}
const PUBLIC_URL = 'http://plinth.test'
export const SCOPES = ['username', 'payments', 'wallet_address', 'in_app_notifications']

export interface Answer {
  status: number
  body: Record<string, unknown> & { error?: unknown; payment?: PaymentDTO; verification_error?: unknown }
  via: number
  what: string
}

/** Pi with up to 7 decimals as stroops, exactly. */
export function stroops(amount: string): bigint {
  const negative = amount.startsWith('-')
  const [whole = '0', fraction = ''] = (negative ? amount.slice(1) : amount).split('.')
  const value = BigInt(whole) * 10_000_000n + BigInt(fraction.padEnd(7, '0').slice(0, 7) || '0')
  return negative ? -value : value
}

export const hashOf = (envelope: string, network = 'Pi Testnet') => TransactionBuilder.fromXDR(envelope, network).hash().toString('hex')

export interface Scene {
  app: SandboxApp
  user: SandboxUser
  uid: string
  key: string
  bearer: string
}

/**
 * Starts the nodes before the enclosing suite and stops them after it (logging the requests made
 * and the racy outcomes met); returns the suite's clients, races and checks.
 */
export function useRaceNodes() {
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

  return {
    /** The nodes (read inside a test: they start with the suite). */
    get nodes(): FastifyInstance[] {
      return nodes
    },
    query: <T>(text: string): Promise<T[]> => query<T>(text),
    outcomes,
    branch,
    node,
    call,
    submit,
    resultCode,
    appliedOnce,
    scene,
    server,
    complete,
    client,
    read,
    createU2A,
    createA2U,
    approved,
    paidU2A,
    a2uEnvelope,
    paidA2U,
    race,
    times,
    contest,
    describeAnswers,
    oneOutcome,
    invariants,
  }
}
