/**
 * Shared machinery of the benchmark: child servers, readiness, seeding through the sandbox API,
 * load with autocannon, RSS sampling, Markdown tables. The scenarios (bench/scenarios.ts) and the
 * orchestrator (bench/run.ts) are built from these.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { randomInt } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { createServer } from 'node:net'
import os from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import autocannon from 'autocannon'
import pg from 'pg'

const execFileAsync = promisify(execFile)

export function log(message: string): void {
  process.stderr.write(`[bench] ${message}\n`)
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

export function elapsedSeconds(since: number): string {
  return `${((performance.now() - since) / 1000).toFixed(1)} s`
}

// ---------------------------------------------------------------------------------------------
// Cleanup: children are killed and temporary state removed on success, on error and on Ctrl-C.

type CleanupTask = () => void | Promise<void>
const cleanupTasks: CleanupTask[] = []
const liveChildren = new Set<ChildProcess>()

/** Registers a task run (last registered, first run) by runCleanup; answers a function that unregisters it. */
export function onCleanup(task: CleanupTask): () => void {
  cleanupTasks.push(task)
  return () => {
    const at = cleanupTasks.indexOf(task)
    if (at >= 0) cleanupTasks.splice(at, 1)
  }
}

export async function runCleanup(): Promise<void> {
  for (let task = cleanupTasks.pop(); task !== undefined; task = cleanupTasks.pop()) {
    try {
      await task()
    } catch (error) {
      log(`cleanup failed: ${describeError(error)}`)
    }
  }
}

/** Ctrl-C or SIGTERM run the cleanup then exit; a second signal exits at once. Children never outlive this process. */
export function installSignalHandlers(): void {
  let stopping = false
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(130)
    stopping = true
    log(`${signal}: stopping servers and cleaning up`)
    runCleanup().finally(() => process.exit(signal === 'SIGINT' ? 130 : 143))
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  process.on('exit', () => {
    for (const child of liveChildren) child.kill('SIGKILL')
  })
}

export function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

// ---------------------------------------------------------------------------------------------
// Child servers.

export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.unref()
    server.on('error', reject)
    server.listen(0, host, () => {
      const address = server.address()
      if (address === null || typeof address === 'string') {
        server.close()
        reject(new Error('could not read the port of a listening socket'))
        return
      }
      server.close(() => resolve(address.port))
    })
  })
}

/** The parent's environment without anything that configures Plinth, so each server gets exactly what its spec says. */
export function cleanEnv(): NodeJS.ProcessEnv {
  const dropped = /^(PLINTH_|DATABASE_URL$|PORT$|HOST$|LOG_LEVEL$)/
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => !dropped.test(key)))
}

export interface ServerSpec {
  name: string
  command: string
  args: string[]
  /** Added to the cleaned environment, with PORT and HOST. */
  env: Record<string, string>
  cwd: string
  host?: string
  readyPath?: string
  readyTimeoutMs?: number
}

export interface RunningServer {
  name: string
  baseUrl: string
  pid: number
  /** From spawn to the first 200 answer of the readiness path. */
  startupMs: number
  /** The last lines the server wrote. */
  output(): string
  /** Resolves with the first match of the pattern in the server's output, or undefined after timeoutMs. */
  waitForOutput(pattern: RegExp, timeoutMs: number): Promise<RegExpExecArray | undefined>
  /** SIGTERM, then SIGKILL if it has not exited after graceMs. */
  stop(graceMs?: number): Promise<void>
}

const OUTPUT_LIMIT = 32 * 1024

export async function startServer(spec: ServerSpec): Promise<RunningServer> {
  const host = spec.host ?? '127.0.0.1'
  const port = await freePort(host)
  const baseUrl = `http://${host}:${port}`
  let output = ''
  const record = (chunk: Buffer) => {
    output += chunk.toString('utf8')
    if (output.length > OUTPUT_LIMIT) output = output.slice(-OUTPUT_LIMIT)
  }

  const spawnedAt = performance.now()
  const child = spawn(spec.command, spec.args, {
    cwd: spec.cwd,
    env: { ...cleanEnv(), ...spec.env, PORT: String(port), HOST: host },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  liveChildren.add(child)
  child.stdout.on('data', record)
  child.stderr.on('data', record)
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      liveChildren.delete(child)
      resolve()
    })
  })
  const isRunning = () => child.exitCode === null && child.signalCode === null

  const stop = async (graceMs = 15_000) => {
    if (!isRunning()) return
    child.kill('SIGTERM')
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
    await exited
    clearTimeout(timer)
  }
  const unregister = onCleanup(() => stop(5_000))

  child.on('error', (error) => {
    output += `\nspawn error: ${describeError(error)}\n`
  })
  const pid = child.pid
  if (pid === undefined) {
    unregister()
    throw new Error(`${spec.name}: could not spawn ${spec.command}`)
  }

  try {
    await waitReady(`${baseUrl}${spec.readyPath ?? '/readyz'}`, isRunning, spec.readyTimeoutMs ?? 120_000)
  } catch (error) {
    await stop(2_000)
    unregister()
    throw new Error(`${spec.name}: ${describeError(error)}\n--- server output ---\n${output.trimEnd()}\n---`)
  }
  const startupMs = performance.now() - spawnedAt

  return {
    name: spec.name,
    baseUrl,
    pid,
    startupMs,
    output: () => output,
    async waitForOutput(pattern, timeoutMs) {
      const deadline = performance.now() + timeoutMs
      for (;;) {
        const match = pattern.exec(output)
        if (match !== null || performance.now() >= deadline || !isRunning()) return match ?? undefined
        await sleep(20)
      }
    },
    async stop(graceMs) {
      await stop(graceMs)
      unregister()
    },
  }
}

/** Polls the URL every 20 ms until it answers 200. Fails when the process dies or the time is up. */
export async function waitReady(url: string, isRunning: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs
  let last = 'no answer yet'
  while (performance.now() < deadline) {
    if (!isRunning()) throw new Error(`exited before ${url} answered 200 (${last})`)
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2_000) })
      await response.arrayBuffer()
      if (response.status === 200) return
      last = `HTTP ${response.status}`
    } catch (error) {
      last = describeError(error)
    }
    await sleep(20)
  }
  throw new Error(`${url} did not answer 200 within ${timeoutMs} ms (${last})`)
}

// ---------------------------------------------------------------------------------------------
// Resident memory of a process.

export async function readRssKb(pid: number): Promise<number | undefined> {
  try {
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    if (match?.[1] !== undefined) return Number(match[1])
  } catch {
    // No procfs (macOS): ask ps.
  }
  try {
    const { stdout } = await execFileAsync('ps', ['-o', 'rss=', '-p', String(pid)])
    const kb = Number(stdout.trim())
    return Number.isFinite(kb) && kb > 0 ? kb : undefined
  } catch {
    return undefined
  }
}

/** CPU time (user + system) a process has used so far, in ms; undefined without procfs. */
export function readCpuMs(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Fields after "(comm) ": state is field 3, utime 14, stime 15, in clock ticks (USER_HZ, 100 on Linux).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const ticks = Number(fields[11]) + Number(fields[12])
    return Number.isFinite(ticks) ? ticks * 10 : undefined
  } catch {
    return undefined
  }
}

/** CPU time all cores have spent busy (not idle or waiting for I/O) since boot, in ms; undefined without procfs. */
export function readMachineBusyMs(): number | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? ''
    const ticks = line.trim().split(/\s+/).slice(1, 9).map(Number)
    const idle = (ticks[3] ?? 0) + (ticks[4] ?? 0)
    const total = ticks.reduce((sum, value) => sum + value, 0)
    return Number.isFinite(total) && total > 0 ? (total - idle) * 10 : undefined
  } catch {
    return undefined
  }
}

/**
 * CPU used over the next `ms` by every process but this one and the given ones (in % of one core):
 * other work on the machine, measured while the server under test sits idle.
 */
export async function otherProcessesBusyPercent(ms: number, excludedPids: readonly number[]): Promise<number | undefined> {
  const ownCpu = () => {
    const usage = process.cpuUsage()
    return (usage.user + usage.system) / 1000
  }
  const excluded = () => excludedPids.reduce((sum, pid) => sum + (readCpuMs(pid) ?? 0), ownCpu())
  const machineBefore = readMachineBusyMs()
  const excludedBefore = excluded()
  const startedAt = performance.now()
  await sleep(ms)
  const machineAfter = readMachineBusyMs()
  const excludedAfter = excluded()
  if (machineBefore === undefined || machineAfter === undefined) return undefined
  const othersMs = machineAfter - machineBefore - (excludedAfter - excludedBefore)
  return Math.max(0, (othersMs / (performance.now() - startedAt)) * 100)
}

export interface ProcessUsage {
  /** Peak RSS in MB (MiB), or undefined when nothing could be read. */
  peakRssMb: number | undefined
  /** CPU used over the sampled interval, in % of one core (200 = two cores busy). */
  cpuPercent: number | undefined
  /** CPU used by every process on the machine over the same interval, in % of one core. */
  machineCpuPercent: number | undefined
}

/** Samples a process's RSS every intervalMs and keeps the peak; also measures the CPU it used meanwhile. */
export class ProcessSampler {
  private peakKb = 0
  private timer: NodeJS.Timeout | undefined
  private startedAt = 0
  private cpuAtStart: number | undefined
  private machineAtStart: number | undefined

  constructor(
    private readonly pid: number,
    private readonly intervalMs = 200,
  ) {}

  private async sample(): Promise<void> {
    const kb = await readRssKb(this.pid)
    if (kb !== undefined && kb > this.peakKb) this.peakKb = kb
  }

  start(): void {
    this.startedAt = performance.now()
    this.cpuAtStart = readCpuMs(this.pid)
    this.machineAtStart = readMachineBusyMs()
    void this.sample()
    this.timer = setInterval(() => void this.sample(), this.intervalMs)
  }

  async stop(): Promise<ProcessUsage> {
    clearInterval(this.timer)
    const cpuAtEnd = readCpuMs(this.pid)
    const machineAtEnd = readMachineBusyMs()
    const wallMs = performance.now() - this.startedAt
    await this.sample()
    return {
      peakRssMb: this.peakKb === 0 ? undefined : this.peakKb / 1024,
      cpuPercent: cpuAtEnd === undefined || this.cpuAtStart === undefined ? undefined : ((cpuAtEnd - this.cpuAtStart) / wallMs) * 100,
      machineCpuPercent:
        machineAtEnd === undefined || this.machineAtStart === undefined ? undefined : ((machineAtEnd - this.machineAtStart) / wallMs) * 100,
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Seeding through the sandbox API.

export interface SeededApp {
  appId: string
  name: string
  apiKey: string
}

export interface SeededUser {
  userId: string
  username: string
  appId: string
  accessToken: string
}

export interface Fixtures {
  apps: SeededApp[]
  users: SeededUser[]
  /** Wall time of the whole seeding. */
  seedMs: number
}

export interface SeedOptions {
  apps: number
  users: number
  /** Requests in flight at once. */
  concurrency: number
  /** Makes usernames unique to this run (a few hex characters). */
  tag: string
}

function stringField(value: unknown, key: string, what: string): string {
  if (typeof value === 'object' && value !== null) {
    const found = (value as Record<string, unknown>)[key]
    if (typeof found === 'string') return found
  }
  throw new Error(`${what}: the answer has no string "${key}": ${JSON.stringify(value)}`)
}

export async function postJson(url: string, body: unknown, expectedStatus: number): Promise<unknown> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  })
  const text = await response.text()
  if (response.status !== expectedStatus) {
    throw new Error(`POST ${new URL(url).pathname}: HTTP ${response.status} (expected ${expectedStatus}): ${text.slice(0, 500)}`)
  }
  return JSON.parse(text) as unknown
}

/** Runs fn(0) … fn(count - 1) with at most `limit` running at once; answers the results in order. */
export async function mapLimit<R>(count: number, limit: number, fn: (index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = []
  let next = 0
  const worker = async () => {
    for (let index = next++; index < count; index = next++) results[index] = await fn(index)
  }
  await Promise.all(Array.from({ length: Math.min(limit, count) }, worker))
  return results
}

/**
 * Realistic data, made the way a developer would: apps, then users, each user signed in to one
 * app (round robin) with the username and payments scopes, so every user holds one access token.
 */
export async function seed(baseUrl: string, options: SeedOptions): Promise<Fixtures> {
  const startedAt = performance.now()
  const apps = await mapLimit(options.apps, options.concurrency, async (index) => {
    const name = `Bench App ${index + 1}`
    const created = await postJson(`${baseUrl}/sandbox/apps`, { name }, 201)
    return { appId: stringField(created, 'app_id', 'create app'), name, apiKey: stringField(created, 'api_key', 'create app') }
  })
  const users = await mapLimit(options.users, options.concurrency, async (index) => {
    const username = `b${options.tag}_${index}`
    const created = await postJson(`${baseUrl}/sandbox/users`, { username }, 201)
    const userId = stringField(created, 'user_id', 'create user')
    const app = apps[index % apps.length]
    if (app === undefined) throw new Error('seed: at least one app is needed')
    const signedIn = await postJson(
      `${baseUrl}/sandbox/apps/${app.appId}/authenticate`,
      { user_id: userId, scopes: ['username', 'payments'] },
      200,
    )
    return { userId, username, appId: app.appId, accessToken: stringField(signedIn, 'accessToken', 'authenticate') }
  })
  return { apps, users, seedMs: performance.now() - startedAt }
}

/** Hands out items in a random order, every item once before any repeats, then reshuffles. */
export class Deck<T> {
  private readonly order: T[]
  private position = 0

  constructor(items: readonly T[]) {
    if (items.length === 0) throw new Error('Deck: no items')
    this.order = [...items]
    this.shuffle()
  }

  private shuffle(): void {
    for (let i = this.order.length - 1; i > 0; i--) {
      const j = randomInt(i + 1)
      const a = this.order[i]
      const b = this.order[j]
      if (a === undefined || b === undefined) continue
      this.order[i] = b
      this.order[j] = a
    }
  }

  next(): T {
    if (this.position >= this.order.length) {
      this.shuffle()
      this.position = 0
    }
    const item = this.order[this.position++]
    if (item === undefined) throw new Error('Deck: out of range')
    return item
  }
}

// ---------------------------------------------------------------------------------------------
// Scenarios and load.

/** What serves the scenario: the Fastify baseline, or Plinth on one of its storage backends. */
export type Backend = 'fastify' | 'pglite' | 'postgres'

export type HttpMethod = autocannon.HttpMethod

export interface RequestSpec {
  method: HttpMethod
  path: string
  headers?: Record<string, string>
  body?: string
}

/** Called once per request sent: vary the request here (which user, which payment). */
export type RequestBuilder = () => RequestSpec

export interface ScenarioContext {
  backend: Backend
  baseUrl: string
  quick: boolean
  /** The apps, users and tokens seeded on this server; seeded on first use, then shared by every scenario. */
  fixtures(): Promise<Fixtures>
}

/** A scenario as written: typed setup state handed to the request builder. */
export interface ScenarioDefinition<S> {
  name: string
  backends: readonly Backend[]
  /** Runs once on each server before the warm-up: create whatever the requests need. */
  setup(context: ScenarioContext): Promise<S>
  /** Builds one request from the setup's state; called for every request sent. */
  request(state: S): RequestSpec
}

/** A scenario as the harness runs it, its state type hidden behind the request builder. */
export interface Scenario {
  name: string
  backends: readonly Backend[]
  prepare(context: ScenarioContext): Promise<RequestBuilder>
}

export function defineScenario<S>(definition: ScenarioDefinition<S>): Scenario {
  return {
    name: definition.name,
    backends: definition.backends,
    async prepare(context) {
      const state = await definition.setup(context)
      return () => definition.request(state)
    },
  }
}

export interface LoadOptions {
  baseUrl: string
  connections: number
  durationSeconds: number
  build: RequestBuilder
  timeoutSeconds?: number
}

export interface LoadResult {
  /** Mean of the per-second request counts. */
  requestsPerSecond: number
  totalRequests: number
  latencyP50: number
  latencyP99: number
  latencyMax: number
  /** non-2xx answers + connection errors (timeouts are among these). */
  errors: number
  non2xx: number
  connectionErrors: number
  timeouts: number
  statusCodes: Record<string, number>
}

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const { build } = options
  const instance = autocannon({
    url: options.baseUrl,
    connections: options.connections,
    duration: options.durationSeconds,
    timeout: options.timeoutSeconds ?? 10,
    requests: [
      {
        setupRequest: (request) => {
          const spec = build()
          const headers = { ...request.headers, ...spec.headers }
          return spec.body === undefined
            ? { ...request, method: spec.method, path: spec.path, headers }
            : { ...request, method: spec.method, path: spec.path, headers, body: spec.body }
        },
      },
    ],
  })
  const onSignal = () => instance.stop()
  process.once('SIGINT', onSignal)
  try {
    const result = await instance
    const statusCodes = Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, stats]) => [code, stats.count]))
    return {
      requestsPerSecond: result.requests.average,
      totalRequests: result.requests.total,
      latencyP50: result.latency.p50,
      latencyP99: result.latency.p99,
      latencyMax: result.latency.max,
      errors: result.non2xx + result.errors,
      non2xx: result.non2xx,
      connectionErrors: result.errors,
      timeouts: result.timeouts,
      statusCodes,
    }
  } finally {
    process.off('SIGINT', onSignal)
  }
}

/** Runs a builder once outside autocannon and checks the answer, so a broken scenario fails fast and readably. */
export async function probe(baseUrl: string, build: RequestBuilder): Promise<void> {
  const spec = build()
  const response = await fetch(`${baseUrl}${spec.path}`, {
    method: spec.method,
    headers: spec.headers ?? {},
    ...(spec.body === undefined ? {} : { body: spec.body }),
    signal: AbortSignal.timeout(10_000),
  })
  const text = await response.text()
  if (response.status < 200 || response.status > 299) {
    throw new Error(`${spec.method} ${spec.path}: HTTP ${response.status}: ${text.slice(0, 500)}`)
  }
}

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
// Build.

function newestMtimeMs(path: string): number {
  const stat = statSync(path)
  if (!stat.isDirectory()) return stat.mtimeMs
  let newest = stat.mtimeMs
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtimeMs(join(path, entry)))
  return newest
}

/** Compiles src/ to dist/ with the project's TypeScript when dist/server.js is missing or older than any source. */
export async function ensureBuilt(root: string): Promise<'built' | 'up to date'> {
  const output = join(root, 'dist', 'server.js')
  const inputs = ['src', 'tsconfig.json', 'tsconfig.build.json', 'package-lock.json'].map((p) => join(root, p)).filter(existsSync)
  if (existsSync(output) && statSync(output).mtimeMs >= Math.max(...inputs.map(newestMtimeMs))) return 'up to date'
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc')
  const child = spawn(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: ['ignore', 2, 2] })
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject)
    child.once('exit', resolve)
  })
  if (code !== 0) throw new Error(`tsc -p tsconfig.build.json failed (exit ${code}); fix the build before benchmarking`)
  return 'built'
}

// ---------------------------------------------------------------------------------------------
// The machine.

export interface MachineInfo {
  cpu: string
  cores: number
  memoryGiB: number
  node: string
  os: string
}

export function machineInfo(): MachineInfo {
  let cpu = os.cpus()[0]?.model ?? 'unknown CPU'
  try {
    const match = /^model name\s*:\s*(.+)$/m.exec(readFileSync('/proc/cpuinfo', 'utf8'))
    if (match?.[1] !== undefined) cpu = match[1].trim()
  } catch {
    // Not Linux: os.cpus() it is.
  }
  return {
    cpu,
    cores: os.availableParallelism(),
    memoryGiB: os.totalmem() / 1024 ** 3,
    node: process.version,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
  }
}

export function packageVersion(root: string, name: string): string {
  try {
    const parsed = JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')) as { version?: unknown }
    return typeof parsed.version === 'string' ? parsed.version : 'unknown'
  } catch {
    return 'unknown'
  }
}

// ---------------------------------------------------------------------------------------------
// Formatting.

export type Align = 'left' | 'right'

/** A Markdown table padded to line up in a terminal as well. */
export function markdownTable(headers: readonly string[], rows: readonly (readonly string[])[], align: readonly Align[] = []): string {
  const widths = headers.map((header, column) => Math.max(header.length, ...rows.map((row) => (row[column] ?? '').length), 3))
  const pad = (cell: string, column: number) => {
    const width = widths[column] ?? cell.length
    return align[column] === 'right' ? cell.padStart(width) : cell.padEnd(width)
  }
  const line = (cells: readonly string[]) => `| ${headers.map((_, column) => pad(cells[column] ?? '', column)).join(' | ')} |`
  const rule = `| ${widths.map((width, column) => (align[column] === 'right' ? `${'-'.repeat(width - 1)}:` : '-'.repeat(width))).join(' | ')} |`
  return [line(headers), rule, ...rows.map(line)].join('\n')
}

export function formatNumber(value: number, digits = 0): string {
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
}

/** Whole milliseconds, as autocannon records latencies (truncated); 0 means under 1 ms. */
export function formatLatency(value: number): string {
  return value < 1 ? '<1' : formatNumber(Math.floor(value))
}

/** The text of the `## Title` section of a Markdown document, heading included, up to the next `## `; undefined when absent. */
export function markdownSection(document: string, title: string): string | undefined {
  const lines = document.split('\n')
  const heading = title.toLowerCase()
  const start = lines.findIndex((line) => {
    const text = line.trim().toLowerCase()
    return text === `## ${heading}` || text.startsWith(`## ${heading} `) || text.startsWith(`## ${heading}:`)
  })
  if (start < 0) return undefined
  let end = lines.findIndex((line, index) => index > start && line.startsWith('## '))
  if (end < 0) end = lines.length
  return lines.slice(start, end).join('\n').trimEnd()
}
