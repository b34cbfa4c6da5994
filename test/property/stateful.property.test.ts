import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { Account, Asset, Keypair, Memo, Operation, TransactionBuilder } from '@stellar/stellar-base'
import fc from 'fast-check'
import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import { sql } from 'kysely'
import { SCOPES } from '../../src/core/scopes.js'
import { assertProperty, FUZZ_SEED, fcParams, fuzzRuns } from '../helpers/fuzz.js'
import { ledgerAccount, submitEnvelope } from '../helpers/ledger.js'
import { type SandboxApp, type SandboxUser, sandbox, startPlatform, type TestPlatform } from '../helpers/platform.js'

/**
 * A stateful model test: fast-check builds sequences of actions (A2U and U2A payments created,
 * approved, paid, completed, cancelled by the app or the user; notify; ad shows; server key
 * rotations; platform clock moves) and runs each against a fresh app and two users, and against
 * a small model of docs/payments.md's lifecycle. After every step: the answer is the one the
 * model predicts (never a 5xx), each payment reads back in the model's state, at most one
 * payment per user, app and direction is open, and the ledger's balances conserve
 * (GET /sandbox/ledger/check). PLINTH_FUZZ_RUNS scales the runs.
 */

const RUNS = Math.max(3, Math.ceil(fuzzRuns(50) / 8))
const APPROVAL_WINDOW = 60 // startPlatform's approvalWindowSeconds
let steps = 0
let commandsRun = 0

type State = 'created' | 'approved' | 'paid' | 'completed' | 'cancelled' | 'userCancelled'
interface ModelPayment {
  id: string
  state: State
  /** Model time (seconds of clock moves) when it was created. */
  createdAt: number
  txid?: string
}
interface Model {
  /** Seconds the platform clock was moved in this run (the wall clock adds a few at most: far from the approval window). */
  now: number
  a2u: Array<ModelPayment | undefined>
  u2a: Array<ModelPayment | undefined>
}
interface Real {
  platform: TestPlatform
  app: SandboxApp
  key: string
  users: Array<{ user: SandboxUser; token: string; uid: string }>
}

const OPEN: State[] = ['created', 'approved', 'paid']

/** The approval window cancels a U2A payment that is still only created (reads record it). */
function expire(model: Model): void {
  for (const p of model.u2a) if (p?.state === 'created' && model.now - p.createdAt > APPROVAL_WINDOW) p.state = 'cancelled'
}

async function call(real: Real, options: InjectOptions): Promise<LightMyRequestResponse> {
  const response = await real.platform.app.inject(options)
  steps += 1
  assert.ok(response.statusCode < 500, `${options.method} ${options.url} → ${response.statusCode}: ${response.body}`)
  return response
}
const key = (real: Real) => ({ authorization: `Key ${real.key}` })
const bearer = (real: Real, u: number) => ({ authorization: `Bearer ${real.users[u]?.token}` })

function expectAnswer(response: LightMyRequestResponse, status: number, error: string | undefined, what: string): void {
  assert.equal(response.statusCode, status, `${what}: ${response.body}`)
  if (error !== undefined) assert.equal((response.json() as { error?: string }).error, error, `${what}: ${response.body}`)
}

/** A move's answer as docs/payments.md's refusal table says, for the payment's state. */
type Expect = [status: number, error?: string]

abstract class Step implements fc.AsyncCommand<Model, Real> {
  constructor(readonly u: number) {}
  check(_model: Readonly<Model>): boolean {
    return true
  }
  /** The step, then the invariants. */
  async run(model: Model, real: Real): Promise<void> {
    commandsRun += 1
    await this.act(model, real)
    await invariants(model, real, String(this))
  }
  abstract act(model: Model, real: Real): Promise<void>
  abstract toString(): string
}

class CreateA2U extends Step {
  async act(model: Model, real: Real) {
    expire(model)
    const open = model.a2u[this.u]
    const response = await call(real, {
      method: 'POST',
      url: '/v2/payments',
      headers: key(real),
      payload: { payment: { amount: 1, memo: 'model', metadata: {}, uid: real.users[this.u]?.uid } },
    })
    if (open !== undefined && OPEN.includes(open.state)) return expectAnswer(response, 409, 'ongoing_payment_found', `${this}`)
    expectAnswer(response, 200, undefined, `${this}`)
    model.a2u[this.u] = { id: response.json().identifier, state: 'created', createdAt: model.now }
  }
  toString() {
    return `createA2U(${this.u})`
  }
}

class PayA2U extends Step {
  override check(model: Readonly<Model>) {
    return model.a2u[this.u]?.state === 'created'
  }
  async act(model: Model, real: Real) {
    const p = model.a2u[this.u] as ModelPayment
    const user = real.users[this.u]?.user as SandboxUser
    // The app signs its payment as any backend does, without time bounds: the clock moves of earlier steps do not matter.
    const wallet = Keypair.fromSecret(real.app.wallet.seed)
    const account = await ledgerAccount(real.platform.app, wallet.publicKey())
    const tx = new TransactionBuilder(new Account(wallet.publicKey(), account?.sequence ?? '0'), {
      fee: '100',
      networkPassphrase: 'Pi Testnet',
      timebounds: { minTime: 0, maxTime: 0 },
    })
      .addOperation(Operation.payment({ destination: user.wallet.address, asset: Asset.native(), amount: '1' }))
      .addMemo(Memo.text(p.id))
      .build()
    tx.sign(wallet)
    const { status, body } = await submitEnvelope(real.platform.app, tx.toEnvelope().toXDR('base64'))
    steps += 2
    assert.equal(status, 200, `${this}: ${JSON.stringify(body)}`)
    p.txid = body.hash
    p.state = 'paid'
  }
  toString() {
    return `payA2U(${this.u})`
  }
}

class CreateU2A extends Step {
  async act(model: Model, real: Real) {
    expire(model)
    const open = model.u2a[this.u]
    const response = await call(real, {
      method: 'POST',
      url: '/v2/client/payments',
      headers: bearer(real, this.u),
      payload: { amount: 1, memo: 'model', metadata: {} },
    })
    // A new U2A payment cancels the open one that has no transaction; a paid one blocks it.
    if (open?.state === 'paid') return expectAnswer(response, 409, 'ongoing_payment_found', `${this}`)
    expectAnswer(response, 201, undefined, `${this}`)
    if (open !== undefined && (open.state === 'created' || open.state === 'approved')) open.state = 'cancelled'
    model.u2a[this.u] = { id: response.json().identifier, state: 'created', createdAt: model.now }
  }
  toString() {
    return `createU2A(${this.u})`
  }
}

/** A move on the user's A2U or U2A payment, answered as the refusal table says. */
abstract class Move extends Step {
  constructor(
    u: number,
    readonly direction: 'a2u' | 'u2a',
  ) {
    super(u)
  }
  override check(model: Readonly<Model>) {
    return model[this.direction][this.u] !== undefined
  }
  abstract request(p: ModelPayment, real: Real): InjectOptions
  /** The answer for the state, and the state after it. */
  abstract expected(p: ModelPayment): { answer: Expect; next?: State }
  async act(model: Model, real: Real) {
    expire(model)
    const p = model[this.direction][this.u] as ModelPayment
    const { answer, next } = this.expected(p)
    const response = await call(real, this.request(p, real))
    expectAnswer(response, answer[0], answer[1], `${this} on ${p.state}`)
    if (next !== undefined) p.state = next
    if (next === 'paid') p.txid = (response.json() as { transaction?: { txid?: string } }).transaction?.txid
  }
  toString() {
    return `${this.constructor.name}(${this.u}, ${this.direction})`
  }
}

class Approve extends Move {
  request(p: ModelPayment, real: Real): InjectOptions {
    return { method: 'POST', url: `/v2/payments/${p.id}/approve`, headers: key(real) }
  }
  expected(p: ModelPayment) {
    if (this.direction === 'a2u') return { answer: [409, 'wrong_direction'] as Expect }
    if (p.state === 'created') return { answer: [200] as Expect, next: 'approved' as State }
    if (p.state === 'cancelled' || p.state === 'userCancelled') return { answer: [409, 'cancelled_payment'] as Expect }
    return { answer: [200] as Expect }
  }
}

class Submit extends Move {
  request(p: ModelPayment, real: Real): InjectOptions {
    return { method: 'POST', url: `/v2/client/payments/${p.id}/submit`, headers: bearer(real, this.u) }
  }
  expected(p: ModelPayment) {
    if (this.direction === 'a2u') return { answer: [409, 'wrong_direction'] as Expect }
    if (p.state === 'approved') return { answer: [200] as Expect, next: 'paid' as State }
    if (p.state === 'paid' || p.state === 'completed') return { answer: [200] as Expect }
    if (p.state === 'created') return { answer: [409, 'not_approved'] as Expect }
    return { answer: [409, 'cancelled_payment'] as Expect }
  }
}

class Complete extends Move {
  request(p: ModelPayment, real: Real): InjectOptions {
    const txid = p.txid ?? randomBytes(32).toString('hex')
    return { method: 'POST', url: `/v2/payments/${p.id}/complete`, headers: key(real), payload: { txid } }
  }
  expected(p: ModelPayment) {
    if (p.state === 'paid') return { answer: [200] as Expect, next: 'completed' as State }
    if (p.state === 'completed') return { answer: [200] as Expect }
    if (p.state === 'cancelled' || p.state === 'userCancelled') return { answer: [409, 'cancelled_payment'] as Expect }
    return { answer: [409, 'verification_failed'] as Expect }
  }
}

class Cancel extends Move {
  request(p: ModelPayment, real: Real): InjectOptions {
    return { method: 'POST', url: `/v2/payments/${p.id}/cancel`, headers: key(real) }
  }
  expected(p: ModelPayment) {
    if (p.state === 'created' || p.state === 'approved' || p.state === 'cancelled')
      return { answer: [200] as Expect, next: 'cancelled' as State }
    // Idempotent: the user's cancel stands, answered as it is.
    if (p.state === 'userCancelled') return { answer: [200] as Expect }
    if (p.state === 'paid') return { answer: [409, 'payment_tx_present'] as Expect }
    return { answer: [409, 'already_completed'] as Expect }
  }
}

class UserCancel extends Move {
  request(p: ModelPayment, real: Real): InjectOptions {
    return { method: 'POST', url: `/v2/client/payments/${p.id}/cancel`, headers: bearer(real, this.u) }
  }
  expected(p: ModelPayment) {
    if (this.direction === 'a2u') return { answer: [409, 'wrong_direction'] as Expect }
    if (p.state === 'created' || p.state === 'approved' || p.state === 'userCancelled') {
      return { answer: [200] as Expect, next: 'userCancelled' as State }
    }
    // Idempotent: the app's (or the platform's) cancel stands, answered as it is.
    if (p.state === 'cancelled') return { answer: [200] as Expect }
    if (p.state === 'paid') return { answer: [409, 'payment_tx_present'] as Expect }
    return { answer: [409, 'already_completed'] as Expect }
  }
}

class Notify extends Step {
  async act(_model: Model, real: Real) {
    const response = await call(real, {
      method: 'POST',
      url: '/v2/in_app_notifications/notify',
      headers: key(real),
      payload: { notifications: [{ title: 'Model', body: 'step', subroute: '/', user_uid: real.users[this.u]?.uid }] },
    })
    expectAnswer(response, 201, undefined, `${this}`)
  }
  toString() {
    return `notify(${this.u})`
  }
}

class ShowAd extends Step {
  async act(_model: Model, real: Real) {
    const response = await call(real, { method: 'POST', url: '/v2/client/ads/rewarded/show', headers: bearer(real, this.u), payload: {} })
    expectAnswer(response, 200, undefined, `${this}`)
    const adId = (response.json() as { adId?: string }).adId
    if (adId !== undefined) {
      const status = await call(real, { method: 'GET', url: `/v2/ads_network/status/${adId}`, headers: key(real) })
      expectAnswer(status, 200, undefined, `${this}: the app reads the ad`)
    }
  }
  toString() {
    return `showAd(${this.u})`
  }
}

class RotateKey extends Step {
  async act(_model: Model, real: Real) {
    const sb = sandbox(real.platform.app)
    const created = await sb.createKey(real.app.app_id)
    const old = real.app.key_id
    await sb.revokeKey(real.app.app_id, old)
    steps += 2
    real.key = created.api_key
    real.app.key_id = created.key_id
  }
  toString() {
    return 'rotateKey'
  }
}

class MoveClock extends Step {
  constructor(readonly seconds: number) {
    super(0)
  }
  async act(model: Model, real: Real) {
    const response = await call(real, { method: 'POST', url: '/sandbox/clock', payload: { advance_seconds: this.seconds } })
    expectAnswer(response, 200, undefined, `${this}`)
    model.now += this.seconds
  }
  toString() {
    return `moveClock(${this.seconds})`
  }
}

const FLAGS: Record<State, [approved: boolean, verified: boolean, completed: boolean, cancelled: boolean, userCancelled: boolean]> = {
  created: [false, false, false, false, false],
  approved: [true, false, false, false, false],
  paid: [true, true, false, false, false],
  completed: [true, true, true, false, false],
  cancelled: [false, false, false, true, false],
  userCancelled: [false, false, false, false, true],
}

/** After every step: each payment reads back in the model's state, one open payment per user/app/direction, balances conserve. */
async function invariants(model: Model, real: Real, last: string): Promise<void> {
  expire(model)
  for (const direction of ['a2u', 'u2a'] as const) {
    for (const p of model[direction]) {
      if (p === undefined) continue
      const response = await call(real, { method: 'GET', url: `/v2/payments/${p.id}`, headers: key(real) })
      assert.equal(response.statusCode, 200, `${last}: read ${p.id}`)
      const s = response.json().status as Record<string, boolean>
      const [approved, verified, completed, cancelled, userCancelled] = FLAGS[p.state]
      // A cancelled payment keeps developer_approved when it had been approved: only the other flags are the state.
      // (An A2U payment is never approved: the app that creates it pays it.)
      if (direction === 'u2a' && p.state !== 'cancelled' && p.state !== 'userCancelled')
        assert.equal(s.developer_approved, approved, `${last}: ${direction} ${p.state} approved`)
      assert.deepEqual(
        [s.transaction_verified, s.developer_completed, s.cancelled, s.user_cancelled],
        [verified, completed, cancelled, userCancelled],
        `${last}: ${direction} payment in model state ${p.state}: ${response.body}`,
      )
    }
  }
  const doubled = await sql<{ n: number }>`
    select count(*)::int as n from payments
    where not developer_completed and not cancelled and not user_cancelled
    group by app_id, user_id, direction having count(*) > 1`.execute(real.platform.db)
  assert.equal(doubled.rows.length, 0, `${last}: more than one open payment for a user, app and direction`)
  const check = await call(real, { method: 'GET', url: '/sandbox/ledger/check' })
  assert.equal(check.json().ok, true, `${last}: ledger invariants: ${check.body}`)
}

const user = fc.integer({ min: 0, max: 1 })
const direction = fc.constantFrom<'a2u' | 'u2a'>('a2u', 'u2a')
const commands = [
  user.map((u) => new CreateA2U(u)),
  user.map((u) => new PayA2U(u)),
  user.map((u) => new CreateU2A(u)),
  ...[Approve, Submit, Complete, Cancel, UserCancel].map((Kind) => fc.tuple(user, direction).map(([u, d]) => new Kind(u, d))),
  user.map((u) => new Notify(u)),
  user.map((u) => new ShowAd(u)),
  fc.constant(new RotateKey(0)),
  // Small moves stay far inside the approval window (with the wall clock's few seconds); 700 s is far past it.
  fc.constantFrom(1, 2, 700).map((s) => new MoveClock(s)),
]

describe('sequences of payments, notifications, ads, key rotations and clock moves against a model (property)', () => {
  let platform: TestPlatform
  let started = 0

  before(async () => {
    started = Date.now()
    platform = await startPlatform()
  })
  after(async () => {
    await platform.close()
    console.log(
      `# stateful model: ${RUNS} runs, ${commandsRun} commands, ${steps} requests in ${((Date.now() - started) / 1000).toFixed(1)} s (seed ${FUZZ_SEED})`,
    )
  })

  it('answers every step as the model predicts, and keeps the invariants after each', async () => {
    await assertProperty(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 20, size: 'max' }), async (cmds) => {
        const sb = sandbox(platform.app)
        const app = await sb.createApp()
        const users = []
        for (let i = 0; i < 2; i++) {
          const u = await sb.createUser()
          const auth = await sb.authenticate(app.app_id, u.user_id, [...SCOPES], 30 * 86_400)
          users.push({ user: u, token: auth.accessToken, uid: auth.user.uid })
        }
        const real: Real = { platform, app, key: app.api_key, users }
        const model: Model = { now: 0, a2u: [], u2a: [] }
        await fc.asyncModelRun(() => ({ model, real }), cmds)
      }),
      { ...fcParams(RUNS), includeErrorInReport: true },
    )
  })
})
