import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import type { Kysely } from 'kysely'
import { Type } from 'typebox'
import { decodeCursor, encodeCursor, page } from '../core/cursors.js'
import { AppParams, Cursor, Nullable, PageLimit, SearchText, Timestamp } from '../core/schemas.js'
import type { DB } from '../db/schema.js'
import { errorResponses } from '../http/errors.js'
import { ExportFormat, exportResponse, MAX_EXPORT_ROWS, sendExport } from '../http/export-reply.js'
import { PAYMENT_STATES } from '../payments/payment-advice.js'
import { PaymentStateSchema } from '../payments/payment-dto.js'
import { curlCommand } from '../request-log/curl.js'
import type { RequestLog } from '../request-log/request-log.js'
import { requestLogRepo } from '../request-log/request-log-repo.js'
import { getRequest, RequestLogEntry, RequestLogFilters, sendRequestsExport } from '../request-log/request-log-routes.js'
import { flatPayment, PAYMENT_COLUMNS, PAYMENT_IDS } from '../views/payment-export.js'
import { paymentFilterQuery } from '../views/payment-filter-query.js'
import type { PaymentViewsService } from '../views/payment-views-service.js'
import { toolsRepo } from '../views/tools-repo.js'
import { DEVELOPER_ROUTE, memberCheck, PORTAL_SCHEMA } from './portal-route-shared.js'
import type { PortalService } from './portal-service.js'
import { portalToolsRepo } from './portal-tools-repo.js'

/**
 * The sandbox console's tools for a live app's members (docs/portal.md, "The app's tools"): its
 * overview, its users, exports of its payments and its request log, and a logged call as a curl
 * command. Each reads one app, the caller's (404 app_not_found for anyone else's), and shows the
 * app's view of its users: their uid, and their username only where they granted that scope.
 */

/** How many of the app's last errors the overview lists. */
export const LAST_ERRORS = 10
/** The portal's exports leave out the platform's own user id and username (the list does too). */
const PORTAL_PAYMENT_COLUMNS = PAYMENT_COLUMNS.filter((c) => c !== 'user_id' && c !== 'username')
const ExportLimit = Type.Integer({
  minimum: 1,
  maximum: MAX_EXPORT_ROWS,
  description: `At most this many rows, the newest that match (1 to ${MAX_EXPORT_ROWS}, the default)`,
})

export function portalToolsRoutes(
  app: FastifyInstance,
  deps: {
    portal: PortalService
    db: Kysely<DB>
    publicUrl: string
    paymentViews: Pick<PaymentViewsService, 'list' | 'checklist'>
    requestLog: RequestLog | undefined
    payments: { expireDueApprovals(appId: string): Promise<unknown> }
  },
): void {
  const { portal, paymentViews, requestLog } = deps
  const r = app.withTypeProvider<TypeBoxTypeProvider>()
  const member = memberCheck(portal)
  const tools = toolsRepo(deps.db)
  const repo = portalToolsRepo(deps.db)
  const requests = requestLogRepo(deps.db)

  const Step = Type.Object({ done: Type.Boolean(), at: Nullable(Type.String()) })
  r.get(
    '/portal/apps/:app_id/overview',
    {
      config: DEVELOPER_ROUTE,
      schema: {
        ...PORTAL_SCHEMA,
        operationId: 'portalAppOverview',
        summary: 'An app at a glance: its payments by state, its last errors, its setup checklist',
        description:
          '`payments.by_state` lists every state with how many payments are in it. `last_errors` are the newest ' +
          `${LAST_ERRORS} entries of its request log that answered 4xx or 5xx (none while the log is off). \`checklist\` ` +
          "is the sandbox console's (GET /sandbox/apps/{app_id}/checklist): key made, URL set, first /v2/me (from the " +
          'request log), first approve, first complete.',
        params: AppParams(),
        response: {
          200: Type.Object({
            app_id: Type.String(),
            name: Type.String(),
            request_log: Type.Boolean({ description: "Whether the app's request log is on" }),
            payments: Type.Object({
              count: Type.Integer(),
              by_state: Type.Array(Type.Object({ state: PaymentStateSchema, count: Type.Integer() })),
            }),
            last_errors: Type.Array(
              Type.Object({
                id: Type.String({ description: 'The request-log entry (GET /portal/apps/{app_id}/requests/{id})' }),
                at: Timestamp(),
                method: Type.String(),
                path: Type.String(),
                route: Type.String(),
                status: Type.Integer(),
                error_code: Nullable(Type.String()),
                request_id: Type.String(),
              }),
            ),
            checklist: Type.Object({ key_made: Step, url_set: Step, first_me: Step, first_approve: Step, first_complete: Step }),
          }),
          ...errorResponses(401, 403, 404),
        },
      },
    },
    async (request) => {
      const appId = request.params.app_id
      const found = await member(request)
      // Approvals whose window passed count as cancelled, as the payments API would answer them.
      await deps.payments.expireDueApprovals(appId)
      const checklist = await paymentViews.checklist(appId)
      const [states, errors] = await Promise.all([tools.paymentsByState(appId), repo.lastErrors(appId, LAST_ERRORS)])
      const byState = PAYMENT_STATES.map((state) => ({ state, count: states.find((s) => s.state === state)?.count ?? 0 }))
      return {
        app_id: appId,
        name: found.name,
        request_log: portal.view(found).request_log,
        payments: { count: byState.reduce((sum, s) => sum + s.count, 0), by_state: byState },
        last_errors: errors.map((e) => ({ ...e, id: String(e.id), at: e.at.toISOString() })),
        checklist,
      }
    },
  )

  const AppUser = Type.Object({
    uid: Type.String({ description: "The user's uid in the app" }),
    username: Nullable(Type.String({ description: 'Only when the user granted the app the username scope' })),
    scopes: Type.Array(Type.String(), { description: 'The scopes the user granted the app' }),
    granted_at: Timestamp(),
  })
  r.get(
    '/portal/apps/:app_id/users',
    {
      config: DEVELOPER_ROUTE,
      schema: {
        ...PORTAL_SCHEMA,
        operationId: 'portalListUsers',
        summary: 'The users who granted the app, as the app sees them, newest grant first',
        description:
          '`q` finds a user by their uid in the app, or by part of their username where they granted the username ' +
          'scope (never otherwise: the portal shows what the app was given). `before=<next_cursor>` pages back.',
        params: AppParams(),
        querystring: Type.Object({
          q: Type.Optional(SearchText()),
          before: Type.Optional(Cursor()),
          limit: Type.Optional(PageLimit()),
        }),
        response: {
          200: Type.Object({ users: Type.Array(AppUser), next_cursor: Nullable(Type.String()) }),
          ...errorResponses(401, 403, 404),
        },
      },
    },
    async (request) => {
      await member(request)
      const appId = request.params.app_id
      const limit = request.query.limit ?? 50
      const cursor = request.query.before === undefined ? undefined : decodeCursor('before', request.query.before, 'app-users', appId)
      const q = request.query.q?.trim()
      const rows = await repo.listUsers(appId, q === '' ? undefined : q, limit, cursor)
      const listed = page(rows, limit, (last) => encodeCursor('app-users', appId, { n: Number(last.created_us), id: last.uid }))
      return {
        users: listed.rows.map((u) => ({
          uid: u.uid,
          username: u.scopes.includes('username') ? u.username : null,
          scopes: u.scopes,
          granted_at: u.created_at.toISOString(),
        })),
        next_cursor: listed.next,
      }
    },
  )

  r.get(
    '/portal/apps/:app_id/payments/export',
    {
      config: DEVELOPER_ROUTE,
      schema: {
        ...PORTAL_SCHEMA,
        operationId: 'portalExportPayments',
        summary: `Download the app's payments as CSV or JSON (at most ${MAX_EXPORT_ROWS}, the newest that match)`,
        description:
          '`q`, `state` and `direction` as the list takes them. JSON: each payment as the list answers it. CSV: the ' +
          "console's encoder (every cell quoted, formulas defused), one row a payment. `truncated` (and the header " +
          'X-Plinth-Export-Truncated) says older payments that match were left out.',
        params: AppParams(),
        querystring: Type.Object({ ...ExportFormat, ...paymentFilterQuery(), limit: Type.Optional(ExportLimit) }),
        response: { 200: exportResponse('payments', Type.Record(Type.String(), Type.Unknown())), ...errorResponses(401, 403, 404) },
      },
    },
    async (request, reply) => {
      await member(request)
      const appId = request.params.app_id
      const { q, state, direction, format } = request.query
      const limit = request.query.limit ?? MAX_EXPORT_ROWS
      const rows = await paymentViews.list(appId, { q, state, direction, usersBy: 'app' }, limit, undefined)
      const listed = rows.slice(0, limit).map(({ payment }) => {
        const { user_id: _id, username: _name, ...shown } = payment
        return shown
      })
      return sendExport(reply, {
        format,
        file: `${appId}-payments`,
        listName: 'payments',
        columns: PORTAL_PAYMENT_COLUMNS,
        identifiers: PAYMENT_IDS,
        rows: listed,
        csvRows: listed.map(flatPayment),
        truncated: rows.length > limit,
      })
    },
  )

  r.get(
    '/portal/apps/:app_id/requests/export',
    {
      config: DEVELOPER_ROUTE,
      schema: {
        ...PORTAL_SCHEMA,
        operationId: 'portalExportRequests',
        summary: `Download the app's request log as CSV or JSON (at most ${MAX_EXPORT_ROWS} entries, the newest that match)`,
        description:
          "The list's filters; entries as the list answers them, redacted as stored. CSV as the console's export " +
          '(every cell quoted, formulas defused). `truncated` says older entries that match were left out.',
        params: AppParams(),
        querystring: Type.Object({ ...ExportFormat, ...RequestLogFilters.properties, limit: Type.Optional(ExportLimit) }),
        response: { 200: exportResponse('requests', RequestLogEntry), ...errorResponses(401, 403, 404) },
      },
    },
    async (request, reply) => {
      await member(request)
      const appId = request.params.app_id
      return sendRequestsExport(reply, { repo: requests, requestLog }, appId, request.query, request.query.limit ?? MAX_EXPORT_ROWS)
    },
  )

  r.get(
    '/portal/apps/:app_id/requests/:id/curl',
    {
      config: DEVELOPER_ROUTE,
      schema: {
        ...PORTAL_SCHEMA,
        operationId: 'portalRequestCurl',
        summary: 'One logged call as a curl command, its credential a shell variable ($PI_API_KEY or $PI_ACCESS_TOKEN)',
        description:
          'Plinth keeps no key or token, so the command never holds one: a key\'s call sends "Authorization: Key ' +
          '$PI_API_KEY", a user\'s "Authorization: Bearer $PI_ACCESS_TOKEN". Every other part is single-quoted for a POSIX ' +
          'shell. `complete` is false when the log stored a part of the call redacted or cut (the command then says ' +
          '[redacted] there).',
        params: Type.Object({ ...AppParams().properties, id: Type.String({ minLength: 1, maxLength: 20 }) }),
        response: {
          200: Type.Object({ id: Type.String(), curl: Type.String(), complete: Type.Boolean() }),
          ...errorResponses(401, 403, 404),
        },
      },
    },
    async (request) => {
      await member(request)
      const entry = await getRequest(requests, requestLog, request.params.app_id, request.params.id)
      return { id: entry.id, ...curlCommand(entry, deps.publicUrl) }
    },
  )
}
