import autocannon from 'autocannon'
import type { Fixtures, FlowTeam } from './seed.js'

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

export function traitsOf(definition: ScenarioTraits): ScenarioTraits {
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
