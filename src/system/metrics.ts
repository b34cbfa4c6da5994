import type { FastifyInstance } from 'fastify'
import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from 'kysely'
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client'
import { ApiError } from '../http/errors.js'
import { constantTimeEqual } from '../lib/crypto.js'

/**
 * What a running Plinth exposes at `GET /metrics` (Prometheus' text format, prom-client): one
 * registry per application (no module-level state: two apps in one process, as the tests build,
 * keep their own counts). Every label takes a bounded set of values: route patterns (never the raw
 * URL), methods, status codes, statement kinds. Other parts register their own gauges with
 * `metrics.gauge(name, help, collect)`; `collect` runs when /metrics is read.
 */
export interface Metrics {
  readonly registry: Registry
  /** A gauge read when /metrics is scraped; `collect` answers its current value. Names start with `plinth_`. */
  gauge(name: string, help: string, collect: () => number): void
  /** One credential lookup of the per-process cache (identity/credential-cache.ts). */
  credentialLookup(kind: 'key' | 'token', outcome: 'hit' | 'miss'): void
  /** Times every statement the Kysely instance runs (db.withPlugin(metrics.queryTimer)). */
  readonly queryTimer: KyselyPlugin
}

/** Seconds: from 0.5 ms (a cached GET) to 5 s. */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])
const QUERY_KINDS: Readonly<Record<string, string>> = {
  SelectQueryNode: 'select',
  InsertQueryNode: 'insert',
  UpdateQueryNode: 'update',
  DeleteQueryNode: 'delete',
  RawNode: 'raw',
}
const GAUGE_NAME = /^plinth_[a-z0-9_]{1,80}$/

/** `enabled: false` (no /metrics): gauges may still be registered, but nothing samples the process. */
export function createMetrics(options: { enabled: boolean }): Metrics {
  const registry = new Registry()
  if (options.enabled) collectDefaultMetrics({ register: registry, prefix: 'plinth_', eventLoopMonitoringPrecision: 20 })

  const lookups = new Counter({
    name: 'plinth_credential_cache_lookups_total',
    help: 'Credential lookups of the per-process cache (API keys and access tokens), by outcome',
    labelNames: ['kind', 'outcome'] as const,
    registers: [registry],
  })
  const queries = new Histogram({
    name: 'plinth_db_query_duration_seconds',
    help: 'Database statements, from sending to the result, by kind (select, insert, update, delete, raw, other)',
    labelNames: ['kind'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  })

  const started = new WeakMap<object, { at: number; kind: string }>()
  const queryTimer: KyselyPlugin = {
    transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
      started.set(args.queryId, { at: performance.now(), kind: QUERY_KINDS[args.node.kind] ?? 'other' })
      return args.node
    },
    async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
      const start = started.get(args.queryId)
      if (start !== undefined) {
        started.delete(args.queryId)
        queries.observe({ kind: start.kind }, (performance.now() - start.at) / 1000)
      }
      return args.result
    },
  }

  return {
    registry,
    gauge(name, help, collect) {
      if (!GAUGE_NAME.test(name)) throw new Error(`metric name "${name}" must match ${GAUGE_NAME}`)
      new Gauge({
        name,
        help,
        registers: [registry],
        collect() {
          this.set(collect())
        },
      })
    },
    credentialLookup(kind, outcome) {
      lookups.inc({ kind, outcome })
    },
    queryTimer,
  }
}

/**
 * Counts and times every request by method, route pattern and status. A request no route matched
 * is `unmatched` (a fuzz of random URLs adds no series); a method outside the usual set is `other`.
 */
export function registerRequestMetrics(app: FastifyInstance, metrics: Metrics): void {
  const requests = new Histogram({
    name: 'plinth_http_request_duration_seconds',
    help: 'HTTP requests, from receiving to answering, by method, route pattern and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [metrics.registry],
  })
  app.addHook('onResponse', (request, reply, done) => {
    requests.observe(
      {
        method: METHODS.has(request.method) ? request.method : 'other',
        route: request.routeOptions.url ?? 'unmatched',
        status: String(reply.statusCode),
      },
      reply.elapsedTime / 1000,
    )
    done()
  })
}

/**
 * `GET /metrics`, not in the OpenAPI document. With a token, only `Authorization: Bearer <token>`
 * reads it (compared in constant time, as the admin token is); without one it is open, which
 * app.ts allows in sandbox mode only (in production without a token there is no /metrics at all).
 */
export function metricsRoutes(app: FastifyInstance, deps: { metrics: Metrics; token: string | undefined }): void {
  const { metrics, token } = deps
  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    if (token !== undefined) {
      const header = request.headers.authorization
      if (header === undefined)
        throw new ApiError('invalid_metrics_token', 'GET /metrics needs Authorization: Bearer <PLINTH_METRICS_TOKEN>.')
      const [scheme, given] = header.split(' ', 2)
      if (scheme?.toLowerCase() !== 'bearer' || given === undefined || !constantTimeEqual(given, token)) {
        throw new ApiError('invalid_metrics_token', 'The metrics token is missing or wrong.')
      }
    }
    const text = await metrics.registry.metrics()
    return reply.header('cache-control', 'no-store').type(metrics.registry.contentType).send(text)
  })
}
