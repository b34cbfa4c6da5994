/**
 * What every section of the benchmark report reads: the run's results and the few judgements of a
 * row that more than one section makes (where it ran, whether it is one process, how busy the rest
 * of the machine was).
 */
import type { MachineInfo, PgbenchResult } from '../lib.js'
import { type BatchRow, type LedgerRow, type LoadRow, percent, type SeedRow, type StartupRow } from '../rows.js'
import { BUSY_MACHINE_PERCENT, type Settings } from '../settings.js'

export interface Report {
  settings: Settings
  machine: MachineInfo
  postgres: string | undefined
  date: string
  loads: LoadRow[]
  /** The ledger batch runs (A2U batches), one per count of workers. */
  ledgerBatches: BatchRow[]
  startups: StartupRow[]
  seeds: SeedRow[]
  ledgerChecks: LedgerRow[]
  pgbench: PgbenchResult | undefined
  /** Why there is no pgbench row, when there is none. */
  pgbenchMissing: string | undefined
}

export function whereLabel(row: LoadRow): string {
  return row.processes === 1 ? row.backendLabel : `${row.backendLabel}, ${row.processes} processes`
}

export function single(loads: readonly LoadRow[]): LoadRow[] {
  return loads.filter((row) => row.processes === 1)
}

/** The PostgreSQL server's share, on the rows that use it. */
export function postgresCpu(row: LoadRow): number | undefined {
  return row.backend === 'postgres' ? row.postgresCpuPercent : undefined
}

export function flagged(value: number | undefined): string {
  return `${percent(value)}${(value ?? 0) > BUSY_MACHINE_PERCENT ? ' ⚠' : ''}`
}

/** CPU milliseconds per unit of work, from a % of one core over a run at `throughput` units/s. */
export function cpuMsPer(cpuPercent: number | undefined, throughput: number): number | undefined {
  return cpuPercent === undefined || throughput <= 0 ? undefined : (cpuPercent / 100) * (1000 / throughput)
}
