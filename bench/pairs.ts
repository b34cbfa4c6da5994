/**
 * What `--compare` and `--stages` share: Plinth servers on fresh PostgreSQL schemas, seeded once
 * through the sandbox API, and one measured run of a scenario turned into the figures the tables
 * print (bench/compare-report.ts). The runs themselves are bench/measure.ts's, so each is measured
 * as the report's rows are: a probe, a warm-up, then the measured window with the server's CPU and
 * its own PostgreSQL backends' read from /proc.
 */
import { randomBytes } from 'node:crypto'
import os from 'node:os'
import type { RunFigures } from './compare-report.js'
import { scenarioContext } from './context.js'
import {
  type FlowScenario,
  log,
  type PreparedFlow,
  type PreparedRequests,
  type RequestScenario,
  type RunningServer,
  type ScenarioContext,
} from './lib.js'
import { measureFlow, measureRequests } from './measure.js'
import type { Serving } from './measure-common.js'
import type { LoadRow } from './rows.js'
import type { PairOptions, Settings } from './settings.js'
import { launchPostgres, type Target } from './targets.js'

/** A Plinth server of a pair run: what loads it, and its seeded data. */
export interface PairServer {
  serving: Serving
  context: ScenarioContext
  /** Another process on the same schema and data, with this environment added, its backends counted apart; stopped by release. */
  replicate(label: string, env: Record<string, string>): Promise<Serving>
  release(): Promise<void>
}

const runTag = randomBytes(3).toString('hex')

/** Settings for measure.ts's runs: the pair options' windows and connections, no waiting for a quiet machine (the load average is printed instead). */
export function runSettings(settings: Settings, options: PairOptions, kind: 'request' | 'a2u'): Settings {
  return {
    ...settings,
    quick: true,
    quietWait: { perMeasurementSeconds: 0, totalSeconds: 0 },
    connections: options.connections,
    warmupSeconds: kind === 'request' ? options.warmupSeconds : options.a2uWarmupSeconds,
    durationSeconds: kind === 'request' ? options.seconds : options.a2uSeconds,
  }
}

/**
 * Starts Plinth (the checkout at `root`) on a fresh schema with this environment added (request
 * log, log level, mode…), and gives it a scenario context: `tokens` users over 2 apps, payments
 * for GET /v2/payments/{id}, one app per A2U worker.
 */
export async function startPairServer(
  databaseUrl: string,
  options: PairOptions,
  spec: { root: string; label: string; env: Record<string, string> },
): Promise<PairServer> {
  const launched = await launchPostgres(databaseUrl, { root: spec.root, name: `plinth ${spec.label}`, env: spec.env })
  const target: Target = { backend: 'postgres', label: spec.label, launch: async () => launched }
  log(`started ${spec.label} at ${launched.server.baseUrl} (pid ${launched.server.pid})`)
  const context = scenarioContext({
    backend: 'postgres',
    baseUrl: launched.server.baseUrl,
    settings: {
      quick: false,
      apps: 2,
      users: options.tokens,
      keysPerApp: 2,
      seedConcurrency: 16,
      flowWorkers: options.workers,
      flowUsersPerWorker: 4,
      data: { paymentsPerUser: 0.5, completedPaymentsPerApp: 4, adsPerUser: 0, seedConcurrency: 16 },
    },
    minUsersPerApp: 0,
    tag: runTag,
    recordSeed: (record) => log(`  ${spec.label}: seeded for ${record.purpose}: ${record.made} in ${record.seconds.toFixed(1)} s`),
  })
  const replicas: RunningServer[] = []
  return {
    serving: { target, servers: [launched.server], profile: undefined, backends: launched.backends },
    context,
    async replicate(label, env) {
      if (launched.variant === undefined) throw new Error(`${spec.label}: cannot start another process on its schema`)
      const { server, backends } = await launched.variant(`plinth ${label}`, env)
      replicas.push(server)
      log(`started ${label} at ${server.baseUrl} (pid ${server.pid}), on the schema of ${spec.label}`)
      return { target: { ...target, label }, servers: [server], profile: undefined, backends }
    },
    async release() {
      await Promise.all(replicas.map((replica) => replica.stop()))
      await launched.release()
    },
  }
}

const loadAverage = () => os.loadavg()[0] ?? 0

/** Figures of a request run: µs of CPU per request. */
function requestFigures(row: LoadRow, load: number, reference: number | undefined): RunFigures {
  const per = (percent: number | undefined) => (percent === undefined || row.throughput <= 0 ? undefined : (percent * 1e4) / row.throughput)
  return {
    throughput: row.throughput,
    reference,
    plinthCpu: per(row.serverCpuPercent),
    postgresCpu: per(row.postgresCpuPercent),
    p99: row.latencyP99,
    errors: row.errors,
    load,
  }
}

/** One measured run of a request scenario (prepared on this server) as table figures. */
export async function measureRequestRun(
  settings: Settings,
  scenario: RequestScenario,
  prepared: PreparedRequests,
  serving: Serving,
  reference: number | undefined,
): Promise<RunFigures> {
  const load = loadAverage()
  return requestFigures(await measureRequests(settings, scenario, prepared, serving), load, reference)
}

/** One measured run of a flow as table figures: ms of CPU per lifecycle. */
export async function measureFlowRun(
  settings: Settings,
  scenario: FlowScenario,
  prepared: PreparedFlow,
  serving: Serving,
  reference: number | undefined,
): Promise<RunFigures> {
  const load = loadAverage()
  const row = await measureFlow(settings, scenario, prepared, serving)
  const per = (percent: number | undefined) => (percent === undefined || row.throughput <= 0 ? undefined : (percent * 10) / row.throughput)
  return {
    throughput: row.throughput,
    reference,
    plinthCpu: per(row.serverCpuPercent),
    postgresCpu: per(row.postgresCpuPercent),
    p99: row.latencyP99,
    errors: row.errors,
    load,
  }
}

/** The load average now, as the tables' header prints it. */
export function loadLine(): string {
  return os
    .loadavg()
    .map((value) => value.toFixed(2))
    .join(' ')
}
