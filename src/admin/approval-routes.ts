import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { decodeCursor, encodeCursor, page } from '../core/cursors.js'
import { Cursor, Nullable, PageLimit, Timestamp } from '../core/schemas.js'
import { sessionPrincipal } from '../http/auth.js'
import { errorResponses } from '../http/errors.js'
import { SESSION_SECURITY } from '../http/openapi.js'
import type { OperatorService } from './operator-service.js'

const Status = Type.Union([Type.Literal('pending'), Type.Literal('approved'), Type.Literal('rejected'), Type.Literal('expired')])

/** A request waiting for (or decided by) a second operator. */
export const ApprovalView = Type.Object({
  approval_id: Type.String(),
  kind: Type.Union([Type.Literal('issue'), Type.Literal('grant-role')]),
  requested_by: Type.String({ description: 'The username of the operator who asked' }),
  target: Type.String({ description: 'A username, or an app id (an issue to an app)' }),
  amount: Nullable(Type.String({ description: 'An issue’s amount, Pi' })),
  role: Nullable(Type.String({ description: 'A grant’s role' })),
  reason: Type.String(),
  status: Status,
  created_at: Timestamp(),
  expires_at: Timestamp('A request still pending then is expired: nothing of it runs'),
  decided_by: Nullable(Type.String()),
  decided_at: Nullable(Timestamp()),
  decision_reason: Nullable(Type.String()),
})

/** An issue done. */
export const Issued = Type.Object({
  target: Type.String(),
  address: Type.String(),
  amount: Type.String(),
  transaction: Type.String(),
  ledger: Type.Integer(),
  balance: Type.String(),
  audit_id: Type.String(),
})

export const issuedView = (issued: {
  target: string
  address: string
  amount: string
  transaction: string
  ledger: string
  balance: string
  audit_id: string
}) => ({
  target: issued.target,
  address: issued.address,
  amount: issued.amount,
  transaction: issued.transaction,
  ledger: Number(issued.ledger),
  balance: issued.balance,
  audit_id: issued.audit_id,
})

/**
 * The two-person rule's routes (docs/operators.md, "Two operators"): the requests, and another
 * operator's approval (the act runs then, in the same transaction) or rejection. Operators only,
 * as every /operator route.
 */
export function approvalRoutes(app: FastifyInstance, deps: { operator: OperatorService }): void {
  const { operator } = deps
  const r = app.withTypeProvider<TypeBoxTypeProvider>()
  const common = { tags: ['Operator'], security: SESSION_SECURITY }
  const config = { auth: 'session', role: 'operator' } as const
  const Params = Type.Object({ approval_id: Type.String({ minLength: 1, maxLength: 64 }) })

  r.get(
    '/operator/approvals',
    {
      config,
      schema: {
        ...common,
        operationId: 'operatorListApprovals',
        summary: 'Requests for a second operator (issues above the threshold, grants of the operator role), newest first',
        querystring: Type.Object({ status: Type.Optional(Status), before: Type.Optional(Cursor()), limit: Type.Optional(PageLimit()) }),
        response: {
          200: Type.Object({ approvals: Type.Array(ApprovalView), next_cursor: Nullable(Type.String()) }),
          ...errorResponses(401, 403),
        },
      },
    },
    async (request) => {
      const limit = request.query.limit ?? 50
      const before = request.query.before === undefined ? undefined : decodeCursor('before', request.query.before, 'approvals', '')
      const rows = await operator.approvals(request.query.status, before, limit)
      const listed = page(rows, limit, (last) => encodeCursor('approvals', '', last.position))
      return { approvals: listed.rows.map((row) => row.view), next_cursor: listed.next }
    },
  )

  r.post(
    '/operator/approvals/:approval_id/approve',
    {
      config,
      schema: {
        ...common,
        operationId: 'operatorApprove',
        summary: 'Approve another operator’s request: it runs now, in the same transaction (an issue checks the daily limit again)',
        description:
          'The requester never approves their own (403). A request decided, expired, or whose requester is no longer an active ' +
          'operator is 409 approval_not_pending; an issue past the daily limit now is 409 issue_limit_reached (the request stays pending).',
        params: Params,
        response: {
          200: Type.Object({
            approval: ApprovalView,
            issued: Nullable(Issued),
            roles: Nullable(Type.Array(Type.String(), { description: 'The user’s roles after a grant' })),
          }),
          ...errorResponses(401, 403, 404, 409, 415),
        },
      },
    },
    async (request) => {
      const done = await operator.approve(sessionPrincipal(request), request.params.approval_id, request.id)
      return { approval: done.approval, issued: done.issued === null ? null : issuedView(done.issued), roles: done.roles }
    },
  )

  r.post(
    '/operator/approvals/:approval_id/reject',
    {
      config,
      schema: {
        ...common,
        operationId: 'operatorReject',
        summary: 'Reject a request with a reason (its requester may withdraw their own this way): nothing of it runs',
        params: Params,
        body: Type.Object(
          { reason: Type.String({ minLength: 1, maxLength: 500, description: 'Why: kept in the audit log' }) },
          { additionalProperties: false },
        ),
        response: { 200: Type.Object({ approval: ApprovalView }), ...errorResponses(401, 403, 404, 409, 415) },
      },
    },
    async (request) => operator.reject(sessionPrincipal(request), request.params.approval_id, request.body.reason, request.id),
  )
}
