import { request } from 'undici'
import { type ScenarioContext, type ScenarioTraits, traitsOf } from './load.js'
import { jsonAt } from './seed.js'
import { describeError, sleep } from './servers.js'

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
    prepare: async (context) => preparedFlow(definition, await definition.setup(context), context.baseUrl),
  }
}

/** A flow definition's lifecycle looped by these workers (the batch runs make their own, at several counts). */
export function preparedFlow<W>(definition: Pick<FlowDefinition<W>, 'lifecycle' | 'verify'>, workers: W[], baseUrl: string): PreparedFlow {
  return {
    lifecycles: workers.map((worker) => (client: FlowClient) => definition.lifecycle(worker, client)),
    verify: async () => (definition.verify === undefined ? [] : definition.verify(workers, baseUrl)),
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
  /** Mean ms each step adds to a counted lifecycle, and the p99 of its single calls, in the order the steps first ran. */
  steps: Array<{ name: string; meanMs: number; p99Ms: number }>
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
  const stepTimes = new Map<string, number[]>()
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
        for (const step of client.steps) {
          const times = stepTimes.get(step.name)
          if (times === undefined) stepTimes.set(step.name, [step.ms])
          else times.push(step.ms)
        }
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
    steps: [...stepTimes].map(([name, times]) => {
      const sortedTimes = [...times].sort((a, b) => a - b)
      return { name, meanMs: count === 0 ? 0 : times.reduce((sum, ms) => sum + ms, 0) / count, p99Ms: percentile(sortedTimes, 0.99) }
    }),
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
