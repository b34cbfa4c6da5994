import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { PaymentDTO } from '../../src/payments/payment-dto.js'
import { pay } from '../helpers/ledger.js'
import { json, SANDBOX_CLIENT, type SandboxApp, type SandboxUser, sandbox, startPlatform, type TestPlatform } from '../helpers/platform.js'

interface Event {
  kind: string
  at: string
  actor: string
  actor_id: string | null
  request_id: string | null
  detail: string | null
}
interface Detail {
  payment: PaymentDTO
  state: string
  user: { user_id: string; username: string; uid: string }
  from_address: string
  to_address: string
  ledger_transaction: { hash: string; ledger: string; _link: string } | null
  timeline: Event[]
  advice: { state: string; blocks_new_payment: boolean; next_call: string; sandbox_actions: string[] }
}

/**
 * The timeline says what the payment's flags say: created first; one approved event when
 * approved; one linked event (and one verified event when verified) when it has a transaction;
 * one completed event when completed; exactly one closing event (cancelled, user_cancelled or
 * expired) when cancelled; nothing after a closing event.
 */
function assertMatches(detail: Detail): void {
  const kinds = detail.timeline.map((e) => e.kind)
  const count = (kind: string) => kinds.filter((k) => k === kind).length
  const { status, transaction } = detail.payment
  const where = `${detail.payment.identifier}: ${kinds.join(', ')} vs ${JSON.stringify(status)}`
  assert.equal(kinds[0], 'created', where)
  assert.equal(count('created'), 1, where)
  assert.equal(count('approved'), status.developer_approved ? 1 : 0, where)
  assert.equal(count('transaction_linked'), transaction === null ? 0 : 1, where)
  assert.equal(count('transaction_verified'), status.transaction_verified ? 1 : 0, where)
  assert.equal(count('completed'), status.developer_completed ? 1 : 0, where)
  const closing = count('cancelled') + count('expired') + count('user_cancelled')
  assert.equal(closing, status.cancelled || status.user_cancelled ? 1 : 0, where)
  assert.equal(count('user_cancelled'), status.user_cancelled ? 1 : 0, where)
  const last = kinds[kinds.length - 1]
  if (status.developer_completed) assert.equal(last, 'completed', where)
  if (closing === 1) assert.ok(['cancelled', 'expired', 'user_cancelled'].includes(last ?? ''), where)
  // Listed in the order the moves committed (their times are each move's own stamp, which two racing
  // moves take from different clocks: the database's and the process's copy of the platform clock).
  for (const e of detail.timeline) assert.ok(Number.isFinite(Date.parse(e.at)), where)
}

describe('payment timeline', () => {
  let platform: TestPlatform
  before(async () => {
    platform = await startPlatform()
  })
  after(() => platform.close())

  const call = async (method: string, url: string, auth?: string, payload?: unknown) => {
    const response = await platform.app.inject({
      method: method as 'GET',
      url,
      headers: auth === undefined ? SANDBOX_CLIENT : { ...SANDBOX_CLIENT, authorization: auth },
      ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }),
    })
    return {
      status: response.statusCode,
      body: response.json() as Record<string, unknown>,
      requestId: String(response.headers['x-request-id']),
    }
  }
  const detail = async (appId: string, id: string) => {
    const answer = await call('GET', `/sandbox/apps/${appId}/payments/${id}`)
    assert.equal(answer.status, 200, JSON.stringify(answer.body))
    const body = answer.body as unknown as Detail
    assertMatches(body)
    return body
  }
  async function scene(scopes = ['username', 'payments', 'wallet_address']) {
    const sb = sandbox(platform.app)
    const app: SandboxApp = await sb.createApp()
    const user: SandboxUser = await sb.createUser()
    const auth = await sb.authenticate(app.app_id, user.user_id, scopes)
    return { app, user, key: `Key ${app.api_key}`, bearer: `Bearer ${auth.accessToken}`, uid: auth.user.uid }
  }

  it('records a user-to-app payment from created to completed, with who made each move and the request that did', async () => {
    const s = await scene()
    const created = await call('POST', '/v2/client/payments', s.bearer, { amount: 1, memo: 'order 7', metadata: {} })
    assert.equal(created.status, 201)
    const id = String(created.body.identifier)
    const approved = await call('POST', `/v2/payments/${id}/approve`, s.key)
    assert.equal(approved.status, 200)
    const submitted = await call('POST', `/v2/client/payments/${id}/submit`, s.bearer)
    assert.equal(submitted.status, 200, JSON.stringify(submitted.body))
    const txid = String((submitted.body.transaction as { txid: string }).txid)
    const completed = await call('POST', `/v2/payments/${id}/complete`, s.key, { txid })
    assert.equal(completed.status, 200)

    const d = await detail(s.app.app_id, id)
    assert.equal(d.state, 'completed')
    assert.deepEqual(
      d.timeline.map((e) => [e.kind, e.actor, e.actor_id, e.request_id]),
      [
        ['created', 'user', s.uid, created.requestId],
        ['approved', 'app', s.app.key_id, approved.requestId],
        ['transaction_linked', 'ledger', null, null],
        ['transaction_verified', 'ledger', null, null],
        ['completed', 'app', s.app.key_id, completed.requestId],
      ],
    )
    assert.equal(d.user.uid, s.uid)
    assert.equal(d.user.username, s.user.username)
    assert.equal(d.from_address, s.user.wallet.address)
    assert.equal(d.to_address, s.app.wallet.address)
    assert.equal(d.ledger_transaction?.hash, txid)
    assert.equal(d.ledger_transaction?._link, `http://plinth.test/ledger/transactions/${txid}`)
    assert.equal(d.advice.sandbox_actions.length, 0)

    // The request id of a move finds its call in the request log.
    const log = await call('GET', `/sandbox/apps/${s.app.app_id}/requests?route=approvePayment`)
    const entries = (log.body.requests as Array<{ request_id: string; status: number }>).filter((e) => e.request_id === approved.requestId)
    assert.equal(entries.length, 1)
    assert.equal(entries[0]?.status, 200)
  })

  it('records cancels by the app, by the user, and by a new payment of the user', async () => {
    const s = await scene()
    const create = async () =>
      String((await call('POST', '/v2/client/payments', s.bearer, { amount: 1, memo: 'm', metadata: {} })).body.identifier)
    const first = await create()
    const second = await create()
    const replaced = await detail(s.app.app_id, first)
    assert.equal(replaced.timeline.at(-1)?.kind, 'cancelled')
    assert.equal(replaced.timeline.at(-1)?.actor, 'user')
    assert.match(replaced.timeline.at(-1)?.detail ?? '', /replaced by a new payment/)
    assert.equal((await call('POST', `/v2/client/payments/${second}/cancel`, s.bearer)).status, 200)
    assert.deepEqual(
      (await detail(s.app.app_id, second)).timeline.map((e) => [e.kind, e.actor]),
      [
        ['created', 'user'],
        ['user_cancelled', 'user'],
      ],
    )
    const third = await create()
    const cancelled = await call('POST', `/v2/payments/${third}/cancel`, s.key)
    assert.equal(cancelled.status, 200)
    // A replay changes nothing and writes nothing.
    assert.equal((await call('POST', `/v2/payments/${third}/cancel`, s.key)).status, 200)
    assert.deepEqual(
      (await detail(s.app.app_id, third)).timeline.map((e) => [e.kind, e.actor, e.request_id]),
      [
        ['created', 'user', (await detail(s.app.app_id, third)).timeline[0]?.request_id ?? null],
        ['cancelled', 'app', cancelled.requestId],
      ],
    )
  })

  it('records an app-to-user payment paid from the app wallet, and a refused move writes nothing', async () => {
    const s = await scene()
    const created = await call('POST', '/v2/payments', s.key, { payment: { amount: 2, memo: 'reward', metadata: {}, uid: s.uid } })
    assert.equal(created.status, 200)
    const id = String(created.body.identifier)
    assert.equal((await call('POST', `/v2/payments/${id}/complete`, s.key, { txid: 'a'.repeat(64) })).status, 409)
    const txid = await pay(platform.app, { seed: s.app.wallet.seed, to: s.user.wallet.address, amount: '2', memo: id })
    const before = await detail(s.app.app_id, id)
    assert.equal(before.state, 'verified')
    assert.equal(before.advice.blocks_new_payment, true)
    assert.deepEqual(before.advice.sandbox_actions, ['complete'])
    assert.match(before.advice.next_call, new RegExp(`/v2/payments/${id}/complete.*${txid}`))
    // The sandbox completes it with its linked txid, as the app would.
    const done = await call('POST', `/sandbox/apps/${s.app.app_id}/payments/${id}/complete`)
    assert.equal(done.status, 200, JSON.stringify(done.body))
    const d = await detail(s.app.app_id, id)
    assert.deepEqual(
      d.timeline.map((e) => [e.kind, e.actor, e.actor_id]),
      [
        ['created', 'app', s.app.key_id],
        ['transaction_linked', 'ledger', null],
        ['transaction_verified', 'ledger', null],
        ['completed', 'sandbox', null],
      ],
    )
    assert.equal(d.timeline.at(-1)?.request_id, done.requestId)
  })

  it('shows why a user is blocked and resolves it from the sandbox', async () => {
    const s = await scene()
    const id = String((await call('POST', '/v2/client/payments', s.bearer, { amount: 1, memo: 'stuck', metadata: {} })).body.identifier)
    await call('POST', `/v2/payments/${id}/approve`, s.key)
    await call('POST', `/v2/client/payments/${id}/submit`, s.bearer)
    const refused = await call('POST', '/v2/client/payments', s.bearer, { amount: 1, memo: 'next', metadata: {} })
    assert.equal(refused.status, 409)
    assert.equal(refused.body.error, 'ongoing_payment_found')
    const blocking = await call('GET', `/sandbox/apps/${s.app.app_id}/users/${s.user.user_id}/blocking`)
    assert.equal(blocking.status, 200)
    const body = blocking.body as {
      uid: string
      blocked: { user_to_app: boolean; app_to_user: boolean }
      open_payments: Array<{ payment: PaymentDTO; advice: Detail['advice'] }>
    }
    assert.equal(body.uid, s.uid)
    assert.deepEqual(body.blocked, { user_to_app: true, app_to_user: false })
    assert.equal(body.open_payments.length, 1)
    assert.equal(body.open_payments[0]?.payment.identifier, id)
    assert.equal(body.open_payments[0]?.advice.state, 'verified')
    assert.match(body.open_payments[0]?.advice.next_call ?? '', /^POST \/v2\/payments\/.+\/complete/)
    assert.equal((await call('POST', `/sandbox/apps/${s.app.app_id}/payments/${id}/complete`)).status, 200)
    const after = await call('GET', `/sandbox/apps/${s.app.app_id}/users/${s.user.user_id}/blocking`)
    assert.deepEqual(after.body.open_payments, [])
    assert.equal((await call('POST', '/v2/client/payments', s.bearer, { amount: 1, memo: 'next', metadata: {} })).status, 201)

    // A payment created and not approved does not block (a new one replaces it); the sandbox can cancel it.
    const open = await call('GET', `/sandbox/apps/${s.app.app_id}/users/${s.user.user_id}/blocking`)
    const [pending] = open.body.open_payments as Array<{ payment: PaymentDTO; advice: Detail['advice'] }>
    assert.equal(pending?.advice.blocks_new_payment, false)
    assert.deepEqual(pending?.advice.sandbox_actions, ['cancel'])
    const cancel = await call('POST', `/sandbox/apps/${s.app.app_id}/payments/${pending?.payment.identifier}/cancel`)
    assert.equal(cancel.status, 200)
    assert.equal((await detail(s.app.app_id, String(pending?.payment.identifier))).timeline.at(-1)?.actor, 'sandbox')

    // Errors: unknown user, unknown app, another app's payment.
    assert.equal((await call('GET', `/sandbox/apps/${s.app.app_id}/users/user_nope/blocking`)).body.error, 'user_not_found')
    assert.equal((await call('GET', `/sandbox/apps/app_nope/users/${s.user.user_id}/blocking`)).body.error, 'app_not_found')
    const other = await scene()
    const foreign = await call('GET', `/sandbox/apps/${other.app.app_id}/payments/${id}`)
    assert.equal(foreign.status, 404)
    assert.equal(foreign.body.error, 'payment_not_found')
    assert.equal((await call('POST', `/sandbox/apps/${other.app.app_id}/payments/${id}/cancel`)).status, 404)
  })

  it('keeps the timeline true to the state through approve / cancel races', async () => {
    const s = await scene()
    for (let round = 0; round < 12; round++) {
      const id = String(
        (await call('POST', '/v2/client/payments', s.bearer, { amount: 1, memo: `race ${round}`, metadata: {} })).body.identifier,
      )
      const moves = [
        () => call('POST', `/v2/payments/${id}/approve`, s.key),
        () =>
          round % 2 === 0 ? call('POST', `/v2/client/payments/${id}/cancel`, s.bearer) : call('POST', `/v2/payments/${id}/cancel`, s.key),
        () => call('POST', `/v2/payments/${id}/approve`, s.key),
      ]
      const answers = await Promise.all((round % 3 === 0 ? [...moves].reverse() : moves).map((move) => move()))
      for (const answer of answers) assert.ok([200, 409].includes(answer.status), JSON.stringify(answer.body))
      await detail(s.app.app_id, id)
    }
  })
})

describe('payment timeline: the approval window', () => {
  it('records the expiry, dated when the window closed, by the approval window', async () => {
    const platform = await startPlatform()
    try {
      const sb = sandbox(platform.app)
      const app = await sb.createApp()
      const user = await sb.createUser()
      const auth = await sb.authenticate(app.app_id, user.user_id)
      const created = await platform.app.inject({
        method: 'POST',
        url: '/v2/client/payments',
        headers: { authorization: `Bearer ${auth.accessToken}` },
        payload: { amount: 1, memo: 'late', metadata: {} },
      })
      const payment = json<PaymentDTO>(created)
      await sb.advanceClock(61)
      const answer = await platform.app.inject({ method: 'GET', url: `/sandbox/apps/${app.app_id}/payments/${payment.identifier}` })
      const d = json<Detail>(answer)
      assertMatches(d)
      assert.equal(d.state, 'cancelled')
      const expired = d.timeline.at(-1)
      assert.equal(expired?.kind, 'expired')
      assert.equal(expired?.actor, 'approval_window')
      assert.equal(Date.parse(expired?.at ?? ''), Date.parse(payment.created_at) + 60_000)
      // Approving now is refused and writes nothing.
      const late = await platform.app.inject({
        method: 'POST',
        url: `/v2/payments/${payment.identifier}/approve`,
        headers: { authorization: `Key ${app.api_key}` },
      })
      assert.equal(late.statusCode, 409)
      assertMatches(
        json<Detail>(await platform.app.inject({ method: 'GET', url: `/sandbox/apps/${app.app_id}/payments/${payment.identifier}` })),
      )
    } finally {
      await platform.close()
    }
  })
})
