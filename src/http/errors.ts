import { randomUUID } from 'node:crypto'
import { STATUS_CODES } from 'node:http'
import type { Duplex } from 'node:stream'
import type { ConnectionError, FastifyError, FastifyInstance, FastifyRequest } from 'fastify'
import { type Static, Type } from 'typebox'
import type { RouteTable } from './routing.js'

/**
 * The closed vocabulary of error codes and the HTTP status each one carries. Codes the
 * live platform and its SDKs know keep their names (`payment_not_found`, `unknown_error`,
 * `invalid_arguments`, …); docs/errors.md lists them all.
 */
export const ERROR_STATUS = {
  invalid_arguments: 400,
  invalid_json: 400,
  bad_request: 400,
  invalid_amount: 400,
  invalid_metadata: 400,
  missing_txid: 400,
  transaction_failed: 400,
  clock_out_of_range: 400,
  missing_authorization: 401,
  wrong_authorization_scheme: 401,
  invalid_api_key: 401,
  invalid_access_token: 401,
  token_expired: 401,
  invalid_admin_token: 401,
  invalid_metrics_token: 401,
  missing_scope: 401,
  cross_site_request: 403,
  not_found: 404,
  app_not_found: 404,
  user_not_found: 404,
  key_not_found: 404,
  token_not_found: 404,
  payment_not_found: 404,
  ad_not_found: 404,
  notification_not_found: 404,
  snapshot_not_found: 404,
  fault_not_found: 404,
  missing_wallet: 404,
  request_not_found: 404,
  method_not_allowed: 405,
  username_taken: 409,
  ongoing_payment_found: 409,
  wrong_direction: 409,
  cancelled_payment: 409,
  already_completed: 409,
  payment_tx_present: 409,
  txid_mismatch: 409,
  not_verified: 409,
  verification_failed: 409,
  not_approved: 409,
  invalid_status_transition: 409,
  payment_busy: 409,
  snapshot_exists: 409,
  too_many_snapshots: 409,
  too_many_faults: 409,
  request_timeout: 408,
  payload_too_large: 413,
  unsupported_media_type: 415,
  client_header_required: 415,
  expectation_failed: 417,
  misdirected_request: 421,
  rate_limited: 429,
  headers_too_large: 431,
  unknown_error: 500,
  injected_fault: 500,
  service_unavailable: 503,
  wallet_busy: 503,
} as const

export type ErrorCode = keyof typeof ERROR_STATUS

export class ApiError extends Error {
  override name = 'ApiError'
  readonly statusCode: number

  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Extra body fields some errors carry (for example `payment` on `ongoing_payment_found`). */
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message)
    this.statusCode = ERROR_STATUS[code]
  }

  /** Seconds the client should wait before trying again: sent as `Retry-After`. */
  retryAfterSeconds: number | undefined

  /** Marks the error as retryable after `seconds` (sent as `Retry-After`). */
  retryAfter(seconds: number): this {
    this.retryAfterSeconds = seconds
    return this
  }

  toBody(): ErrorBodyType {
    return { ...this.extra, error: this.code, error_message: this.message }
  }
}

export const ErrorBody = Type.Object(
  {
    error: Type.String({ description: 'Machine-readable error code' }),
    error_message: Type.String({ description: 'Human-readable explanation' }),
  },
  { $id: 'ErrorBody', additionalProperties: true, description: 'The platform error shape' },
)
export type ErrorBodyType = Static<typeof ErrorBody>

/** Response schemas for the error statuses a route can answer, for validation-free serialisation and the OpenAPI document. */
export function errorResponses(...statuses: number[]): Record<number, typeof ErrorBody> {
  const out: Record<number, typeof ErrorBody> = {}
  for (const status of [400, 500, ...statuses]) out[status] = ErrorBody
  return out
}

const FRAMEWORK_ERRORS: Record<string, ErrorCode> = {
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid_json',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_json',
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_INVALID_TYPE: 'unsupported_media_type',
}

/** `1 MiB`, `4 MiB`, `256 KiB`: a body limit as the error message names it. */
export function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`
  return `${bytes} bytes`
}

const MESSAGES: Partial<Record<ErrorCode, string>> = {
  invalid_json: 'The request body is not valid JSON.',
  unsupported_media_type: 'Send request bodies as application/json.',
}

/**
 * Turns anything thrown into the documented body shape; the unexpected becomes a logged 500.
 * `bodyLimit` is the limit of the route that refused the body, which a 413's message names.
 */
export function toApiError(error: FastifyError | ApiError | Error, bodyLimit?: number): { error: ApiError; unexpected: boolean } {
  if (error instanceof ApiError) return { error, unexpected: false }
  const fastifyError = error as FastifyError
  if (fastifyError.validation !== undefined) {
    return { error: new ApiError('invalid_arguments', fastifyError.message), unexpected: false }
  }
  const code = fastifyError.code === undefined ? undefined : FRAMEWORK_ERRORS[fastifyError.code]
  if (code === 'payload_too_large') {
    const limit = bodyLimit === undefined ? 'its' : `the ${formatBytes(bodyLimit)}`
    return { error: new ApiError(code, `The request body is larger than ${limit} limit.`), unexpected: false }
  }
  if (code !== undefined) return { error: new ApiError(code, MESSAGES[code] ?? fastifyError.message), unexpected: false }
  const status = fastifyError.statusCode
  if (status !== undefined && status >= 400 && status < 500) {
    // Other client errors raised by the framework (bad Content-Length, proto poisoning, …).
    return {
      error: new ApiError('bad_request', fastifyError.message || 'The request could not be understood.'),
      unexpected: false,
    }
  }
  return { error: new ApiError('unknown_error', 'An unexpected error occurred.'), unexpected: true }
}

export interface ErrorHandlingOptions {
  /**
   * Sandbox mode: whether a reset or a restore committed while `request` ran. An unexpected error
   * of such a request (it read part of the old platform and part of the new) is answered as a 503
   * the client can retry, not a 500 (docs/testing.md, "Reset and snapshots").
   */
  replacedDuring?: (request: FastifyRequest) => Promise<boolean>
}

/** What a request that ran across a reset or a restore and failed on it answers. */
export const REPLACED_MESSAGE =
  'The platform was reset or a snapshot was restored while this request ran; the new platform keeps nothing of it. Send it again.'

export function registerErrorHandling(app: FastifyInstance, routes: RouteTable, options: ErrorHandlingOptions = {}): void {
  app.setErrorHandler(async (thrown: FastifyError, request, reply) => {
    let { error, unexpected } = toApiError(thrown, request.routeOptions.bodyLimit)
    if (unexpected && options.replacedDuring !== undefined && (await options.replacedDuring(request).catch(() => false))) {
      request.log.warn({ err: thrown }, 'a request failed across a reset or a restore')
      error = new ApiError('service_unavailable', REPLACED_MESSAGE).retryAfter(1)
      unexpected = false
    }
    if (unexpected) {
      request.log.error({ err: thrown }, 'unexpected error')
      error.extra.request_id = request.id
    } else if (error.statusCode >= 500) {
      request.log.warn({ code: error.code }, error.message)
    }
    if (error.code === 'payload_too_large' || error.code === 'unsupported_media_type') {
      // The body was not read to the end; don't keep the connection for another request.
      reply.header('connection', 'close')
    }
    if (error.retryAfterSeconds !== undefined) reply.header('retry-after', String(error.retryAfterSeconds))
    // Set here too: an error can come before the onRequest hook that sets it has run.
    reply.header('x-content-type-options', 'nosniff')
    return reply.code(error.statusCode).type('application/json; charset=utf-8').send(error.toBody())
  })

  app.setNotFoundHandler((request, reply) => {
    const unrouted = routes.unrouted(request)
    if (unrouted?.kind === 'preflight') return reply.code(204).headers(unrouted.headers).send()
    if (unrouted?.kind === 'method_not_allowed') {
      return reply.code(405).header('allow', unrouted.allow).send(new ApiError('method_not_allowed', unrouted.message).toBody())
    }
    const error = new ApiError('not_found', `No route ${request.method} ${request.url.split('?')[0] ?? ''}`.slice(0, 300))
    return reply.code(404).send(error.toBody())
  })
}

/**
 * Writes an error in the platform's shape straight on a socket that has no request object (what
 * Node's parser refuses, a CONNECT), with the headers every answer carries, and closes it.
 */
export function writeRawError(socket: Duplex, apiError: ApiError, requestId: string): void {
  if (socket.writable) {
    const body = JSON.stringify(apiError.toBody())
    socket.write(
      `HTTP/1.1 ${apiError.statusCode} ${STATUS_CODES[apiError.statusCode] ?? ''}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Request-Id: ${requestId}\r\n` +
        'X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n' +
        body,
    )
  }
  socket.destroy()
}

/**
 * What Node's HTTP parser refuses before there is a request for Fastify to route (a malformed
 * request, headers over 16 KiB, a request not received within the server's timeouts) gets the
 * platform's body too, written on the socket, which is then closed. The log line names the
 * parser's code only: the error carries the raw bytes received (`rawPacket`), credentials included.
 */
export function clientErrorHandler(this: FastifyInstance, error: ConnectionError, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return
  const apiError =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? new ApiError('request_timeout', 'The request was not received in time.')
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? new ApiError('headers_too_large', 'The request headers are larger than 16 KiB.')
        : new ApiError('bad_request', 'The request is not well-formed HTTP.')
  const reqId = randomUUID()
  this.log.debug({ reqId, code: error.code, status: apiError.statusCode }, 'client error')
  writeRawError(socket, apiError, reqId)
}
