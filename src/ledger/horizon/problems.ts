import type { FastifyError } from 'fastify'
import { Type } from 'typebox'
import { type HorizonProblem, LedgerError, problem } from '../ledger-errors.js'

export const PROBLEM_CONTENT_TYPE = 'application/problem+json; charset=utf-8'

export const Problem = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    extras: Type.Optional(
      Type.Object({
        envelope_xdr: Type.Optional(Type.String()),
        result_xdr: Type.Optional(Type.String()),
        result_codes: Type.Optional(Type.Object({ transaction: Type.String(), operations: Type.Optional(Type.Array(Type.String())) })),
        invalid_field: Type.Optional(Type.String()),
        reason: Type.Optional(Type.String()),
      }),
    ),
  },
  { description: "Horizon's problem details (application/problem+json)" },
)

/** The problem responses of a route: 400 and 500 always, and `statuses`. */
export const problems = (...statuses: number[]): Record<number, typeof Problem> =>
  Object.fromEntries([400, 500, ...statuses].map((status) => [status, Problem]))

function fieldOf(error: FastifyError): string | undefined {
  const first = error.validation?.[0] as { instancePath?: string } | undefined
  const path = first?.instancePath?.replace(/^\//, '')
  return path === undefined || path === '' ? error.validationContext : path
}

/** Turns anything thrown in /ledger into a Horizon problem; the unexpected is logged and becomes server_error. */
export function toProblem(error: FastifyError | LedgerError | Error, log: (error: unknown) => void): HorizonProblem {
  if (error instanceof LedgerError) return error.problem
  const fastifyError = error as FastifyError
  if (fastifyError.validation !== undefined) {
    const field = fieldOf(fastifyError)
    return problem('bad_request', 'The request you sent was invalid in some way.', {
      ...(field === undefined ? {} : { invalid_field: field }),
      reason: fastifyError.message,
    })
  }
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return problem('payload_too_large', 'The request body is larger than the limit.')
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_TYPE':
      return problem('unsupported_media_type', 'Send the transaction as application/x-www-form-urlencoded (tx=…) or application/json.')
  }
  const status = fastifyError.statusCode
  if (status !== undefined && status >= 400 && status < 500) {
    return problem('bad_request', fastifyError.message || 'The request you sent was invalid in some way.')
  }
  log(error)
  return problem('server_error', 'An error occurred while processing this request.')
}
