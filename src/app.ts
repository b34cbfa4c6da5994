import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import { TypeBoxValidatorCompiler } from '@fastify/type-provider-typebox'
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, LogController } from 'fastify'
import type { Kysely } from 'kysely'
import { adsRoutes, adsSandboxRoutes } from './ads/ads-routes.js'
import { adsServiceFactory } from './ads/ads-service.js'
import { appsServiceFactory } from './apps/apps-service.js'
import type { PlatformClock } from './clock/clock.js'
import type { Config } from './config.js'
import { consoleRoutes } from './console/console-routes.js'
import type { DB } from './db/schema.js'
import { registerAuth } from './http/auth.js'
import { ErrorBody, registerErrorHandling } from './http/errors.js'
import { SECURITY_SCHEMES } from './http/openapi.js'
import { createCredentialCache } from './identity/credential-cache.js'
import { identityServiceFactory } from './identity/identity-service.js'
import { meRoutes } from './identity/me-routes.js'
import { horizonRoutes } from './ledger/horizon-routes.js'
import { ledgerSandboxRoutes } from './ledger/ledger-sandbox-routes.js'
import { ledgerServiceFactory } from './ledger/ledger-service.js'
import { ledgerWallets } from './ledger/wallets.js'
import { notificationsRoutes, notificationsSandboxRoutes } from './notifications/notifications-routes.js'
import { notificationsServiceFactory } from './notifications/notifications-service.js'
import { paymentsLedger } from './payments/payments-ledger.js'
import { clientPaymentsRoutes, paymentsRoutes } from './payments/payments-routes.js'
import { paymentsServiceFactory } from './payments/payments-service.js'
import { sandboxRoutes } from './sandbox/sandbox-routes.js'
import { sandboxViews } from './sandbox/sandbox-views.js'
import { systemRoutes } from './system/system-routes.js'
import { sandboxPageRoutes } from './web/sandbox-page-routes.js'
import { sdkRoutes } from './web/sdk-routes.js'

export const VERSION = '0.1.0'
export const BODY_LIMIT = 1024 * 1024
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

/** One log line a request, when it completes, with the route pattern rather than the raw URL. */
class RequestLog extends LogController {
  override incomingRequest(): void {}
  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
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
    'mode' | 'adminToken' | 'logLevel' | 'publicUrl' | 'tokenTtlSeconds' | 'approvalWindowSeconds' | 'adVerdictDelaySeconds'
  >
  /** Encrypts wallet seeds held by the platform. */
  secretKey: Buffer
  /** Readiness probe of the database. */
  ping: () => Promise<void>
  /** Where log lines go (standard output when absent). */
  logStream?: { write(line: string): void }
}

/** Builds the whole HTTP application from its dependencies; listening is the caller's business. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const { db, clock, config, secretKey } = deps

  const app = Fastify({
    logger: {
      level: config.logLevel,
      redact: { paths: ['req.headers.authorization', 'req.headers["x-admin-token"]'], censor: '[redacted]' },
      ...(deps.logStream === undefined ? {} : { stream: deps.logStream }),
    },
    bodyLimit: BODY_LIMIT,
    logController: new RequestLog(),
    genReqId: (request: IncomingMessage) => {
      const given = request.headers['x-request-id']
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID()
    },
    routerOptions: { maxParamLength: 200 },
  })
  app.setValidatorCompiler(TypeBoxValidatorCompiler)

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id)
  })

  // An empty body with a JSON content type is "no payload" (approve and cancel are sent that way), not an error.
  // JSON is the only body type: anything else is 415 rather than a string the schema then refuses.
  const parseJson = app.getDefaultJsonParser('error', 'error')
  app.removeContentTypeParser(['application/json', 'text/plain'])
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: BODY_LIMIT }, (request, body, done) => {
    if (body === '') return done(null, undefined)
    parseJson(request, body as string, done)
  })

  registerErrorHandling(app)
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
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { docExpansion: 'list', deepLinking: true } })

  // The ledger calls payments back inside the transaction that applies a ledger transaction,
  // so a payment's link commits with the transaction that pays it.
  const ledger = ledgerServiceFactory({ db, clock, onTransactionApplied: (trx, tx) => payments.linkTransaction(trx, tx) })
  const wallets = ledgerWallets(ledger)
  // Verified credentials are cached per process; revocations reach every process within a second.
  const credentials = createCredentialCache({
    db,
    clock,
    onError: (error) => app.log.warn({ err: error }, 'could not read the revocation feed'),
  })
  app.addHook('onReady', () => credentials.start())
  app.addHook('onClose', async () => credentials.stop())
  const apps = appsServiceFactory({ db, clock, wallets, afterRevocation: credentials.sync })
  const identity = identityServiceFactory({
    db,
    clock,
    secretKey,
    defaultTokenTtlSeconds: config.tokenTtlSeconds,
    wallets,
    afterRevocation: credentials.sync,
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

  registerAuth(app, {
    adminToken: config.adminToken,
    authenticator: credentials.authenticator({ verifyApiKey: apps.verifyApiKey, verifyAccessToken: identity.verifyAccessToken }),
  })

  systemRoutes(app, { ping: deps.ping })
  meRoutes(app, { identity })
  paymentsRoutes(app, { payments })
  clientPaymentsRoutes(app, { payments })
  adsRoutes(app, { ads })
  notificationsRoutes(app, { notifications })
  sdkRoutes(app)
  await app.register(horizonRoutes, { prefix: '/ledger', ledger, clock, publicUrl: config.publicUrl, version: VERSION })
  if (config.mode === 'sandbox') {
    sandboxRoutes(app, { apps, identity, clock, maxTokenTtlSeconds: 30 * 86_400 })
    ledgerSandboxRoutes(app, { ledger })
    adsSandboxRoutes(app, { ads, apps })
    notificationsSandboxRoutes(app, { notifications })
    sandboxViews(app, { db, publicUrl: config.publicUrl, expireDueApprovals: payments.expireDueApprovals })
    await app.register(sandboxPageRoutes, {
      approvalWindowSeconds: config.approvalWindowSeconds,
      adminTokenRequired: config.adminToken !== undefined,
    })
    await app.register(consoleRoutes)
  }

  return app
}
