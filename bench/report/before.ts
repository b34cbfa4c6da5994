/**
 * The figures from before the ledger closer (ledgers closed in batches) that its targets are judged
 * against, copied here so that a run never reads them from elsewhere:
 *
 * - BENCHMARKS.md's full run of 2026-11-25 (`npm run bench -- --json`; PostgreSQL, one process, 16
 *   workers): the scaling model's U2A CPU per lifecycle, Plinth 6,554 µs + PostgreSQL 3,688 µs,
 *   taken as 6.6 + 3.7 = 10.3 ms; PGlite's A2U lifecycles/s, 83.8.
 * - The code before the closer (commit 31b2cc6) measured with this benchmark on 2026-11-27
 *   (`npm run bench -- --only "A2U batches" --no-pglite`, BENCHMARKS.md, "The ledger closer"): one
 *   A2U worker on PostgreSQL, the submit step's mean 8.1 ms (p99 16.7 ms).
 */
export const BEFORE_LEDGER_BATCHES = {
  u2aPlinthCpuMs: 6.6,
  u2aPostgresCpuMs: 3.7,
  pgliteA2uLifecyclesPerSecond: 83.8,
  /** The submit step's mean of one A2U worker on PostgreSQL. */
  loneSubmitMeanMs: 8.1 as number | undefined,
} as const
