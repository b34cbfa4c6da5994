import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { readMachineBusyMs } from './sampling.js'
import { cleanEnv, describeError, execFileAsync, log, onCleanup } from './servers.js'

// ---------------------------------------------------------------------------------------------
// PostgreSQL.

export async function pgIsReady(host: string): Promise<boolean> {
  try {
    await execFileAsync('pg_isready', ['-h', host], { timeout: 5_000 })
    return true
  } catch {
    return false
  }
}

export async function withPgClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return await fn(client)
  } finally {
    await client.end()
  }
}

export async function postgresVersion(url: string): Promise<string> {
  return withPgClient(url, async (client) => {
    const result = await client.query<{ version: string }>('select version() as version')
    return result.rows[0]?.version ?? 'unknown'
  })
}

export async function dropSchema(url: string, schema: string): Promise<void> {
  if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`refusing to drop oddly named schema ${schema}`)
  await withPgClient(url, async (client) => {
    await client.query(`drop schema if exists "${schema}" cascade`)
  })
}

// ---------------------------------------------------------------------------------------------
// pgbench: what the same PostgreSQL server does with PostgreSQL's own small write transactions.

/** `pgbench --version`, or undefined when pgbench is not installed. */
export async function pgbenchVersion(): Promise<string | undefined> {
  try {
    const { stdout } = await execFileAsync('pgbench', ['--version'], { timeout: 5_000 })
    return stdout.trim()
  } catch {
    return undefined
  }
}

export interface PgbenchOptions {
  scale: number
  clients: number
  threads: number
  seconds: number
}

export interface PgbenchResult extends PgbenchOptions {
  tps: number
  latencyAverageMs: number | undefined
  transactions: number | undefined
  failedTransactions: number | undefined
  initSeconds: number
  /** CPU the whole machine used during the run, in % of one core (pgbench and PostgreSQL share it). */
  machineCpuPercent: number | undefined
}

/** libpq's environment for the server of a postgres:// URL, with another database. */
function libpqEnv(url: string, database: string): NodeJS.ProcessEnv {
  const parsed = new URL(url)
  const env: NodeJS.ProcessEnv = { ...cleanEnv(), PGDATABASE: database }
  const host = parsed.searchParams.get('host') ?? parsed.hostname.replace(/^\[|\]$/g, '')
  if (host !== '') env.PGHOST = host
  if (parsed.port !== '') env.PGPORT = parsed.port
  if (parsed.username !== '') env.PGUSER = decodeURIComponent(parsed.username)
  if (parsed.password !== '') env.PGPASSWORD = decodeURIComponent(parsed.password)
  return env
}

/**
 * `pgbench -i -s <scale>` into a scratch database `bench_pgbench_<hex>` made for the purpose, then
 * `pgbench -b tpcb-like -c <clients> -j <threads> -T <seconds>`; the database is dropped afterwards
 * (or on failure/Ctrl-C).
 */
export async function runPgbench(url: string, options: PgbenchOptions): Promise<PgbenchResult> {
  const database = `bench_pgbench_${randomBytes(4).toString('hex')}`
  const drop = async () => {
    await withPgClient(url, async (client) => {
      await client.query(`drop database if exists "${database}" with (force)`)
    })
    log(`dropped database ${database}`)
  }
  await withPgClient(url, async (client) => {
    await client.query(`create database "${database}"`)
  })
  const unregister = onCleanup(drop)
  try {
    const env = libpqEnv(url, database)
    const initStartedAt = performance.now()
    await execFileAsync('pgbench', ['-i', '-s', String(options.scale), '-q'], { env, timeout: 300_000, maxBuffer: 16 * 1024 * 1024 })
    const initSeconds = (performance.now() - initStartedAt) / 1000
    const busyBefore = readMachineBusyMs()
    const runStartedAt = performance.now()
    const { stdout } = await execFileAsync(
      'pgbench',
      ['-b', 'tpcb-like', '-c', String(options.clients), '-j', String(options.threads), '-T', String(options.seconds)],
      { env, timeout: (options.seconds + 120) * 1000, maxBuffer: 16 * 1024 * 1024 },
    )
    const busyAfter = readMachineBusyMs()
    const wallMs = performance.now() - runStartedAt
    // pgbench 14+ prints one tps line "(without initial connection time)"; older ones two, the second "excluding connections establishing".
    const tpsLines = [...stdout.matchAll(/^tps = ([\d.]+) \(([^)]*)\)/gm)]
    const tps = tpsLines.find((match) => /without|excluding/.test(match[2] ?? '')) ?? tpsLines[0]
    if (tps?.[1] === undefined) throw new Error(`pgbench printed no "tps = …" line:\n${stdout}`)
    const number = (pattern: RegExp) => {
      const found = pattern.exec(stdout)?.[1]
      return found === undefined ? undefined : Number(found)
    }
    return {
      ...options,
      tps: Number(tps[1]),
      latencyAverageMs: number(/^latency average = ([\d.]+) ms/m),
      transactions: number(/^number of transactions actually processed: (\d+)/m),
      failedTransactions: number(/^number of failed transactions: (\d+)/m),
      initSeconds,
      machineCpuPercent: busyBefore === undefined || busyAfter === undefined ? undefined : ((busyAfter - busyBefore) / wallMs) * 100,
    }
  } finally {
    unregister()
    await drop()
  }
}

/**
 * runPgbench for a benchmark that goes on without it: a failure is logged and returned as its first
 * line (`failure`), not thrown. The full run and `--compare` both take pgbench this way.
 */
export async function pgbenchOrWhyNot(
  url: string,
  options: PgbenchOptions,
): Promise<{ result: PgbenchResult; failure?: undefined } | { result?: undefined; failure: string }> {
  try {
    return { result: await runPgbench(url, options) }
  } catch (error) {
    log(`  !!! pgbench failed: ${describeError(error)}`)
    return { failure: describeError(error).split('\n', 1)[0] ?? '' }
  }
}
