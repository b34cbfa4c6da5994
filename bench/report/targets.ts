/** The performance targets, judged on a run: in the report's first section and in the JSON results. */
import { formatLatency, formatNumber, markdownTable } from '../lib.js'
import { batchInvalid, invalid, type LoadRow } from '../rows.js'
import { loneSubmitRow, submitStep } from './batches.js'
import { BEFORE_LEDGER_BATCHES as BEFORE } from './before.js'
import { cpuMsPer, type Report, single } from './common.js'

/** `reported`: measured, but there is nothing to judge it against (no figure from before). */
type Verdict = 'met' | 'missed' | 'not measured' | 'invalid' | 'reported'

interface TargetRow {
  target: string
  goal: string
  measured: string
  verdict: Verdict
}

/** The ledger closer's targets at 16 workers: the A2U lifecycle's p99. */
const P99_WORKERS = 16

/** The performance targets, judged on this run's one-process PostgreSQL rows (and PGlite's A2U row). */
export function targetRows(report: Report): TargetRow[] {
  const postgres = single(report.loads).filter((row) => row.backend === 'postgres')
  const hello = report.loads.find((row) => row.backend === 'fastify')
  const find = (scenario: string) => postgres.find((row) => row.scenario === scenario)
  const judge = (
    row: LoadRow | undefined,
    value: (row: LoadRow) => number | undefined,
    ok: (value: number) => boolean,
    show: (value: number, row: LoadRow) => string,
  ) => {
    if (row === undefined) return { measured: 'not in this run', verdict: 'not measured' as const }
    const found = value(row)
    if (found === undefined) return { measured: 'n/a', verdict: 'not measured' as const }
    return verdictOf(show(found, row), invalid(row) || (hello !== undefined && invalid(hello)), ok(found))
  }
  const toHello = (scenario: string, share: number): TargetRow => ({
    target: `\`${scenario}\` req/s vs hello-world`,
    goal: `≥ ${(share * 100).toFixed(0)}%`,
    ...judge(
      find(scenario),
      (row) => (hello === undefined || hello.throughput === 0 ? undefined : row.throughput / hello.throughput),
      (ratio) => ratio >= share,
      (ratio, row) => `${(ratio * 100).toFixed(1)}% (${formatNumber(row.throughput)} ÷ ${formatNumber(hello?.throughput ?? 0)})`,
    ),
  })
  const a2u = find('A2U lifecycle')
  const u2a = find('U2A lifecycle')
  const pgliteA2u = single(report.loads).find((row) => row.backend === 'pglite' && row.scenario === 'A2U lifecycle')
  const plinthMs = (row: LoadRow) => cpuMsPer(row.serverCpuPercent, row.throughput)
  const postgresMs = (row: LoadRow) => cpuMsPer(row.postgresCpuPercent, row.throughput)
  const showCpu = (ms: number, row: LoadRow) => `${ms.toFixed(2)} ms (${formatNumber(row.throughput, 1)} lifecycles/s)`
  const pgbench = report.pgbench?.tps
  const notify = postgres.find((row) => row.unit === 'notifications/s')
  const rssRows = postgres.filter((row) => row.peakRssMb !== undefined)
  const heaviest = [...rssRows].sort((a, b) => (b.peakRssMb ?? 0) - (a.peakRssMb ?? 0))[0]
  const warm = report.startups.find((row) => row.warmPostgres === true)
  return [
    toHello('GET /v2/me', 0.5),
    toHello('GET /v2/payments/{id}', 0.3),
    toHello('GET /v2/ads_network/status/{adId}', 0.3),
    {
      target: 'A2U lifecycles/s',
      goal: '≥ 1,000',
      ...judge(
        a2u,
        (row) => row.throughput,
        (value) => value >= 1000,
        (value) => formatNumber(value, 1),
      ),
    },
    {
      target: 'A2U lifecycles/s vs `pgbench -b tpcb-like` TPS',
      goal: '≥ 30%',
      ...judge(
        a2u,
        (row) => (pgbench === undefined || pgbench === 0 ? undefined : row.throughput / pgbench),
        (ratio) => ratio >= 0.3,
        (ratio, row) => `${(ratio * 100).toFixed(1)}% (${formatNumber(row.throughput, 1)} ÷ ${formatNumber(pgbench ?? 0)})`,
      ),
    },
    {
      target: 'Plinth CPU per A2U lifecycle',
      goal: '≤ 0.8 ms',
      ...judge(a2u, plinthMs, (ms) => ms <= 0.8, showCpu),
    },
    {
      target: 'PostgreSQL CPU per A2U lifecycle',
      goal: '≤ 0.8 ms',
      ...judge(a2u, postgresMs, (ms) => ms <= 0.8, showCpu),
    },
    a2uP99(report, a2u),
    {
      target: 'U2A CPU per lifecycle, Plinth + PostgreSQL',
      goal: `≤ ${halfOfU2aBefore.toFixed(2)} ms (half of ${BEFORE.u2aPlinthCpuMs} + ${BEFORE.u2aPostgresCpuMs} ms before)`,
      ...judge(
        u2a,
        (row) => {
          const [plinth, database] = [plinthMs(row), postgresMs(row)]
          return plinth === undefined || database === undefined ? undefined : plinth + database
        },
        (ms) => ms <= halfOfU2aBefore,
        (ms, row) => `${ms.toFixed(2)} ms (${(plinthMs(row) ?? 0).toFixed(2)} + ${(postgresMs(row) ?? 0).toFixed(2)} ms)`,
      ),
    },
    {
      target: 'A2U lifecycles/s on PGlite (memory)',
      goal: `≥ ${formatNumber(2 * BEFORE.pgliteA2uLifecyclesPerSecond, 1)} (2 × ${BEFORE.pgliteA2uLifecyclesPerSecond} before)`,
      ...judge(
        pgliteA2u,
        (row) => row.throughput,
        (value) => value >= 2 * BEFORE.pgliteA2uLifecyclesPerSecond,
        (value) => formatNumber(value, 1),
      ),
    },
    loneSubmit(report),
    {
      target: 'notify, delivered notifications/s in 256-batches (quota enforced)',
      goal: '≥ 50,000',
      ...judge(
        notify,
        (row) => row.throughput,
        (value) => value >= 50_000,
        (value) => formatNumber(value),
      ),
    },
    {
      target: 'peak RSS under load (the highest of the scenarios)',
      goal: '< 250 MB',
      ...(heaviest === undefined
        ? { measured: 'not in this run', verdict: 'not measured' as const }
        : {
            measured: `${(heaviest.peakRssMb ?? 0).toFixed(0)} MB (${heaviest.scenario}; lowest ${Math.min(...rssRows.map((row) => row.peakRssMb ?? 0)).toFixed(0)} MB)`,
            verdict: (heaviest.peakRssMb ?? 0) < 250 ? ('met' as const) : ('missed' as const),
          }),
    },
    {
      target: 'warm start, spawn → `/readyz` 200 (migrated schema)',
      goal: '< 1.5 s',
      ...(warm === undefined
        ? { measured: 'not in this run', verdict: 'not measured' as const }
        : {
            measured: `${formatNumber(warm.startupMs)} ms (Plinth’s own ready: ${warm.serverReadyMs === undefined ? 'n/a' : `${formatNumber(warm.serverReadyMs)} ms`})`,
            verdict: warm.startupMs < 1500 ? ('met' as const) : ('missed' as const),
          }),
    },
  ]
}

const halfOfU2aBefore = (BEFORE.u2aPlinthCpuMs + BEFORE.u2aPostgresCpuMs) / 2

function verdictOf(text: string, broken: boolean, ok: boolean): Pick<TargetRow, 'measured' | 'verdict'> {
  if (broken) return { measured: `${text} (the run had errors)`, verdict: 'invalid' }
  return { measured: text, verdict: ok ? 'met' : 'missed' }
}

/**
 * The A2U p99 at 16 workers: the lifecycle row's when it ran 16 workers (a full run), else the
 * ledger batch run's at 16 (a --quick run's lifecycle row has 8).
 */
function a2uP99(report: Report, a2u: LoadRow | undefined): TargetRow {
  const target = `A2U p99 latency at ${P99_WORKERS} workers`
  const goal = '≤ 40 ms'
  if (a2u?.detail.kind === 'flow' && a2u.detail.workers === P99_WORKERS) {
    return { target, goal, ...verdictOf(`${formatLatency(a2u.latencyP99)} ms`, invalid(a2u), a2u.latencyP99 <= 40) }
  }
  const batch = report.ledgerBatches.find((row) => row.workers === P99_WORKERS)
  if (batch === undefined) return { target, goal, measured: 'not in this run', verdict: 'not measured' }
  const p99 = batch.flow.latencyP99
  return { target, goal, ...verdictOf(`${formatLatency(p99)} ms (ledger batch run)`, batchInvalid(batch), p99 <= 40) }
}

/** A lone submit (the 1-worker batch run) no slower than before the ledger closer; reported only while there is no figure from before. */
function loneSubmit(report: Report): TargetRow {
  const target = 'a lone submit (1 worker): submit step mean'
  const before = BEFORE.loneSubmitMeanMs
  const goal = before === undefined ? 'no slower than before (not measured before)' : `≤ ${before.toFixed(1)} ms (before)`
  const row = loneSubmitRow(report.ledgerBatches)
  const submit = row === undefined ? undefined : submitStep(row)
  if (row === undefined || submit === undefined) return { target, goal, measured: 'not in this run', verdict: 'not measured' }
  const text = `${submit.meanMs.toFixed(1)} ms (p99 ${submit.p99Ms.toFixed(1)} ms)`
  if (before === undefined) return { target, goal, measured: text, verdict: batchInvalid(row) ? 'invalid' : 'reported' }
  return { target, goal, ...verdictOf(text, batchInvalid(row), submit.meanMs <= before) }
}

export function targetsSection(report: Report): string {
  const rows = targetRows(report)
  const mark = (verdict: Verdict) =>
    verdict === 'met' ? 'met ✓' : verdict === 'missed' ? '**missed** ✗' : verdict === 'reported' ? 'reported, not judged' : verdict
  const counted = (verdict: Verdict) => rows.filter((row) => row.verdict === verdict).length
  return [
    'The targets for a 2-core machine, judged on this run: PostgreSQL, one Plinth process (but the PGlite row’s target), hello-world and pgbench ' +
      'measured minutes apart on the same machine. The figures from before the ledger closer are in `bench/report/before.ts`.',
    '',
    markdownTable(
      ['target', 'goal', 'this run', 'verdict'],
      rows.map((row) => [row.target, row.goal, row.measured, mark(row.verdict)]),
      ['left', 'left', 'right', 'left'],
    ),
    '',
    `${counted('met')} met, ${counted('missed')} missed${counted('invalid') > 0 ? `, ${counted('invalid')} invalid (errors)` : ''}` +
      `${counted('reported') > 0 ? `, ${counted('reported')} reported, not judged` : ''}` +
      `${counted('not measured') > 0 ? `, ${counted('not measured')} not measured in this run` : ''}. ` +
      'The targets also ask that revocation and consent withdrawal take effect on every process within a second while `GET /v2/me` is fast; ' +
      'that is a correctness property the tests check, not something this benchmark measures.' +
      (report.settings.quick ? ' This was a `--quick` run: short runs on less data, a smoke test rather than a verdict.' : ''),
  ].join('\n')
}
