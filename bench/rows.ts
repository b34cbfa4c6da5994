/**
 * The rows a bench run measures (bench/measure.ts) and the report renders (bench/report/), with
 * the judgements both make of a row: whether it is invalid, and how busy the rest of the machine was.
 */
import type { Backend, BatchWindow, FlowResult, LedgerCheck, LoadResult, SeedRecord } from './lib.js'

/** One measured row: a request scenario (autocannon, req/s or items/s) or a flow scenario (runFlow, lifecycles/s). */
export interface LoadRow {
  scenario: string
  backend: Backend
  backendLabel: string
  /** Plinth processes serving the load (1, or more in the scaling runs). */
  processes: number
  /** 'req/s', 'notifications/s' or 'lifecycles/s'. */
  unit: string
  throughput: number
  /** Per request (request scenarios) or per lifecycle (flows), in ms. */
  latencyP50: number
  latencyP99: number
  latencyMax: number
  /** Request scenarios: measured non-2xx + connection errors + answers that failed their check. Flows: failed lifecycles, warm-up included. */
  errors: number
  detail:
    | { kind: 'request'; load: LoadResult; warmupErrors: number }
    | { kind: 'flow'; flow: FlowResult; workers: number; problems: string[] }
  /** What the run did besides the numbers (the scenario's own summary). */
  summary: string | undefined
  /** Of the server process; with several, the sum of each one's peak. */
  peakRssMb: number | undefined
  /** CPU used by the server process(es) during the measured run, in % of one core. */
  serverCpuPercent: number | undefined
  /** CPU used by this process (autocannon) meanwhile, in % of one core. */
  generatorCpuPercent: number
  /** CPU used by the whole machine meanwhile, in % of one core. */
  machineCpuPercent: number | undefined
  /** CPU used by PostgreSQL meanwhile, in % of one core: the servers' own backends on PostgreSQL (OwnBackendsCpu), else the whole local cluster. */
  postgresCpuPercent: number | undefined
  /** Measured twice because other work disturbed the first run; this is the quieter one. */
  remeasured?: boolean
  /** CPU other processes (not the server, not this one) used over half a second just before the warm-up. */
  backgroundCpuPercent: number | undefined
}

/** One ledger batch run (A2U batches): a count of workers on one Plinth process, and the batches its submits were closed in. */
export interface BatchRow {
  scenario: string
  backendLabel: string
  workers: number
  flow: FlowResult
  /** Failed lifecycles, warm-up included. */
  errors: number
  /** What the server's state showed afterwards (open payments, sequences that drifted). */
  problems: string[]
  /** Batches closed during the measured window; undefined when they could not be read (batchesMissing says why). */
  batches: BatchWindow | undefined
  batchesMissing: string | undefined
  /** In % of one core over the measured window, as on LoadRow. */
  serverCpuPercent: number | undefined
  postgresCpuPercent: number | undefined
  machineCpuPercent: number | undefined
  backgroundCpuPercent: number | undefined
}

export interface StartupRow {
  label: string
  startupMs: number
  /** The readyMs Plinth prints: configuration read to listening, without Node's own start and module loading. */
  serverReadyMs: number | undefined
  rssMb: number | undefined
  /** Which start the warm-start target is judged on. */
  warmPostgres?: boolean
}

export interface SeedRow extends SeedRecord {
  backendLabel: string
}

export interface LedgerRow {
  backendLabel: string
  check: LedgerCheck
}

export function invalid(row: LoadRow): boolean {
  return row.errors > 0 || (row.detail.kind === 'flow' && row.detail.problems.length > 0)
}

export function batchInvalid(row: BatchRow): boolean {
  return row.errors > 0 || row.problems.length > 0
}

export function percent(value: number | undefined): string {
  return value === undefined ? 'n/a' : `${Math.max(0, value).toFixed(0)}%`
}

/** CPU used during the measured run by neither the server(s), the load generator nor (on PostgreSQL rows) PostgreSQL: other work on the machine. */
export function othersDuring(row: LoadRow): number | undefined {
  if (row.machineCpuPercent === undefined || row.serverCpuPercent === undefined) return undefined
  const postgres = row.backend === 'postgres' ? row.postgresCpuPercent : 0
  if (postgres === undefined) return undefined
  return row.machineCpuPercent - row.serverCpuPercent - row.generatorCpuPercent - postgres
}
