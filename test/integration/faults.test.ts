import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { fetch as undiciFetch } from 'undici'
import { startNodes } from '../helpers/nodes.js'
import { type PiBackend, PiNetwork, redirectPiBackendHorizon } from '../helpers/pi-backend.js'
import { json, SANDBOX_CLIENT, type SandboxApp, sandbox, startPlatform, TEST_DB, type TestPlatform } from '../helpers/platform.js'

interface FaultDto {
  id: string
  app_id: string
  match: { route?: string; operation_id?: string; user_uid?: string }
  effect: Record<string, unknown>
  when: 'before' | 'after'
  times_left: number | null
  probability: number
  created_at: string
}

async function createFault(app: FastifyInstance, payload: Record<string, unknown>): Promise<FaultDto> {
  const response = await app.inject({ method: 'POST', url: '/sandbox/faults', payload })
  assert.equal(response.statusCode, 201, response.body)
  return json<FaultDto>(response)
}

const me = (app: FastifyInstance, token: string) =>
  app.inject({ method: 'GET', url: '/v2/me', headers: { authorization: `Bearer ${token}` } })

describe('fault injection', () => {
  let platform: TestPlatform
  let base: string
  let shop: SandboxApp
  let alice: { token: string; uid: string }
  let bob: { token: string; uid: string }
  let restoreHorizon: () => void = () => {}

  before(async () => {
    platform = await startPlatform()
    await platform.app.listen({ port: 0, host: '127.0.0.1' })
    base = `http://127.0.0.1:${(platform.app.server.address() as AddressInfo).port}`
    restoreHorizon = redirectPiBackendHorizon(base)
    const sb = sandbox(platform.app)
    shop = await sb.createApp()
    for (const who of ['alice', 'bob'] as const) {
      const user = await sb.createUser()
      const auth = await sb.authenticate(shop.app_id, user.user_id, ['username', 'payments'])
      const entry = { token: auth.accessToken, uid: auth.user.uid }
      if (who === 'alice') alice = entry
      else bob = entry
    }
  })
  after(async () => {
    restoreHorizon()
    await platform.close()
  })

  it('a status by route, for the next N calls, with Retry-After and the platform error shape; then the call works again', async () => {
    const fault = await createFault(platform.app, {
      app_id: shop.app_id,
      match: { route: 'GET /v2/me' },
      effect: { status: 503, retry_after_seconds: 7 },
      times: 2,
    })
    assert.equal(fault.times_left, 2)
    assert.equal(fault.when, 'before')
    assert.equal(fault.probability, 1)
    for (let i = 0; i < 2; i++) {
      const response = await undiciFetch(`${base}/v2/me`, { headers: { authorization: `Bearer ${alice.token}` } })
      assert.equal(response.status, 503)
      assert.equal(response.headers.get('retry-after'), '7')
      const body = (await response.json()) as { error: string; error_message: string }
      assert.equal(body.error, 'injected_fault')
      assert.match(body.error_message, new RegExp(fault.id))
    }
    assert.equal((await me(platform.app, alice.token)).statusCode, 200)
    const listed = json<{ faults: FaultDto[] }>(await platform.app.inject({ method: 'GET', url: `/sandbox/faults?app_id=${shop.app_id}` }))
    assert.equal(listed.faults.find((f) => f.id === fault.id)?.times_left, 0)
  })

  it('by operationId, before the handler: a faulted approve changes nothing', async () => {
    const created = await platform.app.inject({
      method: 'POST',
      url: '/v2/client/payments',
      headers: { authorization: `Bearer ${alice.token}` },
      payload: { amount: 1, memo: 'before', metadata: {} },
    })
    assert.equal(created.statusCode, 201, created.body)
    const id = json<{ identifier: string }>(created).identifier
    await createFault(platform.app, { app_id: shop.app_id, match: { operation_id: 'approvePayment' }, effect: { status: 500 }, times: 1 })
    const key = { authorization: `Key ${shop.api_key}` }
    const approve = await platform.app.inject({ method: 'POST', url: `/v2/payments/${id}/approve`, headers: key })
    assert.equal(approve.statusCode, 500)
    assert.equal(json(approve).error, 'injected_fault')
    const read = json<{ status: { developer_approved: boolean } }>(
      await platform.app.inject({ method: 'GET', url: `/v2/payments/${id}`, headers: key }),
    )
    assert.equal(read.status.developer_approved, false)
    // The retry the app should make succeeds.
    assert.equal((await platform.app.inject({ method: 'POST', url: `/v2/payments/${id}/approve`, headers: key })).statusCode, 200)
    await platform.app.inject({ method: 'POST', url: `/v2/payments/${id}/cancel`, headers: key })
  })

  it('after the handler: approve answers 500 though the payment was approved (the live platform problem)', async () => {
    const created = await platform.app.inject({
      method: 'POST',
      url: '/v2/client/payments',
      headers: { authorization: `Bearer ${bob.token}` },
      payload: { amount: 1, memo: 'after', metadata: {} },
    })
    const id = json<{ identifier: string }>(created).identifier
    await createFault(platform.app, {
      app_id: shop.app_id,
      match: { route: 'POST /v2/payments/{payment_id}/approve' },
      effect: { status: 502 },
      when: 'after',
      times: 1,
    })
    const key = { authorization: `Key ${shop.api_key}` }
    const approve = await platform.app.inject({ method: 'POST', url: `/v2/payments/${id}/approve`, headers: key })
    assert.equal(approve.statusCode, 502)
    assert.equal(json(approve).error, 'injected_fault')
    const read = json<{ status: { developer_approved: boolean } }>(
      await platform.app.inject({ method: 'GET', url: `/v2/payments/${id}`, headers: key }),
    )
    assert.equal(read.status.developer_approved, true)
    await platform.app.inject({ method: 'POST', url: `/v2/payments/${id}/cancel`, headers: key })
  })

  it('by user: only that user’s calls fail (429 with Retry-After 1 by default)', async () => {
    const fault = await createFault(platform.app, { app_id: shop.app_id, match: { user_uid: alice.uid }, effect: { status: 429 } })
    const alices = await me(platform.app, alice.token)
    assert.equal(alices.statusCode, 429)
    assert.equal(alices.headers['retry-after'], '1')
    assert.equal((await me(platform.app, bob.token)).statusCode, 200)
    assert.equal(
      (await platform.app.inject({ method: 'DELETE', url: `/sandbox/faults/${fault.id}`, headers: SANDBOX_CLIENT })).statusCode,
      204,
    )
    assert.equal((await me(platform.app, alice.token)).statusCode, 200)
  })

  it('a delay delays and then serves the call', async () => {
    const fault = await createFault(platform.app, {
      app_id: shop.app_id,
      match: { route: 'GET /v2/me' },
      effect: { delay_ms: 200 },
      times: 1,
    })
    const response = await me(platform.app, alice.token)
    assert.equal(response.statusCode, 200)
    assert.equal(json(response).uid, alice.uid)
    const listed = json<{ faults: FaultDto[] }>(await platform.app.inject({ method: 'GET', url: `/sandbox/faults?app_id=${shop.app_id}` }))
    assert.equal(listed.faults.find((f) => f.id === fault.id)?.times_left, 0)
  })

  it('a drop closes the connection without an answer: undici sees a socket error', async () => {
    for (const when of ['before', 'after'] as const) {
      await createFault(platform.app, { app_id: shop.app_id, match: { route: 'GET /v2/me' }, effect: { drop: true }, when, times: 1 })
      await assert.rejects(
        undiciFetch(`${base}/v2/me`, { headers: { authorization: `Bearer ${alice.token}` } }),
        (error: Error & { cause?: { code?: string } }) => {
          assert.equal(error.name, 'TypeError')
          assert.equal(error.cause?.code, 'UND_ERR_SOCKET')
          return true
        },
      )
      const next = await undiciFetch(`${base}/v2/me`, { headers: { authorization: `Bearer ${alice.token}` } })
      assert.equal(next.status, 200)
    }
  })

  it('probability is roughly honoured over many calls', async () => {
    await createFault(platform.app, { app_id: shop.app_id, match: { route: 'GET /v2/me' }, effect: { status: 500 }, probability: 0.5 })
    let failed = 0
    const calls = 400
    for (let i = 0; i < calls; i++) if ((await me(platform.app, bob.token)).statusCode === 500) failed += 1
    // Binomial(400, 0.5): mean 200, standard deviation 10; these bounds are 8 deviations out.
    assert.ok(failed > 120 && failed < 280, `${failed} of ${calls} failed`)
    assert.equal(
      (await platform.app.inject({ method: 'DELETE', url: `/sandbox/faults?app_id=${shop.app_id}`, headers: SANDBOX_CLIENT })).statusCode,
      204,
    )
    assert.deepEqual(json(await platform.app.inject({ method: 'GET', url: `/sandbox/faults?app_id=${shop.app_id}` })).faults, [])
    assert.equal((await me(platform.app, bob.token)).statusCode, 200)
  })

  it('another app’s calls are never faulted', async () => {
    const other = await sandbox(platform.app).createApp()
    await createFault(platform.app, { app_id: other.app_id, effect: { status: 500 } })
    assert.equal((await me(platform.app, alice.token)).statusCode, 200)
    await platform.app.inject({ method: 'DELETE', url: `/sandbox/faults?app_id=${other.app_id}`, headers: SANDBOX_CLIENT })
  })

  it('pi-backend surfaces an injected 500 of createPayment and of completePayment (after: completed anyway)', async () => {
    const pi: PiBackend<{ status: { developer_completed: boolean } }> = new PiNetwork(shop.api_key, shop.wallet.seed, { baseUrl: base })
    const sb = sandbox(platform.app)
    const payee = await sb.createUser()
    const uid = (await sb.authenticate(shop.app_id, payee.user_id, ['username', 'payments', 'wallet_address'])).user.uid
    await createFault(platform.app, { app_id: shop.app_id, match: { operation_id: 'createPayment' }, effect: { status: 500 }, times: 1 })
    await assert.rejects(pi.createPayment({ amount: 1, memo: 'r', metadata: {}, uid }), (error: { response?: { status?: number } }) => {
      assert.equal(error.response?.status, 500)
      return true
    })
    const id = await pi.createPayment({ amount: 1, memo: 'r', metadata: {}, uid })
    const txid = await pi.submitPayment(id)
    await createFault(platform.app, {
      app_id: shop.app_id,
      match: { operation_id: 'completePayment' },
      effect: { status: 500 },
      when: 'after',
      times: 1,
    })
    await assert.rejects(pi.completePayment(id, txid), (error: { response?: { status?: number; data?: { error?: string } } }) => {
      assert.equal(error.response?.status, 500)
      assert.equal(error.response?.data?.error, 'injected_fault')
      return true
    })
    const read = await pi.getPayment(id)
    assert.equal(read.status.developer_completed, true)
  })

  it('refuses bad faults with 400, unknown apps and faults with 404', async () => {
    const bad: Array<Record<string, unknown>> = [
      { app_id: shop.app_id, match: { route: 'GET /v2/nowhere' }, effect: { status: 500 } },
      { app_id: shop.app_id, match: { route: 'GET /sandbox/clock' }, effect: { status: 500 } },
      { app_id: shop.app_id, match: { operation_id: 'sandboxReset' }, effect: { status: 500 } },
      { app_id: shop.app_id, effect: { status: 404 } },
      { app_id: shop.app_id, effect: { delay_ms: 30_001 } },
      { app_id: shop.app_id, effect: { drop: false } },
      { app_id: shop.app_id, effect: { status: 500 }, probability: 0 },
      { app_id: shop.app_id, effect: { status: 500 }, times: 0 },
      { app_id: shop.app_id, effect: { status: 500, delay_ms: 5 } },
      { app_id: shop.app_id, effect: { status: 500 }, when: 'during' },
    ]
    for (const payload of bad) {
      const response = await platform.app.inject({ method: 'POST', url: '/sandbox/faults', payload })
      assert.equal(response.statusCode, 400, JSON.stringify(payload))
      assert.equal(json(response).error, 'invalid_arguments')
    }
    const unknownApp = await platform.app.inject({
      method: 'POST',
      url: '/sandbox/faults',
      payload: { app_id: 'app_nope', effect: { status: 500 } },
    })
    assert.equal(unknownApp.statusCode, 404)
    assert.equal(json(unknownApp).error, 'app_not_found')
    const unknownFault = await platform.app.inject({ method: 'DELETE', url: '/sandbox/faults/flt_nope', headers: SANDBOX_CLIENT })
    assert.equal(unknownFault.statusCode, 404)
    assert.equal(json(unknownFault).error, 'fault_not_found')
  })
})

describe('fault injection in production mode', () => {
  it('has no /sandbox/faults routes', async () => {
    const platform = await startPlatform({ mode: 'production' })
    try {
      for (const [method, url] of [
        ['POST', '/sandbox/faults'],
        ['GET', '/sandbox/faults'],
        ['DELETE', '/sandbox/faults/flt_x'],
      ] as const) {
        assert.equal((await platform.app.inject({ method, url, payload: method === 'POST' ? {} : undefined })).statusCode, 404)
      }
    } finally {
      await platform.close()
    }
  })
})

describe('fault injection across processes', { skip: TEST_DB !== 'postgres' && 'three processes need PostgreSQL' }, () => {
  it('a fault made on one process holds on every other at once, its count is exact under concurrency, and a delete holds at once', async () => {
    const cluster = await startNodes({ processes: 3 })
    try {
      const [first, second, third] = cluster.nodes
      assert.ok(first !== undefined && second !== undefined && third !== undefined)
      const sb = sandbox(first)
      const app = await sb.createApp()
      const user = await sb.createUser()
      const { accessToken } = await sb.authenticate(app.app_id, user.user_id)
      for (let round = 0; round < 8; round++) {
        const maker = cluster.nodes[round % 3] as FastifyInstance
        const times = 5 + round * 3
        const fault = await createFault(maker, { app_id: app.app_id, match: { route: 'GET /v2/me' }, effect: { status: 503 }, times })
        // Right after the answer, the first call on every process is faulted.
        for (const node of cluster.nodes) assert.equal((await me(node, accessToken)).statusCode, 503, `round ${round}`)
        const statuses = await Promise.all(Array.from({ length: 60 }, (_, i) => me(cluster.nodes[i % 3] as FastifyInstance, accessToken)))
        const faulted = statuses.filter((r) => r.statusCode === 503).length
        assert.equal(faulted, times - 3, `round ${round}: ${faulted} calls faulted of ${times - 3} left`)
        assert.ok(statuses.every((r) => r.statusCode === 503 || r.statusCode === 200))

        const forever = await createFault(maker, { app_id: app.app_id, match: { route: 'GET /v2/me' }, effect: { status: 500 } })
        for (const node of cluster.nodes) assert.equal((await me(node, accessToken)).statusCode, 500)
        const deleter = cluster.nodes[(round + 1) % 3] as FastifyInstance
        assert.equal(
          (await deleter.inject({ method: 'DELETE', url: `/sandbox/faults/${forever.id}`, headers: SANDBOX_CLIENT })).statusCode,
          204,
        )
        for (const node of cluster.nodes) assert.equal((await me(node, accessToken)).statusCode, 200, `round ${round}: deleted`)
        await deleter.inject({ method: 'DELETE', url: `/sandbox/faults/${fault.id}`, headers: SANDBOX_CLIENT })
      }
    } finally {
      await cluster.close()
    }
  })
})
