import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import type { Kysely } from 'kysely'
import { type Static, Type } from 'typebox'
import { decodeCursor, encodeCursor, page } from '../core/cursors.js'
import { ApiError } from '../core/errors.js'
import { AppParams, Cursor, Id, PageLimit, SearchText } from '../core/schemas.js'
import type { DB } from '../db/schema.js'
import { errorResponses } from '../http/errors.js'
import { ADMIN_SECURITY } from '../http/openapi.js'
import type { RequestLog } from './request-log.js'
import { type RequestLogFilter, type RequestLogRow, requestLogRepo } from './request-log-repo.js'

const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()])
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
})

const STATUS = /^([1-5])(?:[0-9]{2}|xx)$/

/** The filters and cursors of a request log's list (the sandbox API's and the portal's). */
export const RequestLogQuery = Type.Object({
  status: Type.Optional(Type.String({ pattern: '^[1-5]([0-9]{2}|xx)$', description: 'An exact status (409) or a class (4xx)' })),
  route: Type.Optional(SearchText({ description: 'A route pattern, an operationId, or the start of a path' })),
  user: Type.Optional(Id({ description: "A user's uid or a key id" })),
  error: Type.Optional(Id({ description: 'An error code' })),
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
  const filter: RequestLogFilter = { appId, limit: limit + 1 }
  const status = q.status === undefined ? undefined : STATUS.exec(q.status)
  if (q.status !== undefined && status?.[1] !== undefined) {
    filter.status = q.status.endsWith('xx') ? { class: Number(status[1]) } : { exact: Number(q.status) }
  }
  if (q.route !== undefined) filter.route = q.route
  if (q.user !== undefined) filter.user = q.user
  if (q.error !== undefined) filter.error = q.error
  if (q.before !== undefined) filter.before = decodeCursor('before', q.before, 'requests', appId).n
  if (q.after !== undefined) filter.after = decodeCursor('after', q.after, 'requests', appId).n
  const rows = await repo.list(filter)
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
  }
}

/** One entry of an app's request log (the app checked by the caller), or 404 request_not_found. */
export async function getRequest(repo: ReturnType<typeof requestLogRepo>, requestLog: RequestLog | undefined, appId: string, id: string) {
  await requestLog?.flush()
  const n = /^[1-9][0-9]{0,15}$/.test(id) ? Number(id) : undefined
  const row = n === undefined || !Number.isSafeInteger(n) ? undefined : await repo.find(appId, n)
  if (row === undefined) throw new ApiError('request_not_found', `No request ${id} in the log of app ${appId}.`)
  return toEntry(row)
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
  }
}

/**
 * The request log of an app (sandbox API): the /v2 calls its keys and its users' tokens made.
 * Newest first; `before` pages back; `after` answers only newer entries, oldest first (a live
 * tail polls with the `next_cursor` it got). docs/api.md, "Request log".
 */
export function requestLogRoutes(app: FastifyInstance, deps: { db: Kysely<DB>; requestLog: RequestLog | undefined }): void {
  const { db, requestLog } = deps
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
        params: Type.Object({ ...AppParams().properties, id: Type.String({ minLength: 1, maxLength: 20 }) }),
        response: { 200: RequestLogEntry, ...errorResponses(401, 404) },
      },
    },
    async (request) => {
      await requireApp(request.params.app_id)
      return getRequest(repo, requestLog, request.params.app_id, request.params.id)
    },
  )
}
