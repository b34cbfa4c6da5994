/** The servers a run measures: the Fastify baseline, Plinth on PGlite, Plinth on PostgreSQL (and its replicas for the scaling runs). */
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import {
  type Backend,
  dropSchema,
  log,
  type OwnBackends,
  onCleanup,
  pgIsReady,
  type RunningServer,
  type ServerSpec,
  startNodeFlags,
  startServer,
  withApplicationName,
} from './lib.js'
import { DEFAULT_DATABASE_URL, ROOT } from './settings.js'

// ---------------------------------------------------------------------------------------------
// The servers.

interface Launched {
  server: RunningServer
  /** Stops the server and removes what it used (schema, directory). */
  release(): Promise<void>
  /**
   * PostgreSQL only: starts another Plinth process on the same database, schema and secret key
   * (never profiled); the caller stops it, before release.
   */
  replicate?(name: string): Promise<RunningServer>
  /**
   * PostgreSQL only: like replicate, with `env` added (another mode, log level…) and connections
   * of its own application_name, so that its backends are counted apart from the first server's.
   */
  variant?(name: string, env: Record<string, string>): Promise<{ server: RunningServer; backends: OwnBackends }>
  /** PostgreSQL only: the backends serving it (and its replicas), whose CPU is the run's PostgreSQL CPU. */
  backends?: OwnBackends
}

export interface Target {
  backend: Backend
  label: string
  launch(): Promise<Launched>
}

/** The request log of Plinth's servers: off (production's default) unless `PLINTH_REQUEST_LOG=on npm run bench`. */
export const REQUEST_LOG = process.env.PLINTH_REQUEST_LOG === 'on' ? 'on' : 'off'

/**
 * The bearer token of every Plinth server's `GET /metrics` (PLINTH_METRICS_TOKEN), which the batch
 * runs read the ledger closer's histogram from. Sandbox mode would serve /metrics open without one;
 * with it the benchmark reads /metrics as an operator in production does (src/system/metrics.ts).
 */
export const METRICS_TOKEN = randomBytes(24).toString('hex')

/** nodeArgs go before the script: `--cpu-prof …` when profiling. `root` is the checkout whose dist/ runs (this one by default). */
export function plinthSpec(name: string, env: Record<string, string>, nodeArgs: readonly string[] = [], root = ROOT): ServerSpec {
  return {
    name,
    command: process.execPath,
    // The flags of `npm start` (the heap bound), then the benchmark's own (--cpu-prof).
    args: [...startNodeFlags(root), ...nodeArgs, join(root, 'dist', 'server.js')],
    cwd: root,
    // The load is thousands of requests a second on one key and one token: limits far above it, so
    // the check's cost is measured but nothing is refused.
    env: {
      LOG_LEVEL: 'warn',
      PLINTH_MODE: 'sandbox',
      // As deployed in production, where the request log is off; its own cost is bench/request-log.ts's.
      PLINTH_REQUEST_LOG: REQUEST_LOG,
      PLINTH_RATE_LIMIT_KEY_PER_MINUTE: '1000000000',
      PLINTH_RATE_LIMIT_TOKEN_PER_MINUTE: '1000000000',
      PLINTH_METRICS_TOKEN: METRICS_TOKEN,
      ...env,
    },
  }
}

async function launchSimple(spec: ServerSpec): Promise<Launched> {
  const server = await startServer(spec)
  return { server, release: () => server.stop() }
}

/** What else a Plinth server on PostgreSQL runs with: another checkout's dist/, more environment (the request log, the mode). */
export interface PostgresLaunch {
  root?: string
  name?: string
  env?: Record<string, string>
  nodeArgs?: readonly string[]
}

/**
 * Plinth on a fresh schema of the PostgreSQL server; the schema is dropped when released (or on
 * failure/Ctrl-C). Its connections carry the schema's name as application_name, so that its
 * backends (and its replicas') are told from any other client's.
 */
export async function launchPostgres(databaseUrl: string, options: PostgresLaunch = {}): Promise<Launched> {
  const schema = `bench_${randomBytes(6).toString('hex')}`
  const drop = async () => {
    await dropSchema(databaseUrl, schema)
    log(`dropped schema ${schema}`)
  }
  const unregister = onCleanup(drop)
  const backends = { databaseUrl, applicationName: `plinth_${schema}` }
  const env = {
    ...options.env,
    DATABASE_URL: withApplicationName(databaseUrl, backends.applicationName),
    PLINTH_DB_SCHEMA: schema,
    PLINTH_SECRET_KEY: randomBytes(32).toString('hex'),
  }
  const spec = (name: string, nodeArgs: readonly string[] = [], more: Record<string, string> = {}) =>
    plinthSpec(name, { ...env, ...more }, nodeArgs, options.root)
  let variants = 0
  const server = await startServer(spec(options.name ?? 'plinth-postgres', options.nodeArgs))
  return {
    server,
    async release() {
      await server.stop()
      unregister()
      await drop()
    },
    replicate: (name) => startServer(spec(name)),
    async variant(name, more) {
      const own = { databaseUrl, applicationName: `${backends.applicationName}_${++variants}` }
      const server = await startServer(spec(name, [], { ...more, DATABASE_URL: withApplicationName(databaseUrl, own.applicationName) }))
      return { server, backends: own }
    },
    backends,
  }
}

/** The baseline: bench/hello.ts, the smallest useful Fastify server. */
export const helloTarget: Target = {
  backend: 'fastify',
  label: 'Fastify only',
  launch: () =>
    launchSimple({
      name: 'hello-world',
      command: process.execPath,
      args: ['--import', 'tsx', join(ROOT, 'bench', 'hello.ts')],
      cwd: ROOT,
      env: {},
    }),
}

export function targets(databaseUrl: string | undefined, nodeArgs: readonly string[]): Target[] {
  const list: Target[] = [
    helloTarget,
    {
      backend: 'pglite',
      label: 'PGlite (memory)',
      launch: () => launchSimple(plinthSpec('plinth-pglite', { PLINTH_DATA_DIR: 'memory' }, nodeArgs)),
    },
  ]
  if (databaseUrl !== undefined)
    list.push({ backend: 'postgres', label: 'PostgreSQL', launch: () => launchPostgres(databaseUrl, { nodeArgs }) })
  return list
}

export async function resolveDatabaseUrl(wanted: boolean): Promise<string | undefined> {
  if (!wanted) return undefined
  const given = process.env.DATABASE_URL
  if (given !== undefined && given !== '') return given
  if (await pgIsReady('127.0.0.1')) return DEFAULT_DATABASE_URL
  log('no DATABASE_URL and pg_isready -h 127.0.0.1 failed: skipping Plinth on PostgreSQL')
  return undefined
}
