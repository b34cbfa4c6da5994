import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { type Kysely, sql } from 'kysely'
import type { DB } from '../../src/db/schema.js'
import { startNodes } from '../helpers/nodes.js'
import { json, SANDBOX_CLIENT, type SandboxApp, sandbox, startPlatform, TEST_DB, type TestPlatform } from '../helpers/platform.js'
import { freePort, httpNode, PlinthProcess, setUpBackend } from '../helpers/server-process.js'

/** Tables that are the sandbox's machinery, not the platform's state (the request log is the record of calls: kept, checked apart). */
const MACHINERY = /^(kysely_|sandbox_)|^credential_events$|^platform_clock$|^request_log$/

/** Every row of every platform table, and the sequences: what a round trip must give back exactly. */
async function dump(db: Kysely<DB>): Promise<Record<string, string[]>> {
  const tables = await sql<{ name: string }>`
    select table_name as name from information_schema.tables
    where table_schema = current_schema() and table_type = 'BASE TABLE' order by 1`.execute(db)
  const out: Record<string, string[]> = {}
  for (const { name } of tables.rows) {
    if (MACHINERY.test(name)) continue
    const rows = await sql<{ row: string }>`select to_jsonb(t)::text as row from ${sql.table(name)} t order by 1`.execute(db)
    out[name] = rows.rows.map((r) => r.row)
  }
  for (const sequence of ['ledger_numbers', 'ledger_fundings_id_seq']) {
    // The number the sequence hands out next.
    const rows = await sql<{
      v: string
    }>`select (last_value + case when is_called then 1 else 0 end)::text as v from ${sql.table(sequence)}`.execute(db)
    out[`next ${sequence}`] = rows.rows.map((r) => r.v)
  }
  const clock = await sql<{ v: string }>`select offset_ms::text as v from platform_clock`.execute(db)
  out.clock_offset = clock.rows.map((r) => r.v)
  return out
}

/** A user-to-app payment carried to the ledger and completed: answers its id and ledger number. */
async function paidPayment(app: FastifyInstance, db: Kysely<DB>, shop: SandboxApp, token: string): Promise<{ id: string; ledger: number }> {
  const bearer = { authorization: `Bearer ${token}` }
  const key = { authorization: `Key ${shop.api_key}` }
  const created = await app.inject({
    method: 'POST',
    url: '/v2/client/payments',
    headers: bearer,
    payload: { amount: 1.5, memo: 'm', metadata: {} },
  })
  assert.equal(created.statusCode, 201, created.body)
  const id = json<{ identifier: string }>(created).identifier
  assert.equal((await app.inject({ method: 'POST', url: `/v2/payments/${id}/approve`, headers: key })).statusCode, 200)
  const submitted = await app.inject({ method: 'POST', url: `/v2/client/payments/${id}/submit`, headers: bearer })
  assert.equal(submitted.statusCode, 200, submitted.body)
  const txid = json<{ transaction: { txid: string } }>(submitted).transaction.txid
  const completed = await app.inject({ method: 'POST', url: `/v2/payments/${id}/complete`, headers: key, payload: { txid } })
  assert.equal(completed.statusCode, 200, completed.body)
  const row = await db.selectFrom('ledger_transactions').select('ledger').where('hash', '=', txid).executeTakeFirstOrThrow()
  return { id, ledger: Number(row.ledger) }
}

const post = (app: FastifyInstance, url: string, payload?: unknown) =>
  app.inject({
    method: 'POST',
    url,
    headers: SANDBOX_CLIENT,
    ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }),
  })

describe('reset and snapshots', () => {
  let platform: TestPlatform
  before(async () => {
    platform = await startPlatform()
  })
  after(async () => {
    await platform.close()
  })

  async function shopWithUser() {
    const sb = sandbox(platform.app)
    const shop = await sb.createApp()
    const user = await sb.createUser()
    const auth = await sb.authenticate(shop.app_id, user.user_id, ['username', 'payments'])
    return { shop, user, token: auth.accessToken }
  }

  it('reset to empty: no data left, old credentials refused, ledger numbers from 1, the clock on real time', async () => {
    const { shop, token } = await shopWithUser()
    await paidPayment(platform.app, platform.db, shop, token)
    await sandbox(platform.app).advanceClock(86_400)

    const reset = await post(platform.app, '/sandbox/reset', { seed: 'empty' })
    assert.equal(reset.statusCode, 200, reset.body)
    const body = json<{ seed: string; took_ms: number; demo?: unknown }>(reset)
    assert.equal(body.seed, 'empty')
    assert.equal(typeof body.took_ms, 'number')
    assert.equal(body.demo, undefined)

    for (const [table, rows] of Object.entries(await dump(platform.db))) {
      if (table.startsWith('next') || table === 'clock_offset') continue
      assert.deepEqual(rows, [], `${table} is empty`)
    }
    // The request log keeps the calls made before the reset (written from a buffer, maybe after it).
    let logged = 0
    for (let i = 0; i < 100 && logged === 0; i++) {
      logged = Number((await sql<{ n: string }>`select count(*)::text as n from request_log`.execute(platform.db)).rows[0]?.n)
      if (logged === 0) await new Promise((resolve) => setTimeout(resolve, 50))
    }
    assert.ok(logged > 0, 'the calls made before the reset are still in the request log')
    assert.deepEqual((await dump(platform.db)).clock_offset, ['0'])
    assert.equal(
      (await platform.app.inject({ method: 'GET', url: '/v2/me', headers: { authorization: `Bearer ${token}` } })).statusCode,
      401,
    )
    const keyCall = await platform.app.inject({
      method: 'GET',
      url: '/v2/payments/incomplete_server_payments',
      headers: { authorization: `Key ${shop.api_key}` },
    })
    assert.equal(keyCall.statusCode, 401)

    const again = await shopWithUser()
    assert.equal((await paidPayment(platform.app, platform.db, again.shop, again.token)).ledger, 1)
  })

  it('reset with no body seeds the demo, as a sandbox start does; its new key works', async () => {
    const reset = await platform.app.inject({ method: 'POST', url: '/sandbox/reset', headers: SANDBOX_CLIENT })
    assert.equal(reset.statusCode, 200, reset.body)
    const body = json<{ seed: string; demo: { app_id: string; api_key: string; username: string } }>(reset)
    assert.equal(body.seed, 'demo')
    assert.equal(body.demo.username, 'demo_pioneer')
    const apps = await platform.db.selectFrom('apps').select(['id', 'name']).execute()
    assert.deepEqual(apps, [{ id: body.demo.app_id, name: 'Plinth Demo' }])
    const keyCall = await platform.app.inject({
      method: 'GET',
      url: '/v2/payments/incomplete_server_payments',
      headers: { authorization: `Key ${body.demo.api_key}` },
    })
    assert.equal(keyCall.statusCode, 200)
    const wrong = await post(platform.app, '/sandbox/reset', { seed: 'full' })
    assert.equal(wrong.statusCode, 400)
    assert.equal(json(wrong).error, 'invalid_arguments')
  })

  it('a snapshot round trip gives every table back, ledger numbers and balances included; payments continue after it', async () => {
    await post(platform.app, '/sandbox/reset', { seed: 'empty' })
    const { shop, token } = await shopWithUser()
    const first = await paidPayment(platform.app, platform.db, shop, token)
    await paidPayment(platform.app, platform.db, shop, token)
    await sandbox(platform.app).advanceClock(600)
    const saved = await post(platform.app, '/sandbox/snapshots', { name: 'base' })
    assert.equal(saved.statusCode, 201, saved.body)
    const savedBody = json<{ name: string; created_at: string; bytes: number; took_ms: number }>(saved)
    assert.equal(savedBody.name, 'base')
    assert.ok(savedBody.bytes > 0)
    const before = await dump(platform.db)

    // Change everything: more payments, another app, then an empty platform.
    const later = await shopWithUser()
    await paidPayment(platform.app, platform.db, later.shop, later.token)
    await post(platform.app, '/sandbox/reset', { seed: 'empty' })

    const restored = await post(platform.app, '/sandbox/snapshots/base/restore')
    assert.equal(restored.statusCode, 200, restored.body)
    assert.equal(json(restored).name, 'base')
    assert.deepEqual(await dump(platform.db), before)

    // Credentials saved with the snapshot work again; those made after it do not exist.
    assert.equal(
      (await platform.app.inject({ method: 'GET', url: '/v2/me', headers: { authorization: `Bearer ${token}` } })).statusCode,
      200,
    )
    assert.equal(
      (await platform.app.inject({ method: 'GET', url: '/v2/me', headers: { authorization: `Bearer ${later.token}` } })).statusCode,
      401,
    )
    const next = await paidPayment(platform.app, platform.db, shop, token)
    assert.equal(next.ledger, first.ledger + 2)
    const ids = await platform.db.selectFrom('payments').select('identifier').execute()
    assert.equal(new Set(ids.map((r) => r.identifier)).size, 3)
  })

  it('lists, refuses a taken name unless replace, deletes; unknown is 404, bad names 400; at most 20', async () => {
    const listed = json<{ snapshots: Array<{ name: string; created_at: string; bytes: number }> }>(
      await platform.app.inject({ method: 'GET', url: '/sandbox/snapshots' }),
    )
    assert.deepEqual(
      listed.snapshots.map((s) => s.name),
      ['base'],
    )
    const taken = await post(platform.app, '/sandbox/snapshots', { name: 'base' })
    assert.equal(taken.statusCode, 409)
    assert.equal(json(taken).error, 'snapshot_exists')
    assert.equal((await post(platform.app, '/sandbox/snapshots', { name: 'base', replace: true })).statusCode, 201)

    const unknown = await post(platform.app, '/sandbox/snapshots/nope/restore')
    assert.equal(unknown.statusCode, 404)
    assert.equal(json(unknown).error, 'snapshot_not_found')
    assert.equal((await platform.app.inject({ method: 'DELETE', url: '/sandbox/snapshots/nope', headers: SANDBOX_CLIENT })).statusCode, 404)

    for (const name of ['Base', '-x', '_x', 'a'.repeat(64), 'a.b', 'a b', '', 'é']) {
      const response = await post(platform.app, '/sandbox/snapshots', { name })
      assert.equal(response.statusCode, 400, name)
      assert.equal(json(response).error, 'invalid_arguments')
    }
    assert.equal((await post(platform.app, `/sandbox/snapshots/${encodeURIComponent('A.b')}/restore`)).statusCode, 400)

    for (let i = 1; i < 20; i++) assert.equal((await post(platform.app, '/sandbox/snapshots', { name: `s${i}` })).statusCode, 201)
    const full = await post(platform.app, '/sandbox/snapshots', { name: 'one-more' })
    assert.equal(full.statusCode, 409)
    assert.equal(json(full).error, 'too_many_snapshots')
    for (let i = 1; i < 20; i++)
      assert.equal(
        (await platform.app.inject({ method: 'DELETE', url: `/sandbox/snapshots/s${i}`, headers: SANDBOX_CLIENT })).statusCode,
        204,
      )
    assert.equal((await platform.app.inject({ method: 'DELETE', url: '/sandbox/snapshots/base', headers: SANDBOX_CLIENT })).statusCode, 204)
    assert.deepEqual(json(await platform.app.inject({ method: 'GET', url: '/sandbox/snapshots' })).snapshots, [])
  })

  it('a reset clears faults; a snapshot does not keep them', async () => {
    const { shop } = await shopWithUser()
    const fault = await post(platform.app, '/sandbox/faults', { app_id: shop.app_id, effect: { status: 500 } })
    assert.equal(fault.statusCode, 201)
    await post(platform.app, '/sandbox/reset', { seed: 'empty' })
    assert.deepEqual(json(await platform.app.inject({ method: 'GET', url: '/sandbox/faults' })).faults, [])
  })
})

describe('reset and snapshots in production mode', () => {
  it('are absent', async () => {
    const platform = await startPlatform({ mode: 'production' })
    try {
      for (const [method, url] of [
        ['POST', '/sandbox/reset'],
        ['GET', '/sandbox/snapshots'],
        ['POST', '/sandbox/snapshots'],
        ['POST', '/sandbox/snapshots/base/restore'],
        ['DELETE', '/sandbox/snapshots/base'],
      ] as const) {
        assert.equal((await platform.app.inject({ method, url })).statusCode, 404, `${method} ${url}`)
      }
    } finally {
      await platform.close()
    }
  })
})

describe('snapshots survive a restart', () => {
  it(`on ${TEST_DB === 'postgres' ? 'PostgreSQL' : 'a PGlite data directory'}`, async () => {
    const setup = setUpBackend(TEST_DB)
    try {
      let { server } = await PlinthProcess.start(await freePort(), setup.env)
      let node = httpNode(server.base)
      const shop = await sandbox(node).createApp()
      assert.equal((await post(node, '/sandbox/snapshots', { name: 'kept' })).statusCode, 201)
      await post(node, '/sandbox/reset', { seed: 'empty' })
      await server.stop()
      ;({ server } = await PlinthProcess.start(await freePort(), setup.env))
      node = httpNode(server.base)
      try {
        assert.deepEqual(
          json<{ snapshots: Array<{ name: string }> }>(await node.inject({ method: 'GET', url: '/sandbox/snapshots' })).snapshots.map(
            (s) => s.name,
          ),
          ['kept'],
        )
        assert.equal((await post(node, '/sandbox/snapshots/kept/restore')).statusCode, 200)
        const keyCall = await node.inject({
          method: 'GET',
          url: '/v2/payments/incomplete_server_payments',
          headers: { authorization: `Key ${shop.api_key}` },
        })
        assert.equal(keyCall.statusCode, 200)
      } finally {
        await server.stop()
      }
    } finally {
      await setup.cleanup()
    }
  })
})

describe('reset and restore across processes', { skip: TEST_DB !== 'postgres' && 'three processes need PostgreSQL' }, () => {
  it('credentials issued before are refused on every process the moment a reset or restore answers; requests meanwhile see one world', async () => {
    const cluster = await startNodes({ processes: 3 })
    try {
      const { nodes } = cluster
      const anyNode = (i: number) => nodes[i % nodes.length] as FastifyInstance
      await post(anyNode(0), '/sandbox/reset', { seed: 'empty' })
      assert.equal((await post(anyNode(0), '/sandbox/snapshots', { name: 'empty', replace: true })).statusCode, 201)
      for (let round = 0; round < 12; round++) {
        const sb = sandbox(anyNode(round))
        const shop = await sb.createApp()
        const user = await sb.createUser()
        const { accessToken } = await sb.authenticate(shop.app_id, user.user_id)
        const bearer = { authorization: `Bearer ${accessToken}` }
        const key = { authorization: `Key ${shop.api_key}` }
        // Cached on every process.
        for (const node of nodes) {
          assert.equal((await node.inject({ method: 'GET', url: '/v2/me', headers: bearer })).statusCode, 200)
          assert.equal((await node.inject({ method: 'GET', url: '/v2/payments/incomplete_server_payments', headers: key })).statusCode, 200)
        }
        let serving = true
        const statuses: number[] = []
        const load = Promise.all(
          nodes.map(async (node) => {
            while (serving) statuses.push((await node.inject({ method: 'GET', url: '/v2/me', headers: bearer })).statusCode)
          }),
        )
        const replaced =
          round % 2 === 0
            ? await post(anyNode(round + 1), '/sandbox/reset', { seed: round % 4 === 0 ? 'empty' : 'demo' })
            : await post(anyNode(round + 1), '/sandbox/snapshots/empty/restore')
        assert.equal(replaced.statusCode, 200, replaced.body)
        const right = await Promise.all(
          nodes.flatMap((node) => [
            node.inject({ method: 'GET', url: '/v2/me', headers: bearer }),
            node.inject({ method: 'GET', url: '/v2/payments/incomplete_server_payments', headers: key }),
          ]),
        )
        serving = false
        await load
        assert.deepEqual(
          right.map((r) => r.statusCode),
          [401, 401, 401, 401, 401, 401],
          `round ${round}`,
        )
        assert.ok(
          statuses.every((s) => s === 200 || s === 401),
          `round ${round}: ${statuses.filter((s) => s !== 200 && s !== 401).join(',')}`,
        )
      }
    } finally {
      await cluster.close()
    }
  })
})
