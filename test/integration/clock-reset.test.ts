/**
 * `POST /sandbox/clock/reset` puts the platform clock back on real time, and nothing the moved
 * time decided is undone: an approval window that had passed stays passed, an expired token
 * stays refused, on every process.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { pay } from '../helpers/ledger.js'
import { SANDBOX_CLIENT, sandbox, startPlatform, TEST_DB, type TestPlatform } from '../helpers/platform.js'
import { type Cluster, sleep, startCluster } from '../helpers/server-process.js'

interface Payment {
  identifier: string
  status: { developer_approved: boolean; cancelled: boolean; developer_completed: boolean }
}
interface ClockBody {
  now: string
  timestamp: number
  offset_seconds: number
}

async function call(node: FastifyInstance, method: 'GET' | 'POST', url: string, authorization?: string, payload?: unknown) {
  const response = await node.inject({
    method,
    url,
    headers: authorization === undefined ? SANDBOX_CLIENT : { ...SANDBOX_CLIENT, authorization },
    ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }),
  })
  return { status: response.statusCode, body: response.json() as Record<string, unknown>, headers: response.headers }
}

/** An app and a user signed in with `ttl` seconds of token, and an open U2A payment of theirs. */
async function signedInWithPayment(node: FastifyInstance, ttl = 3600) {
  const sb = sandbox(node)
  const app = await sb.createApp()
  const user = await sb.createUser()
  const auth = await sb.authenticate(app.app_id, user.user_id, ['username', 'payments', 'wallet_address'], ttl)
  const created = await call(node, 'POST', '/v2/client/payments', `Bearer ${auth.accessToken}`, { amount: 1, memo: 'x', metadata: {} })
  assert.equal(created.status, 201, JSON.stringify(created.body))
  return { app, user, token: auth.accessToken, uid: auth.user.uid, key: `Key ${app.api_key}`, payment: created.body as unknown as Payment }
}

/** An A2U payment, paid on the ledger with time bounds from the test's own clock, and completed. */
async function a2uFlow(node: FastifyInstance, s: Awaited<ReturnType<typeof signedInWithPayment>>) {
  const created = await call(node, 'POST', '/v2/payments', s.key, { payment: { amount: 0.5, memo: 'refund', metadata: {}, uid: s.uid } })
  assert.equal(created.status, 200, JSON.stringify(created.body))
  const id = (created.body as unknown as Payment).identifier
  const txid = await pay(node, { seed: s.app.wallet.seed, to: s.user.wallet.address, amount: '0.5', memo: id })
  const completed = await call(node, 'POST', `/v2/payments/${id}/complete`, s.key, { txid })
  assert.equal(completed.status, 200, JSON.stringify(completed.body))
  assert.equal((completed.body as unknown as Payment).status.developer_completed, true)
}

describe(`resetting the sandbox clock (${TEST_DB})`, () => {
  let platform: TestPlatform
  let node: FastifyInstance
  before(async () => {
    platform = await startPlatform()
    node = platform.app
  })
  after(() => platform.close())

  it('goes back to offset 0, and what the moved time expired stays expired', async () => {
    const old = await signedInWithPayment(node, 3600)
    await sandbox(node).advanceClock(86_400)
    // Issued and created at the moved time: an hour of token, a whole approval window.
    const later = await signedInWithPayment(node, 3600)
    // Nothing has read the old payment or token since the move: the reset must record their expiry.
    const reset = await call(node, 'POST', '/sandbox/clock/reset')
    assert.equal(reset.status, 200, JSON.stringify(reset.body))
    assert.equal((reset.body as unknown as ClockBody).offset_seconds, 0)
    assert.ok(Math.abs(Date.parse((reset.body as unknown as ClockBody).now) - Date.now()) < 60_000)
    assert.equal(((await call(node, 'GET', '/sandbox/clock')).body as unknown as ClockBody).offset_seconds, 0)

    const approve = await call(node, 'POST', `/v2/payments/${old.payment.identifier}/approve`, old.key)
    assert.equal(approve.status, 409, JSON.stringify(approve.body))
    assert.equal(approve.body.error, 'cancelled_payment')
    const read = await call(node, 'GET', `/v2/payments/${old.payment.identifier}`, old.key)
    assert.equal((read.body as unknown as Payment).status.cancelled, true)

    const expired = await call(node, 'GET', '/v2/me', `Bearer ${old.token}`)
    assert.equal(expired.status, 401)
    assert.equal(expired.body.error, 'token_expired')
    // The token issued at the moved time keeps the hour it had left, not a day and an hour.
    assert.equal((await call(node, 'GET', '/v2/me', `Bearer ${later.token}`)).status, 200)
    await sandbox(node).advanceClock(3600)
    assert.equal((await call(node, 'GET', '/v2/me', `Bearer ${later.token}`)).body.error, 'token_expired')
    // Its payment kept the window it had left, so it too is past it now.
    const late = await call(node, 'POST', `/v2/payments/${later.payment.identifier}/approve`, later.key)
    assert.equal(late.body.error, 'cancelled_payment')

    await call(node, 'POST', '/sandbox/clock/reset')
    await sandbox(node).advanceClock(86_400)
    await call(node, 'POST', '/sandbox/clock/reset')
    const fresh = await signedInWithPayment(node, 3600)
    await call(node, 'POST', `/v2/payments/${fresh.payment.identifier}/cancel`, fresh.key)
    await a2uFlow(node, fresh)
  })

  it('keeps an approval window that had time left, and is idempotent', async () => {
    const s = await signedInWithPayment(node, 3600)
    await sandbox(node).advanceClock(30)
    await call(node, 'POST', '/sandbox/clock/reset')
    const again = await call(node, 'POST', '/sandbox/clock/reset')
    assert.equal((again.body as unknown as ClockBody).offset_seconds, 0)
    const approve = await call(node, 'POST', `/v2/payments/${s.payment.identifier}/approve`, s.key)
    assert.equal(approve.status, 200, JSON.stringify(approve.body))
  })

  it('takes the ad verdicts due at the moved time, and keeps the time left to a pending one', async () => {
    const sb = sandbox(node)
    const app = await sb.createApp()
    const user = await sb.createUser()
    const { accessToken } = await sb.authenticate(app.app_id, user.user_id, ['username', 'payments'], 2 * 86_400)
    const show = async () => {
      const shown = await call(node, 'POST', '/v2/client/ads/rewarded/show', `Bearer ${accessToken}`)
      assert.equal(shown.status, 200, JSON.stringify(shown.body))
      return String(shown.body.adId)
    }
    const status = async (adId: string) =>
      (await call(node, 'GET', `/v2/ads_network/status/${adId}`, `Key ${app.api_key}`)).body.mediator_ack_status
    const due = await show()
    await sb.advanceClock(86_400)
    // Shown at the moved time: its verdict falls due 2 s later (the test platform's delay).
    const pending = await show()
    await call(node, 'POST', '/sandbox/clock/reset')
    assert.equal(await status(due), 'granted')
    assert.equal(await status(pending), null)
    await sb.advanceClock(2)
    assert.equal(await status(pending), 'granted', 'the verdict kept its 2 s, not a day and 2 s')
  })

  it('counts notifications sent while moved toward the quota as sent at the reset, for 24 hours of real time', async () => {
    const sb = sandbox(node)
    const app = await sb.createApp()
    const user = await sb.createUser()
    const { user: member } = await sb.authenticate(app.app_id, user.user_id, ['username', 'in_app_notifications'])
    const notify = (count: number) =>
      call(node, 'POST', '/v2/in_app_notifications/notify', `Key ${app.api_key}`, {
        notifications: Array.from({ length: count }, (_, n) => ({ title: `T${n}`, body: 'B', user_uid: member.uid, subroute: '/x' })),
      })
    await sb.advanceClock(366 * 86_400)
    for (let sent = 0; sent < 48; sent += 8) assert.equal((await notify(8)).status, 201)
    await call(node, 'POST', '/sandbox/clock/reset')
    assert.equal((await notify(1)).status, 403, 'the quota is used up')
    await sb.advanceClock(86_400 + 1)
    const after = await notify(1)
    assert.equal(after.status, 201, `a day after the reset, not a year: ${JSON.stringify(after.body)}`)
  })
})

describe('resetting the sandbox clock with two processes on one PostgreSQL', {
  skip: TEST_DB !== 'postgres' && 'several processes need PostgreSQL',
}, () => {
  let cluster: Cluster
  before(async () => {
    cluster = await startCluster({ processes: 2, env: { PLINTH_APPROVAL_WINDOW_SECONDS: '60' }, timeoutMs: 60_000 })
  })
  after(async () => {
    const exits = await cluster.close()
    for (const exit of exits) assert.equal(exit.code, 0, `a server exited with ${JSON.stringify(exit)}`)
  })

  it('a reset on one process is seen by the other: its clock, its cached tokens, the payments', async () => {
    const [a, b] = cluster.nodes as [FastifyInstance, FastifyInstance]
    const s = await signedInWithPayment(a, 600)
    // B verifies (and caches) the token before the move.
    assert.equal((await call(b, 'GET', '/v2/me', `Bearer ${s.token}`)).status, 200)
    await sandbox(a).advanceClock(86_400)
    const reset = await call(a, 'POST', '/sandbox/clock/reset')
    assert.equal((reset.body as unknown as ClockBody).offset_seconds, 0)

    // B's copy of the clock follows within its feed reads: its Horizon Date header is real time again.
    let skewMs = Number.POSITIVE_INFINITY
    for (let attempt = 0; attempt < 300 && skewMs > 60_000; attempt++) {
      const root = await call(b, 'GET', '/ledger/')
      skewMs = Math.abs(Date.parse(String(root.headers.date)) - Date.now())
      if (skewMs > 60_000) await sleep(50)
    }
    assert.ok(skewMs <= 60_000, `B's Date header is ${skewMs} ms off real time`)
    assert.equal(((await call(b, 'GET', '/sandbox/clock')).body as unknown as ClockBody).offset_seconds, 0)

    const me = await call(b, 'GET', '/v2/me', `Bearer ${s.token}`)
    assert.equal(me.status, 401, 'the token expired at the moved time stays refused on B')
    assert.equal(me.body.error, 'token_expired')
    for (const node of [b, a]) {
      const approve = await call(node, 'POST', `/v2/payments/${s.payment.identifier}/approve`, s.key)
      assert.equal(approve.body.error, 'cancelled_payment')
    }
    const fresh = await signedInWithPayment(b, 3600)
    await call(b, 'POST', `/v2/payments/${fresh.payment.identifier}/cancel`, fresh.key)
    await a2uFlow(b, fresh)
  })
})
