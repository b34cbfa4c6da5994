import type { FastifyInstance } from 'fastify'
import type { KyselyPlugin, PluginTransformQueryArgs, PluginTransformResultArgs, QueryResult, RootOperationNode, UnknownRow } from 'kysely'
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client'
import { ApiError } from '../core/errors.js'
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
  /** One ledger closed by this process's closer, holding `transactions` (src/ledger/ledger-closer.ts). */
  ledgerBatch(transactions: number): void
  /** Times every statement the Kysely instance runs (db.withPlugin(metrics.queryTimer)). */
  readonly queryTimer: KyselyPlugin
  /**
   * HTTP requests by method, route pattern and status, observed by registerRequestMetrics. Made
   * with the registry, so that it is listed before the gauges the services register.
   */
  readonly requests: LatencyHistogram
}

/** Seconds: from 0.5 ms (a cached GET) to 5 s. */
export const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5]
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']
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

  // Counted in plain numbers on the hot path, handed to prom-client when /metrics is read.
  const lookupCounts = { key: { hit: 0, miss: 0 }, token: { hit: 0, miss: 0 } }
  new Counter({
    name: 'plinth_credential_cache_lookups_total',
    help: 'Credential lookups of the per-process cache (API keys and access tokens), by outcome',
    labelNames: ['kind', 'outcome'] as const,
    registers: [registry],
    collect() {
      this.reset()
      for (const kind of ['key', 'token'] as const) {
        for (const outcome of ['hit', 'miss'] as const) {
          const count = lookupCounts[kind][outcome]
          if (count > 0) this.inc({ kind, outcome }, count)
        }
      }
    },
  })
  const queries = new LatencyHistogram(
    registry,
    'plinth_db_query_duration_seconds',
    'Database statements, from sending to the result, by kind (select, insert, update, delete, raw, other)',
  )
  // One series per statement kind, made up front (a series is written once it has an observation).
  const queryKinds = new Map(['other', ...Object.values(QUERY_KINDS)].map((kind) => [kind, queries.series({ kind })]))
  const other = queryKinds.get('other') as Series

  const started = new WeakMap<object, { at: number; series: Series }>()
  const queryTimer: KyselyPlugin = {
    transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
      started.set(args.queryId, { at: performance.now(), series: queryKinds.get(QUERY_KINDS[args.node.kind] ?? 'other') ?? other })
      return args.node
    },
    async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
      const start = started.get(args.queryId)
      if (start !== undefined) {
        started.delete(args.queryId)
        queries.observe(start.series, (performance.now() - start.at) / 1000)
      }
      return args.result
    },
  }

  // Observed once a ledger, not once a request: prom-client's own histogram costs nothing that matters here.
  const batches = new Histogram({
    name: 'plinth_ledger_batch_transactions',
    help: "Transactions in each ledger this process's closer closed",
    buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096],
    registers: [registry],
  })

  const requests = new LatencyHistogram(
    registry,
    'plinth_http_request_duration_seconds',
    'HTTP requests, from receiving to answering, by method, route pattern and status',
  )

  return {
    registry,
    requests,
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
    ledgerBatch(transactions) {
      batches.observe(transactions)
    },
    credentialLookup(kind, outcome) {
      lookupCounts[kind][outcome] += 1
    },
    queryTimer,
  }
}

/**
 * Counts and times every request by method, route pattern and status. A request no route matched
 * is `unmatched` (a fuzz of random URLs adds no series); a method outside the usual set is `other`.
 */
export function registerRequestMetrics(app: FastifyInstance, metrics: Metrics): void {
  const { requests } = metrics
  /** route pattern → method and status (`status * 8 + method's index`) → series. */
  const byRoute = new Map<string, Map<number, Series>>()
  app.addHook('onResponse', (request, reply, done) => {
    const route = request.routeOptions.url ?? 'unmatched'
    let routeSeries = byRoute.get(route)
    if (routeSeries === undefined) {
      routeSeries = new Map()
      byRoute.set(route, routeSeries)
    }
    const methodIndex = METHODS.indexOf(request.method)
    const key = reply.statusCode * 8 + (methodIndex === -1 ? METHODS.length : methodIndex)
    let series = routeSeries.get(key)
    if (series === undefined) {
      series = requests.series({ method: methodIndex === -1 ? 'other' : request.method, route, status: String(reply.statusCode) })
      routeSeries.set(key, series)
    }
    requests.observe(series, reply.elapsedTime / 1000)
    done()
  })
}

/** One labelled series of a LatencyHistogram: counts per bucket (not cumulative), sum and count. */
export interface Series {
  readonly labels: Readonly<Record<string, string>>
  readonly counts: Float64Array
  sum: number
  count: number
}

/**
 * A latency histogram in LATENCY_BUCKETS, registered in prom-client's registry and written in its
 * text format as prom-client's own Histogram writes it. The caller keeps the series it observes
 * into, so an observation is a bucket search and three additions: prom-client's Histogram
 * validates and hashes the label object on every observation, which cost several microseconds a
 * request under load (BENCHMARKS.md, Performance work).
 */
export class LatencyHistogram {
  readonly type = 'histogram'
  readonly aggregator = 'sum'
  #series: Series[] = []

  constructor(
    registry: Registry,
    readonly name: string,
    readonly help: string,
  ) {
    registry.registerMetric(this as never)
  }

  series(labels: Record<string, string>): Series {
    const series: Series = { labels, counts: new Float64Array(LATENCY_BUCKETS.length), sum: 0, count: 0 }
    this.#series.push(series)
    return series
  }

  observe(series: Series, seconds: number): void {
    let bucket = 0
    while (bucket < LATENCY_BUCKETS.length && seconds > (LATENCY_BUCKETS[bucket] as number)) bucket += 1
    if (bucket < LATENCY_BUCKETS.length) series.counts[bucket] = (series.counts[bucket] as number) + 1
    series.sum += seconds
    series.count += 1
  }

  /** What the registry writes from (prom-client's own shape: the series' labels shared by its samples). */
  getForPromString(): { name: string; help: string; type: string; aggregator: string; values: Sample[] } {
    const values: Sample[] = []
    for (const series of this.#series) {
      if (series.count === 0) continue
      let cumulative = 0
      LATENCY_BUCKETS.forEach((bound, index) => {
        cumulative += series.counts[index] as number
        values.push(sample(`${this.name}_bucket`, { le: bound }, cumulative, series.labels, null))
      })
      values.push(
        sample(`${this.name}_bucket`, { le: '+Inf' }, series.count, series.labels, null),
        sample(`${this.name}_sum`, {}, series.sum, series.labels, undefined),
        sample(`${this.name}_count`, {}, series.count, series.labels, undefined),
      )
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values }
  }

  /** The same, each sample's labels whole (registry.getMetricsAsJSON). */
  get(): { name: string; help: string; type: string; aggregator: string; values: Sample[] } {
    const data = this.getForPromString()
    return {
      ...data,
      values: data.values.map(({ sharedLabels, labels, ...value }) => ({ ...value, labels: { ...labels, ...sharedLabels } }) as Sample),
    }
  }

  reset(): void {
    for (const series of this.#series) {
      series.counts.fill(0)
      series.sum = 0
      series.count = 0
    }
  }
}

/** A sample as prom-client's registry writes it: the series' labels after the sample's own (`le`). */
const sample = (
  metricName: string,
  labels: Record<string, string | number>,
  value: number,
  seriesLabels: Record<string, string>,
  exemplar: null | undefined,
) => ({ labels, sharedLabels: seriesLabels, value, metricName, exemplar }) as Sample

/** A sample as prom-client's metrics hand them to its registry. */
interface Sample {
  labels: Record<string, string | number>
  sharedLabels?: Record<string, string>
  value: number
  metricName: string
  exemplar: null | undefined
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
