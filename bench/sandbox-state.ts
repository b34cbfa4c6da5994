/**
 * Reset, snapshot and fault-injection costs (docs/testing.md): `node --import tsx bench/sandbox-state.ts`
 * (PGlite in memory), or with `DATABASE_URL=postgres://…` (a schema of its own, dropped after).
 *
 * - reset and restore times on the seeded platform (the demo only) and on one with PAYMENTS
 *   completed user-to-app payments (each with its ledger transaction);
 * - GET /v2/me, one cached token, through a sandbox-mode app (fault check on every call, no faults
 *   defined) and a production-mode app over the same database, side by side, autocannon.
 */
import type { AddressInfo } from 'node:net'
import autocannon from 'autocannon'
import type { FastifyInstance } from 'fastify'
import { buildApp } from '../src/app.js'

const PAYMENTS = Number(process.env.PAYMENTS ?? 1000)
const SECONDS = Number(process.env.SECONDS ?? 5)

process.env.PLINTH_TEST_DB = process.env.DATABASE_URL === undefined ? 'pglite' : 'postgres'
const { startPlatform, sandbox } = await import('../test/helpers/platform.js')

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN

async function timed(app: FastifyInstance, url: string, payload?: Record<string, unknown>): Promise<number> {
  const response = await app.inject({
    method: 'POST',
    url,
    headers: { 'x-plinth-client': 'bench' },
    ...(payload === undefined ? {} : { payload }),
  })
  if (response.statusCode >= 300) throw new Error(`${url}: ${response.statusCode} ${response.body}`)
  return (response.json() as { took_ms: number }).took_ms
}

async function fill(app: FastifyInstance, count: number): Promise<void> {
  const sb = sandbox(app)
  const shop = await sb.createApp()
  const user = await sb.createUser()
  const { accessToken } = await sb.authenticate(shop.app_id, user.user_id, ['username', 'payments'])
  const bearer = { authorization: `Bearer ${accessToken}` }
  const key = { authorization: `Key ${shop.api_key}` }
  for (let i = 0; i < count; i++) {
    const created = await app.inject({
      method: 'POST',
      url: '/v2/client/payments',
      headers: bearer,
      payload: { amount: 0.01, memo: 'b', metadata: {} },
    })
    const id = (created.json() as { identifier: string }).identifier
    await app.inject({ method: 'POST', url: `/v2/payments/${id}/approve`, headers: key })
    const submitted = await app.inject({ method: 'POST', url: `/v2/client/payments/${id}/submit`, headers: bearer })
    const txid = (submitted.json() as { transaction: { txid: string } }).transaction.txid
    const done = await app.inject({ method: 'POST', url: `/v2/payments/${id}/complete`, headers: key, payload: { txid } })
    if (done.statusCode !== 200) throw new Error(`complete: ${done.body}`)
  }
}

async function rps(url: string, token: string): Promise<number> {
  const result = await autocannon({
    url: `${url}/v2/me`,
    connections: 10,
    duration: SECONDS,
    headers: { authorization: `Bearer ${token}` },
  })
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${url}: ${result.non2xx} non-2xx, ${result.errors} errors`)
  return result.requests.average
}

const platform = await startPlatform()
try {
  const backend = process.env.PLINTH_TEST_DB
  const reset = (seed: string) => timed(platform.app, '/sandbox/reset', { seed })
  const seededResets = []
  for (let i = 0; i < 5; i++) seededResets.push(await reset('demo'))
  await timed(platform.app, '/sandbox/snapshots', { name: 'seeded', replace: true })
  const seededRestores = []
  for (let i = 0; i < 5; i++) seededRestores.push(await timed(platform.app, '/sandbox/snapshots/seeded/restore'))

  const started = performance.now()
  await fill(platform.app, PAYMENTS)
  const fillSeconds = (performance.now() - started) / 1000
  const save = await timed(platform.app, '/sandbox/snapshots', { name: 'full', replace: true })
  const sizes = (await platform.app.inject({ method: 'GET', url: '/sandbox/snapshots' })).json() as {
    snapshots: Array<{ name: string; bytes: number }>
  }
  const fullRestores = []
  const fullResets = []
  for (let i = 0; i < 3; i++) {
    fullRestores.push(await timed(platform.app, '/sandbox/snapshots/full/restore'))
    fullResets.push(await reset('demo'))
  }
  console.log(`${backend}: reset of the seeded platform ${median(seededResets)} ms (median of 5), restore ${median(seededRestores)} ms`)
  console.log(
    `${backend}: ${PAYMENTS} completed payments (filled in ${fillSeconds.toFixed(0)} s): save ${save} ms, restore ${median(fullRestores)} ms, reset ${median(fullResets)} ms (medians of 3); snapshot ${sizes.snapshots.find((s) => s.name === 'full')?.bytes} bytes`,
  )

  // The fault check's cost: the same request through a sandbox-mode and a production-mode app on one database.
  const sb = sandbox(platform.app)
  const shop = await sb.createApp()
  const user = await sb.createUser()
  const { accessToken } = await sb.authenticate(shop.app_id, user.user_id, ['username'])
  await platform.app.listen({ port: 0, host: '127.0.0.1' })
  const production = await buildApp({
    db: platform.db,
    clock: platform.clock,
    secretKey: platform.secretKey,
    ping: async () => {},
    config: {
      mode: 'production',
      adminToken: undefined,
      logLevel: 'silent',
      publicUrl: 'http://plinth.test',
      tokenTtlSeconds: 3600,
      approvalWindowSeconds: 60,
      adVerdictDelaySeconds: 2,
      rateLimitKeyPerMinute: 0,
      rateLimitTokenPerMinute: 0,
    },
  })
  await production.listen({ port: 0, host: '127.0.0.1' })
  const sandboxUrl = `http://127.0.0.1:${(platform.app.server.address() as AddressInfo).port}`
  const productionUrl = `http://127.0.0.1:${(production.server.address() as AddressInfo).port}`
  // A warm-up of each first (JIT, connections), not counted.
  await rps(sandboxUrl, accessToken)
  await rps(productionUrl, accessToken)
  const rounds: Array<[number, number]> = []
  for (let i = 0; i < 3; i++) rounds.push([await rps(sandboxUrl, accessToken), await rps(productionUrl, accessToken)])
  for (const [s, p] of rounds)
    console.log(`${backend}: GET /v2/me req/s sandbox ${s.toFixed(0)} production ${p.toFixed(0)} ratio ${(s / p).toFixed(3)}`)
  await production.close()
} finally {
  await platform.close()
}
