import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, LogController } from 'fastify'
import type { Kysely } from 'kysely'
import pino from 'pino'
import { adsRoutes, adsSandboxRoutes } from './ads/ads-routes.js'
import { adsServiceFactory } from './ads/ads-service.js'
import { appsServiceFactory } from './apps/apps-service.js'
import type { PlatformClock } from './clock/clock.js'
import { clockRepo } from './clock/clock-repo.js'
import { type Config, type StreamLimits, streamLimits } from './config.js'
import { consoleRoutes } from './console/console-routes.js'
import { ApiError, ErrorBody } from './core/errors.js'
import type { Listen } from './db/database.js'
import type { DB } from './db/schema.js'
import { registerAuth } from './http/auth.js'
import { registerBodyParsers } from './http/body-parsers.js'
import { clientErrorHandler, registerErrorHandling } from './http/errors.js'
import { SECURITY_SCHEMES } from './http/openapi.js'
import { registerProtocolChecks } from './http/protocol.js'
import { registerRateLimits } from './http/rate-limit.js'
import { requestChildLogger, writes } from './http/request-logger.js'
import { normalizeUrl, registerRouting } from './http/routing.js'
import { registerClientHeaderRule, registerHostCheck, registerSiteCheck, servedHostNames } from './http/site-guard.js'
import { validatorCompiler } from './http/validation.js'
import { createCredentialCache } from './identity/credential-cache.js'
import { identityServiceFactory } from './identity/identity-service.js'
import { meRoutes } from './identity/me-routes.js'
import { horizonRoutes } from './ledger/horizon/index.js'
import { streamHub } from './ledger/horizon/streaming.js'
import { problem } from './ledger/ledger-errors.js'
import { drawnLedger, worldStartLedger } from './ledger/ledger-repo.js'
import { ledgerSandboxRoutes } from './ledger/ledger-sandbox-routes.js'
import { ledgerServiceFactory } from './ledger/ledger-service.js'
import { ledgerTip } from './ledger/ledger-tip.js'
import { ledgerWallets } from './ledger/wallets.js'
import { notificationsRoutes, notificationsSandboxRoutes } from './notifications/notifications-routes.js'
import { notificationsServiceFactory } from './notifications/notifications-service.js'
import { linkPayments, paymentsLedger } from './payments/payments-ledger.js'
import { clientPaymentsRoutes, paymentsRoutes } from './payments/payments-routes.js'
import { paymentsServiceFactory } from './payments/payments-service.js'
import { type RequestLog as RequestLogWriter, registerRequestLog } from './request-log/request-log.js'
import { requestLogRoutes } from './request-log/request-log-routes.js'
import { clockResetFactory } from './sandbox/clock-reset.js'
import { registerFaultInjection } from './sandbox/fault-injection.js'
import { faultsRoutes } from './sandbox/faults-routes.js'
import { faultsServiceFactory } from './sandbox/faults-service.js'
import { sandboxPayments } from './sandbox/sandbox-payments.js'
import { sandboxRoutes } from './sandbox/sandbox-routes.js'
import { createSandboxSync } from './sandbox/sandbox-sync.js'
import { sandboxViews } from './sandbox/sandbox-views.js'
import { worldRoutes } from './sandbox/world-routes.js'
import { worldServiceFactory } from './sandbox/world-service.js'
import { createMetrics, type Metrics, metricsRoutes, registerRequestMetrics } from './system/metrics.js'
import { systemRoutes } from './system/system-routes.js'
import { sandboxPageRoutes } from './web/sandbox-page-routes.js'
import { sdkRoutes } from './web/sdk-routes.js'

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
  if (path === '/ledger' || path.startsWith('/ledger/')) {
    reply.type('application/problem+json; charset=utf-8').send(problem('bad_request', message))
  } else {
    reply.type('application/json; charset=utf-8').send(new ApiError('bad_request', message).toBody())
  }
}

/**
 * Headers of the interactive reference at /docs. Swagger UI runs only its own files (no inline
 * script) and "Try it out" calls this origin or the public URL's; nobody may frame it. Its one
 * inline style is the <style> of its SVG logo, allowed by hash (were it to change, only the
 * logo's colours would go).
 */
const SWAGGER_LOGO_STYLE = "'sha256-RL3ie0nH+Lzz2YNqQN83mnU0J1ot4QL7b99vMdIX99w='"
export function docsHeaders(publicUrl: string): Readonly<Record<string, string>> {
  return {
    'content-security-policy':
      `default-src 'self'; script-src 'self'; script-src-attr 'none'; style-src 'self' ${SWAGGER_LOGO_STYLE}; ` +
      `img-src 'self' data:; font-src 'self' data:; connect-src 'self' ${new URL(publicUrl).origin}; object-src 'none'; ` +
      "base-uri 'self'; form-action 'self'; frame-ancestors 'none'",
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'x-frame-options': 'DENY',
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

/** One log line a request, when it completes, with the route pattern rather than the raw URL. */
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

export interface AppDeps {
  db: Kysely<DB>
  clock: PlatformClock
  config: Pick<
    Config,
    | 'mode'
    | 'adminToken'
    | 'logLevel'
    | 'publicUrl'
    | 'tokenTtlSeconds'
    | 'approvalWindowSeconds'
    | 'adVerdictDelaySeconds'
    | 'rateLimitKeyPerMinute'
    | 'rateLimitTokenPerMinute'
  > & { streams?: StreamLimits } & Partial<Pick<Config, 'requestLog' | 'metricsToken' | 'allowedHosts'>>
  /** Encrypts wallet seeds held by the platform. */
  secretKey: Buffer
  /** Readiness probe of the database. */
  ping: () => Promise<void>
  /** PostgreSQL's LISTEN (Database.listen): ledger streams learn of other processes' transactions through it. */
  listen?: Listen | undefined
  /** Where log lines go (standard output when absent). */
  logStream?: { write(line: string): void }
  /** The rate limits' clock, in milliseconds (a monotonic clock when absent): tests move it. */
  rateLimitNow?: () => number
  /** The database's connections, for /metrics: a pool's (total, idle, waiting), or PGlite's one connection and its queue. */
  poolStats?: () => PoolStats
}

export interface PoolStats {
  total: number
  idle: number
  waiting: number
}

declare module 'fastify' {
  interface FastifyInstance {
    /** GET /metrics' registry: register a gauge with `app.metrics.gauge(name, help, collect)` (ARCHITECTURE.md, Metrics). */
    metrics: Metrics
  }
}

/** Builds the whole HTTP application from its dependencies; listening is the caller's business. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { clock, config, secretKey } = deps
  // Served in sandbox mode, and in production only with a token (src/system/metrics.ts): when not
  // served, nothing is measured either, and registered gauges are never read.
  const metricsServed = config.mode === 'sandbox' || config.metricsToken !== undefined
  const metrics = createMetrics({ enabled: metricsServed })
  const db = metricsServed ? deps.db.withPlugin(metrics.queryTimer) : deps.db

  const app = Fastify({
    logger: {
      level: config.logLevel,
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
    // `/v2/me/` and `/v2//payments/…` are served as `/v2/me` and `/v2/payments/…` (src/http/routing.ts).
    rewriteUrl: (request) => normalizeUrl(request.url ?? '/'),
    frameworkErrors: routingError,
    clientErrorHandler,
    // During a graceful shutdown a request that arrives on an open keep-alive connection is served
    // (with `Connection: close`) while the database is still open, rather than answered by
    // Fastify's own 503 body, which is not the platform's error shape.
    return503OnClosing: false,
  })
  app.setValidatorCompiler(validatorCompiler)
  app.decorate('metrics', metrics)
  if (metricsServed) registerRequestMetrics(app, metrics)
  // Before every route (it records them) and before authentication (a 401 carries the CORS headers).
  const routes = registerRouting(app)

  // Hooks on every request are written with `done`: an async hook costs a promise per request.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id).header('x-content-type-options', 'nosniff')
    done()
  })
  registerProtocolChecks(app)
  // After the missing-Host check; before every route, whose site check comes before authentication.
  registerHostCheck(app, { names: servedHostNames(config.publicUrl, config.allowedHosts ?? []) })
  registerSiteCheck(app, { publicUrl: config.publicUrl })

  registerBodyParsers(app, { bodyLimit: BODY_LIMIT })

  // Sandbox mode: the clock epoch each request started in. A reset or a restore starts a new one, so an
  // unexpected error of a request that ran across one is answered as a 503 to retry (http/errors.ts).
  const startedIn = new WeakMap<FastifyRequest, number>()
  if (config.mode === 'sandbox') {
    app.addHook('onRequest', (request, _reply, done) => {
      startedIn.set(request, clock.epoch())
      done()
    })
  }
  registerErrorHandling(
    app,
    routes,
    config.mode === 'sandbox'
      ? {
          replacedDuring: async (request) => {
            const started = startedIn.get(request)
            return started !== undefined && (await clockRepo(db).read()).epoch !== started
          },
        }
      : {},
  )
  app.addSchema(ErrorBody)

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Plinth Platform API',
        version: VERSION,
        description:
          'The server API of the app platform (`/v2`), its Horizon-style ledger and, in sandbox mode, the sandbox API. ' +
          'Errors answer `{"error": code, "error_message": text}`; see docs/errors.md for every code.',
      },
      servers: [{ url: config.publicUrl }],
      components: { securitySchemes: SECURITY_SCHEMES },
    },
  })
  const docs = docsHeaders(config.publicUrl)
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: { docExpansion: 'list', deepLinking: true },
    uiHooks: {
      onRequest: async (_request, reply) => {
        reply.headers(docs)
      },
    },
  })

  // The ledger calls payments back inside the transaction that applies a ledger transaction,
  // so a payment's link commits with the transaction that pays it (or the transaction is refused).
  // Every closed ledger is announced (NOTIFY at commit, from the database): event streams on any process wake on it.
  const tip = ledgerTip({
    latest: async () => BigInt((await ledger.latestLedger()).sequence),
    listen: deps.listen,
    pollMs: (config.streams ?? streamLimits()).pollMs,
    onError: (error) => app.log.warn({ err: error }, 'could not follow the ledger tip'),
  })
  const link = linkPayments(() => payments)
  const ledger = ledgerServiceFactory({
    db,
    clock,
    onTransactionApplied: link,
    onLedgerClosed: (ledger) => tip.closed(ledger),
  })
  const streams = streamHub({
    tip,
    limits: config.streams ?? streamLimits(),
    latestLedger: async () => BigInt((await ledger.latestLedger()).sequence),
    worldStart: () => worldStartLedger(db),
    drawnLedger: () => drawnLedger(db),
    log: app.log,
  })
  // Open streams end first (with Horizon's `close`, so clients reconnect elsewhere): a stop never waits on them.
  app.addHook('preClose', async () => streams.closeAll())
  app.addHook('onClose', async () => tip.close())
  // Read by tests (every stream freed) and by /metrics.
  app.decorate('ledgerStreams', { usage: () => ({ ...streams.usage(), tip: tip.usage() }) })
  metrics.gauge('plinth_ledger_streams_open', 'Ledger event streams (SSE) open in this process', () => streams.usage().open)
  metrics.gauge(
    'plinth_ledger_stream_clients',
    'Client addresses holding ledger event streams in this process',
    () => streams.usage().clients,
  )
  const wallets = ledgerWallets(ledger)
  // Verified credentials are cached per process; a revocation is dropped at once here (forget, after
  // its transaction committed) and within a second on every process (the feed).
  const credentials = createCredentialCache({
    db,
    clock,
    onError: (error) => app.log.warn({ err: error }, 'could not read the revocation feed'),
    ...(metricsServed ? { onLookup: metrics.credentialLookup } : {}),
  })
  metrics.gauge('plinth_credential_cache_entries', 'Verified API keys and access tokens held by the per-process cache', credentials.size)
  const poolStats = deps.poolStats
  if (poolStats !== undefined) {
    metrics.gauge('plinth_db_connections', 'Database connections open (PGlite: its one connection)', () => poolStats().total)
    metrics.gauge('plinth_db_connections_idle', 'Database connections open and idle', () => poolStats().idle)
    metrics.gauge(
      'plinth_db_connections_waiting',
      'Callers waiting for a database connection (PGlite: its queue)',
      () => poolStats().waiting,
    )
  }
  app.addHook('onReady', () => credentials.start())
  app.addHook('onClose', async () => credentials.stop())
  const apps = appsServiceFactory({ db, clock, wallets, afterRevocation: credentials.forget })
  const identity = identityServiceFactory({
    db,
    clock,
    secretKey,
    defaultTokenTtlSeconds: config.tokenTtlSeconds,
    wallets,
    afterRevocation: credentials.forget,
  })

  const payments = paymentsServiceFactory({
    db,
    clock,
    publicUrl: config.publicUrl,
    approvalWindowMs: config.approvalWindowSeconds * 1000,
    userSeed: identity.openWalletSeed,
    ledger: paymentsLedger(ledger),
  })

  const ads = adsServiceFactory({ db, clock, verdictDelayMs: config.adVerdictDelaySeconds * 1000 })
  const notifications = notificationsServiceFactory({ db, clock })

  // Sandbox mode: what each process holds for the sandbox (faults, the clock epoch of a reset) kept exact across processes.
  const sync =
    config.mode === 'sandbox'
      ? createSandboxSync({ db, clock, onError: (error) => app.log.warn({ err: error }, 'could not read the sandbox state') })
      : undefined
  if (sync !== undefined) {
    app.addHook('onReady', () => sync.start())
    app.addHook('onClose', () => sync.stop())
    // A reset or a restore (a new clock epoch; a clock reset too) ends every stream here before this process acknowledges it.
    let epoch = clock.epoch()
    sync.onChange(async () => {
      if (clock.epoch() === epoch) return
      epoch = clock.epoch()
      await streams.worldReplaced()
    })
  }

  registerAuth(app, {
    adminToken: config.adminToken,
    authenticator: credentials.authenticator({ verifyApiKey: apps.verifyApiKey, verifyAccessToken: identity.verifyAccessToken }),
  })
  // After authentication: a sandbox call without the admin token is told that first.
  registerClientHeaderRule(app)
  // Before the routes: it hooks every key and token route declared after it.
  await registerRateLimits(app, {
    keyPerMinute: config.rateLimitKeyPerMinute,
    tokenPerMinute: config.rateLimitTokenPerMinute,
    ...(deps.rateLimitNow === undefined ? {} : { now: deps.rateLimitNow }),
  })

  // Sandbox mode: before the routes, so it sees every /v2 route declared (production never looks a fault up).
  const faults = sync === undefined ? undefined : faultsServiceFactory({ db, sync })
  const faultable = faults === undefined ? undefined : registerFaultInjection(app, { faults })
  // Before the routes it logs (the /v2 routes); on by default in sandbox mode only.
  const requestLog: RequestLogWriter | undefined =
    (config.requestLog ?? config.mode === 'sandbox') ? registerRequestLog(app, { db, clock, log: app.log }) : undefined
  if (requestLog !== undefined) {
    metrics.gauge('plinth_request_log_buffered', "Request-log rows waiting in this process's buffer", requestLog.buffered)
    metrics.gauge(
      'plinth_request_log_dropped',
      'Request-log rows this process dropped since it started (buffer full, or a batch refused)',
      requestLog.dropped,
    )
  }

  systemRoutes(app, { ping: deps.ping })
  if (metricsServed) metricsRoutes(app, { metrics, token: config.metricsToken })
  meRoutes(app, { identity })
  paymentsRoutes(app, { payments })
  clientPaymentsRoutes(app, { payments })
  adsRoutes(app, { ads })
  notificationsRoutes(app, { notifications })
  sdkRoutes(app)
  await app.register(horizonRoutes, { prefix: '/ledger', routes, ledger, clock, publicUrl: config.publicUrl, version: VERSION, streams })
  if (sync !== undefined) {
    const resetClock = clockResetFactory({
      db,
      clock,
      approvalWindowMs: config.approvalWindowSeconds * 1000,
    })
    sandboxRoutes(app, { apps, identity, clock, resetClock, maxTokenTtlSeconds: 30 * 86_400, publicUrl: config.publicUrl })
    worldRoutes(app, { world: worldServiceFactory({ db, clock, secretKey, sync }) })
    if (faults !== undefined && faultable !== undefined) faultsRoutes(app, { faults, routes: faultable })
    ledgerSandboxRoutes(app, { ledger })
    adsSandboxRoutes(app, { ads, apps, requireUser: identity.requireUser })
    notificationsSandboxRoutes(app, { notifications })
    sandboxViews(app, { db })
    sandboxPayments(app, { db, publicUrl: config.publicUrl, payments, requestLog })
    requestLogRoutes(app, { db, requestLog })
    await app.register(sandboxPageRoutes, {
      approvalWindowSeconds: config.approvalWindowSeconds,
      adminTokenRequired: config.adminToken !== undefined,
    })
    await app.register(consoleRoutes)
  }

  return app
}
