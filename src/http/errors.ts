import { randomUUID } from 'node:crypto'
import { STATUS_CODES } from 'node:http'
import type { Duplex } from 'node:stream'
import type { ConnectionError, FastifyError, FastifyInstance, FastifyRequest } from 'fastify'
import { ApiError, ErrorBody, type ErrorCode } from '../core/errors.js'
import type { RouteTable } from './routing.js'

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
