import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Kysely } from 'kysely'
import type { Clock } from '../clock/clock.js'
import type { DB } from '../db/schema.js'
import { captureBody, errorCodeOf, storedBody, storedHeaders, storedPath, storedQuery, storedRequestId } from './redact.js'
import { type RequestLogInsert, requestLogRepo } from './request-log-repo.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** A fault injected into this request by the sandbox (recorded in the request log). */
    injectedFault?: string
  }
}

/**
 * The request log's writer: each /v2 call attributed to an app (a key or token that resolved)
 * is kept in this process's buffer when its answer has gone, and written in batches, one
 * statement a batch, never on the request's path. Bounds (docs/design.md, "Request log"):
 */
export const REQUEST_LOG_LIMITS = {
  /** A batch is written once it holds this many rows… */
  batchRows: 200,
  /** …or once its oldest row waited this long (ms). */
  batchAgeMs: 250,
  /** The buffer holds at most this many rows; beyond, the oldest are dropped and counted. */
  bufferRows: 5_000,
  /** Retention, applied in the background every minute: the newest rows of each app… */
  rowsPerApp: 10_000,
  /** …no older than this (seconds, the database's clock). */
  maxAgeSeconds: 7 * 86_400,
  pruneEveryMs: 60_000,
} as const

/** What the hot path keeps of a call: the URL and bodies as received, redacted only when flushed. */
interface Pending {
  row: Omit<RequestLogInsert, 'request_body' | 'response_body' | 'error_code' | 'query' | 'request_headers' | 'response_headers'>
  requestHeaders: Record<string, unknown>
  responseHeaders: Record<string, unknown>
  requestBody: { text: string | undefined; cut: boolean }
  responseBody: { text: string | undefined; cut: boolean }
}

export interface RequestLog {
  /** Writes what is buffered now (the listing calls it, so a process reads its own calls). */
  flush(): Promise<void>
  /** Rows this process dropped since it started (buffer full, or a batch the database refused). */
  dropped(): number
  /** Rows waiting in this process's buffer. */
  buffered(): number
}

interface Options {
  db: Kysely<DB>
  clock: Pick<Clock, 'now'>
  log: { warn(obj: object, msg: string): void }
  limits?: Partial<typeof REQUEST_LOG_LIMITS>
  /** Production's per-app opt-in (opt-in.ts): only these apps' calls are kept. Every app's when absent. */
  logs?: (appId: string) => boolean
}

const RESPONSE_BODY = Symbol('requestLogResponseBody')
type Captured = FastifyRequest & { [RESPONSE_BODY]?: { text: string | undefined; cut: boolean } }

/** Registers the hooks that feed the log (on every /v2 route) and the flush on close. */
export function registerRequestLog(app: FastifyInstance, options: Options): RequestLog {
  const limits = { ...REQUEST_LOG_LIMITS, ...options.limits }
  const repo = requestLogRepo(options.db)
  let buffer: Pending[] = []
  let droppedRows = 0
  let timer: NodeJS.Timeout | undefined
  let flushing: Promise<void> | undefined
  /** Apps written to since the last prune. */
  const touched = new Set<string>()

  const toRow = (p: Pending): RequestLogInsert => {
    const response = storedBody(p.responseBody.text, p.responseBody.cut)
    return {
      ...p.row,
      path: storedPath(p.row.path),
      query: storedQuery(p.row.path),
      request_headers: JSON.stringify(storedHeaders(p.requestHeaders)),
      response_headers: JSON.stringify(storedHeaders(p.responseHeaders)),
      request_id: storedRequestId(p.row.request_id),
      request_body: storedBody(p.requestBody.text, p.requestBody.cut),
      response_body: response,
      error_code: errorCodeOf(p.row.status, p.responseBody.text),
    }
  }

  async function writeAll(): Promise<void> {
    while (buffer.length > 0) {
      const batch = buffer.slice(0, limits.batchRows)
      buffer = buffer.slice(batch.length)
      try {
        await repo.insertMany(batch.map(toRow))
        for (const p of batch) touched.add(p.row.app_id)
      } catch (error) {
        droppedRows += batch.length
        options.log.warn({ err: error, rows: batch.length, dropped: droppedRows }, 'request log: a batch could not be written')
      }
    }
  }

  function flush(): Promise<void> {
    if (timer !== undefined) {
      clearTimeout(timer)
      timer = undefined
    }
    // One writer at a time; a flush asked for meanwhile waits for it and then writes the rest.
    const run = (flushing ?? Promise.resolve()).then(writeAll)
    const settled = run.finally(() => {
      if (flushing === settled) flushing = undefined
    })
    flushing = settled
    return settled
  }

  function schedule(): void {
    if (buffer.length >= limits.batchRows) {
      if (flushing === undefined) void flush()
      return
    }
    timer ??= setTimeout(() => {
      timer = undefined
      void flush()
    }, limits.batchAgeMs).unref()
  }

  const kept = (request: FastifyRequest): boolean => {
    const principal = attributed(request)
    if (principal === undefined || principal.kind === 'session' || !isLogged(request)) return false
    return options.logs === undefined || options.logs(principal.appId)
  }

  app.addHook('onSend', async (request, reply, payload) => {
    if (kept(request)) {
      ;(request as Captured)[RESPONSE_BODY] = captureBody(typeof payload === 'string' || Buffer.isBuffer(payload) ? payload : undefined)
    }
    void reply
    return payload
  })

  app.addHook('onResponse', async (request: FastifyRequest, reply: FastifyReply) => {
    const principal = attributed(request)
    if (principal === undefined || principal.kind === 'session' || !kept(request)) return
    const latency = Math.round(reply.elapsedTime * 1000) / 1000
    const pending: Pending = {
      row: {
        app_id: principal.appId,
        at: new Date(options.clock.now().getTime() - latency),
        method: request.method,
        // The whole URL (the query goes, and a secret in the path, when the row is written).
        path: request.url,
        route: request.routeOptions.url ?? '',
        operation_id: operationIdOf(request),
        key_id: principal.kind === 'key' ? principal.keyId : null,
        user_uid: principal.kind === 'token' ? principal.uid : null,
        status: reply.statusCode,
        latency_ms: latency,
        request_id: request.id,
        fault: request.injectedFault?.slice(0, 200) ?? null,
      },
      // Both are copies taken now; redacted when the row is written.
      requestHeaders: { ...request.headers },
      responseHeaders: reply.getHeaders(),
      requestBody: captureBody(request.body),
      responseBody: (request as Captured)[RESPONSE_BODY] ?? { text: undefined, cut: false },
    }
    if (buffer.length >= limits.bufferRows) {
      buffer.shift()
      droppedRows += 1
      if (droppedRows % 1000 === 1) options.log.warn({ dropped: droppedRows }, 'request log: buffer full, dropping the oldest rows')
    }
    buffer.push(pending)
    schedule()
  })

  const pruner = setInterval(() => {
    const apps = [...touched]
    touched.clear()
    repo
      .prune(apps, limits.rowsPerApp, limits.maxAgeSeconds)
      .catch((error: unknown) => options.log.warn({ err: error }, 'request log: pruning failed'))
  }, limits.pruneEveryMs).unref()

  app.addHook('onClose', async () => {
    clearInterval(pruner)
    await flush()
  })

  return { flush, dropped: () => droppedRows, buffered: () => buffer.length }
}

/**
 * Calls of the platform API: the /v2 routes (the sandbox API, the ledger and the pages are not),
 * but for the platform's own notification centre.
 */
function isLogged(request: FastifyRequest): boolean {
  const route = request.routeOptions.url
  return route?.startsWith('/v2/') === true && !isPlatformsOwn(request, route)
}

/**
 * The platform page's notification centre (`/v2/client/notifications…`, with the platform's own
 * token for each app the person allowed) polls every few seconds in each open tab, about 12 calls
 * a minute, into the log of every app it shows: those calls are the platform's, not the app's,
 * and would bury the app's own (docs/api.md, "Request log"). The page names itself in
 * `X-Plinth-Client`, a header no other origin's page may send to /v2 (its CORS preflight allows
 * only Authorization, Content-Type and X-Request-Id); the same route called by anyone else is logged.
 */
function isPlatformsOwn(request: FastifyRequest, route: string): boolean {
  return route.startsWith('/v2/client/notifications') && request.headers['x-plinth-client'] === 'platform-page'
}

/**
 * Who a call is the app's: its principal, or, for a refused server API key that is one of the
 * app's revoked keys or starts as one of its keys (auth.ts), that app, under that key's id.
 */
function attributed(request: FastifyRequest) {
  const refused = request.refusedKey
  return request.principal ?? (refused === undefined ? undefined : { kind: 'key' as const, appId: refused.appId, keyId: refused.keyId })
}

function operationIdOf(request: FastifyRequest): string | null {
  const schema = request.routeOptions.schema as { operationId?: unknown } | undefined
  return typeof schema?.operationId === 'string' ? schema.operationId : null
}
