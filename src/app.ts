import type { FastifyInstance } from 'fastify'
import type { AppDeps } from './app/app-deps.js'
import { applyPipeline } from './app/pipeline.js'
import { registerRouteGroups } from './app/routes.js'
import { createServer } from './app/server.js'
import { buildServices, type Services } from './app/services.js'
import { auditChainKey, auditLog } from './audit/audit-log.js'
import type { Metrics } from './system/metrics.js'

export type { AppDeps } from './app/app-deps.js'
export { BODY_LIMIT, VERSION } from './app/server.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** GET /metrics' registry: register a gauge with `app.metrics.gauge(name, help, collect)` (docs/design.md, Metrics). */
    metrics: Metrics
  }
}

/**
 * What the services do when the application starts and stops. Open streams end first (with
 * Horizon's `close`, so clients reconnect elsewhere): a stop never waits on them.
 */
function registerLifecycle(app: FastifyInstance, services: Services): void {
  const { networks, credentials, sandbox, requestLogOptIn, statistics } = services
  for (const { streams, tip } of Object.values(networks)) {
    app.addHook('preClose', async () => streams.closeAll())
    app.addHook('onClose', async () => tip.close())
  }
  app.addHook('onReady', () => credentials.start())
  app.addHook('onClose', async () => credentials.stop())
  app.addHook('onReady', () => statistics.start())
  app.addHook('onClose', async () => statistics.stop())
  if (requestLogOptIn !== undefined) {
    app.addHook('onReady', () => requestLogOptIn.start())
    app.addHook('onClose', async () => requestLogOptIn.stop())
  }
  if (sandbox !== undefined) {
    app.addHook('onReady', () => sandbox.sync.start())
    app.addHook('onClose', () => sandbox.sync.stop())
  }
}

/**
 * Keys an audit chain written before migration 0021, once (audit-log.ts, rekey; docs/operators.md,
 * "Audit log"). A chain that does not verify is left as it is and said at error level: the platform
 * still starts, and `plinth admin audit verify` keeps showing the break.
 */
async function rekeyAuditChain(app: FastifyInstance, services: Services, secretKey: Buffer): Promise<void> {
  const outcome = await auditLog(services.db, auditChainKey(secretKey)).rekey('platform')
  if (outcome.kind === 'rekeyed') app.log.warn({ records: outcome.records, audit_id: outcome.audit_id }, 'audit chain re-keyed')
  if (outcome.kind === 'refused') {
    app.log.error(
      { broken_at: outcome.broken_at, problem: outcome.problem },
      'audit chain NOT re-keyed: it does not verify as it stands (docs/operators.md, "Audit log")',
    )
  }
}

/**
 * Builds the whole HTTP application from its dependencies; listening is the caller's business.
 * The composition root: the services (src/app/services.ts), the request pipeline, one stage
 * after another (src/app/pipeline.ts), then the route groups (src/app/routes.ts).
 */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const app = createServer(deps)
  const services = buildServices(deps, app.log)
  if (deps.config.mode === 'production') await rekeyAuditChain(app, services, deps.secretKey)
  app.decorate('metrics', services.metrics)
  // Read by tests (every stream freed) and by /metrics.
  app.decorate('ledgerStreams', { usage: () => ({ ...services.streams.usage(), tip: services.tip.usage() }) })
  registerLifecycle(app, services)

  const ctx = { config: deps.config, clock: deps.clock, services, rateLimitNow: deps.rateLimitNow }
  const products = await applyPipeline(app, ctx)
  await registerRouteGroups(app, { ...ctx, ping: deps.ping, products })
  return app
}
