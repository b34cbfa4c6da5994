import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Kysely } from 'kysely'
import { type Static, Type } from 'typebox'
import { decodeCursor, encodeCursor, page } from '../core/cursors.js'
import { ApiError } from '../core/errors.js'
import { AppParams, Cursor, Id, PageLimit, SearchText } from '../core/schemas.js'
import type { DB } from '../db/schema.js'
import { errorResponses } from '../http/errors.js'
import { ExportFormat, MAX_EXPORT_ROWS, sendExport } from '../http/export-reply.js'
import { ADMIN_SECURITY } from '../http/openapi.js'
import { randomToken } from '../lib/crypto.js'
import { REDACTED, storedBody } from './redact.js'
import { type ReplayGrants, replayProblem } from './replay.js'
import type { RequestLog } from './request-log.js'
import { type RequestLogFilter, type RequestLogRow, requestLogRepo } from './request-log-repo.js'

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()])
const Headers = Type.Record(Type.String(), Type.String())
export const RequestLogEntry = Type.Object({
  id: Type.String({ description: 'The entry id (GET /sandbox/apps/{app_id}/requests/{id})' }),
  at: Type.String({ description: 'When the request arrived (platform clock)' }),
  method: Type.String(),
  path: Type.String({ description: 'The path as called, without the query string' }),
  route: Type.String({ description: 'The route pattern, for example /v2/payments/:payment_id/approve' }),
  operation_id: Nullable(Type.String()),
  key_id: Nullable(Type.String({ description: 'The server API key that made the call' })),
  user_uid: Nullable(Type.String({ description: 'The uid of the user whose access token made the call' })),
  status: Type.Integer(),
  error_code: Nullable(Type.String({ description: 'The platform error code of an error answer' })),
  latency_ms: Type.Number({ description: 'Time to answer, in milliseconds (3 decimals)' }),
  request_id: Type.String({ description: 'X-Request-Id of the call (also on payment timeline events)' }),
  request_body: Nullable(Type.String({ description: 'Secrets redacted, at most 8 KiB' })),
  response_body: Nullable(Type.String({ description: 'Secrets redacted, at most 8 KiB' })),
  fault: Nullable(Type.String({ description: 'A fault the sandbox injected into this call' })),
  query: Nullable(Type.String({ description: 'The query string (without `?`), redacted like the path; null when none' })),
  request_headers: Type.Union([Headers, Type.Null()], {
    description:
      'The request headers, names lower-cased, redacted (Authorization keeps its scheme only); null on entries older than this field',
  }),
  response_headers: Type.Union([Headers, Type.Null()], { description: 'The answer headers, redacted' }),
  replay_of: Nullable(Type.String({ description: 'The entry this call replayed (POST …/requests/{id}/replay), else null' })),
})

const STATUS = /^([1-5])(?:[0-9]{2}|xx)$/
const RequestParams = Type.Object({ ...AppParams().properties, id: Type.String({ minLength: 1, maxLength: 20 }) })
/** The filters and cursors of a request log's list (the sandbox API's and the portal's). */
export const RequestLogFilters = Type.Object({
  status: Type.Optional(Type.String({ pattern: '^[1-5]([0-9]{2}|xx)$', description: 'An exact status (409) or a class (4xx)' })),
  route: Type.Optional(SearchText({ description: 'A route pattern, an operationId, or the start of a path' })),
  user: Type.Optional(Id({ description: "A user's uid or a key id" })),
  error: Type.Optional(Id({ description: 'An error code' })),
  request_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: "The call's X-Request-Id, exactly" })),
})
export const RequestLogQuery = Type.Object({
  ...RequestLogFilters.properties,
  before: Type.Optional(Cursor()),
  after: Type.Optional(Cursor()),
  limit: Type.Optional(PageLimit()),
})
export const RequestLogPage = Type.Object({
  requests: Type.Array(RequestLogEntry),
  next_cursor: Type.Union([Type.String(), Type.Null()]),
  newest_cursor: Type.String(),
  enabled: Type.Boolean(),
  dropped: Type.Integer(),
  total: Type.Integer({ description: 'How many entries match the filters, on every page' }),
})

/**
 * One page of an app's request log (the app checked by the caller). Newest first; `before` pages
 * back; `after` answers only newer entries, oldest first, and its `next_cursor` is the one to
 * poll with next. This process's own calls are readable at once; other processes' within their
 * batch age.
 */
export async function listRequests(
  repo: ReturnType<typeof requestLogRepo>,
  requestLog: RequestLog | undefined,
  appId: string,
  q: Static<typeof RequestLogQuery>,
): Promise<Static<typeof RequestLogPage>> {
  if (q.before !== undefined && q.after !== undefined) {
    throw new ApiError('invalid_arguments', 'Pass either before (page back) or after (newer entries), not both.')
  }
  await requestLog?.flush()
  const limit = q.limit ?? 50
  const filter: RequestLogFilter = { ...logFilter(appId, q), limit: limit + 1 }
  if (q.before !== undefined) filter.before = decodeCursor('before', q.before, 'requests', appId).n
  if (q.after !== undefined) filter.after = decodeCursor('after', q.after, 'requests', appId).n
  const [rows, total] = await Promise.all([repo.list(filter), repo.count(filter)])
  const cursor = (n: number) => encodeCursor('requests', appId, { n })
  const listed = page(rows, limit, (last) => cursor(last.id))
  const ids = listed.rows.map((row) => row.id)
  const newest = ids.length === 0 ? (filter.after ?? 0) : Math.max(...ids)
  return {
    requests: listed.rows.map(toEntry),
    // A live tail polls from the newest entry it has seen, whether or not more followed.
    next_cursor: filter.after !== undefined ? cursor(newest) : listed.next,
    newest_cursor: cursor(newest),
    enabled: requestLog !== undefined,
    dropped: requestLog?.dropped() ?? 0,
    total,
  }
}

/** The filters of a list or an export (status, route, user, error), without paging. */
function logFilter(appId: string, q: Pick<Static<typeof RequestLogQuery>, 'status' | 'route' | 'user' | 'error' | 'request_id'>) {
  const filter: Omit<RequestLogFilter, 'limit'> = { appId }
  const status = q.status === undefined ? undefined : STATUS.exec(q.status)
  if (q.status !== undefined && status?.[1] !== undefined) {
    filter.status = q.status.endsWith('xx') ? { class: Number(status[1]) } : { exact: Number(q.status) }
  }
  if (q.route !== undefined) filter.route = q.route
  if (q.user !== undefined) filter.user = q.user
  if (q.error !== undefined) filter.error = q.error
  if (q.request_id !== undefined) filter.requestId = q.request_id
  return filter
}

/** One entry of an app's request log (the app checked by the caller), or 404 request_not_found. */
export async function getRequest(repo: ReturnType<typeof requestLogRepo>, requestLog: RequestLog | undefined, appId: string, id: string) {
  return toEntry(await findRow(repo, requestLog, appId, id))
}

async function findRow(repo: ReturnType<typeof requestLogRepo>, requestLog: RequestLog | undefined, appId: string, id: string) {
  await requestLog?.flush()
  const n = /^[1-9][0-9]{0,15}$/.test(id) ? Number(id) : undefined
  const row = n === undefined || !Number.isSafeInteger(n) ? undefined : await repo.find(appId, n)
  if (row === undefined) throw new ApiError('request_not_found', `No request ${id} in the log of app ${appId}.`)
  return row
}

/** Stored headers (a JSON object of strings), or null on rows written before they were kept. */
function headersOf(text: string | null): Record<string, string> | null {
  if (text === null) return null
  try {
    const parsed: unknown = JSON.parse(text)
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return null
    return Object.fromEntries(Object.entries(parsed).map(([name, value]) => [name, String(value)]))
  } catch {
    return null
  }
}

export function toEntry(row: RequestLogRow) {
  return {
    id: String(row.id),
    at: row.at.toISOString(),
    method: row.method,
    path: row.path,
    route: row.route,
    operation_id: row.operation_id,
    key_id: row.key_id,
    user_uid: row.user_uid,
    status: row.status,
    error_code: row.error_code,
    latency_ms: Number(row.latency_ms),
    request_id: row.request_id,
    request_body: row.request_body,
    response_body: row.response_body,
    fault: row.fault,
    query: row.query,
    request_headers: headersOf(row.request_headers),
    response_headers: headersOf(row.response_headers),
    replay_of: row.replay_of === null ? null : String(row.replay_of),
  }
}

/** The columns of a request-log export (CSV; the JSON export has the entries whole). */
const EXPORT_COLUMNS = [
  'id',
  'at',
  'method',
  'path',
  'query',
  'route',
  'operation_id',
  'key_id',
  'user_uid',
  'status',
  'error_code',
  'latency_ms',
  'request_id',
  'fault',
  'replay_of',
  'request_body',
  'response_body',
] as const
/** Its columns of identifiers the platform made, written verbatim (a caller may choose its request id: not one of them). */
const EXPORT_IDS: ReadonlySet<string> = new Set(['id', 'key_id', 'user_uid', 'replay_of'])
/**
 * The newest `limit` entries of an app's log that match the filters (the app checked by the
 * caller), for an export, and whether older ones that match were left out.
 */
async function exportedEntries(
  repo: ReturnType<typeof requestLogRepo>,
  requestLog: RequestLog | undefined,
  appId: string,
  q: Pick<Static<typeof RequestLogQuery>, 'status' | 'route' | 'user' | 'error' | 'request_id'>,
  limit: number,
) {
  await requestLog?.flush()
  const rows = await repo.list({ ...logFilter(appId, q), limit: limit + 1 })
  return { entries: rows.slice(0, limit).map(toEntry), truncated: rows.length > limit }
}

/**
 * Answers an app's request-log export (the sandbox's and the portal's, one shape): the newest
 * `limit` entries that match the query's filters, in the format it asks.
 */
export async function sendRequestsExport(
  reply: FastifyReply,
  source: { repo: ReturnType<typeof requestLogRepo>; requestLog: RequestLog | undefined },
  appId: string,
  q: Parameters<typeof exportedEntries>[3] & { format?: 'json' | 'csv' | undefined },
  limit: number = MAX_EXPORT_ROWS,
) {
  const { entries, truncated } = await exportedEntries(source.repo, source.requestLog, appId, q, limit)
  return sendExport(reply, {
    format: q.format,
    file: `${appId}-requests`,
    listName: 'requests',
    columns: EXPORT_COLUMNS,
    identifiers: EXPORT_IDS,
    rows: entries,
    truncated,
  })
}

/**
 * The request log of an app (sandbox API): the /v2 calls its keys and its users' tokens made.
 * Newest first; `before` pages back; `after` answers only newer entries, oldest first (a live
 * tail polls with the `next_cursor` it got). docs/api.md, "Request log".
 */
export function requestLogRoutes(
  app: FastifyInstance,
  deps: { db: Kysely<DB>; requestLog: RequestLog | undefined; replayGrants: ReplayGrants | undefined },
): void {
  const { db, requestLog, replayGrants } = deps
  const repo = requestLogRepo(db)
  const r = app.withTypeProvider<TypeBoxTypeProvider>()
  const common = { tags: ['Sandbox'], security: ADMIN_SECURITY }
  const config = { auth: 'admin' as const }

  const requireApp = async (appId: string) => {
    const row = await db.selectFrom('apps').select('id').where('id', '=', appId).executeTakeFirst()
    if (row === undefined) throw new ApiError('app_not_found', `No app with id ${appId}.`)
  }

  r.get(
    '/sandbox/apps/:app_id/requests',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxListRequests',
        summary: "An app's request log: the /v2 calls its keys and its users' tokens made",
        description:
          'Newest first. `before=<next_cursor>` pages back. `after=<cursor>` answers only entries newer than the cursor, ' +
          'oldest first, and its `next_cursor` is the one to poll with next (a live tail). `newest_cursor` names the newest ' +
          "entry answered (or the log's start when none was): a tail starts from it. `enabled` says whether this process " +
          'writes the log (PLINTH_REQUEST_LOG); `dropped` how many entries it dropped since it started.',
        params: AppParams(),
        querystring: RequestLogQuery,
        response: { 200: RequestLogPage, ...errorResponses(401, 404) },
      },
    },
    async (request) => {
      await requireApp(request.params.app_id)
      return listRequests(repo, requestLog, request.params.app_id, request.query)
    },
  )

  r.get(
    '/sandbox/apps/:app_id/requests/:id',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxGetRequest',
        summary: 'One entry of the request log',
        params: RequestParams,
        response: { 200: RequestLogEntry, ...errorResponses(401, 404) },
      },
    },
    async (request) => {
      await requireApp(request.params.app_id)
      return getRequest(repo, requestLog, request.params.app_id, request.params.id)
    },
  )

  r.get(
    '/sandbox/apps/:app_id/requests/export',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxExportRequests',
        summary: "Download an app's request log as CSV or JSON (the newest 10,000 entries that match)",
        description:
          '`format=json` (the default) answers `{requests: [entry], exported, truncated}`; `format=csv` a CSV file ' +
          '(docs/api.md, "Exports": every cell quoted, formulas defused). The filters are the list\'s. Newest first.',
        params: AppParams(),
        querystring: Type.Object({ ...ExportFormat, ...RequestLogFilters.properties }),
        response: {
          200: {
            description: 'The export, as an attachment',
            content: {
              'application/json': {
                schema: Type.Object({
                  requests: Type.Array(RequestLogEntry),
                  exported: Type.Integer({ description: 'How many entries the file holds' }),
                  truncated: Type.Boolean({ description: 'Whether older entries that match were left out (past 10,000)' }),
                }),
              },
              'text/csv': { schema: Type.String() },
            },
          },
          ...errorResponses(401, 404),
        },
      },
    },
    async (request, reply) => {
      const appId = request.params.app_id
      await requireApp(appId)
      return sendRequestsExport(reply, { repo, requestLog }, appId, request.query)
    },
  )

  r.post(
    '/sandbox/apps/:app_id/requests/:id/replay',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxReplayRequest',
        summary: 'Send a logged call again, as the key that made it, and answer what it got',
        description:
          'Only /v2 calls made with a server API key whose path, query and body were stored whole are replayed; any other ' +
          'is 409 request_not_replayable with the reason. The call is sent with the key that made it (or, revoked since, ' +
          "the app's newest active key), its method, path, query, headers (not the credential, cookies, request id, " +
          'connection headers or a value stored redacted) and body. It goes through every check a call ' +
          'from outside does (faults, rate limits) and is logged as a new entry whose `replay_of` names this one.',
        params: RequestParams,
        response: {
          200: Type.Object({
            replay_of: Type.String({ description: 'The entry replayed' }),
            key_id: Type.String({ description: 'The key the replay was sent with' }),
            status: Type.Integer({ description: 'The status the replay got' }),
            request_id: Type.String({ description: "The replay's X-Request-Id" }),
            response_body: Nullable(Type.String({ description: 'What it got, redacted as the log stores it' })),
            entry: Type.Union([RequestLogEntry, Type.Null()], { description: "The replay's own log entry (null when the log is off)" }),
          }),
          ...errorResponses(401, 404, 409),
        },
      },
    },
    async (request) => {
      const appId = request.params.app_id
      await requireApp(appId)
      const row = await findRow(repo, requestLog, appId, request.params.id)
      const problem = replayProblem(row)
      if (problem !== undefined) throw new ApiError('request_not_replayable', `Request ${row.id} cannot be replayed: ${problem}`)
      const keyId = await replayKey(appId, row.key_id)
      if (keyId === undefined || replayGrants === undefined) {
        throw new ApiError('request_not_replayable', `Request ${row.id} cannot be replayed: app ${appId} has no active server API key.`)
      }
      const requestId = `replay-${row.id}-${randomToken(9)}`
      const answer = await app.inject({
        method: row.method as 'GET',
        url: row.query === null ? row.path : `${row.path}?${row.query}`,
        headers: replayHeaders(request, row, replayGrants.issue({ kind: 'key', appId, keyId }), requestId),
        ...(row.request_body === null ? {} : { payload: row.request_body }),
      })
      await requestLog?.flush()
      const entry = await repo.findByRequestId(appId, requestId)
      if (entry !== undefined) await repo.markReplay(appId, entry.id, row.id)
      return {
        replay_of: String(row.id),
        key_id: keyId,
        status: answer.statusCode,
        request_id: requestId,
        response_body: storedBody(answer.body),
        entry: entry === undefined ? null : { ...toEntry(entry), replay_of: String(row.id) },
      }
    },
  )

  /** The key that made the call when it is still active, else the app's newest active key. */
  const replayKey = async (appId: string, keyId: string | null) => {
    const keys = await db
      .selectFrom('api_keys')
      .select('id')
      .where('app_id', '=', appId)
      .where('revoked_at', 'is', null)
      .orderBy('created_at', 'desc')
      .execute()
    return keys.find((key) => key.id === keyId)?.id ?? keys[0]?.id
  }
}

/**
 * Headers of the logged call a replay sends again: all but the connection's own, the browser's
 * site headers, the credential and the cookies, the request id, and any value stored redacted.
 */
const NOT_REPLAYED =
  /^(host|content-length|connection|keep-alive|transfer-encoding|te|trailer|upgrade|expect|authorization|proxy-authorization|cookie|x-request-id|x-admin-token|origin|referer|sec-.*)$/

/** Headers a replay is sent with: the logged ones it may send, the grant as the key, its own request id, this server's Host. */
function replayHeaders(
  request: FastifyRequest,
  row: Pick<RequestLogRow, 'request_headers' | 'request_body'>,
  grant: string,
  requestId: string,
): Record<string, string> {
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(headersOf(row.request_headers) ?? {})) {
    if (!NOT_REPLAYED.test(name) && !value.includes(REDACTED)) headers[name] = value
  }
  // The log keeps a parsed body (a form's too) as its JSON: it is sent as JSON, which every /v2 route takes.
  if (row.request_body !== null && isJson(row.request_body)) headers['content-type'] = 'application/json'
  headers.authorization = `Key ${grant}`
  headers['x-request-id'] = requestId
  const host = request.headers.host
  if (host !== undefined) headers.host = host
  return headers
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}
