/**
 * `npm run bench:memory [-- --no-postgres] [--seconds N]`: the resident memory of Plinth's server
 * process as `npm start` runs it (dist/server.js with its node flags), on the embedded database
 * (a fresh data directory on disk, the default) and on PostgreSQL when one is reachable (Node's
 * process only). For each: RSS once idle after start (first start, which creates the database),
 * after seeding, the peak during a short mixed load (GET /v2/me, GET /v2/payments/{id}, new
 * sandbox users: reads and writes), idle again after it, and after a restart on the same data.
 * RSS is VmRSS from /proc, sampled every 100 ms. Memory, unlike throughput, is meaningful on a
 * busy machine.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import {
  installSignalHandlers,
  log,
  markdownTable,
  onCleanup,
  postJson,
  type RequestSpec,
  type RunningServer,
  readRssKb,
  runCleanup,
  runLoad,
  seed,
  sleep,
  startNodeFlags,
  startServer,
  stringField,
} from './lib.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test'
const IDLE_WAIT_MS = 5_000

interface Row {
  backend: string
  idleAfterStart: number
  afterSeed: number
  peakUnderLoad: number
  idleAfterLoad: number
  idleAfterRestart: number | undefined
  requests: number
  errors: number
}

function spec(name: string, env: Record<string, string>) {
  return {
    name,
    command: process.execPath,
    args: [...startNodeFlags(ROOT), join(ROOT, 'dist', 'server.js')],
    cwd: ROOT,
    env: {
      LOG_LEVEL: 'warn',
      PLINTH_MODE: 'sandbox',
      PLINTH_RATE_LIMIT_KEY_PER_MINUTE: '1000000000',
      PLINTH_RATE_LIMIT_TOKEN_PER_MINUTE: '1000000000',
      ...env,
    },
  }
}

async function rssMb(pid: number): Promise<number> {
  return ((await readRssKb(pid)) ?? Number.NaN) / 1024
}

/** The highest RSS seen while `work` runs. */
async function peakDuring<T>(pid: number, work: Promise<T>): Promise<{ result: T; peakMb: number }> {
  let peak = 0
  let done = false
  const sampling = (async () => {
    while (!done) {
      peak = Math.max(peak, await rssMb(pid))
      await sleep(100)
    }
  })()
  try {
    const result = await work
    return { result, peakMb: Math.max(peak, await rssMb(pid)) }
  } finally {
    done = true
    await sampling
  }
}

async function measure(backend: string, server: RunningServer, seconds: number): Promise<Omit<Row, 'idleAfterRestart'>> {
  await sleep(IDLE_WAIT_MS)
  const idleAfterStart = await rssMb(server.pid)
  const tag = randomBytes(3).toString('hex')
  const fixtures = await seed(server.baseUrl, { apps: 4, users: 200, keysPerApp: 1, concurrency: 8, tag })
  const payments: Array<{ path: string; key: string }> = []
  for (const user of fixtures.users.slice(0, 100)) {
    const app = fixtures.apps.find((candidate) => candidate.appId === user.appId)
    if (app === undefined) continue
    const created = await postJson(
      `${server.baseUrl}/v2/payments`,
      { payment: { amount: 0.1, memo: 'memory bench', metadata: {}, uid: user.uid } },
      200,
      { authorization: `Key ${app.apiKey}` },
    )
    payments.push({ path: `/v2/payments/${stringField(created, 'identifier', 'create payment')}`, key: app.apiKey })
  }
  const afterSeed = await rssMb(server.pid)
  let turn = 0
  const build = (): RequestSpec => {
    turn++
    if (turn % 10 === 0)
      return {
        method: 'POST',
        path: '/sandbox/users',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: `m${tag}_${turn}` }),
      }
    if (turn % 2 === 0) {
      const payment = payments[turn % payments.length]
      if (payment !== undefined) return { method: 'GET', path: payment.path, headers: { authorization: `Key ${payment.key}` } }
    }
    const user = fixtures.users[turn % fixtures.users.length]
    return { method: 'GET', path: '/v2/me', headers: { authorization: `Bearer ${user?.accessToken ?? ''}` } }
  }
  const { result, peakMb } = await peakDuring(
    server.pid,
    runLoad({ baseUrl: server.baseUrl, connections: 16, durationSeconds: seconds, build }),
  )
  await sleep(IDLE_WAIT_MS)
  const idleAfterLoad = await rssMb(server.pid)
  log(`${backend}: ${result.totalRequests} requests, ${result.errors} errors`)
  return { backend, idleAfterStart, afterSeed, peakUnderLoad: peakMb, idleAfterLoad, requests: result.totalRequests, errors: result.errors }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { 'no-postgres': { type: 'boolean', default: false }, seconds: { type: 'string', default: '5' } },
    strict: true,
  })
  const seconds = Number(values.seconds)
  installSignalHandlers()
  const rows: Row[] = []

  const dataDir = mkdtempSync(join(tmpdir(), 'plinth-memory-'))
  onCleanup(async () => rmSync(dataDir, { recursive: true, force: true }))
  const embedded = spec('plinth-pglite', { PLINTH_DATA_DIR: dataDir })
  const first = await startServer(embedded)
  const row = await measure('PGlite (on disk)', first, seconds)
  await first.stop()
  const again = await startServer(embedded)
  await sleep(IDLE_WAIT_MS)
  rows.push({ ...row, idleAfterRestart: await rssMb(again.pid) })
  await again.stop()

  if (!values['no-postgres']) {
    const databaseUrl = process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL
    const schema = `bench_mem_${randomBytes(4).toString('hex')}`
    const env = { DATABASE_URL: databaseUrl, PLINTH_DB_SCHEMA: schema, PLINTH_SECRET_KEY: randomBytes(32).toString('hex') }
    onCleanup(async () => {
      const pg = (await import('pg')).default
      const client = new pg.Client({ connectionString: databaseUrl })
      await client.connect()
      await client.query(`drop schema if exists "${schema}" cascade`)
      await client.end()
    })
    try {
      const server = await startServer(spec('plinth-postgres', env))
      const measured = await measure('PostgreSQL (Node process only)', server, seconds)
      await server.stop()
      rows.push({ ...measured, idleAfterRestart: undefined })
    } catch (error) {
      log(`PostgreSQL skipped: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`)
    }
  }

  const mb = (value: number | undefined) => (value === undefined ? '–' : `${value.toFixed(0)} MB`)
  process.stdout.write(
    `\nRSS of Plinth's server process (\`${['node', ...startNodeFlags(ROOT), 'dist/server.js'].join(' ')}\`), ${seconds} s of load, 16 connections\n\n` +
      markdownTable(
        [
          'backend',
          'idle after first start',
          'after seeding',
          'peak under load',
          'idle after load',
          'idle after restart',
          'requests (errors)',
        ],
        rows.map((r) => [
          r.backend,
          mb(r.idleAfterStart),
          mb(r.afterSeed),
          mb(r.peakUnderLoad),
          mb(r.idleAfterLoad),
          mb(r.idleAfterRestart),
          `${r.requests} (${r.errors})`,
        ]),
        ['left', 'right', 'right', 'right', 'right', 'right', 'right'],
      ),
  )
}

main()
  .catch((error: unknown) => {
    process.stderr.write(`bench:memory failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
    process.exitCode = 1
  })
  .finally(runCleanup)
