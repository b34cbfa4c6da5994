import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { formatAuditHead, parseAuditHead } from '../audit/audit-log.js'
import { decodeCursor, encodeCursor, page } from '../core/cursors.js'
import { ApiError } from '../core/errors.js'
import { Cursor, Id, Nullable, PageLimit, SearchText, Timestamp } from '../core/schemas.js'
import { sessionPrincipal } from '../http/auth.js'
import { errorResponses } from '../http/errors.js'
import { SESSION_SECURITY } from '../http/openapi.js'
import { ApprovalView, Issued, issuedView } from './approval-routes.js'
import { IssueBody } from './issue-check-routes.js'
import type { OperatorService } from './operator-service.js'

const UserParams = Type.Object({ username: Type.String({ minLength: 1, maxLength: 64 }) })
const AppParams = Type.Object({ app_id: Id() })
const Reason = Type.Object(
  {
    reason: Type.String({
      minLength: 1,
      maxLength: 500,
      description: 'Why: kept in the audit log. At least one visible character (white space and invisible characters alone: 400)',
    }),
  },
  { additionalProperties: false },
)
const Changed = Type.Object({ changed: Type.Boolean({ description: 'false when it already was so (nothing recorded)' }) })
const Role = Type.Union([Type.Literal('developer'), Type.Literal('operator')])
const UserView = Type.Object({
  user_id: Type.String(),
  username: Type.String(),
  roles: Type.Array(Type.String()),
  suspended: Type.Boolean(),
  suspended_at: Nullable(Timestamp()),
  has_password: Type.Boolean(),
  wallet_address: Type.String(),
  created_at: Timestamp(),
})
const AppSummary = Type.Object({
  app_id: Type.String(),
  name: Type.String(),
  url: Nullable(Type.String()),
  network: Type.String(),
  owner: Nullable(Type.String()),
  verified: Type.Boolean(),
  verified_by: Nullable(Type.String()),
  suspended: Type.Boolean(),
  created_at: Timestamp(),
})
const AuditRecord = Type.Object({
  id: Type.String(),
  at: Timestamp(),
  actor: Type.String({ description: '`user:<id>` (an operator in the console, a user), `cli:<os user>` (plinth admin), `platform`' }),
  actor_username: Nullable(Type.String({ description: "The actor's username now, for a `user:` actor (not part of the hashed record)" })),
  action: Type.String(),
  target: Nullable(Type.String()),
  details: Type.Object({}, { additionalProperties: true, description: 'The arguments and outcome, never a secret' }),
  prev_hash: Type.String(),
  hash: Type.String(),
})
const AuditQuery = Type.Object({
  actor: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  action: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  target: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  q: Type.Optional(SearchText({ description: "A part of the records' details, case-insensitively" })),
  before: Type.Optional(Cursor()),
  limit: Type.Optional(PageLimit()),
})
/** At most this many records in one export. */
const MAX_EXPORT = 100_000

/**
 * The operator's console API (docs/operators.md): a signed-in operator's view of the whole
 * platform. Every route needs a session with the operator role (403 forbidden without it); every
 * act is in the audit log, which no route edits or deletes.
 */
export function operatorRoutes(app: FastifyInstance, deps: { operator: OperatorService }): void {
  const { operator } = deps
  const r = app.withTypeProvider<TypeBoxTypeProvider>()
  const common = { tags: ['Operator'], security: SESSION_SECURITY }
  const config = { auth: 'session', role: 'operator' } as const

  r.get(
    '/operator/users',
    {
      config,
      schema: {
        ...common,
        operationId: 'operatorListUsers',
        summary: 'Users whose name contains q, by name',
        querystring: Type.Object({ q: Type.Optional(SearchText()), after: Type.Optional(Cursor()), limit: Type.Optional(PageLimit()) }),
        response: { 200: Type.Object({ users: Type.Array(UserView), next_cursor: Nullable(Type.String()) }), ...errorResponses(401, 403) },
      },
    },
    async (request) => {
      const limit = request.query.limit ?? 50
      const after = request.query.after === undefined ? undefined : decodeCursor('after', request.query.after, 'users', '').id
      const rows = await operator.users(request.query.q, after, limit)
      const listed = page(rows, limit, (last) => encodeCursor('users', '', { n: 0, id: last.key }))
      return { users: listed.rows.map((row) => row.view), next_cursor: listed.next }
    },
  )

  r.get(
    '/operator/users/:username',
    {
      config,
      schema: {
        ...common,
        operationId: 'operatorGetUser',
        summary: 'A user: roles, suspension, balance, the apps they are a member of',
        params: UserParams,
        response: {
          200: Type.Object({
            ...UserView.properties,
            balance: Type.String(),
            apps: Type.Array(Type.Object({ app_id: Type.String(), name: Type.String(), role: Type.String() })),
          }),
          ...errorResponses(401, 403, 404),
        },
      },
    },
    async (request) => operator.user(sessionPrincipal(request), request.params.username, request.id),
  )

  for (const act of ['suspend', 'restore'] as const) {
    r.post(
      `/operator/users/:username/${act}`,
      {
        config,
        schema: {
          ...common,
          operationId: act === 'suspend' ? 'operatorSuspendUser' : 'operatorRestoreUser',
          summary:
            act === 'suspend'
              ? 'Suspend a user: their sessions end, their tokens are refused on every process within a second (403 user_suspended)'
              : 'Restore a suspended user: they may sign in again (their sessions stay ended)',
          params: UserParams,
          body: Reason,
          response: { 200: Changed, ...errorResponses(401, 403, 404, 415) },
        },
      },
      async (request) => {
        const principal = sessionPrincipal(request)
        const { username } = request.params
        return act === 'suspend'
          ? operator.suspendUser(principal, username, request.body.reason, request.id)
          : operator.restoreUser(principal, username, request.body.reason, request.id)
      },
    )
  }

  r.post(
    '/operator/users/:username/roles',
    {
      config,
      schema: {
        ...common,
        operationId: 'operatorSetRole',
        summary: 'Grant or withdraw the developer or operator role',
        description:
          'An operator does not withdraw their own operator role (403): another operator does. The last active operator keeps it ' +
          '(409 last_operator). Granting the operator role waits for a second operator (202 with the request, ' +
          'GET /operator/approvals) unless PLINTH_OPERATOR_APPROVAL_THRESHOLD is off or the user is an operator already.',
        params: UserParams,
        body: Type.Object(
          {
            role: Role,
            grant: Type.Boolean(),
            reason: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: 'Why: kept in the audit log and the request' })),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({ username: Type.String(), roles: Type.Array(Type.String()) }),
          202: Type.Object({ approval: ApprovalView }),
          ...errorResponses(401, 403, 404, 409, 415),
        },
      },
    },
    async (request, reply) => {
      const { role, grant, reason } = request.body
      const done = await operator.setRole(sessionPrincipal(request), request.params.username, role, grant, reason, request.id)
      if (done.approval !== undefined) return reply.code(202).send({ approval: done.approval })
      return done.changed
    },
  )

  r.post(
    '/operator/users/:username/password-reset',
    {
      config,
      schema: {
        ...common,
        operationId: 'operatorPasswordResetLink',
        summary: 'Issue a one-time link that sets a new password: shown once, for the operator to hand to the user',
        params: UserParams,
        response: {
          201: Type.Object({ username: Type.String(), url: Type.String(), expires_at: Timestamp() }),
          ...errorResponses(401, 403, 404, 415),
        },
      },
    },
    async (request, reply) => {
      reply.header('cache-control', 'no-store')
      return reply.code(201).send(await operator.resetLink(sessionPrincipal(request), request.params.username, request.id))
    },
  )

  r.get(
    '/operator/apps',
    {
      config,
      schema: {
        ...common,
        operationId: 'operatorListApps',
        summary: 'Apps whose name contains q (or whose id is q), newest first',
        querystring: Type.Object({ q: Type.Optional(SearchText()), before: Type.Optional(Cursor()), limit: Type.Optional(PageLimit()) }),
        response: { 200: Type.Object({ apps: Type.Array(AppSummary), next_cursor: Nullable(Type.String()) }), ...errorResponses(401, 403) },
      },
    },
    async (request) => {
      const limit = request.query.limit ?? 50
      const before = request.query.before === undefined ? undefined : decodeCursor('before', request.query.before, 'apps', '')
      const rows = await operator.apps(request.query.q, before, limit)
      const listed = page(rows, limit, (last) => encodeCursor('apps', '', last.position))
      return { apps: listed.rows.map((row) => row.view), next_cursor: listed.next }
    },
  )

  r.get(
    '/operator/apps/:app_id',
    {
      config,
      schema: {
        ...common,
        operationId: 'operatorGetApp',
        summary: 'An app: verification, suspension, active keys, members',
        params: AppParams,
        response: {
          200: Type.Object({
            ...AppSummary.properties,
            description: Type.String(),
            wallet_address: Type.String(),
            verified_at: Nullable(Timestamp()),
            suspended_at: Nullable(Timestamp()),
            active_keys: Type.Integer(),
            members: Type.Array(Type.Object({ username: Type.String(), role: Type.String(), added_at: Timestamp() })),
          }),
          ...errorResponses(401, 403, 404),
        },
      },
    },
    async (request) => {
      const found = await operator.app(sessionPrincipal(request), request.params.app_id, request.id)
      const owner = found.members.find((m) => m.role === 'owner')?.username ?? null
      return { ...found, owner }
    },
  )

  for (const act of ['suspend', 'restore'] as const) {
    r.post(
      `/operator/apps/:app_id/${act}`,
      {
        config,
        schema: {
          ...common,
          operationId: act === 'suspend' ? 'operatorSuspendApp' : 'operatorRestoreApp',
          summary:
            act === 'suspend'
              ? "Suspend an app: its keys and its users' tokens are refused on every process within a second (403 app_suspended), and it leaves the directory"
              : 'Restore a suspended app',
          params: AppParams,
          body: Reason,
          response: { 200: Changed, ...errorResponses(401, 403, 404, 415) },
        },
      },
      async (request) => {
        const principal = sessionPrincipal(request)
        const { app_id: appId } = request.params
        return act === 'suspend'
          ? operator.suspendApp(principal, appId, request.body.reason, request.id)
          : operator.restoreApp(principal, appId, request.body.reason, request.id)
      },
    )
  }

  r.post(
    '/operator/issue',
    {
      config,
      schema: {
        ...common,
        operationId: 'operatorIssue',
        summary: "Issue new money into a user's or an app's wallet: a ledger transaction from the issuing account",
        description:
          'One atomic act: the limit checked, the supply minted and the recipient paid in one database transaction, or nothing. ' +
          'A reason always; at most PLINTH_OPERATOR_DAILY_ISSUE_LIMIT Pi (10,000 by default) from the console in any 24 hours, ' +
          'all operators together (409 issue_limit_reached: nothing moved). Above PLINTH_OPERATOR_APPROVAL_THRESHOLD (1,000 by ' +
          'default) the issue waits for a second operator: 202 with the request (GET /operator/approvals).',
        body: IssueBody,
        response: {
          200: Issued,
          202: Type.Object({ approval: ApprovalView }),
          ...errorResponses(401, 403, 404, 409, 415),
        },
      },
    },
    async (request, reply) => {
      const done = await operator.issue(sessionPrincipal(request), request.body, request.id)
      if (done.approval !== undefined) return reply.code(202).send({ approval: done.approval })
      return issuedView(done.issued)
    },
  )

  /** The supply three ways: both networks' sums at the top level, each network's in `networks`. */
  const supplyFigures = {
    total_issued: Type.String({ description: 'Pi the ledger funded: the supply' }),
    total_balances: Type.String(),
    total_fees: Type.String({ description: 'Pi burnt by fees' }),
    total_audited: Type.String({ description: 'Pi the audit log’s issue and faucet records minted (their amounts and fees)' }),
    total_faucet: Type.String({ description: 'Of total_audited, what the faucet’s records minted (test-π)' }),
    negative_balances: Type.Integer(),
    mismatched_accounts: Type.Integer(),
    differs: Type.Array(Type.Union([Type.Literal('issued'), Type.Literal('balances_and_fees'), Type.Literal('audit')]), {
      maxItems: 3,
    }),
  }
  r.get(
    '/operator/ledger/check',
    {
      config,
      schema: {
        ...common,
        operationId: 'operatorLedgerCheck',
        summary: 'The supply three ways: issued (funded), balances + fees, and the audit log’s issue records; no balance negative',
        description:
          '`differs` names the figure that disagrees with the other two (`issued`, `balances_and_fees`, `audit`; all three when ' +
          'none agree); `balanced` is true when they agree, no balance is negative and every balance is its history.',
        response: {
          200: Type.Object({
            ...supplyFigures,
            balanced: Type.Boolean({ description: 'Each network balances' }),
            networks: Type.Array(
              Type.Object({
                network: Type.Union([Type.Literal('Pi Testnet'), Type.Literal('Pi Network')]),
                ...supplyFigures,
                total_split: Type.String({
                  description: 'Of total_issued, counted in total_audited: what migration 0029 funded for money that crossed networks',
                }),
                balanced: Type.Boolean(),
              }),
              { maxItems: 2, description: 'Each network’s supply check (docs/operators.md, "The ledger check")' },
            ),
          }),
          ...errorResponses(401, 403),
        },
      },
    },
    async () => operator.ledgerCheck(),
  )

  r.get(
    '/operator/audit',
    {
      config,
      schema: {
        ...common,
        operationId: 'operatorAudit',
        summary: 'The audit log, newest first, with cursors: filter by actor, action, target, or a part of the details',
        querystring: AuditQuery,
        response: {
          200: Type.Object({ records: Type.Array(AuditRecord), next_cursor: Nullable(Type.String()) }),
          ...errorResponses(401, 403),
        },
      },
    },
    async (request) => {
      const { before, limit: given, ...filter } = request.query
      const limit = given ?? 50
      const position = before === undefined ? undefined : decodeCursor('before', before, 'audit', '').n
      const rows = await operator.audit(filter, position, limit)
      const listed = page(rows, limit, (last) => encodeCursor('audit', '', { n: Number(last.id) }))
      return { records: listed.rows, next_cursor: listed.next }
    },
  )

  r.get(
    '/operator/audit/export',
    {
      config,
      schema: {
        ...common,
        operationId: 'operatorAuditExport',
        summary: 'The audit log as JSON lines (application/x-ndjson), oldest first, with the same filters; at most 100,000 records',
        querystring: Type.Object({
          actor: AuditQuery.properties.actor,
          action: AuditQuery.properties.action,
          target: AuditQuery.properties.target,
          q: AuditQuery.properties.q,
        }),
        response: {
          200: Type.String({ description: 'One record per line, as GET /operator/audit shows them' }),
          ...errorResponses(401, 403),
        },
      },
    },
    async (request, reply) => {
      const lines: string[] = []
      let before: number | undefined
      for (;;) {
        const rows = await operator.audit(request.query, before, 1000)
        const kept = rows.slice(0, 1000)
        for (const row of kept) lines.push(JSON.stringify(row))
        const last = kept[kept.length - 1]
        if (rows.length <= 1000 || last === undefined) break
        if (lines.length >= MAX_EXPORT) throw new ApiError('invalid_arguments', 'More than 100,000 records match: narrow the filter.')
        before = Number(last.id)
      }
      reply
        .header('content-type', 'application/x-ndjson; charset=utf-8')
        .header('content-disposition', 'attachment; filename="plinth-audit.jsonl"')
        .header('cache-control', 'no-store')
      return lines.reverse().join('\n') + (lines.length > 0 ? '\n' : '')
    },
  )

  const Head = Type.String({
    pattern: '^[1-9][0-9]{0,18}:[0-9a-f]{64}$',
    description: 'A head as GET /operator/audit/head or `plinth admin audit head` gave it: `<id>:<mac>`',
  })

  r.get(
    '/operator/audit/head',
    {
      config,
      schema: {
        ...common,
        operationId: 'operatorAuditHead',
        summary: "The audit chain's head: the newest record's id and MAC, to keep outside the database (docs/operators.md)",
        response: {
          200: Type.Object({ head: Nullable(Head), id: Nullable(Type.String()), mac: Nullable(Type.String()) }),
          ...errorResponses(401, 403),
        },
      },
    },
    async () => {
      const head = await operator.auditHead()
      return head === null ? { head: null, id: null, mac: null } : { head: formatAuditHead(head), ...head }
    },
  )

  r.get(
    '/operator/audit/verify',
    {
      config,
      schema: {
        ...common,
        operationId: 'operatorAuditVerify',
        summary:
          "Walk the audit log's keyed chain: the first record whose MAC or link is wrong (or that is not keyed), or null; with `head`, whether the chain still reaches it",
        querystring: Type.Object({ head: Type.Optional(Head) }, { additionalProperties: false }),
        response: {
          200: Type.Object({
            records: Type.Integer(),
            broken_at: Nullable(Type.String()),
            problem: Nullable(Type.Union([Type.Literal('changed'), Type.Literal('unkeyed')])),
            head: Nullable(Head),
            expected_head: Type.Optional(Type.Union([Type.Literal('reached'), Type.Literal('missing'), Type.Literal('changed')])),
          }),
          ...errorResponses(400, 401, 403),
        },
      },
    },
    async (request) => {
      const given = request.query.head
      const checked = await operator.verifyAudit(given === undefined ? undefined : parseAuditHead(given))
      return { ...checked, head: checked.head === null ? null : formatAuditHead(checked.head) }
    },
  )
}
