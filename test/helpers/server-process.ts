import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { FastifyInstance, InjectOptions } from 'fastify'
import pg from 'pg'
import { ensurePGliteImage, PGLITE_IMAGE_ENV } from './pglite-image.js'

/** The repository root: the server is started from there (`nodeArgs('src/server.ts')`). */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..')

let distFresh: boolean | undefined

/**
 * Whether `dist/` holds a build of the sources as they are now: every `.ts` file under `src/` has
 * its `.js` under `dist/`, written no earlier than the source was last changed. A source edited after
 * the last `npm run build` makes it false, so a test never runs stale code.
 */
function isDistFresh(): boolean {
  distFresh ??= readdirSync(join(REPO_ROOT, 'src'), { recursive: true })
    .map(String)
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))
    .every((file) => {
      const built = statSync(join(REPO_ROOT, 'dist', file.replace(/\.ts$/, '.js')), { throwIfNoEntry: false })
      return built !== undefined && built.mtimeMs >= statSync(join(REPO_ROOT, 'src', file)).mtimeMs
    })
  return distFresh
}

/**
 * The node arguments that run `src/<path>.ts` (relative to REPO_ROOT): its build in `dist/` when
 * that is fresh, which starts without compiling every module on the fly (CI builds before it
 * tests), else the source through tsx.
 */
export function nodeArgs(source: string): string[] {
  if (!source.startsWith('src/') || !source.endsWith('.ts')) throw new Error(`nodeArgs: ${source} is not a file under src/`)
  return isDistFresh()
    ? [join(REPO_ROOT, 'dist', source.slice('src/'.length).replace(/\.ts$/, '.js'))]
    : ['--import', 'tsx', join(REPO_ROOT, source)]
}

/** Whether this code runs compiled (scripts/test-build.mjs's mirror) rather than through tsx. */
export const RUNS_COMPILED = import.meta.url.endsWith('.js')

/** The node arguments a child needs to run TypeScript the way this process does: compiled (source maps only), else tsx. */
export const LOADER_ARGS = RUNS_COMPILED ? ['--enable-source-maps'] : ['--import', 'tsx']

/**
 * The node arguments that run the TypeScript file `path` (relative to REPO_ROOT) the way this
 * process runs: its compiled `.js` beside it in the test mirror, else the source through tsx.
 */
export function scriptArgs(path: string): string[] {
  return [...LOADER_ARGS, join(REPO_ROOT, RUNS_COMPILED ? path.replace(/\.ts$/, '.js') : path)]
}

export type Backend = 'pglite' | 'postgres'

export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test'

/** What the server's database is and how to reach it again with SQL, once the server is down. */
export interface BackendSetup {
  backend: Backend
  /** The server's backend environment (PLINTH_DATA_DIR, or DATABASE_URL + schema + secret key). */
  env: Record<string, string>
  /** PGlite: the data directory. */
  dataDir?: string
  /** PostgreSQL: the run's own schema. */
  schema?: string
  databaseUrl?: string
  /** Runs SQL against the server's database. On PGlite, only while no server has the directory open. */
  sql(): Promise<SqlAccess>
  /** Removes the data directory or drops the schema. */
  cleanup(): Promise<void>
}

export interface SqlAccess {
  query<T>(text: string, params?: unknown[]): Promise<T[]>
  close(): Promise<void>
}

/**
 * A fresh database for spawned servers: a new PGlite data directory, or a new schema on the
 * PostgreSQL server. The PGlite directory holds the run's migrated image (test/helpers/pglite-image.ts)
 * unpacked, so the server opens it as an existing database instead of running initdb (seconds of
 * CPU in WebAssembly); `fresh: true` leaves it empty, for tests of the first start itself.
 */
export async function setUpBackend(
  backend: Backend,
  options: { databaseUrl?: string; keepData?: boolean; fresh?: boolean } = {},
): Promise<BackendSetup> {
  if (backend === 'pglite') {
    const dataDir = mkdtempSync(join(tmpdir(), 'plinth-chaos-'))
    if (options.fresh !== true) await unpackImage(join(dataDir, 'pgdata'))
    return {
      backend,
      env: { PLINTH_DATA_DIR: dataDir },
      dataDir,
      async sql() {
        const { PGlite } = await import('@electric-sql/pglite')
        const db = new PGlite(join(dataDir, 'pgdata'))
        await db.waitReady
        return {
          async query<T>(text: string, params: unknown[] = []) {
            return (await db.query<T>(text, params)).rows
          },
          close: () => db.close(),
        }
      },
      async cleanup() {
        if (options.keepData !== true) rmSync(dataDir, { recursive: true, force: true })
      },
    }
  }
  const databaseUrl = options.databaseUrl ?? process.env.DATABASE_URL ?? DEFAULT_DATABASE_URL
  const schema = `plinth_chaos_${randomBytes(5).toString('hex')}`
  const connect = async (searchPath: boolean) => {
    const client = new pg.Client({ connectionString: databaseUrl, ...(searchPath ? { options: `-c search_path="${schema}"` } : {}) })
    await client.connect()
    return client
  }
  return {
    backend,
    env: { DATABASE_URL: databaseUrl, PLINTH_DB_SCHEMA: schema, PLINTH_SECRET_KEY: randomBytes(32).toString('hex') },
    schema,
    databaseUrl,
    async sql() {
      const client = await connect(true)
      return {
        async query<T>(text: string, params: unknown[] = []) {
          return (await client.query(text, params)).rows as T[]
        },
        close: () => client.end(),
      }
    },
    async cleanup() {
      if (options.keepData === true) return
      const client = await connect(false)
      try {
        await client.query(`drop schema if exists "${schema}" cascade`)
      } finally {
        await client.end()
      }
    },
  }
}

/** Unpacks the migrated PGlite image into `pgdata` (which must not exist yet). */
async function unpackImage(pgdata: string): Promise<void> {
  const image = process.env[PGLITE_IMAGE_ENV] ?? (await ensurePGliteImage())
  mkdirSync(pgdata, { mode: 0o700 })
  // The tar's names start with "/": tar strips it and unpacks under -C.
  const unpacked = spawnSync('tar', ['-xf', image, '-C', pgdata], { encoding: 'utf8' })
  if (unpacked.status !== 0) throw new Error(`tar -xf ${image}: ${unpacked.stderr || unpacked.error?.message}`)
}

export async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer()
    server.on('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() => (typeof address === 'object' && address !== null ? resolvePort(address.port) : reject(new Error('no port'))))
    })
  })
}

export interface Exit {
  code: number | null
  signal: NodeJS.Signals | null
}

const OUTPUT_KEPT = 64 * 1024

/** One Plinth server process: `src/server.ts` (built or through tsx: nodeArgs) on 127.0.0.1. */
/**
 * Runs the `plinth` command (src/cli/plinth.ts, built or through tsx) with `args`, as a user runs
 * it: `env` over this process's environment, `input` on its standard input; answers when it exits.
 * As for a server (PlinthProcess), the backend is what `env` says: this process's own
 * DATABASE_URL, schema, secret key and data directory do not leak in.
 */
export function runPlinthCli(
  args: string[],
  options: { env?: NodeJS.ProcessEnv; input?: string; node?: string[] } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const node = options.node ?? nodeArgs('src/cli/plinth.ts')
  return runCommand(process.execPath, [...node, ...args], options)
}

/**
 * Runs `command` as a user runs it, in `cwd`: `env` over this process's environment without its
 * backend (DATABASE_URL, schema, secret key, data directory), `input` on its standard input;
 * answers when it exits.
 */
export function runCommand(
  command: string,
  args: string[],
  options: { env?: NodeJS.ProcessEnv; input?: string; cwd?: string } = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolveRun, reject) => {
    const { DATABASE_URL: _url, PLINTH_DB_SCHEMA: _schema, PLINTH_SECRET_KEY: _key, PLINTH_DATA_DIR: _dir, ...inherited } = process.env
    const child = spawn(command, args, {
      env: { ...inherited, ...options.env },
      ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => {
      stdout += chunk
    })
    child.stderr.on('data', (chunk) => {
      stderr += chunk
    })
    child.on('error', reject)
    child.on('close', (code) => resolveRun({ code: code ?? -1, stdout, stderr }))
    child.stdin.end(options.input ?? '')
  })
}

export class PlinthProcess {
  readonly child: ChildProcess
  readonly exited: Promise<Exit>
  #output = ''
  #exit: Exit | undefined

  private constructor(
    readonly port: number,
    env: Record<string, string>,
  ) {
    // The backend is exactly what `env` says: a DATABASE_URL of the calling process must not leak in.
    const { DATABASE_URL: _url, PLINTH_DB_SCHEMA: _schema, PLINTH_SECRET_KEY: _key, PLINTH_DATA_DIR: _dir, ...inherited } = process.env
    this.child = spawn(process.execPath, nodeArgs('src/server.ts'), {
      cwd: REPO_ROOT,
      env: { ...inherited, LOG_LEVEL: 'warn', HOST: '127.0.0.1', PORT: String(port), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    const keep = (chunk: Buffer) => {
      this.#output = (this.#output + chunk.toString()).slice(-OUTPUT_KEPT)
    }
    this.child.stdout?.on('data', keep)
    this.child.stderr?.on('data', keep)
    this.exited = new Promise((resolveExit) =>
      this.child.on('exit', (code, signal) => {
        this.#exit = { code, signal }
        resolveExit(this.#exit)
      }),
    )
  }

  get base(): string {
    return `http://127.0.0.1:${this.port}`
  }

  get pid(): number | undefined {
    return this.child.pid
  }

  /** The last 64 KiB the process printed (its banner and log lines). */
  output(): string {
    return this.#output
  }

  hasExited(): boolean {
    return this.#exit !== undefined
  }

  /** Starts the server process; see waitReady. */
  static spawn(port: number, env: Record<string, string>): PlinthProcess {
    return new PlinthProcess(port, env)
  }

  /** Starts the server and resolves once GET /readyz answers 200; rejects, with its output, if it exits or times out first. */
  static async start(port: number, env: Record<string, string>, timeoutMs = 120_000): Promise<{ server: PlinthProcess; readyMs: number }> {
    const startedAt = performance.now()
    const server = new PlinthProcess(port, env)
    await server.waitReady(timeoutMs)
    return { server, readyMs: Math.round(performance.now() - startedAt) }
  }

  /**
   * Resolves once GET /readyz answers 200. The bound is the server's own CPU time, `timeoutMs`
   * (far more than a start takes), not the time on the wall: on a loaded machine a start waits
   * for the CPU, which is no fault of the server. A start that uses no CPU (waiting on a lock)
   * still fails, after four times `timeoutMs` on the wall; so does any start where the CPU time
   * cannot be read (no /proc).
   */
  async waitReady(timeoutMs = 120_000): Promise<void> {
    const startedAt = Date.now()
    for (;;) {
      if (this.hasExited()) {
        throw new Error(`the server exited before it was ready (${JSON.stringify(this.#exit)}); it printed:\n${this.output()}`)
      }
      const wallMs = Date.now() - startedAt
      const cpu = cpuMs(this.child.pid)
      if ((cpu ?? wallMs) > timeoutMs || wallMs > 4 * timeoutMs) {
        await this.kill()
        throw new Error(
          `the server was not ready after ${cpu === undefined ? '' : `${cpu} ms of CPU time and `}${wallMs} ms; it printed:\n${this.output()}`,
        )
      }
      try {
        const response = await fetch(`${this.base}/readyz`, { signal: AbortSignal.timeout(2_000) })
        await response.arrayBuffer()
        if (response.status === 200) return
      } catch {
        // Not listening yet.
      }
      await sleep(50)
    }
  }

  /** SIGKILL: no handler runs, nothing is flushed by the process. */
  async kill(): Promise<Exit> {
    if (!this.hasExited()) this.child.kill('SIGKILL')
    return this.exited
  }

  /** SIGTERM, then SIGKILL `afterMs` later if it is still shutting down (a supervisor whose grace period ran out). */
  async terminateThenKill(afterMs: number): Promise<Exit> {
    if (this.hasExited()) return this.exited
    this.child.kill('SIGTERM')
    await Promise.race([this.exited, sleep(afterMs)])
    return this.kill()
  }

  /** SIGTERM: the graceful shutdown (finish requests in flight, close the database). */
  async stop(timeoutMs = 20_000): Promise<Exit> {
    if (this.hasExited()) return this.exited
    this.child.kill('SIGTERM')
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs)
    try {
      return await this.exited
    } finally {
      clearTimeout(timer)
    }
  }

  /** Resident set size of the server process in KiB (Linux /proc), or undefined when it cannot be read. */
  rssKb(): number | undefined {
    if (this.pid === undefined || this.hasExited()) return undefined
    try {
      const status = readFileSync(`/proc/${this.pid}/status`, 'utf8')
      const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)
      return match?.[1] === undefined ? undefined : Number(match[1])
    } catch {
      return undefined
    }
  }
}

/** The CPU time (user and system) a process has used so far, from /proc on Linux; undefined elsewhere. */
function cpuMs(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // After the command name in parentheses: state is field 3, utime 14 and stime 15, in ticks of 10 ms.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const ticks = Number(fields[11]) + Number(fields[12])
    return Number.isFinite(ticks) ? ticks * 10 : undefined
  } catch {
    return undefined
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolveSleep) => setTimeout(resolveSleep, ms))
}

/**
 * A Plinth process reached over HTTP, shaped like `app.inject`, so the helpers written for an
 * in-process platform (`sandbox()`, `buildPayment`, `submitEnvelope`) drive it unchanged.
 */
export function httpNode(base: string): FastifyInstance {
  const inject = async (options: InjectOptions) => {
    const headers: Record<string, string> = {}
    for (const [name, value] of Object.entries(options.headers ?? {})) {
      if (value !== undefined) headers[name.toLowerCase()] = String(value)
    }
    let body: string | undefined
    if (options.payload !== undefined) {
      if (typeof options.payload === 'string') body = options.payload
      else {
        body = JSON.stringify(options.payload)
        headers['content-type'] ??= 'application/json'
      }
    }
    const response = await fetch(`${base}${String(options.url)}`, {
      method: options.method ?? 'GET',
      headers,
      ...(body === undefined ? {} : { body }),
    })
    const text = await response.text()
    return {
      statusCode: response.status,
      body: text,
      headers: Object.fromEntries(response.headers),
      json: () => JSON.parse(text) as unknown,
    }
  }
  return { inject } as unknown as FastifyInstance
}

/** Several Plinth processes on one fresh PostgreSQL schema (or, for one process, any backend). */
export interface Cluster {
  servers: PlinthProcess[]
  /** One `app.inject`-shaped node per process (see httpNode). */
  nodes: FastifyInstance[]
  setup: BackendSetup
  /** Everything every process printed, for asserting on logs. */
  output(): string
  /** SIGTERM to every process, then drops the schema or removes the data directory. */
  close(): Promise<Exit[]>
}

/**
 * Starts `processes` servers at once on one backend (all of them racing to create, migrate and
 * seed a fresh schema) and waits until each answers /readyz. More than one process needs PostgreSQL.
 */
export async function startCluster(options: {
  processes: number
  backend?: Backend
  env?: Record<string, string>
  timeoutMs?: number
}): Promise<Cluster> {
  const backend = options.backend ?? 'postgres'
  if (backend === 'pglite' && options.processes > 1) throw new Error('PGlite is one process: a cluster needs PostgreSQL')
  const setup = await setUpBackend(backend)
  const ports = await Promise.all(Array.from({ length: options.processes }, freePort))
  const servers = ports.map((port) => PlinthProcess.spawn(port, { ...setup.env, ...options.env }))
  const close = async (): Promise<Exit[]> => {
    const exits = await Promise.all(servers.map((server) => server.stop()))
    await setup.cleanup()
    return exits
  }
  try {
    await Promise.all(servers.map((server) => server.waitReady(options.timeoutMs)))
  } catch (error) {
    await Promise.all(servers.map((server) => server.kill()))
    await setup.cleanup()
    throw error
  }
  return {
    servers,
    nodes: servers.map((server) => httpNode(server.base)),
    setup,
    output: () => servers.map((server) => server.output()).join('\n'),
    close,
  }
}
