import type { Refusal } from './ledger-rules.js'
import type { HookRefusal } from './ledger-types.js'
import { transactionResultXdr } from './stellar/result-xdr.js'

/** Horizon's problem kinds that the ledger API answers with, and their titles and statuses. */
const PROBLEMS = {
  bad_request: { title: 'Bad Request', status: 400 },
  invalid_accounts_params: { title: 'Invalid Accounts Parameters', status: 400 },
  transaction_malformed: { title: 'Transaction Malformed', status: 400 },
  transaction_failed: { title: 'Transaction Failed', status: 400 },
  forbidden: { title: 'Forbidden', status: 403 },
  not_found: { title: 'Resource Missing', status: 404 },
  method_not_allowed: { title: 'Method Not Allowed', status: 405 },
  payload_too_large: { title: 'Payload Too Large', status: 413 },
  unsupported_media_type: { title: 'Unsupported Media Type', status: 415 },
  rate_limit_exceeded: { title: 'Rate Limit Exceeded', status: 429 },
  server_error: { title: 'Internal Server Error', status: 500 },
  service_unavailable: { title: 'Service Unavailable', status: 503 },
} as const

export type ProblemKind = keyof typeof PROBLEMS

export interface ProblemExtras {
  envelope_xdr?: string
  result_xdr?: string
  result_codes?: { transaction: string; operations?: string[] }
  invalid_field?: string
  reason?: string
}

/** Horizon's error body (RFC 7807 problem details), served as application/problem+json. */
export interface HorizonProblem {
  type: string
  title: string
  status: number
  detail: string
  extras?: ProblemExtras
}

export function problem(kind: ProblemKind, detail: string, extras?: ProblemExtras): HorizonProblem {
  const { title, status } = PROBLEMS[kind]
  return { type: `https://stellar.org/horizon-errors/${kind}`, title, status, detail, ...(extras === undefined ? {} : { extras }) }
}

/** A refusal of the ledger, carrying the Horizon problem the ledger API answers. */
export class LedgerError extends Error {
  override name = 'LedgerError'
  constructor(readonly problem: HorizonProblem) {
    super(problem.detail)
  }

  get status(): number {
    return this.problem.status
  }

  /** Horizon's result codes of a refused transaction ({transaction: 'tx_bad_seq'}, {transaction: 'tx_failed', operations: […]}), else undefined. */
  get resultCodes(): { transaction: string; operations?: string[] } | undefined {
    return this.problem.extras?.result_codes
  }
}

export function malformed(detail: string, envelopeXdr: string): LedgerError {
  // Echo only a bounded piece of what could not be decoded.
  return new LedgerError(problem('transaction_malformed', detail, { envelope_xdr: envelopeXdr.slice(0, 10_000) }))
}

/** Nothing was charged for a refused transaction, so its result says fee 0. */
export function refused(refusal: Refusal, envelopeXdr: string): LedgerError {
  const result_codes =
    refusal.operations === undefined
      ? { transaction: refusal.transaction }
      : { transaction: refusal.transaction, operations: refusal.operations }
  return new LedgerError(
    problem('transaction_failed', `The transaction was refused: ${refusal.detail}`, {
      envelope_xdr: envelopeXdr,
      result_codes,
      result_xdr: transactionResultXdr(0n, refusal.transaction, refusal.operations),
    }),
  )
}

/** A transaction a hook refused (the payments hook: a payment not approved, or no longer linked). */
export function hookRefused(refusal: HookRefusal): LedgerError {
  return new LedgerError(problem('transaction_failed', refusal.detail, { result_codes: { transaction: refusal.transaction } }))
}

export function notFound(detail = 'The resource at the url requested was not found.'): LedgerError {
  return new LedgerError(problem('not_found', detail))
}

/** A path or query parameter the route's schema lets through but whose value no record can have (an int64 out of range). */
export function badParameter(field: string, reason: string): LedgerError {
  return new LedgerError(problem('bad_request', `The ${field} must be ${reason}.`, { invalid_field: field, reason }))
}

/**
 * A transaction that committed, then was erased by a reset or a restore before its request could
 * read it back: in the world that answers, it was never applied (503, submit it again).
 */
export function erasedByReplace(hash: string): HorizonProblem {
  return problem(
    'service_unavailable',
    `The platform was reset or a snapshot was restored while transaction ${hash} was being applied: it is not in the ledger. Submit it again.`,
    { reason: 'world_replaced' },
  )
}

/**
 * The closer has more transactions waiting than its bound (PLINTH_LEDGER_QUEUE_MAX): refused at
 * once, before anything is applied, with 503 and Retry-After (docs/ledger.md, "Ledgers close in batches").
 */
export function busy(waiting: number): HorizonProblem {
  return problem(
    'service_unavailable',
    `The ledger has ${waiting} transactions waiting to close, its limit: nothing was applied. Submit the transaction again in a second.`,
    { reason: 'ledger_busy' },
  )
}
