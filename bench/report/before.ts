/**
 * The figures from before the ledger closer (ledgers closed in batches) that its targets are judged
 * against, copied here so that a run never reads them from elsewhere:
 *
 * - BENCHMARKS.md's full run of 2026-11-25 (`npm run bench -- --json`; PostgreSQL, one process, 16
 *   workers): the scaling model's U2A CPU per lifecycle, Plinth 6,554 µs + PostgreSQL 3,688 µs,
 *   taken as 6.6 + 3.7 = 10.3 ms; PGlite's A2U lifecycles/s, 83.8.
 * - /tmp/bench-before.json of 2026-11-27 (`npm run bench -- --only lifecycle --json …`): lifecycle
 *   rows at 16 workers only (A2U on PostgreSQL: submit step mean 44.1 ms), no 1-worker row, so there
 *   is no figure for a lone submit: that target is reported, not judged.
 */
export const BEFORE_LEDGER_BATCHES = {
  u2aPlinthCpuMs: 6.6,
  u2aPostgresCpuMs: 3.7,
  pgliteA2uLifecyclesPerSecond: 83.8,
  /** The submit step's mean of one A2U worker on PostgreSQL; undefined: not measured before. */
  loneSubmitMeanMs: undefined as number | undefined,
} as const
