import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { errorResponses } from '../http/errors.js'
import { SESSION_SECURITY } from '../http/openapi.js'
import type { OperatorService } from './operator-service.js'

/** An issue as the operator asks for it: `POST /operator/issue` and its check take the same body. */
export const IssueBody = Type.Object(
  {
    target: Type.String({ minLength: 1, maxLength: 64, description: 'A username, or an app id (app_…)' }),
    amount: Type.String({ minLength: 1, maxLength: 40, description: 'Pi, a positive decimal with at most 7 places' }),
    reason: Type.String({ minLength: 1, maxLength: 500, description: 'At least one visible character, as a suspension’s' }),
  },
  { additionalProperties: false },
)

/**
 * `POST /operator/issue/check` (docs/operators.md, "Issuing money"): the refusals an issue would
 * meet that can be known in advance, checked before the console asks the operator to confirm
 * (#41 U17). It moves nothing and records nothing; the issue itself checks everything again.
 */
export function issueCheckRoutes(app: FastifyInstance, deps: { operator: OperatorService }): void {
  const { operator } = deps
  app.withTypeProvider<TypeBoxTypeProvider>().post(
    '/operator/issue/check',
    {
      config: { auth: 'session', role: 'operator' },
      schema: {
        tags: ['Operator'],
        security: SESSION_SECURITY,
        operationId: 'operatorIssueCheck',
        summary: 'Check an issue before confirming it: the refusals known in advance, nothing moved or recorded',
        description:
          'The same body and the same refusals as POST /operator/issue (400 invalid_amount or invalid_arguments, 404 not_found, ' +
          '409 issue_limit_reached), without issuing: 200 says what the issue would do. The issue checks again at the act ' +
          '(another operator may issue in between), so a check that passed is no promise.',
        body: IssueBody,
        response: {
          200: Type.Object({
            target: Type.String(),
            address: Type.String({ description: 'The wallet the issue would pay' }),
            amount: Type.String(),
            needs_approval: Type.Boolean({
              description: 'Above PLINTH_OPERATOR_APPROVAL_THRESHOLD: the issue would wait for a second operator',
            }),
            daily_limit: Type.String({ description: 'PLINTH_OPERATOR_DAILY_ISSUE_LIMIT, Pi' }),
            issued_today: Type.String({ description: 'Pi issued from the console by all operators in the last 24 hours' }),
          }),
          ...errorResponses(400, 401, 403, 404, 409, 415),
        },
      },
    },
    async (request) => operator.issueCheck(request.body),
  )
}
