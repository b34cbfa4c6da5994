import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { type Kysely, sql } from 'kysely'
import type { DB } from '../../src/db/schema.js'
import { buildPayment, ledgerAccount, pay } from '../helpers/ledger.js'
import { startNodes } from '../helpers/nodes.js'
import {
  json,
  SANDBOX_CLIENT,
  type SandboxApp,
  type SandboxUser,
  sandbox,
  startPlatform,
  TEST_DB,
  type TestPlatform,
} from '../helpers/platform.js'
import { freePort, httpNode, PlinthProcess, setUpBackend, sleep } from '../helpers/server-process.js'

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
    const setup = await setUpBackend(TEST_DB)
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

/** The number each sequence hands out next, and the highest value its rows hold. */
async function sequenceState(query: <T>(text: string) => Promise<T[]>) {
  const [row] = await query<{ next_ledger: string; max_ledger: string; next_funding: string; max_funding: string }>(`
    select (select last_value + case when is_called then 1 else 0 end from ledger_numbers)::text as next_ledger,
           (select coalesce(max(ledger), 0) from ledger_transactions)::text as max_ledger,
           (select last_value + case when is_called then 1 else 0 end from ledger_fundings_id_seq)::text as next_funding,
           (select coalesce(max(id), 0) from ledger_fundings)::text as max_funding`)
  if (row === undefined) throw new Error('no sequence state')
  return {
    nextLedger: Number(row.next_ledger),
    maxLedger: Number(row.max_ledger),
    nextFunding: Number(row.next_funding),
    maxFunding: Number(row.max_funding),
  }
}

/** Every row of every platform table and every sequence's next number, read over SQL (the same as `dump` above). */
async function dumpOver(query: <T>(text: string) => Promise<T[]>): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {}
  const tables = await query<{ name: string }>(`
    select table_name as name from information_schema.tables
    where table_schema = current_schema() and table_type = 'BASE TABLE' order by 1`)
  for (const { name } of tables) {
    if (MACHINERY.test(name)) continue
    out[name] = (await query<{ row: string }>(`select to_jsonb(t)::text as row from "${name}" t order by 1`)).map((r) => r.row)
  }
  const sequences = await query<{ name: string }>(`
    select sequence_name as name from information_schema.sequences where sequence_schema = current_schema() order by 1`)
  for (const { name } of sequences) {
    if (name.startsWith('credential_events') || name.startsWith('request_log')) continue
    out[`next ${name}`] = (
      await query<{ v: string }>(`select (last_value + case when is_called then 1 else 0 end)::text as v from "${name}"`)
    ).map((r) => r.v)
  }
  out.clock_offset = (await query<{ v: string }>('select offset_ms::text as v from platform_clock')).map((r) => r.v)
  return out
}

describe('snapshots and restores under concurrent writes', () => {
  const PROCESSES = TEST_DB === 'postgres' ? 2 : 1

  it('a snapshot taken while ledger payments and fundings commit holds sequences consistent with its rows', async () => {
    const cluster = await startNodes({ processes: PROCESSES })
    try {
      const { nodes } = cluster
      const node = (i: number) => nodes[i % nodes.length] as FastifyInstance
      const receiver = (await sandbox(node(0)).createUser()).wallet.address
      const senders = await Promise.all(Array.from({ length: 4 }, () => sandbox(node(0)).createUser()))
      let writing = true
      const writes = Promise.all([
        ...senders.map(async (sender, i) => {
          while (writing) await pay(node(i), { seed: sender.wallet.seed, to: receiver, amount: '0.01' })
        }),
        (async () => {
          for (let i = 0; writing; i++) {
            const funded = await post(node(i), '/sandbox/ledger/fund', { address: receiver, amount: '1' })
            assert.equal(funded.statusCode, 200, funded.body)
          }
        })(),
      ])
      const names: string[] = []
      try {
        for (let i = 0; i < 8; i++) {
          const saved = await post(node(i + 1), '/sandbox/snapshots', { name: `busy-${i}` })
          assert.equal(saved.statusCode, 201, saved.body)
          names.push(`busy-${i}`)
        }
      } finally {
        writing = false
        await writes
      }
      for (const name of names) {
        assert.equal((await post(node(0), `/sandbox/snapshots/${name}/restore`)).statusCode, 200)
        const state = await sequenceState(cluster.query)
        assert.equal(state.nextLedger, state.maxLedger + 1, `${name}: the next ledger number follows the last restored ledger`)
        assert.equal(state.nextFunding, state.maxFunding + 1, `${name}: the next funding id follows the last restored funding`)
        const hash = await pay(node(1), { seed: (senders[0] as SandboxUser).wallet.seed, to: receiver, amount: '0.01' })
        const [row] = await cluster.query<{ ledger: string }>(
          `select ledger::text as ledger from ledger_transactions where hash = '${hash}'`,
        )
        assert.equal(Number(row?.ledger), state.maxLedger + 1, `${name}: no ledger number skipped after the restore`)
      }
    } finally {
      await cluster.close()
    }
  })

  it('a restore under ledger submits, payments, notify and user creation on every process: each request sees one world, none fails, the data is the snapshot', async () => {
    const cluster = await startNodes({ processes: PROCESSES })
    try {
      const { nodes } = cluster
      const node = (i: number) => nodes[i % nodes.length] as FastifyInstance
      const rounds = TEST_DB === 'postgres' ? 8 : 6
      for (let round = 0; round < rounds; round++) {
        // What the snapshot holds: a shop and a user the load must not touch.
        const sb = sandbox(node(round))
        await sb.createApp()
        await sb.createUser()
        assert.equal((await post(node(round), '/sandbox/snapshots', { name: 'before-load', replace: true })).statusCode, 201)
        const saved = await dumpOver(cluster.query)

        // Everything the load writes with is made after the snapshot: in the restored world it is unknown.
        const shop = await sb.createApp()
        const payer = await sb.createUser()
        const { accessToken } = await sb.authenticate(shop.app_id, payer.user_id, ['username', 'payments', 'in_app_notifications'])
        const uid = (await sb.authenticate(shop.app_id, payer.user_id, ['username'])).user.uid
        const bearer = { authorization: `Bearer ${accessToken}` }
        const key = { authorization: `Key ${shop.api_key}` }
        const senders = await Promise.all(nodes.map(() => sb.createUser()))
        const receiver = (await sb.createUser()).wallet.address

        const outcomes: Array<{ kind: string; status: number; body: string }> = []
        const created = new Set<string>()
        let done = 0
        let serving = true
        const record = <R extends { statusCode: number; body: string }>(kind: string, response: R): R => {
          outcomes.push({ kind, status: response.statusCode, body: response.body })
          if (response.statusCode < 300) done += 1
          return response
        }
        const load = Promise.all(
          nodes.flatMap((on, i) => [
            (async () => {
              const sender = senders[i] as SandboxUser
              while (serving) {
                const account = await ledgerAccount(on, sender.wallet.address)
                if (account === undefined) {
                  record('submit', { statusCode: 404, body: 'no source account' })
                  continue
                }
                const envelope = await buildPayment(on, {
                  seed: sender.wallet.seed,
                  to: receiver,
                  amount: '0.01',
                  sequence: account.sequence,
                })
                record('submit', await on.inject({ method: 'POST', url: '/ledger/transactions', payload: { tx: envelope } }))
              }
            })(),
            (async () => {
              while (serving) {
                const payment = record(
                  'create',
                  await on.inject({
                    method: 'POST',
                    url: '/v2/client/payments',
                    headers: bearer,
                    payload: { amount: 0.1, memo: 'm', metadata: {} },
                  }),
                )
                if (payment.statusCode !== 201) continue
                const id = json<{ identifier: string }>(payment).identifier
                record('approve', await on.inject({ method: 'POST', url: `/v2/payments/${id}/approve`, headers: key }))
                const submitted = record(
                  'pay',
                  await on.inject({ method: 'POST', url: `/v2/client/payments/${id}/submit`, headers: bearer }),
                )
                if (submitted.statusCode !== 200) continue
                const txid = json<{ transaction: { txid: string } }>(submitted).transaction.txid
                record('complete', await on.inject({ method: 'POST', url: `/v2/payments/${id}/complete`, headers: key, payload: { txid } }))
              }
            })(),
            (async () => {
              while (serving) {
                record(
                  'notify',
                  await on.inject({
                    method: 'POST',
                    url: '/v2/in_app_notifications/notify',
                    headers: key,
                    payload: { notifications: [{ title: 't', body: 'b', user_uid: uid, subroute: '/x' }] },
                  }),
                )
              }
            })(),
            (async () => {
              for (let n = 0; serving; n++) {
                const username = `load${round}x${i}x${n}x${Math.random().toString(36).slice(2, 8)}`
                const user = record('user', await on.inject({ method: 'POST', url: '/sandbox/users', payload: { username } }))
                if (user.statusCode === 201) created.add(json<{ user_id: string }>(user).user_id)
              }
            })(),
          ]),
        )
        try {
          // The restore lands in the middle of the load: once every kind of write has gone through a few times.
          for (let i = 0; i < 1000 && done < 40 * nodes.length; i++) await sleep(10)
          const restored = await post(node(round + 1), '/sandbox/snapshots/before-load/restore')
          assert.equal(restored.statusCode, 200, restored.body)
        } finally {
          serving = false
          await load
        }

        const failed = outcomes.filter((o) => o.status >= 500 && !(o.status === 503 && /reset or a snapshot was restored/.test(o.body)))
        assert.deepEqual(failed, [], `round ${round}: no request fails`)
        for (const kind of ['submit', 'create', 'notify', 'user'])
          assert.ok(
            outcomes.some((o) => o.kind === kind && o.status < 300),
            `round ${round}: some ${kind} went through`,
          )

        // Requests still running when the restore answered see the new world: there, only user creation can succeed.
        const now = await dumpOver(cluster.query)
        const ids = [...created]
        const users =
          ids.length === 0
            ? []
            : await cluster.query<{ id: string; address: string }>(
                `select id, wallet_address as address from users where id in (${ids.map((id) => `'${id}'`).join(',')})`,
              )
        const addresses = users.map((u) => u.address)
        const marks = [...users.map((u) => u.id), ...addresses]
        for (const [table, rows] of Object.entries(now)) {
          if (table.startsWith('next ')) continue
          const before = new Set(saved[table] ?? [])
          const extra = rows.filter((row) => !before.has(row) && !marks.some((mark) => row.includes(mark)))
          assert.deepEqual(
            extra,
            [],
            `round ${round}: ${table} holds only the snapshot's rows and those of users created after the restore`,
          )
          const kept2 = new Set(rows)
          assert.deepEqual(
            (saved[table] ?? []).filter((row) => !kept2.has(row)),
            [],
            `round ${round}: ${table} keeps every row of the snapshot`,
          )
        }
        // Sequences: as saved, but for the fundings of users created in the new world (then it follows their rows).
        const state = await sequenceState(cluster.query)
        for (const [name, value] of Object.entries(now)) {
          if (!name.startsWith('next ')) continue
          if (name === 'next ledger_fundings_id_seq' && addresses.length > 0) {
            assert.equal(state.nextFunding, state.maxFunding + 1, `round ${round}: the next funding follows the last`)
          } else {
            assert.deepEqual(value, saved[name], `round ${round}: ${name} as saved`)
          }
        }
        assert.equal(state.nextLedger, state.maxLedger + 1, `round ${round}: the next ledger follows the last`)
      }
    } finally {
      await cluster.close()
    }
  })
})
