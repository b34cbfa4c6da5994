/**
 * The platform clock is one clock: every time decision (approval windows, token expiry) is made
 * against the offset stored in the database, whichever process answers, and the clock never
 * moves past what every backend and JS can hold.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { MAX_ADVANCE_SECONDS, MAX_OFFSET_SECONDS } from '../../src/clock/clock.js'
import { json, sandbox, startPlatform, TEST_DB, type TestPlatform } from '../helpers/platform.js'
import { type Cluster, sleep, startCluster } from '../helpers/server-process.js'

/** The review's scenario, repeated: each trial is a fresh app, user and payment. */
const TRIALS = 6

interface Payment {
  identifier: string
  status: { developer_approved: boolean; cancelled: boolean; user_cancelled: boolean }
}
interface ClockBody {
  now: string
  timestamp: number
  offset_seconds: number
}

describe('one platform clock for every process (two processes on one PostgreSQL)', {
  skip: TEST_DB !== 'postgres' && 'several processes need PostgreSQL',
}, () => {
  let cluster: Cluster
  let nodes: FastifyInstance[] = []
  before(async () => {
    cluster = await startCluster({ processes: 2, env: { PLINTH_APPROVAL_WINDOW_SECONDS: '60' }, timeoutMs: 60_000 })
    nodes = cluster.nodes
  })
  after(async () => {
    const exits = await cluster.close()
    for (const exit of exits) assert.equal(exit.code, 0, `a server exited with ${JSON.stringify(exit)}`)
  })

  const node = (i: number) => nodes[i] as FastifyInstance
  const call = async (via: number, method: 'GET' | 'POST', url: string, authorization: string, payload?: Record<string, unknown>) => {
    const response = await node(via).inject({ method, url, headers: { authorization }, ...(payload === undefined ? {} : { payload }) })
    return { status: response.statusCode, body: response.json() as Record<string, unknown> & { payment?: Payment } }
  }

  /** An app, a user who signed in with the payments scope, and an open U2A payment created on process `via`. */
  async function openPayment(via: number) {
    const sb = sandbox(node(via))
    const app = await sb.createApp()
    const user = await sb.createUser()
    const { accessToken } = await sb.authenticate(app.app_id, user.user_id, ['username', 'payments'])
    const created = await call(via, 'POST', '/v2/client/payments', `Bearer ${accessToken}`, { amount: 1, memo: 'x', metadata: {} })
    assert.equal(created.status, 201, JSON.stringify(created.body))
    return { key: `Key ${app.api_key}`, id: (created.body as unknown as Payment).identifier }
  }

  it('refuses approval past the window on every process, and the payment reads cancelled on both', async () => {
    const failures: string[] = []
    let approveAnswers = 0
    for (let trial = 0; trial < TRIALS; trial++) {
      for (const approveVia of [1, 0]) {
        // The clock moves on process 0 (A); the approve goes to B (1), then to A (0); then the same approve to the other.
        const { key, id } = await openPayment(trial % 2)
        await sandbox(node(0)).advanceClock(120)
        const label = `trial ${trial}, approve on ${approveVia === 0 ? 'A' : 'B'}`
        for (const via of [approveVia, 1 - approveVia]) {
          const approve = await call(via, 'POST', `/v2/payments/${id}/approve`, key)
          approveAnswers += 1
          if (approve.status !== 409 || approve.body.error !== 'cancelled_payment') {
            failures.push(
              `${label}: approve on ${via === 0 ? 'A' : 'B'} answered ${approve.status} ${String(approve.body.error ?? 'approved')}`,
            )
          }
        }
        for (const via of [0, 1]) {
          const read = await call(via, 'GET', `/v2/payments/${id}`, key)
          const status = (read.body as unknown as Payment).status
          if (read.status !== 200 || status.cancelled !== true || status.developer_approved !== false) {
            failures.push(`${label}: read on ${via === 0 ? 'A' : 'B'} ${read.status} ${JSON.stringify(status)}`)
          }
        }
      }
    }
    console.log(`platform clock: ${TRIALS * 2} trials, ${approveAnswers} approvals past the window, ${failures.length} wrong answers`)
    assert.deepEqual(failures, [])
  })

  it('issues a token on one process right after another moved the clock, valid for its whole lifetime from the moved time', async () => {
    const sbA = sandbox(node(0))
    const app = await sbA.createApp()
    const failures: string[] = []
    for (let trial = 0; trial < TRIALS; trial++) {
      const user = await sbA.createUser()
      const moved = await sbA.advanceClock(86_400)
      const token = await sandbox(node(1)).authenticate(app.app_id, user.user_id, ['username'], 3600)
      const expiresAt = Date.parse(token.expires_at)
      // At least an hour after the moved time (the token's expiry is whole seconds).
      if (expiresAt < Date.parse(moved.now) + 3_599_000) failures.push(`trial ${trial}: expires_at ${token.expires_at}, clock ${moved.now}`)
      const me = await call(1, 'GET', '/v2/me', `Bearer ${token.accessToken}`)
      if (me.status !== 200) failures.push(`trial ${trial}: /v2/me on B answered ${me.status} ${String(me.body.error)}`)
    }
    assert.deepEqual(failures, [])
  })

  it('refuses an expired token at once on a process that has not cached it, and within the feed on one that has', async () => {
    const sbA = sandbox(node(0))
    const app = await sbA.createApp()
    const failures: string[] = []
    for (let trial = 0; trial < TRIALS; trial++) {
      const fresh = await sbA.createUser()
      const cached = await sbA.createUser()
      const unseen = await sbA.authenticate(app.app_id, fresh.user_id, ['username'], 60)
      const seen = await sbA.authenticate(app.app_id, cached.user_id, ['username'], 60)
      assert.equal((await call(1, 'GET', '/v2/me', `Bearer ${seen.accessToken}`)).status, 200)
      await sbA.advanceClock(120)
      // B never verified this token: it asks the database, which decides on the stored offset.
      const me = await call(1, 'GET', '/v2/me', `Bearer ${unseen.accessToken}`)
      if (me.status !== 401 || me.body.error !== 'token_expired')
        failures.push(`trial ${trial}: B answered ${me.status} ${String(me.body.error)}`)
      // B cached this one: its cache reads the offset with the revocation feed, so it refuses it as soon as it would a revocation.
      let answer = 200
      for (let attempt = 0; attempt < 300 && answer === 200; attempt++) {
        answer = (await call(1, 'GET', '/v2/me', `Bearer ${seen.accessToken}`)).status
        if (answer === 200) await sleep(50)
      }
      if (answer !== 401) failures.push(`trial ${trial}: B kept serving the cached expired token (${answer})`)
    }
    assert.deepEqual(failures, [])
  })
})

describe(`the platform clock's bound (${TEST_DB})`, () => {
  let platform: TestPlatform
  before(async () => {
    platform = await startPlatform()
  })
  after(() => platform.close())

  const move = (seconds: number) => platform.app.inject({ method: 'POST', url: '/sandbox/clock', payload: { advance_seconds: seconds } })
  const read = async () => json<ClockBody>(await platform.app.inject({ method: 'GET', url: '/sandbox/clock' }))

  /** Creates, funds and authenticates, and pays: what the review saw answer 500 on PGlite past year 9999. */
  async function stillWorks(): Promise<void> {
    const sb = sandbox(platform.app)
    const app = await sb.createApp()
    const user = await sb.createUser()
    const funded = await platform.app.inject({
      method: 'POST',
      url: '/sandbox/ledger/fund',
      payload: { address: user.wallet.address, amount: '5' },
    })
    assert.equal(funded.statusCode, 200, funded.body)
    const { accessToken } = await sb.authenticate(app.app_id, user.user_id, ['username', 'payments'], 3600)
    const me = await platform.app.inject({ method: 'GET', url: '/v2/me', headers: { authorization: `Bearer ${accessToken}` } })
    assert.equal(me.statusCode, 200, me.body)
    const payment = await platform.app.inject({
      method: 'POST',
      url: '/v2/client/payments',
      headers: { authorization: `Bearer ${accessToken}` },
      payload: { amount: 1, memo: 'x', metadata: {} },
    })
    assert.equal(payment.statusCode, 201, payment.body)
  }

  it('moves up to the bound, refuses every move past it with 400 clock_out_of_range, and keeps working', async () => {
    assert.equal((await read()).offset_seconds, 0)
    // The review's 800 ten-year moves: the first ones reach the bound, every later one is refused.
    const answers = new Map<string, number>()
    for (let i = 0; i < 800; i++) {
      const response = await move(MAX_ADVANCE_SECONDS)
      const outcome = response.statusCode === 200 ? '200' : `${response.statusCode} ${json(response).error}`
      answers.set(outcome, (answers.get(outcome) ?? 0) + 1)
    }
    const moves = Math.floor(MAX_OFFSET_SECONDS / MAX_ADVANCE_SECONDS)
    assert.deepEqual(Object.fromEntries(answers), { '200': moves, '400 clock_out_of_range': 800 - moves })
    // The rest, up to the bound exactly.
    const rest = MAX_OFFSET_SECONDS - moves * MAX_ADVANCE_SECONDS
    if (rest > 0) assert.equal((await move(rest)).statusCode, 200)
    const atBound = await read()
    assert.equal(atBound.offset_seconds, MAX_OFFSET_SECONDS)

    const past = await move(1)
    assert.equal(past.statusCode, 400)
    const body = json<{ error: string; error_message: string }>(past)
    assert.equal(body.error, 'clock_out_of_range')
    assert.match(body.error_message, /at most/)
    assert.equal((await read()).offset_seconds, MAX_OFFSET_SECONDS, 'a refused move changes nothing')
    assert.ok(Date.parse((await read()).now) < Date.UTC(9999, 11, 31))

    // Backwards is refused as the docs say, and changes nothing either.
    const back = await move(-60)
    assert.equal(back.statusCode, 400)
    assert.equal(json(back).error, 'invalid_arguments')
    assert.equal((await read()).offset_seconds, MAX_OFFSET_SECONDS)

    await stillWorks()
  })
})
