/** HTTP, with figures. */

export interface Stats {
  sent: number
  ok: number
  refused: number
  serverErrors: number
  /** Requests whose outcome is unknown: the connection failed (the server was killed) or timed out. */
  unknown: number
  /** Connection failures while the server was meant to be up: a crash nobody caused. */
  unexpectedUnknown: number
  rateLimited: number
  inFlight: number
  latencyMsTotal: number
}

export function newStats(): Stats {
  return { sent: 0, ok: 0, refused: 0, serverErrors: 0, unknown: 0, unexpectedUnknown: 0, rateLimited: 0, inFlight: 0, latencyMsTotal: 0 }
}

/** status 0: no answer (connection failed or timed out); `error` says why. */
export interface Reply {
  status: number
  body: unknown
  error?: string
}

export interface CallOptions {
  key?: string
  token?: string
  json?: unknown
  form?: Record<string, string>
}

const MAX_PROBLEMS = 200

/** Problems the run found, kept bounded (the count is exact). */
export class Problems {
  readonly list: string[] = []
  count = 0
  add(problem: string): void {
    this.count += 1
    if (this.list.length < MAX_PROBLEMS) this.list.push(problem)
  }
}

export class Client {
  /** Whether the server is meant to be up: a connection failure then is a problem, not an expected loss. */
  expectUp = true

  constructor(
    public base: string,
    readonly stats: Stats,
    readonly problems: Problems,
    private readonly timeoutMs = 30_000,
  ) {}

  async call(method: 'GET' | 'POST' | 'PUT', path: string, options: CallOptions = {}): Promise<Reply> {
    const headers: Record<string, string> = {}
    let body: string | undefined
    if (options.key !== undefined) headers.authorization = `Key ${options.key}`
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`
    if (options.json !== undefined) {
      headers['content-type'] = 'application/json'
      body = JSON.stringify(options.json)
    } else if (options.form !== undefined) {
      headers['content-type'] = 'application/x-www-form-urlencoded'
      body = new URLSearchParams(options.form).toString()
    }
    this.stats.sent += 1
    this.stats.inFlight += 1
    const startedAt = performance.now()
    try {
      const response = await fetch(`${this.base}${path}`, { method, headers, body, signal: AbortSignal.timeout(this.timeoutMs) })
      const text = await response.text()
      let parsed: unknown = text
      try {
        parsed = text.length === 0 ? undefined : JSON.parse(text)
      } catch {
        // Not JSON: keep the text.
      }
      this.stats.latencyMsTotal += performance.now() - startedAt
      if (response.status >= 200 && response.status < 300) this.stats.ok += 1
      else if (response.status >= 500) {
        this.stats.serverErrors += 1
        this.problems.add(`${method} ${path} answered ${response.status}: ${text.slice(0, 300)}`)
      } else {
        this.stats.refused += 1
        if (response.status === 429) this.stats.rateLimited += 1
      }
      return { status: response.status, body: parsed }
    } catch (error) {
      this.stats.unknown += 1
      const message =
        error instanceof Error ? `${error.message}${error.cause instanceof Error ? `: ${error.cause.message}` : ''}` : String(error)
      if (this.expectUp) {
        this.stats.unexpectedUnknown += 1
        this.problems.add(`${method} ${path} failed while the server was up: ${message}`)
      }
      return { status: 0, body: undefined, error: message }
    } finally {
      this.stats.inFlight -= 1
    }
  }
}

export function field<T>(body: unknown, name: string): T | undefined {
  return typeof body === 'object' && body !== null ? ((body as Record<string, unknown>)[name] as T | undefined) : undefined
}
