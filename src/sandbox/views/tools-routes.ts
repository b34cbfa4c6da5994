import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { ApiError } from '../../core/errors.js'
import { AppParams, SearchText } from '../../core/schemas.js'
import { errorResponses } from '../../http/errors.js'
import { ExportFormat, exportResponse, MAX_EXPORT_ROWS, sendExport } from '../../http/export-reply.js'
import { ADMIN_SECURITY } from '../../http/openapi.js'
import { PAYMENT_STATES } from '../../payments/payment-advice.js'
import { PaymentStateSchema } from '../../payments/payment-dto.js'
import { flatPayment, PAYMENT_COLUMNS, PAYMENT_IDS } from '../../views/payment-export.js'
import { paymentFilterQuery } from '../../views/payment-filter-query.js'
import { paymentViewsRepo } from '../../views/payment-views-repo.js'
import { type PaymentViewsDeps, paymentViewsServiceFactory } from '../../views/payment-views-service.js'
import { SEARCH_LIMIT, toolsRepo } from '../../views/tools-repo.js'
import { viewsRepo } from '../../views/views-repo.js'
import { viewsServiceFactory } from '../../views/views-service.js'

/**
 * The console's data tools over the sandbox API (docs/api.md, "Search, overview and exports"):
 * one search across apps, users, payments, txids and request ids; an app's overview; and the
 * exports of users and of an app's payments as CSV or JSON. Sandbox mode only, admin auth.
 */

/** The overview's error rate covers this much platform time (seconds). */
const ERROR_WINDOW_SECONDS = 3600

const Hit = Type.Object({
  type: Type.Union([
    Type.Literal('app'),
    Type.Literal('user'),
    Type.Literal('payment'),
    Type.Literal('transaction'),
    Type.Literal('request'),
  ]),
  id: Type.String({ description: "The object's id (an app, user or payment id, a txid, a request-log entry id)" }),
  title: Type.String(),
  detail: Type.String({ description: 'What matched, and where' }),
  app_id: Type.Union([Type.String(), Type.Null()]),
  console_url: Type.String({ description: "The object's page in the developer console" }),
  api_path: Type.String({ description: 'The sandbox (or ledger) API path that reads it' }),
})

const State = PaymentStateSchema
const StateCount = Type.Object({
  state: State,
  count: Type.Integer(),
  volume: Type.String({ description: 'The amounts summed, exactly (test Pi)' }),
})

export function sandboxTools(app: FastifyInstance, deps: PaymentViewsDeps): void {
  const { db, requestLog, payments } = deps
  const repo = toolsRepo(db)
  const views = viewsServiceFactory({ repo: viewsRepo(db) })
  const paymentViews = paymentViewsServiceFactory({ ...deps, repo: paymentViewsRepo(db), views })
  const r = app.withTypeProvider<TypeBoxTypeProvider>()
  const common = { tags: ['Sandbox'], security: ADMIN_SECURITY }
  const config = { auth: 'admin' as const }

  r.get(
    '/sandbox/search',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxSearch',
        summary: 'Search apps, users, payments, txids and request ids at once',
        description:
          '`q` (1 to 200 characters, trimmed) finds: apps by id or part of their name; users by id, part of their name, ' +
          'wallet address or their uid in an app; payments by identifier or txid in any app, or part of their memo (3 ' +
          'characters or more); a ledger transaction by its hash; request-log entries by request id. Names and memos ' +
          `match regardless of case, \`%\` and \`_\` literally. At most ${SEARCH_LIMIT} hits of each type, newest first; ` +
          '`truncated` says more matched.',
        querystring: Type.Object({ q: SearchText({ description: 'What to look for' }) }),
        response: {
          200: Type.Object({ q: Type.String(), hits: Type.Array(Hit), truncated: Type.Boolean() }),
          ...errorResponses(401),
        },
      },
    },
    async (request) => {
      const q = request.query.q.trim()
      if (q === '') throw new ApiError('invalid_arguments', 'Type something to search for: q is only spaces.')
      await requestLog?.flush()
      const hash = /^[0-9a-fA-F]{64}$/.test(q) ? q.toLowerCase() : undefined
      const [apps, users, found, transaction, requests] = await Promise.all([
        repo.searchApps(q),
        repo.searchUsers(q),
        repo.searchPayments(q, q.length >= 3),
        hash === undefined ? undefined : repo.findTransaction(hash),
        repo.searchRequests(q),
      ])
      const page = (hash: string) => `/console/#/${hash}`
      const seg = encodeURIComponent
      let truncated = false
      const first = <T>(rows: T[]) => {
        if (rows.length > SEARCH_LIMIT) truncated = true
        return rows.slice(0, SEARCH_LIMIT)
      }
      const hits = [
        ...first(apps).map((a) => ({
          type: 'app' as const,
          id: a.id,
          title: a.name,
          detail: `${a.id === q ? 'App id' : 'Name'} · ${a.network}`,
          app_id: a.id,
          console_url: page(`apps/${seg(a.id)}`),
          api_path: `/sandbox/apps/${seg(a.id)}`,
        })),
        ...first(users).map((u) => ({
          type: 'user' as const,
          id: u.id,
          title: u.username,
          detail:
            u.app_id !== null
              ? `uid in ${u.app_name ?? u.app_id}`
              : u.id === q
                ? 'User id'
                : u.wallet_address === q
                  ? 'Wallet address'
                  : 'Username',
          app_id: u.app_id,
          console_url: page(`users/${seg(u.id)}`),
          api_path: `/sandbox/users/${seg(u.id)}`,
        })),
        ...first(found).map((p) => ({
          type: 'payment' as const,
          id: p.identifier,
          title: `${p.amount} test Pi · ${p.memo.slice(0, 80)}`,
          detail: `${p.identifier === q ? 'Payment id' : p.txid === hash ? 'Txid' : 'Memo'} · ${p.state} · ${p.username} in ${p.app_name}`,
          app_id: p.app_id,
          console_url: page(`apps/${seg(p.app_id)}/payments/${seg(p.identifier)}`),
          api_path: `/sandbox/apps/${seg(p.app_id)}/payments/${seg(p.identifier)}`,
        })),
        ...(transaction === undefined
          ? []
          : [
              {
                type: 'transaction' as const,
                id: transaction.hash,
                title: `Ledger ${transaction.ledger}${transaction.memo === null ? '' : ` · ${transaction.memo}`}`,
                detail: 'Transaction hash',
                app_id: null,
                console_url: page(`ledger/transactions/${transaction.hash}`),
                api_path: `/ledger/transactions/${transaction.hash}`,
              },
            ]),
        ...first(requests).map((e) => ({
          type: 'request' as const,
          id: String(e.id),
          title: `${e.method} ${e.path} → ${e.status}`,
          detail: `Request id · ${e.app_name}`,
          app_id: e.app_id,
          console_url: page(`apps/${seg(e.app_id)}/requests/${e.id}`),
          api_path: `/sandbox/apps/${seg(e.app_id)}/requests/${e.id}`,
        })),
      ]
      return { q, hits, truncated }
    },
  )

  r.get(
    '/sandbox/apps/:app_id/overview',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxAppOverview',
        summary: "An app at a glance: payments by state, the last hour's error rate, the size of each list",
        description:
          '`payments.by_state` lists every state (as the status flags map), with how many payments and their amounts ' +
          'summed exactly. `last_hour` counts the request log entries of the last hour of platform time and the share ' +
          'that answered 4xx or 5xx (`error_rate`, 0 to 1, null when there were none; it needs the log on). `totals` ' +
          "counts each of the app's lists.",
        params: AppParams(),
        response: {
          200: Type.Object({
            app_id: Type.String(),
            name: Type.String(),
            payments: Type.Object({ count: Type.Integer(), volume: Type.String(), by_state: Type.Array(StateCount) }),
            last_hour: Type.Object({
              requests: Type.Integer(),
              client_errors: Type.Integer({ description: '4xx answers' }),
              server_errors: Type.Integer({ description: '5xx answers' }),
              error_rate: Type.Union([Type.Number({ minimum: 0, maximum: 1 }), Type.Null()]),
            }),
            totals: Type.Object({
              payments: Type.Integer(),
              users: Type.Integer({ description: 'Users who signed in to the app' }),
              requests: Type.Integer({ description: 'Entries kept in its request log' }),
              ads: Type.Integer(),
              notifications: Type.Integer(),
              active_keys: Type.Integer(),
            }),
            request_log_enabled: Type.Boolean(),
          }),
          ...errorResponses(401, 404),
        },
      },
    },
    async (request) => {
      const appId = request.params.app_id
      const row = await views.requireApp(appId)
      // Approvals whose window passed read as cancelled, as the payments API would answer them.
      await payments.expireDueApprovals(appId)
      await requestLog?.flush()
      const [states, calls, counts] = await Promise.all([
        repo.paymentsByState(appId),
        repo.recentCalls(appId, ERROR_WINDOW_SECONDS),
        repo.counts(appId),
      ])
      const byState = PAYMENT_STATES.map((state) => {
        const found = states.find((s) => s.state === state)
        return { state, count: found?.count ?? 0, volume: sumDecimals([found?.volume ?? '0']) }
      })
      const count = byState.reduce((sum, s) => sum + s.count, 0)
      const errors = calls.client_errors + calls.server_errors
      return {
        app_id: row.id,
        name: row.name,
        payments: { count, volume: sumDecimals(byState.map((s) => s.volume)), by_state: byState },
        last_hour: {
          requests: calls.total,
          client_errors: calls.client_errors,
          server_errors: calls.server_errors,
          error_rate: calls.total === 0 ? null : Math.round((errors / calls.total) * 10_000) / 10_000,
        },
        totals: { payments: count, ...counts },
        request_log_enabled: requestLog !== undefined,
      }
    },
  )

  const ExportedUser = Type.Object({
    user_id: Type.String(),
    username: Type.String(),
    wallet_address: Type.String(),
    created_at: Type.String(),
  })
  r.get(
    '/sandbox/users/export',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxExportUsers',
        summary: `Download users as CSV or JSON (the newest ${MAX_EXPORT_ROWS} that match)`,
        description: '`q` as the list takes it (part of a username). `format=json` (the default) or `csv` (docs/api.md, "Exports").',
        querystring: Type.Object({ ...ExportFormat, q: Type.Optional(Type.String({ minLength: 1, maxLength: 32 })) }),
        response: { 200: exportResponse('users', ExportedUser), ...errorResponses(401) },
      },
    },
    async (request, reply) => {
      const rows = await repo.exportUsers(request.query.q, MAX_EXPORT_ROWS + 1)
      const users = rows.slice(0, MAX_EXPORT_ROWS).map((u) => ({
        user_id: u.id,
        username: u.username,
        wallet_address: u.wallet_address,
        created_at: u.created_at.toISOString(),
      }))
      return sendExport(reply, {
        format: request.query.format,
        file: 'users',
        listName: 'users',
        columns: ['user_id', 'username', 'wallet_address', 'created_at'],
        identifiers: PAYMENT_IDS,
        rows: users,
        truncated: rows.length > MAX_EXPORT_ROWS,
      })
    },
  )

  r.get(
    '/sandbox/apps/:app_id/payments/export',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxExportPayments',
        summary: `Download an app's payments as CSV or JSON (the newest ${MAX_EXPORT_ROWS} that match)`,
        description:
          '`q`, `state` and `direction` as the list takes them. JSON: each payment as the list answers it. CSV: one row a ' +
          'payment, its status flags as columns and its metadata as JSON. `format=json` (the default) or `csv`.',
        params: AppParams(),
        querystring: Type.Object({
          ...ExportFormat,
          ...paymentFilterQuery(),
        }),
        response: {
          200: exportResponse('payments', Type.Record(Type.String(), Type.Unknown())),
          ...errorResponses(401, 404),
        },
      },
    },
    async (request, reply) => {
      const appId = request.params.app_id
      const { q, state, direction, format } = request.query
      const rows = await paymentViews.list(appId, { q, state, direction }, MAX_EXPORT_ROWS, undefined)
      const listed = rows.slice(0, MAX_EXPORT_ROWS).map((row) => row.payment)
      return sendExport(reply, {
        format,
        file: `${appId}-payments`,
        listName: 'payments',
        columns: PAYMENT_COLUMNS,
        identifiers: PAYMENT_IDS,
        rows: listed,
        csvRows: listed.map(flatPayment),
        truncated: rows.length > MAX_EXPORT_ROWS,
      })
    },
  )
}

/** Sums decimal strings of at most 7 places exactly (as integers of 10^-7). */
function sumDecimals(values: string[]): string {
  let total = 0n
  for (const value of values) {
    const [whole = '0', fraction = ''] = value.split('.')
    total += BigInt(whole) * 10_000_000n + BigInt(fraction.padEnd(7, '0').slice(0, 7) || '0')
  }
  const whole = total / 10_000_000n
  const fraction = (total % 10_000_000n).toString().padStart(7, '0').replace(/0+$/, '')
  return fraction === '' ? whole.toString() : `${whole}.${fraction}`
}
