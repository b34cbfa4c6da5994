/**
 * `node --import tsx bench/cpu-per-request.ts [--rounds 5] [--seconds 4] [--request-log on] [--postgres]
 * [--read payment] [checkout …]`: the CPU a `GET /v2/me` (or, with `--read payment`, a
 * `GET /v2/payments/{id}` with the app's key) costs the server, for one or more built checkouts of Plinth (each a directory with
 * `dist/server.js`, e.g. a `git worktree` of an older commit after `npm run build`; the default
 * is this one), measured in alternating rounds so that they share the machine's moods. Each round
 * starts the checkout's server as `npm start` does (embedded database in memory, sandbox mode,
 * `LOG_LEVEL=warn`, request log off, the token limit out of the way), signs 50 users in, loads it
 * with autocannon (32 connections, 4 s warm-up), and reads the server's CPU from /proc (all its
 * threads, and the main thread alone) over the measured seconds. Prints every round and the
 * medians. CPU time, not throughput: meaningful on a shared machine, where req/s is not.
 * `--request-log on` runs the server with PLINTH_REQUEST_LOG=on (the sandbox's default; off
 * otherwise). `--postgres` runs each round's server on a fresh schema of DATABASE_URL instead of
 * the embedded database, and adds the CPU of its own PostgreSQL backends (found by the
 * `application_name` its URL carries, bench/lib/backends.ts) a request.
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import autocannon from 'autocannon'
import pg from 'pg'
import { OwnBackendsCpu, withApplicationName } from './lib/backends.js'
import { freePort } from './lib.js'

const args = process.argv.slice(2)
const option = (name: string, fallback: number): number => {
  const at = args.indexOf(name)
  if (at === -1) return fallback
  const [value] = args.splice(at, 2).slice(1)
  return Number(value)
}
const flag = (name: string): boolean => {
  const at = args.indexOf(name)
  if (at !== -1) args.splice(at, 1)
  return at !== -1
}
const text = (name: string, fallback: string): string => {
  const at = args.indexOf(name)
  if (at === -1) return fallback
  const [value] = args.splice(at, 2).slice(1)
  return value ?? fallback
}
const requestLog = text('--request-log', 'off')
const read = text('--read', 'me')
const postgresUrl = flag('--postgres') ? (process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test') : undefined
const rounds = option('--rounds', 5)
const seconds = option('--seconds', 4)
const checkouts = (args.length > 0 ? args : ['.']).map((dir) => resolve(dir))
const USERS = 50

/** User and system CPU of `pid` (or of one of its threads) in milliseconds. */
function cpuMs(pid: number, thread?: number): number {
  const path = thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`
  const fields = readFileSync(path, 'utf8').split(') ')[1]?.split(' ') ?? []
  return (Number(fields[11]) + Number(fields[12])) * 10
}

/** A schema of its own on the PostgreSQL server, for one round, and its server's application_name. */
async function withSchema<T>(run: (schema: string | undefined) => Promise<T>): Promise<T> {
  if (postgresUrl === undefined) return run(undefined)
  const schema = `bench_cpu_${Math.random().toString(36).slice(2, 10)}`
  const admin = new pg.Client({ connectionString: postgresUrl })
  await admin.connect()
  try {
    return await run(schema)
  } finally {
    await admin.query(`drop schema if exists ${schema} cascade`).catch(() => undefined)
    await admin.end()
  }
}

async function round(checkout: string): Promise<{ perSecond: number; cpuUs: number; mainUs: number; postgresUs: number | undefined }> {
  return withSchema((schema) => roundOn(checkout, schema))
}

async function roundOn(
  checkout: string,
  schema: string | undefined,
): Promise<{ perSecond: number; cpuUs: number; mainUs: number; postgresUs: number | undefined }> {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    PLINTH_MODE: 'sandbox',
    PLINTH_REQUEST_LOG: requestLog,
    PLINTH_DATA_DIR: 'memory',
    PLINTH_RATE_LIMIT_TOKEN_PER_MINUTE: '100000000',
    PLINTH_RATE_LIMIT_KEY_PER_MINUTE: '100000000',
  }
  delete env.DATABASE_URL
  const applicationName = `plinth_${schema ?? 'pglite'}`
  if (postgresUrl !== undefined && schema !== undefined) {
    env.DATABASE_URL = withApplicationName(postgresUrl, applicationName)
    env.PLINTH_DB_SCHEMA = schema
    env.PLINTH_SECRET_KEY = 'ab'.repeat(32)
  }
  const server = spawn(process.execPath, ['--max-old-space-size=384', 'dist/server.js'], { cwd: checkout, env, stdio: 'ignore' })
  const pid = server.pid
  if (pid === undefined) throw new Error(`${checkout}: the server did not start`)
  try {
    for (let tries = 0; ; tries++) {
      const ready = await fetch(`${base}/readyz`).then(
        (response) => response.status === 200,
        () => false,
      )
      if (ready) break
      if (tries > 300) throw new Error(`${checkout}: not ready after 30 s`)
      await new Promise((done) => setTimeout(done, 100))
    }
    const post = async (path: string, body: object) => {
      const response = await fetch(base + path, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
      if (response.status >= 300) throw new Error(`${path}: ${response.status} ${await response.text()}`)
      return (await response.json()) as Record<string, string>
    }
    const app = await post('/sandbox/apps', { name: 'cpu per request' })
    const tokens: string[] = []
    for (let i = 0; i < USERS; i++) {
      const user = await post('/sandbox/users', { username: `cpu_user_${i}` })
      const signedIn = await post(`/sandbox/apps/${app.app_id}/authenticate`, { user_id: user.user_id as string, scopes: ['username'] })
      tokens.push((signedIn.accessToken ?? signedIn.access_token) as string)
    }
    let next = 0
    let url = `${base}/v2/me`
    let authorization = (): string => `Bearer ${tokens[next++ % USERS]}`
    if (read === 'payment') {
      const user = await post('/sandbox/users', { username: 'cpu_payer' })
      const member = (await post(`/sandbox/apps/${app.app_id}/authenticate`, {
        user_id: user.user_id as string,
        scopes: ['username', 'payments', 'wallet_address'],
      })) as unknown as {
        user: { uid: string }
      }
      const response = await fetch(`${base}/v2/payments`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Key ${app.api_key}` },
        body: JSON.stringify({ payment: { amount: 1, memo: 'cpu per request', metadata: {}, uid: member.user.uid } }),
      })
      if (response.status !== 200) throw new Error(`POST /v2/payments: ${response.status} ${await response.text()}`)
      const payment = (await response.json()) as { identifier: string }
      url = `${base}/v2/payments/${payment.identifier}`
      authorization = () => `Key ${app.api_key}`
    }
    const load = (duration: number) =>
      autocannon({
        url,
        connections: 32,
        duration,
        requests: [{ setupRequest: (request) => ({ ...request, headers: { authorization: authorization() } }) }],
      })
    await load(4)
    const backends = postgresUrl === undefined ? undefined : new OwnBackendsCpu({ databaseUrl: postgresUrl, applicationName })
    await backends?.prepare()
    backends?.begin()
    const [all, main] = [cpuMs(pid), cpuMs(pid, pid)]
    const result = await load(seconds)
    const [allAfter, mainAfter] = [cpuMs(pid), cpuMs(pid, pid)]
    const postgresMs = await backends?.stop()
    if (result.non2xx > 0 || result.errors > 0) throw new Error(`${checkout}: ${result.non2xx} non-2xx answers, ${result.errors} errors`)
    const requests = result.requests.total
    return {
      perSecond: requests / seconds,
      cpuUs: ((allAfter - all) * 1000) / requests,
      mainUs: ((mainAfter - main) * 1000) / requests,
      postgresUs: postgresMs === undefined ? undefined : (postgresMs * 1000) / requests,
    }
  } finally {
    server.kill('SIGKILL')
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN
const results = new Map(checkouts.map((checkout) => [checkout, [] as Awaited<ReturnType<typeof round>>[]]))
for (let i = 0; i < rounds; i++) {
  for (const checkout of checkouts) {
    const result = await round(checkout)
    results.get(checkout)?.push(result)
    process.stdout.write(
      `round ${i + 1} ${checkout}: ${result.perSecond.toFixed(0)} req/s, ${result.cpuUs.toFixed(1)} µs of CPU a request (main thread ${result.mainUs.toFixed(1)})` +
        `${result.postgresUs === undefined ? '' : `, PostgreSQL ${result.postgresUs.toFixed(1)} µs`}\n`,
    )
  }
}
const what = read === 'payment' ? 'GET /v2/payments/{id}' : 'GET /v2/me'
process.stdout.write(
  `\n${what}, request log ${requestLog}, ${postgresUrl === undefined ? 'PGlite' : 'PostgreSQL'}, CPU µs a request, median of ${rounds} rounds:\n`,
)
for (const [checkout, list] of results) {
  process.stdout.write(
    `  ${checkout}: ${median(list.map((r) => r.cpuUs)).toFixed(1)} (main thread ${median(list.map((r) => r.mainUs)).toFixed(1)})` +
      `${postgresUrl === undefined ? '' : `, PostgreSQL ${median(list.map((r) => r.postgresUs ?? Number.NaN)).toFixed(1)}`}, ${median(list.map((r) => r.perSecond)).toFixed(0)} req/s\n`,
  )
}
