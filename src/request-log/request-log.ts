import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Kysely } from 'kysely'
import type { Clock } from '../clock/clock.js'
import type { DB } from '../db/schema.js'
import {
  CAPTURE_CHARS,
  captureBody,
  errorCodeOf,
  headersOfHead,
  storedBody,
  storedHeaders,
  storedPath,
  storedQuery,
  storedRequestId,
} from './redact.js'
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

/**
 * What the hot path keeps of a call: the values it already has and references to what the request
 * and the answer already hold (the headers object, the answer's header block as sent, the parsed
 * body, the serialised answer). Every string, the JSON, the redaction and the Date are made when
 * the buffer is written (toRow), off the request's path.
 */
interface Pending {
  appId: string
  keyId: string | null
  userUid: string | null
  /** Epoch ms the call arrived (the platform clock). */
  at: number
  method: string
  url: string
  route: string
  operationId: string | null
  status: number
  latencyMs: number
  requestId: string
  fault: string | undefined
  requestHeaders: Record<string, unknown>
  /** The answer's header block as written to the socket (`HTTP/1.1 200 OK\r\n…`), or its headers when none was written. */
  responseHead: string | Record<string, unknown>
  /** The parsed request body, or its capture when it was too large to hold (captureBody). */
  requestBody: unknown
  responseBody: Captured
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

/** The answer as onSend saw it: the serialised payload (by reference), or its capture when too large. */
type Captured = string | Buffer | { text: string | undefined; cut: boolean } | undefined
/** `requestLogAnswer` before onSend ran (then onResponse decides), and for a call that is not kept. */
const NOT_KEPT = 0

declare module 'fastify' {
  interface FastifyRequest {
    /** The request log's hold on the answer (onSend), read by its onResponse. */
    requestLogAnswer: Captured | typeof NOT_KEPT | null
  }
}

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
    const request = isCapture(p.requestBody) ? p.requestBody : captureBody(p.requestBody)
    const response = isCapture(p.responseBody) ? p.responseBody : captureBody(p.responseBody)
    return {
      app_id: p.appId,
      at: new Date(p.at),
      method: p.method,
      path: storedPath(p.url),
      route: p.route,
      operation_id: p.operationId,
      key_id: p.keyId,
      user_uid: p.userUid,
      status: p.status,
      latency_ms: p.latencyMs,
      request_id: storedRequestId(p.requestId),
      fault: p.fault?.slice(0, 200) ?? null,
      query: storedQuery(p.url),
      request_headers: JSON.stringify(storedHeaders(p.requestHeaders)),
      response_headers: JSON.stringify(storedHeaders(typeof p.responseHead === 'string' ? headersOfHead(p.responseHead) : p.responseHead)),
      request_body: storedBody(request.text, request.cut),
      response_body: storedBody(response.text, response.cut),
      error_code: errorCodeOf(p.status, response.text),
    }
  }

  async function writeAll(): Promise<void> {
    while (buffer.length > 0) {
      const batch = buffer.slice(0, limits.batchRows)
      buffer = buffer.slice(batch.length)
      try {
        await repo.insertMany(batch.map(toRow))
        for (const p of batch) touched.add(p.appId)
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

  app.decorateRequest('requestLogAnswer', null)

  // Callback hooks (no promise a request), and nothing made but the reference kept.
  app.addHook('onSend', (request, _reply, payload, done) => {
    request.requestLogAnswer = kept(request) ? heldAnswer(payload) : NOT_KEPT
    done(null, payload)
  })

  app.addHook('onResponse', (request: FastifyRequest, reply: FastifyReply, done) => {
    const answer = request.requestLogAnswer
    // onSend did not run (the connection went first): decided here.
    if (answer === NOT_KEPT || (answer === null && !kept(request))) return done()
    const principal = attributed(request)
    if (principal === undefined || principal.kind === 'session') return done()
    const latencyMs = Math.round(reply.elapsedTime * 1000) / 1000
    const { url: route, schema } = request.routeOptions
    const head = (reply.raw as { _header?: unknown })._header
    const pending: Pending = {
      appId: principal.appId,
      keyId: principal.kind === 'key' ? principal.keyId : null,
      userUid: principal.kind === 'token' ? principal.uid : null,
      at: options.clock.now().getTime() - latencyMs,
      method: request.method,
      // The whole URL (the query goes, and a secret in the path, when the row is written).
      url: request.url,
      route: route ?? '',
      operationId: operationIdOf(schema),
      status: reply.statusCode,
      latencyMs,
      requestId: request.id,
      fault: request.injectedFault,
      requestHeaders: request.headers,
      responseHead: typeof head === 'string' ? head : reply.getHeaders(),
      requestBody: heldRequestBody(request),
      responseBody: answer ?? undefined,
    }
    if (buffer.length >= limits.bufferRows) {
      buffer.shift()
      droppedRows += 1
      if (droppedRows % 1000 === 1) options.log.warn({ dropped: droppedRows }, 'request log: buffer full, dropping the oldest rows')
    }
    buffer.push(pending)
    schedule()
    done()
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

function operationIdOf(schema: unknown): string | null {
  const operationId = (schema as { operationId?: unknown } | undefined)?.operationId
  return typeof operationId === 'string' ? operationId : null
}

const isCapture = (value: unknown): value is { text: string | undefined; cut: boolean } =>
  typeof value === 'object' && value !== null && !Buffer.isBuffer(value) && 'cut' in value

/**
 * The answer onSend saw, held by reference (a string or Buffer the server made anyway); only a
 * large one is cut now, so that the buffer's bound in rows stays a bound in memory.
 */
function heldAnswer(payload: unknown): Captured {
  if (typeof payload === 'string') return payload.length > CAPTURE_CHARS ? captureBody(payload) : payload
  if (Buffer.isBuffer(payload)) return payload.length > CAPTURE_CHARS ? captureBody(payload) : payload
  return undefined
}

/**
 * The parsed request body, by reference when its text was small (Content-Length at most
 * CAPTURE_CHARS bytes): larger ones are serialised and cut now, as the answer is.
 */
function heldRequestBody(request: FastifyRequest): unknown {
  const body = request.body
  if (body === undefined || body === null) return undefined
  const length = Number(request.headers['content-length'] ?? Number.POSITIVE_INFINITY)
  return length <= CAPTURE_CHARS ? body : captureBody(body)
}
