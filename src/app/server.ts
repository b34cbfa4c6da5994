import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, LogController } from 'fastify'
import pino from 'pino'
import { ApiError } from '../core/errors.js'
import { clientErrorHandler } from '../http/errors.js'
import { requestChildLogger, writes } from '../http/request-logger.js'
import { isLedgerPath, normalizeUrl } from '../http/routing.js'
import { horizonRewrite } from '../ledger/horizon/origins.js'
import { problem } from '../ledger/ledger-errors.js'
import type { AppDeps } from './app-deps.js'

export const VERSION = '0.1.0'
export const BODY_LIMIT = 1024 * 1024
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/**
 * Errors of routing itself (a path parameter that is not valid percent-encoded UTF-8, or one
 * over maxParamLength) reach no error handler: answer them as the route family would, a 400
 * bad_request, or a Horizon bad_request problem under /ledger.
 */
function routingError(error: { code?: string }, request: FastifyRequest, reply: FastifyReply): void {
  const message =
    error.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? 'A path parameter is longer than 200 characters.'
      : 'The URL path is not valid percent-encoded UTF-8.'
  reply.header('x-request-id', request.id).header('x-content-type-options', 'nosniff').code(400)
  const path = request.url.split('?')[0] ?? ''
  if (isLedgerPath(path)) {
    reply.type('application/problem+json; charset=utf-8').send(problem('bad_request', message))
  } else {
    reply.type('application/json; charset=utf-8').send(new ApiError('bad_request', message).toBody())
  }
}

/** Headers that carry credentials: censored wherever a logged object carries headers. */
const SECRET_HEADERS = ['authorization', 'x-admin-token', 'cookie', 'set-cookie', 'proxy-authorization']
const REDACTED_PATHS = SECRET_HEADERS.flatMap((name) => [`headers["${name}"]`, `*.headers["${name}"]`])

/**
 * The error serializer drops `rawPacket`: Node attaches the raw bytes of a request its parser
 * refused to the error, credentials included.
 */
function serializeError(error: Error): ReturnType<typeof pino.stdSerializers.err> {
  const { rawPacket: _rawPacket, ...serialized } = pino.stdSerializers.err(error)
  return serialized
}

/**
 * One log line a request, when it completes, with the route pattern rather than the raw URL. At
 * LOG_LEVEL=info it is the costliest part of a request after the request log (BENCHMARKS.md,
 * "Issue 40": pino's line, written to stdout); at the production level (warn) a request that went
 * well costs one level check.
 */
class RequestLog extends LogController {
  override incomingRequest(): void {}
  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    // At the production level nothing is written for a request that went well: nothing is built either.
    if (!error && !writes(reply.log, 'info')) return
    const line = {
      method: request.method,
      route: request.routeOptions.url ?? 'unmatched',
      status: reply.statusCode,
      ms: Math.round(reply.elapsedTime * 10) / 10,
    }
    if (error) reply.log.error({ ...line, err: error }, 'request errored')
    else reply.log.info(line, 'request completed')
  }
}

/**
 * The Fastify instance with what only its options can set: logging, request ids, limits, and
 * what the request pipeline (src/app/pipeline.ts) needs before any hook runs: the URL
 * normalisation and routing errors (its routing stage) and the HTTP parser's errors and the
 * missing Host (its protocol stage).
 */
export function createServer(deps: Pick<AppDeps, 'config' | 'logStream'>): FastifyInstance {
  const horizon = horizonRewrite(deps.config.horizons ?? {})
  return Fastify({
    logger: {
      level: deps.config.logLevel,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      serializers: { err: serializeError },
      ...(deps.logStream === undefined ? {} : { stream: deps.logStream }),
    },
    bodyLimit: BODY_LIMIT,
    // A request without Host is refused by registerProtocolChecks, in the platform's shape.
    http: { requireHostHeader: false },
    logController: new RequestLog(),
    childLoggerFactory: requestChildLogger,
    genReqId: (request: IncomingMessage) => {
      const given = request.headers['x-request-id']
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID()
    },
    routerOptions: { maxParamLength: 200 },
    // No start-up watchdog. Avvio's (10 s by default) measures a plugin's wall-clock time, so on a
    // starved event loop (several platforms starting in one process, a busy machine) a plugin that
    // awaits any I/O fails the start: @fastify/swagger-ui reading its logo did, 4 starts in 5. It
    // exists to catch a callback plugin that never calls `done`; every plugin here is async, and
    // a start that hangs is seen by its caller (npm start's "plinth ready", a test's own timeout).
    pluginTimeout: 0,
    // `/v2/me/` and `/v2//payments/…` are served as `/v2/me` and `/v2/payments/…` (src/http/routing.ts);
    // a network's Horizon origin is routed to its Horizon (src/ledger/horizon/origins.ts).
    rewriteUrl: (request) => normalizeUrl(horizon(request, request.url ?? '/')),
    frameworkErrors: routingError,
    clientErrorHandler,
    // During a graceful shutdown a request that arrives on an open keep-alive connection is served
    // (with `Connection: close`) while the database is still open, rather than answered by
    // Fastify's own 503 body, which is not the platform's error shape.
    return503OnClosing: false,
  })
}
