/**
 * Shared machinery of the benchmark: child servers, readiness, seeding through the sandbox API,
 * load with autocannon (request scenarios), multi-request flows with fetch (flow scenarios: the
 * payment lifecycles), pgbench, RSS sampling, Markdown tables. The scenarios (bench/scenarios.ts)
 * and the orchestrator (bench/run.ts) are built from these.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { randomBytes, randomInt } from 'node:crypto'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { createServer } from 'node:net'
import os from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import autocannon from 'autocannon'
import pg from 'pg'
import { request } from 'undici'

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

/**
 * CPU time (user + system) every process named `postgres` (the PostgreSQL server's postmaster,
 * backends and helpers) has used so far, in ms; undefined without procfs. A PostgreSQL server on
 * another machine is not seen; backends serving other clients of the same server are counted too.
 */
export function readPostgresCpuMs(): number | undefined {
  let entries: string[]
  try {
    entries = readdirSync('/proc')
  } catch {
    return undefined
  }
  let total = 0
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== 'postgres') continue
    } catch {
      continue
    }
    total += readCpuMs(Number(entry)) ?? 0
  }
  return total
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
  /** Peak RSS in MB (MiB), or undefined when nothing could be read; with several processes, the sum of each one's peak. */
  peakRssMb: number | undefined
  /** CPU used over the sampled interval, in % of one core (200 = two cores busy); with several processes, their sum. */
  cpuPercent: number | undefined
  /** CPU used by every process on the machine over the same interval, in % of one core. */
  machineCpuPercent: number | undefined
  /** CPU used by the local PostgreSQL server's processes over the same interval (see readPostgresCpuMs), in % of one core. */
  postgresCpuPercent: number | undefined
}

/** Samples the RSS of one or more processes every intervalMs and keeps each one's peak; also measures the CPU they used meanwhile. */
export class ProcessSampler {
  private readonly pids: readonly number[]
  private readonly peakKb: Map<number, number>
  private timer: NodeJS.Timeout | undefined
  private startedAt = 0
  private cpuAtStart: number | undefined
  private machineAtStart: number | undefined
  private postgresAtStart: number | undefined

  constructor(
    pids: number | readonly number[],
    private readonly intervalMs = 200,
  ) {
    this.pids = typeof pids === 'number' ? [pids] : pids
    this.peakKb = new Map(this.pids.map((pid) => [pid, 0]))
  }

  private async sample(): Promise<void> {
    await Promise.all(
      this.pids.map(async (pid) => {
        const kb = await readRssKb(pid)
        if (kb !== undefined && kb > (this.peakKb.get(pid) ?? 0)) this.peakKb.set(pid, kb)
      }),
    )
  }

  /** The CPU time all the processes used so far, or undefined when any cannot be read. */
  private cpuMs(): number | undefined {
    let total = 0
    for (const pid of this.pids) {
      const ms = readCpuMs(pid)
      if (ms === undefined) return undefined
      total += ms
    }
    return total
  }

  start(): void {
    this.startedAt = performance.now()
    this.cpuAtStart = this.cpuMs()
    this.machineAtStart = readMachineBusyMs()
    this.postgresAtStart = readPostgresCpuMs()
    void this.sample()
    this.timer = setInterval(() => void this.sample(), this.intervalMs)
  }

  async stop(): Promise<ProcessUsage> {
    clearInterval(this.timer)
    const cpuAtEnd = this.cpuMs()
    const machineAtEnd = readMachineBusyMs()
    const postgresAtEnd = readPostgresCpuMs()
    const wallMs = performance.now() - this.startedAt
    await this.sample()
    const peaks = [...this.peakKb.values()]
    return {
      peakRssMb: peaks.some((kb) => kb === 0) ? undefined : peaks.reduce((sum, kb) => sum + kb, 0) / 1024,
      cpuPercent: cpuAtEnd === undefined || this.cpuAtStart === undefined ? undefined : ((cpuAtEnd - this.cpuAtStart) / wallMs) * 100,
      machineCpuPercent:
        machineAtEnd === undefined || this.machineAtStart === undefined ? undefined : ((machineAtEnd - this.machineAtStart) / wallMs) * 100,
      postgresCpuPercent:
        postgresAtEnd === undefined || this.postgresAtStart === undefined
          ? undefined
          : (Math.max(0, postgresAtEnd - this.postgresAtStart) / wallMs) * 100,
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Seeding through the sandbox API.

export interface SeededApp {
  appId: string
  name: string
  /** The first server API key. */
  apiKey: string
  /** Every server API key of the app, the first included (an app may hold several while it rotates them). */
  apiKeys: string[]
  walletAddress: string
  /** The app wallet's secret seed, which signs its A2U transactions. */
  walletSeed: string
  network: string
}

export interface SeededUser {
  userId: string
  username: string
  appId: string
  /** The user's uid in that app (what A2U payments and notifications are addressed to). */
  uid: string
  /** The user's ledger account. */
  walletAddress: string
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
  /** Server API keys per app (the first included). */
  keysPerApp: number
  /** Requests in flight at once. */
  concurrency: number
  /** Makes usernames unique to this run (a few hex characters). */
  tag: string
}

/**
 * The scopes the seeded users grant their app: what GET /v2/me reads, what lets the app pay them
 * (wallet_address, for the seeded A2U payments) and notify them (in_app_notifications).
 */
export const FIXTURE_SCOPES = ['username', 'payments', 'wallet_address', 'in_app_notifications'] as const

/** The value at a dotted path of a parsed JSON answer (`jsonAt(body, 'status.developer_completed')`); undefined when absent. */
export function jsonAt(value: unknown, path: string): unknown {
  let current = value
  for (const key of path.split('.')) {
    if (typeof current !== 'object' || current === null) return undefined
    current = (current as Record<string, unknown>)[key]
  }
  return current
}

/** A string field of an answer, or an error naming what was being done. */
export function stringField(value: unknown, key: string, what: string): string {
  if (typeof value === 'object' && value !== null) {
    const found = (value as Record<string, unknown>)[key]
    if (typeof found === 'string') return found
  }
  throw new Error(`${what}: the answer has no string "${key}": ${JSON.stringify(value)}`)
}

export async function postJson(url: string, body: unknown, expectedStatus: number, headers: Record<string, string> = {}): Promise<unknown> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
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

/** `POST /sandbox/apps`: a new app with its first key and its funded wallet. */
async function createApp(baseUrl: string, name: string): Promise<SeededApp> {
  const created = await postJson(`${baseUrl}/sandbox/apps`, { name }, 201)
  const wallet = jsonAt(created, 'wallet')
  const apiKey = stringField(created, 'api_key', 'create app')
  return {
    appId: stringField(created, 'app_id', 'create app'),
    name,
    apiKey,
    apiKeys: [apiKey],
    walletAddress: stringField(wallet, 'address', 'create app'),
    walletSeed: stringField(wallet, 'seed', 'create app'),
    network: stringField(created, 'network', 'create app'),
  }
}

/**
 * Realistic data, made the way a developer would: apps (each with keysPerApp server keys), then
 * users, each user signed in to one app (round robin) with FIXTURE_SCOPES, so every user holds
 * one access token and a uid in that app.
 */
export async function seed(baseUrl: string, options: SeedOptions): Promise<Fixtures> {
  const startedAt = performance.now()
  const apps = await mapLimit(options.apps, options.concurrency, (index) => createApp(baseUrl, `Bench App ${index + 1}`))
  await mapLimit(apps.length * Math.max(0, options.keysPerApp - 1), options.concurrency, async (index) => {
    const app = apps[index % apps.length]
    if (app === undefined) throw new Error('seed: no app for a key')
    const created = await postJson(`${baseUrl}/sandbox/apps/${app.appId}/keys`, {}, 201)
    app.apiKeys.push(stringField(created, 'api_key', 'create key'))
  })
  const users = await mapLimit(options.users, options.concurrency, async (index) => {
    const username = `b${options.tag}_${index}`
    const created = await postJson(`${baseUrl}/sandbox/users`, { username }, 201)
    const userId = stringField(created, 'user_id', 'create user')
    const app = apps[index % apps.length]
    if (app === undefined) throw new Error('seed: at least one app is needed')
    const signedIn = await postJson(`${baseUrl}/sandbox/apps/${app.appId}/authenticate`, { user_id: userId, scopes: FIXTURE_SCOPES }, 200)
    return {
      userId,
      username,
      appId: app.appId,
      uid: stringField(jsonAt(signedIn, 'user'), 'uid', 'authenticate'),
      walletAddress: stringField(jsonAt(created, 'wallet'), 'address', 'create user'),
      accessToken: stringField(signedIn, 'accessToken', 'authenticate'),
    }
  })
  return { apps, users, seedMs: performance.now() - startedAt }
}

/** One flow worker's own app (with its wallet, whose seed signs A2U transactions) and its own users of that app. */
export interface FlowTeam {
  app: SeededApp
  users: FlowUser[]
}

export interface FlowUser {
  userId: string
  /** The user's uid in the team's app (what A2U payments are addressed to). */
  uid: string
  accessToken: string
}

export interface FlowSeedOptions {
  teams: number
  usersPerTeam: number
  concurrency: number
  tag: string
}

/** The scopes a user grants the flow apps: wallet_address is what lets an app pay the user (A2U). */
export const FLOW_SCOPES = ['username', 'payments', 'wallet_address'] as const

/**
 * The payment flows' data: one app per worker (an app account signs its transactions one sequence
 * number at a time, and a user has one open payment per app), each with its own users, signed in
 * to that app with FLOW_SCOPES. Made apart from seed()'s users, so GET /v2/me measures what it did.
 */
export async function seedFlowTeams(baseUrl: string, options: FlowSeedOptions): Promise<{ teams: FlowTeam[]; seedMs: number }> {
  const startedAt = performance.now()
  const apps = await mapLimit(options.teams, options.concurrency, (index) => createApp(baseUrl, `Bench Flow App ${index + 1}`))
  const users = await mapLimit(options.teams * options.usersPerTeam, options.concurrency, async (index) => {
    const team = Math.floor(index / options.usersPerTeam)
    const app = apps[team]
    if (app === undefined) throw new Error('seedFlowTeams: no app for a user')
    const created = await postJson(`${baseUrl}/sandbox/users`, { username: `f${options.tag}_${team}_${index % options.usersPerTeam}` }, 201)
    const userId = stringField(created, 'user_id', 'create user')
    const signedIn = await postJson(`${baseUrl}/sandbox/apps/${app.appId}/authenticate`, { user_id: userId, scopes: FLOW_SCOPES }, 200)
    return {
      team,
      user: {
        userId,
        uid: stringField(jsonAt(signedIn, 'user'), 'uid', 'authenticate'),
        accessToken: stringField(signedIn, 'accessToken', 'authenticate'),
      },
    }
  })
  const teams = apps.map((app, team) => ({ app, users: users.filter((entry) => entry.team === team).map((entry) => entry.user) }))
  return { teams, seedMs: performance.now() - startedAt }
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

/** What a checked answer held: the items it carries (notifications delivered), or what is wrong with it. */
export type AnswerVerdict = { items: number } | { problem: string }

export interface RequestSpec {
  method: HttpMethod
  path: string
  headers?: Record<string, string>
  body?: string
  /**
   * Read for every answer when the scenario checks answers (PreparedRequests.checksAnswers): a
   * problem on a 2xx answer counts as an error (a non-2xx answer already is one); items are summed.
   */
  check?: (status: number, body: string) => AnswerVerdict
}

/** Called once per request sent: vary the request here (which user, which payment). */
export type RequestBuilder = () => RequestSpec

export interface SeedRecord {
  /** What the data is for. */
  purpose: string
  /** What was made, in words ("3,600 payments: …"). */
  made: string
  /** How many of the main thing were made, for the per-second figure. */
  items: number
  seconds: number
}

/** How much of each kind of data the scenarios seed on a server, besides the users (Fixtures). */
export interface DataSizes {
  /** A2U payments made per seeded user, through the API (most cancelled, some left open). */
  paymentsPerUser: number
  /** Per app, payments taken to completion through the ledger (signed with the app wallet), on top. */
  completedPaymentsPerApp: number
  /** Rewarded ads each seeded user watches. */
  adsPerUser: number
  /** Seeding requests in flight at once. */
  seedConcurrency: number
}

export interface ScenarioContext {
  backend: Backend
  baseUrl: string
  quick: boolean
  data: DataSizes
  /** The apps, users and tokens seeded on this server; seeded on first use, then shared by every scenario. */
  fixtures(): Promise<Fixtures>
  /** One team (app + users) per flow worker, seeded on first use, then shared by every flow scenario. */
  flowTeams(): Promise<FlowTeam[]>
  /** Other data seeded on this server under `key`: made on first use, then shared (the scaling runs reuse it). */
  shared<T>(key: string, make: () => Promise<T>): Promise<T>
  /** Adds a line to the report's seeding table. */
  recordSeed(record: SeedRecord): void
}

/** Where and how a scenario runs, besides what it does. */
export interface ScenarioTraits {
  name: string
  backends: readonly Backend[]
  /** The backends it runs on in a --quick run; all of `backends` when absent. */
  quickBackends?: readonly Backend[]
  /** Also measured with several Plinth processes sharing one PostgreSQL (see run.ts). */
  scaling?: boolean
  /**
   * Moves the platform clock forward (POST /sandbox/clock): access tokens expire and transactions
   * signed against the wall clock fall outside their time bounds, so it runs after every other
   * measurement on its server.
   */
  movesClock?: boolean
  /** The seeded users each app needs at least (the fixtures grow to it on the servers this scenario runs on). */
  minUsersPerApp?: number
}

/** A scenario as written: typed setup state handed to the request builder. */
export interface ScenarioDefinition<S> extends ScenarioTraits {
  /** Runs once on each server before the warm-up: create whatever the requests need. */
  setup(context: ScenarioContext): Promise<S>
  /** Builds one request from the setup's state; called for every request sent. */
  request(state: S): RequestSpec
  /** The answers are read and checked with RequestSpec.check (costs the load generator some CPU). */
  checksAnswers?: boolean
  /** When set, the throughput is the checked items per second in this unit ("notifications/s"), not req/s. */
  itemUnit?: string
  /** What the run did besides the numbers (clock advances, …), for the log and the report. */
  summary?(state: S): string
  /** Called after each autocannon run (warm-up, measured): the requests it left in flight will never be answered to this side. */
  afterRun?(state: S): void
}

/** A request scenario ready to load: its builder and how to read its answers. */
export interface PreparedRequests {
  build: RequestBuilder
  checksAnswers: boolean
  itemUnit: string | undefined
  summary(): string | undefined
  afterRun(): void
}

/** A request scenario as the harness runs it (with autocannon), its state type hidden behind the request builder. */
export interface RequestScenario extends ScenarioTraits {
  kind: 'request'
  prepare(context: ScenarioContext): Promise<PreparedRequests>
}

/** What the harness measures: single requests (autocannon) or multi-request flows (runFlow). */
export type Scenario = RequestScenario | FlowScenario

function traitsOf(definition: ScenarioTraits): ScenarioTraits {
  const { name, backends, quickBackends, scaling, movesClock, minUsersPerApp } = definition
  return { name, backends, quickBackends, scaling, movesClock, minUsersPerApp }
}

export function defineScenario<S>(definition: ScenarioDefinition<S>): RequestScenario {
  return {
    kind: 'request',
    ...traitsOf(definition),
    async prepare(context) {
      const state = await definition.setup(context)
      return {
        build: () => definition.request(state),
        checksAnswers: definition.checksAnswers ?? false,
        itemUnit: definition.itemUnit,
        summary: () => definition.summary?.(state),
        afterRun: () => definition.afterRun?.(state),
      }
    },
  }
}

export interface LoadOptions {
  /** One URL, or one per server process: autocannon deals its connections round robin over them. */
  baseUrl: string | readonly string[]
  connections: number
  durationSeconds: number
  build: RequestBuilder
  /** Read every answer and pass it to RequestSpec.check. */
  checksAnswers?: boolean
  timeoutSeconds?: number
}

export interface AnswerProblem {
  key: string
  count: number
}

export interface LoadResult {
  /** Mean of the per-second request counts. */
  requestsPerSecond: number
  totalRequests: number
  /** The run's length as autocannon measured it, in seconds. */
  durationSeconds: number
  latencyP50: number
  latencyP99: number
  latencyMax: number
  /** non-2xx answers + connection errors (timeouts are among these) + 2xx answers whose check found a problem. */
  errors: number
  non2xx: number
  connectionErrors: number
  timeouts: number
  statusCodes: Record<string, number>
  /** Items the checked answers held (0 unless the scenario checks answers). */
  items: number
  /** 2xx answers whose check found a problem. */
  problems: number
  problemKinds: AnswerProblem[]
}

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const { build } = options
  let items = 0
  let problems = 0
  const problemKinds = new Map<string, number>()
  // autocannon keeps one context per connection and, without pipelining, a connection has one
  // request in flight: the check of the request just built waits there for its answer.
  const pending = new WeakMap<Record<string, unknown>, RequestSpec['check']>()
  const onResponse = (status: number, body: string, context: Record<string, unknown>) => {
    const check = pending.get(context)
    pending.delete(context)
    if (check === undefined) return
    const verdict = check(status, body)
    if ('items' in verdict) {
      items += verdict.items
    } else if (status >= 200 && status <= 299) {
      problems++
      problemKinds.set(verdict.problem, (problemKinds.get(verdict.problem) ?? 0) + 1)
    }
  }
  const instance = autocannon({
    url: typeof options.baseUrl === 'string' ? options.baseUrl : [...options.baseUrl],
    connections: options.connections,
    duration: options.durationSeconds,
    timeout: options.timeoutSeconds ?? 10,
    requests: [
      {
        setupRequest: (request, context) => {
          const spec = build()
          if (options.checksAnswers === true && spec.check !== undefined) pending.set(context, spec.check)
          const headers = { ...request.headers, ...spec.headers }
          return spec.body === undefined
            ? { ...request, method: spec.method, path: spec.path, headers }
            : { ...request, method: spec.method, path: spec.path, headers, body: spec.body }
        },
        ...(options.checksAnswers === true ? { onResponse } : {}),
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
      durationSeconds: result.duration,
      latencyP50: result.latency.p50,
      latencyP99: result.latency.p99,
      latencyMax: result.latency.max,
      errors: result.non2xx + result.errors + problems,
      non2xx: result.non2xx,
      connectionErrors: result.errors,
      timeouts: result.timeouts,
      statusCodes,
      items,
      problems,
      problemKinds: [...problemKinds].map(([key, count]) => ({ key, count })).sort((a, b) => b.count - a.count),
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
  const verdict = spec.check?.(response.status, text)
  if (response.status < 200 || response.status > 299) {
    throw new Error(`${spec.method} ${spec.path}: HTTP ${response.status}: ${text.slice(0, 500)}`)
  }
  if (verdict !== undefined && 'problem' in verdict) {
    throw new Error(`${spec.method} ${spec.path}: ${verdict.problem}: ${text.slice(0, 500)}`)
  }
}

// ---------------------------------------------------------------------------------------------
// Flows: a lifecycle of several requests, looped by a fixed number of workers.

/** A refused step of a lifecycle: `key` groups alike failures in the report (step, status, error code). */
export class FlowError extends Error {
  constructor(
    readonly key: string,
    message: string,
  ) {
    super(message)
    this.name = 'FlowError'
  }
}

export interface FlowCallOptions {
  headers?: Record<string, string>
  /** Sent as application/json. */
  json?: unknown
  /** Sent as application/x-www-form-urlencoded (what stellar-sdk sends to Horizon). */
  form?: Record<string, string>
  /** The one status that is a success; any other is a FlowError. */
  expect: number
}

/** What a lifecycle talks to the server with: timed steps over keep-alive connections (fetch, i.e. undici's pool). */
export interface FlowClient {
  /** Sends one request as the step `step`; answers its parsed JSON body; throws a FlowError unless the status is `expect`. */
  call(step: string, method: 'GET' | 'POST', path: string, options: FlowCallOptions): Promise<unknown>
  /** Runs local work (building and signing a transaction) as a timed step. */
  time<T>(step: string, work: () => T): T
  /** A request whose outcome does not matter (cleaning up after a failure); never throws, not timed. */
  attempt(method: 'GET' | 'POST', path: string, headers?: Record<string, string>): Promise<void>
}

/** One whole lifecycle of one worker; throws (a FlowError, preferably) when any step did not answer as expected. */
export type Lifecycle = (client: FlowClient) => Promise<void>

export interface PreparedFlow {
  /** One per concurrent worker; each is looped by its own worker, never two at once. */
  lifecycles: Lifecycle[]
  /** After the run: what the server's state says went wrong (nothing, normally). */
  verify(): Promise<string[]>
}

/** A flow scenario as the harness runs it (with runFlow). */
export interface FlowScenario extends ScenarioTraits {
  kind: 'flow'
  /** What one completed flow is called in the report ("lifecycles"). */
  unit: string
  prepare(context: ScenarioContext): Promise<PreparedFlow>
}

/** A flow scenario as written: one typed state per worker, handed to each of its lifecycles. */
export interface FlowDefinition<W> extends ScenarioTraits {
  unit?: string
  /** Runs once on each server before the warm-up: answers one state per worker (its app, its users, its account). */
  setup(context: ScenarioContext): Promise<W[]>
  /** One lifecycle of one worker. */
  lifecycle(worker: W, client: FlowClient): Promise<void>
  /** After the run: problems the server's state shows (open payments left, sequences that drifted). */
  verify?(workers: readonly W[], baseUrl: string): Promise<string[]>
}

export function defineFlow<W>(definition: FlowDefinition<W>): FlowScenario {
  return {
    kind: 'flow',
    ...traitsOf(definition),
    unit: definition.unit ?? 'lifecycles',
    async prepare(context) {
      const workers = await definition.setup(context)
      return {
        lifecycles: workers.map((worker) => (client: FlowClient) => definition.lifecycle(worker, client)),
        verify: async () => (definition.verify === undefined ? [] : definition.verify(workers, context.baseUrl)),
      }
    },
  }
}

/** Reads a JSON answer with the expected status, for setup and verification outside the measured flow. */
export async function getJson(url: string, headers: Record<string, string> = {}): Promise<unknown> {
  const response = await fetch(url, { headers, signal: AbortSignal.timeout(30_000) })
  const text = await response.text()
  if (response.status !== 200) throw new Error(`GET ${new URL(url).pathname}: HTTP ${response.status}: ${text.slice(0, 500)}`)
  return JSON.parse(text) as unknown
}

/** The error code a refusal carries: Plinth's `error`, or a Horizon problem's transaction result code or type. */
function refusalCode(body: unknown): string | undefined {
  for (const path of ['error', 'extras.result_codes.transaction', 'type']) {
    const found = jsonAt(body, path)
    if (typeof found === 'string') return path === 'type' ? found.slice(found.lastIndexOf('/') + 1) : found
  }
  return undefined
}

/** A worker's client: records the steps of the current lifecycle. */
class WorkerClient implements FlowClient {
  steps: Array<{ name: string; ms: number }> = []
  requests = 0

  private turn: number

  /** With several server processes, each request goes to the next one in turn (a round-robin load balancer); `first` staggers the workers. */
  constructor(
    private readonly baseUrls: readonly string[],
    first: number,
  ) {
    this.turn = first
  }

  private nextBaseUrl(): string {
    const url = this.baseUrls[this.turn++ % this.baseUrls.length]
    if (url === undefined) throw new Error('a flow worker has no server to talk to')
    return url
  }

  reset(): void {
    this.steps = []
    this.requests = 0
  }

  async call(step: string, method: 'GET' | 'POST', path: string, options: FlowCallOptions): Promise<unknown> {
    const headers: Record<string, string> = { ...options.headers }
    let body: string | undefined
    if (options.json !== undefined) {
      headers['content-type'] = 'application/json'
      body = JSON.stringify(options.json)
    } else if (options.form !== undefined) {
      headers['content-type'] = 'application/x-www-form-urlencoded'
      body = new URLSearchParams(options.form).toString()
    }
    const startedAt = performance.now()
    this.requests++
    let status: number
    let text: string
    try {
      // undici's request(), not fetch(): the same keep-alive HTTP/1.1 client without the WHATWG
      // streams and signals, which cost the load generator about as much CPU as the server spends.
      const response = await request(`${this.nextBaseUrl()}${path}`, { method, headers, body, headersTimeout: 30_000, bodyTimeout: 30_000 })
      status = response.statusCode
      text = await response.body.text()
    } catch (error) {
      const name = error instanceof Error ? error.name : 'Error'
      throw new FlowError(`${step}: ${name}`, `${step}: ${method} ${path}: ${describeError(error)}`)
    } finally {
      this.steps.push({ name: step, ms: performance.now() - startedAt })
    }
    let parsed: unknown
    try {
      parsed = JSON.parse(text) as unknown
    } catch {
      parsed = undefined
    }
    if (status !== options.expect) {
      const code = refusalCode(parsed)
      throw new FlowError(
        `${step}: HTTP ${status}${code === undefined ? '' : ` ${code}`}`,
        `${step}: ${method} ${path}: HTTP ${status} (expected ${options.expect}): ${text.slice(0, 600)}`,
      )
    }
    if (parsed === undefined)
      throw new FlowError(`${step}: not JSON`, `${step}: ${method} ${path}: the answer is not JSON: ${text.slice(0, 200)}`)
    return parsed
  }

  time<T>(step: string, work: () => T): T {
    const startedAt = performance.now()
    try {
      return work()
    } finally {
      this.steps.push({ name: step, ms: performance.now() - startedAt })
    }
  }

  async attempt(method: 'GET' | 'POST', path: string, headers: Record<string, string> = {}): Promise<void> {
    try {
      const response = await request(`${this.nextBaseUrl()}${path}`, { method, headers, headersTimeout: 10_000, bodyTimeout: 10_000 })
      await response.body.dump()
    } catch {
      // Cleaning up is best effort.
    }
  }
}

/** A string field of a lifecycle's answer, or a FlowError naming the step. */
export function flowString(body: unknown, path: string, step: string): string {
  const found = jsonAt(body, path)
  if (typeof found !== 'string')
    throw new FlowError(`${step}: unexpected answer`, `${step}: no string ${path} in ${JSON.stringify(body).slice(0, 600)}`)
  return found
}

/** Checks a field of a lifecycle's answer, or throws a FlowError naming the step. */
export function flowExpect(body: unknown, path: string, expected: unknown, step: string): void {
  const found = jsonAt(body, path)
  if (found !== expected) {
    throw new FlowError(
      `${step}: ${path} is not ${JSON.stringify(expected)}`,
      `${step}: ${path} is ${JSON.stringify(found)}, expected ${JSON.stringify(expected)}: ${JSON.stringify(body).slice(0, 600)}`,
    )
  }
}

export interface FlowOptions {
  /** One URL, or one per server process: the requests go round robin over them. */
  baseUrl: string | readonly string[]
  lifecycles: readonly Lifecycle[]
  warmupSeconds: number
  durationSeconds: number
  /** Called when the measured window opens (start sampling CPU and RSS here) and when it closes. */
  onMeasureStart?: () => void
  onMeasureEnd?: () => void
}

export interface FlowFailure {
  key: string
  count: number
  /** The first failure's full message. */
  example: string
}

export interface FlowResult {
  /** Lifecycles completed inside the measured window, per second of it. */
  lifecyclesPerSecond: number
  lifecycles: number
  measuredSeconds: number
  /** Per lifecycle, first request sent to last answer read, in ms. */
  latencyP50: number
  latencyP99: number
  latencyMax: number
  /** Lifecycles that failed in the measured window or while draining after it. */
  errors: number
  warmupLifecycles: number
  warmupErrors: number
  failures: FlowFailure[]
  /** Mean ms each step adds to a counted lifecycle, in the order the steps first ran. */
  steps: Array<{ name: string; meanMs: number }>
  /** Mean HTTP requests per counted lifecycle. */
  requestsPerLifecycle: number
}

function percentile(sorted: readonly number[], fraction: number): number {
  if (sorted.length === 0) return 0
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1))] ?? 0
}

/**
 * Loops each lifecycle in its own worker (all of them concurrently) for a warm-up that is not
 * counted, then for the measured window; a lifecycle counts when it completes inside the window.
 * At the end every worker finishes the lifecycle it is in (so no payment is left half done), and
 * those are not counted. A failed lifecycle is an error; its worker pauses 50 ms and goes on.
 */
export async function runFlow(options: FlowOptions): Promise<FlowResult> {
  type Phase = 'warmup' | 'measure' | 'drain'
  let phase: Phase = 'warmup'
  let measureStartedAt = 0
  let measureEndedAt = 0
  const latencies: number[] = []
  const stepTotals = new Map<string, number>()
  let requests = 0
  let warmupLifecycles = 0
  let warmupErrors = 0
  let errors = 0
  const failures = new Map<string, FlowFailure>()

  const closeAt = (options.warmupSeconds + options.durationSeconds) * 1000
  const openTimer = setTimeout(() => {
    phase = 'measure'
    measureStartedAt = performance.now()
    options.onMeasureStart?.()
  }, options.warmupSeconds * 1000)
  const closeTimer = setTimeout(() => {
    phase = 'drain'
    measureEndedAt = performance.now()
    options.onMeasureEnd?.()
  }, closeAt)
  const onSignal = () => {
    phase = 'drain'
  }
  process.once('SIGINT', onSignal)

  const baseUrls = typeof options.baseUrl === 'string' ? [options.baseUrl] : options.baseUrl
  const worker = async (lifecycle: Lifecycle, index: number) => {
    const client = new WorkerClient(baseUrls, index)
    while (phase !== 'drain') {
      client.reset()
      const startedAt = performance.now()
      try {
        await lifecycle(client)
      } catch (error) {
        if (phase === 'warmup') warmupErrors++
        else errors++
        const key = error instanceof FlowError ? error.key : `unexpected: ${error instanceof Error ? error.name : 'error'}`
        const failure = failures.get(key)
        if (failure === undefined) failures.set(key, { key, count: 1, example: describeError(error) })
        else failure.count++
        await sleep(50)
        continue
      }
      if (phase === 'warmup') {
        warmupLifecycles++
      } else if (phase === 'measure') {
        latencies.push(performance.now() - startedAt)
        requests += client.requests
        for (const step of client.steps) stepTotals.set(step.name, (stepTotals.get(step.name) ?? 0) + step.ms)
      }
    }
  }

  try {
    await Promise.all(options.lifecycles.map(worker))
  } finally {
    clearTimeout(openTimer)
    clearTimeout(closeTimer)
    process.off('SIGINT', onSignal)
  }
  if (measureEndedAt === 0) throw new Error('the flow stopped before its measured window closed')

  const measuredSeconds = (measureEndedAt - measureStartedAt) / 1000
  const sorted = [...latencies].sort((a, b) => a - b)
  const count = latencies.length
  return {
    lifecyclesPerSecond: measuredSeconds > 0 ? count / measuredSeconds : 0,
    lifecycles: count,
    measuredSeconds,
    latencyP50: percentile(sorted, 0.5),
    latencyP99: percentile(sorted, 0.99),
    latencyMax: sorted[sorted.length - 1] ?? 0,
    errors,
    warmupLifecycles,
    warmupErrors,
    failures: [...failures.values()].sort((a, b) => b.count - a.count),
    steps: [...stepTotals].map(([name, total]) => ({ name, meanMs: count === 0 ? 0 : total / count })),
    requestsPerLifecycle: count === 0 ? 0 : requests / count,
  }
}

// ---------------------------------------------------------------------------------------------
// The ledger's books, read through the sandbox API.

export interface LedgerCheck {
  ok: boolean
  totalBalances: string
  totalFunded: string
  totalFees: string
  negativeBalances: number
  mismatchedAccounts: number
}

/** `GET /sandbox/ledger/check`: balances = funded − fees burned, none negative, every account's history adds up. */
export async function ledgerCheck(baseUrl: string): Promise<LedgerCheck> {
  const body = await getJson(`${baseUrl}/sandbox/ledger/check`)
  const text = (key: string) => {
    const found = jsonAt(body, key)
    return typeof found === 'string' ? found : String(found)
  }
  const count = (key: string) => {
    const found = jsonAt(body, key)
    return typeof found === 'number' ? found : Number.NaN
  }
  return {
    ok: jsonAt(body, 'ok') === true,
    totalBalances: text('total_balances'),
    totalFunded: text('total_funded'),
    totalFees: text('total_fees'),
    negativeBalances: count('negative_balances'),
    mismatchedAccounts: count('mismatched_accounts'),
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

/**
 * The Node flags `npm start` runs the server with (package.json's start script, `node <flags>
 * dist/server.js`), so the benchmark measures the server as it is deployed. Throws when the
 * script has another shape: the benchmark must not quietly measure something else.
 */
export function startNodeFlags(root: string): string[] {
  const parsed = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts?: { start?: unknown } }
  const start = parsed.scripts?.start
  const match = typeof start === 'string' ? /\bnode((?:\s+--\S+)*)\s+dist\/server\.js\b/.exec(start) : null
  if (match === null) throw new Error(`package.json's start script does not run "node [flags] dist/server.js": ${String(start)}`)
  return (match[1] ?? '')
    .trim()
    .split(/\s+/)
    .filter((flag) => flag !== '')
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
