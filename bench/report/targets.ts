/** The performance targets, judged on a run: in the report's first section and in the JSON results. */
import { formatNumber, markdownTable } from '../lib.js'
import { invalid, type LoadRow } from '../rows.js'
import { type Report, single } from './common.js'

type Verdict = 'met' | 'missed' | 'not measured' | 'invalid'

interface TargetRow {
  target: string
  goal: string
  measured: string
  verdict: Verdict
}

/** The performance targets, judged on this run's one-process PostgreSQL rows. */
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
    const text = show(found, row)
    if (invalid(row) || (hello !== undefined && invalid(hello)))
      return { measured: `${text} (the run had errors)`, verdict: 'invalid' as const }
    return { measured: text, verdict: ok(found) ? ('met' as const) : ('missed' as const) }
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
      goal: '≥ 25%',
      ...judge(
        a2u,
        (row) => (pgbench === undefined || pgbench === 0 ? undefined : row.throughput / pgbench),
        (ratio) => ratio >= 0.25,
        (ratio, row) => `${(ratio * 100).toFixed(1)}% (${formatNumber(row.throughput, 1)} ÷ ${formatNumber(pgbench ?? 0)})`,
      ),
    },
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

export function targetsSection(report: Report): string {
  const rows = targetRows(report)
  const mark = (verdict: Verdict) => (verdict === 'met' ? 'met ✓' : verdict === 'missed' ? '**missed** ✗' : verdict)
  const counted = (verdict: Verdict) => rows.filter((row) => row.verdict === verdict).length
  return [
    'The targets for a 2-core machine, judged on this run: PostgreSQL, one Plinth process, hello-world and pgbench measured minutes apart on the same machine.',
    '',
    markdownTable(
      ['target', 'goal', 'this run', 'verdict'],
      rows.map((row) => [row.target, row.goal, row.measured, mark(row.verdict)]),
      ['left', 'left', 'right', 'left'],
    ),
    '',
    `${counted('met')} met, ${counted('missed')} missed${counted('invalid') > 0 ? `, ${counted('invalid')} invalid (errors)` : ''}` +
      `${counted('not measured') > 0 ? `, ${counted('not measured')} not measured in this run` : ''}. ` +
      'The targets also ask that revocation and consent withdrawal take effect on every process within a second while `GET /v2/me` is fast; ' +
      'that is a correctness property the tests check, not something this benchmark measures.' +
      (report.settings.quick ? ' This was a `--quick` run: short runs on less data, a smoke test rather than a verdict.' : ''),
  ].join('\n')
}
