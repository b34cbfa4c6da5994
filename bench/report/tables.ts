/** The report's plain tables: one Markdown table (and its caption) per kind of row a run measures. */
import { formatLatency, formatNumber, markdownTable, type PgbenchResult } from '../lib.js'
import { type LedgerRow, type LoadRow, othersDuring, percent, type SeedRow, type StartupRow } from '../rows.js'
import { flagged, postgresCpu, single, whereLabel } from './common.js'

/** Two significant digits, for ratios far below 1 (0.0057). */
function smallRatio(value: number): string {
  return value >= 0.1 ? value.toFixed(2) : value.toPrecision(2)
}

/** The request rate of a row: req/s for request rows (also those that count items), undefined for flows. */
function requestRate(row: LoadRow): number | undefined {
  return row.detail.kind === 'request' ? row.detail.load.requestsPerSecond : undefined
}

function helloBaseline(loads: readonly LoadRow[]): number | undefined {
  return loads.find((row) => row.backend === 'fastify')?.throughput
}

export function loadTable(loads: LoadRow[], pgbenchTps: number | undefined): string {
  const baseline = helloBaseline(loads)
  const rows = single(loads).map((row) => {
    const flow = row.detail.kind === 'flow'
    const rate = requestRate(row)
    const toHello =
      baseline === undefined || baseline === 0
        ? 'n/a'
        : flow
          ? `${smallRatio(row.throughput / baseline)}× (lifecycles/s ÷ req/s)`
          : row.unit !== 'req/s' && rate !== undefined
            ? `${smallRatio(rate / baseline)}× (${formatNumber(rate)} req/s ÷ req/s)`
            : `${(row.throughput / baseline).toFixed(2)}×`
    const toPgbench = !row.scenario.startsWith('A2U')
      ? ''
      : pgbenchTps === undefined || pgbenchTps === 0
        ? 'n/a'
        : `${smallRatio(row.throughput / pgbenchTps)}× (lifecycles/s ÷ TPS)`
    return [
      row.scenario,
      row.backendLabel,
      formatNumber(row.throughput, flow ? 1 : 0),
      row.unit,
      toHello,
      toPgbench,
      formatLatency(row.latencyP50),
      formatLatency(row.latencyP99),
      formatLatency(row.latencyMax),
      row.errors === 0 ? '0' : `**${row.errors}** ⚠`,
      row.peakRssMb === undefined ? 'n/a' : row.peakRssMb.toFixed(0),
    ]
  })
  const summaries = single(loads)
    .filter((row) => row.summary !== undefined)
    .map((row) => `- ${row.scenario}, ${row.backendLabel}: ${row.summary ?? ''}.`)
  return markdownTable(
    [
      'scenario',
      'backend',
      'throughput',
      'unit',
      'ratio to hello-world req/s',
      'ratio to pgbench TPS',
      'p50 (ms)',
      'p99 (ms)',
      'max (ms)',
      'errors',
      'peak RSS MB',
    ],
    rows,
    ['left', 'left', 'right', 'left', 'right', 'right', 'right', 'right', 'right', 'right', 'right'],
  ).concat(
    '\n\nOne Plinth process. Throughput is in the row’s unit. For the request rows (req/s), the ratio is req/s ÷ the hello-world req/s and latencies are per request. ' +
      'For notify, the throughput is the notifications delivered per second (every request carries 256, and every answer must be a 201 delivering all 256), ' +
      'the ratio compares its requests per second with hello-world’s and the latencies are per request of 256. ' +
      'For the lifecycle rows (lifecycles/s), the ratio to hello-world is **lifecycles/s ÷ hello-world req/s** (a lifecycle is 3 HTTP requests ' +
      'for A2U plus a transaction signed by the load generator, 4 for U2A), latencies are per whole lifecycle. Errors include the warm-up’s: failed lifecycles, ' +
      'non-2xx answers, connection errors and answers that failed their check. ' +
      'The A2U rows also show **lifecycles/s ÷ `pgbench -b tpcb-like` TPS** of the PostgreSQL server Plinth used (see pgbench below; ' +
      'on the PGlite row it compares with that same PostgreSQL figure, as PGlite has no pgbench).',
    summaries.length === 0 ? '' : `\n\n${summaries.join('\n')}`,
  )
}

export function cpuTable(loads: LoadRow[], cores: number): string {
  return markdownTable(
    [
      'scenario',
      'backend',
      'server process',
      'load generator',
      'PostgreSQL',
      'others, during the run',
      'whole machine',
      'others, before the run',
    ],
    single(loads).map((row) => [
      row.scenario,
      row.backendLabel,
      percent(row.serverCpuPercent),
      percent(row.generatorCpuPercent),
      row.backend === 'postgres' ? percent(postgresCpu(row)) : '–',
      `${flagged(othersDuring(row))}${row.remeasured === true ? ' (run twice)' : ''}`,
      percent(row.machineCpuPercent),
      flagged(row.backgroundCpuPercent),
    ]),
    ['left', 'left', 'right', 'right', 'right', 'right', 'right', 'right'],
  ).concat(
    `\n\nIn % of one core, over the measured run; the machine has ${cores} cores, so ${cores * 100}% is all of it. ` +
      'The load generator of the lifecycle rows includes building and signing the A2U transactions (@stellar/stellar-base, node:crypto ed25519); ' +
      'the notify row’s includes building the 256-notification bodies and reading every answer.',
  )
}

export function flowTable(loads: LoadRow[]): string {
  const rows: string[][] = []
  for (const row of loads) {
    if (row.detail.kind !== 'flow') continue
    const { flow, workers, problems } = row.detail
    rows.push([
      row.scenario,
      whereLabel(row),
      String(workers),
      `${formatNumber(flow.lifecycles)} in ${flow.measuredSeconds.toFixed(1)} s`,
      flow.requestsPerLifecycle.toFixed(1),
      flow.steps.map((step) => `${step.name} ${step.meanMs.toFixed(1)}`).join(' · '),
      `${formatNumber(flow.warmupLifecycles)}, ${flow.warmupErrors} errors`,
      problems.length === 0 ? 'none' : `**${problems.length}** ⚠`,
    ])
  }
  return markdownTable(
    [
      'scenario',
      'backend',
      'workers',
      'lifecycles counted',
      'HTTP requests per lifecycle',
      'mean ms per step (client side)',
      'warm-up (not counted)',
      'left open afterwards',
    ],
    rows,
    ['left', 'left', 'right', 'right', 'right', 'left', 'right', 'right'],
  )
}

export function ledgerTable(checks: LedgerRow[]): string {
  return markdownTable(
    ['backend', 'ok', 'total balances', 'total funded', 'fees burned', 'negative balances', 'mismatched accounts'],
    checks.map(({ backendLabel, check }) => [
      backendLabel,
      check.ok ? 'yes' : '**NO** ⚠',
      check.totalBalances,
      check.totalFunded,
      check.totalFees,
      String(check.negativeBalances),
      String(check.mismatchedAccounts),
    ]),
    ['left', 'left', 'right', 'right', 'right', 'right', 'right'],
  )
}

export function pgbenchTable(result: PgbenchResult, postgres: string | undefined): string {
  const server = postgres === undefined ? 'PostgreSQL' : (/^PostgreSQL [\d.]+/.exec(postgres)?.[0] ?? 'PostgreSQL')
  return markdownTable(
    ['server', 'scale', 'clients', 'threads', 'duration (s)', 'TPS', 'latency average (ms)', 'transactions', 'failed', 'whole machine CPU'],
    [
      [
        server,
        String(result.scale),
        String(result.clients),
        String(result.threads),
        String(result.seconds),
        formatNumber(result.tps),
        result.latencyAverageMs === undefined ? 'n/a' : result.latencyAverageMs.toFixed(1),
        result.transactions === undefined ? 'n/a' : formatNumber(result.transactions),
        result.failedTransactions === undefined ? 'n/a' : String(result.failedTransactions),
        result.machineCpuPercent === undefined ? 'n/a' : `${result.machineCpuPercent.toFixed(0)}%`,
      ],
    ],
    ['left', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right'],
  )
}

export function startupTable(startups: StartupRow[]): string {
  return markdownTable(
    ['server', 'spawn → /readyz 200 (ms)', 'reported by Plinth (ms)', 'RSS when ready MB'],
    startups.map((row) => [
      row.label,
      formatNumber(row.startupMs),
      row.serverReadyMs === undefined ? 'n/a' : formatNumber(row.serverReadyMs),
      row.rssMb === undefined ? 'n/a' : row.rssMb.toFixed(0),
    ]),
    ['left', 'right', 'right', 'right'],
  )
}

export function seedTable(seeds: SeedRow[], concurrency: number): string {
  return markdownTable(
    ['backend', 'for', 'made', 'seconds', `made per second (${concurrency} requests in flight)`],
    seeds.map((row) => [row.backendLabel, row.purpose, row.made, row.seconds.toFixed(1), formatNumber(row.items / row.seconds)]),
    ['left', 'left', 'left', 'right', 'right'],
  )
}
