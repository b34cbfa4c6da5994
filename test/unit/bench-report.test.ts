import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  BATCH_METRIC,
  type BatchWindow,
  batchesBetween,
  type FlowResult,
  type LoadResult,
  NO_BATCH_METRIC,
  parseBatchHistogram,
} from '../../bench/lib.js'
import type { Report } from '../../bench/report/common.js'
import { renderReport, resultsJson } from '../../bench/report/document.js'
import { scalingModel } from '../../bench/report/scaling.js'
import { targetRows } from '../../bench/report/targets.js'
import type { BatchRow, LoadRow } from '../../bench/rows.js'
import { readSettings } from '../../bench/settings.js'

function load(requestsPerSecond: number): LoadResult {
  return {
    requestsPerSecond,
    totalRequests: requestsPerSecond * 10,
    durationSeconds: 10,
    latencyP50: 1,
    latencyP99: 4,
    latencyMax: 20,
    errors: 0,
    non2xx: 0,
    connectionErrors: 0,
    timeouts: 0,
    statusCodes: { '200': requestsPerSecond * 10 },
    items: 0,
    problems: 0,
    problemKinds: [],
  }
}

function row(scenario: string, backend: LoadRow['backend'], throughput: number, cpu: { server: number; postgres?: number }): LoadRow {
  return {
    scenario,
    backend,
    backendLabel: backend === 'fastify' ? 'Fastify only' : backend === 'postgres' ? 'PostgreSQL' : 'PGlite (memory)',
    processes: 1,
    unit: 'req/s',
    throughput,
    latencyP50: 1,
    latencyP99: 4,
    latencyMax: 20,
    errors: 0,
    detail: { kind: 'request', load: load(throughput), warmupErrors: 0 },
    summary: undefined,
    peakRssMb: 150,
    serverCpuPercent: cpu.server,
    generatorCpuPercent: 80,
    machineCpuPercent: 180,
    postgresCpuPercent: cpu.postgres,
    backgroundCpuPercent: 1,
  }
}

/** A small run: the baseline and one Plinth scenario on PostgreSQL, with figures easy to check by hand. */
function fakeReport(): Report {
  const argv = process.argv
  process.argv = [argv[0] ?? 'node', 'run.ts', '--quick', '--only', 'GET /v2/me']
  try {
    return {
      settings: readSettings(),
      machine: { cpu: 'Test CPU', cores: 2, memoryGiB: 8, node: 'v20.0.0', os: 'Linux test' },
      postgres: 'PostgreSQL 15.0',
      date: '2026-11-24T00:00:00.000Z',
      loads: [
        row('hello-world GET /', 'fastify', 32_000, { server: 80 }),
        // 20,000 req/s at 100% of a core: 50 µs each in Plinth; 10% in PostgreSQL: 5 µs each.
        row('GET /v2/me', 'postgres', 20_000, { server: 100, postgres: 10 }),
      ],
      ledgerBatches: [],
      startups: [],
      seeds: [],
      ledgerChecks: [],
      pgbench: undefined,
      pgbenchMissing: 'not measured in this test',
    }
  } finally {
    process.argv = argv
  }
}

function flow(lifecyclesPerSecond: number, p99: number, submit: { meanMs: number; p99Ms: number }): FlowResult {
  return {
    lifecyclesPerSecond,
    lifecycles: lifecyclesPerSecond * 5,
    measuredSeconds: 5,
    latencyP50: p99 / 2,
    latencyP99: p99,
    latencyMax: p99 * 1.5,
    errors: 0,
    warmupLifecycles: 10,
    warmupErrors: 0,
    failures: [],
    steps: [
      { name: 'create', meanMs: 2, p99Ms: 4 },
      { name: 'submit', ...submit },
      { name: 'complete', meanMs: 2, p99Ms: 4 },
    ],
    requestsPerLifecycle: 3,
  }
}

function flowRow(
  scenario: string,
  backend: LoadRow['backend'],
  throughput: number,
  workers: number,
  cpu: { server: number; postgres?: number },
) {
  const base = row(scenario, backend, throughput, cpu)
  return {
    ...base,
    unit: 'lifecycles/s',
    detail: { kind: 'flow' as const, flow: flow(throughput, 30, { meanMs: 10, p99Ms: 20 }), workers, problems: [] },
  }
}

function batchRow(
  workers: number,
  figures: { p99: number; submit: { meanMs: number; p99Ms: number } },
  batches: BatchWindow | undefined,
): BatchRow {
  return {
    scenario: 'A2U batches',
    backendLabel: 'PostgreSQL',
    workers,
    flow: flow(100 * workers, figures.p99, figures.submit),
    errors: 0,
    problems: [],
    batches,
    batchesMissing: batches === undefined ? NO_BATCH_METRIC : undefined,
    serverCpuPercent: 50,
    postgresCpuPercent: 40,
    machineCpuPercent: 150,
    backgroundCpuPercent: 1,
  }
}

/** The histogram as prom-client writes it, from the counts of batches of each size. */
function histogramText(bySize: Record<number, number>): string {
  const bounds = [1, 2, 4, 8, 16, 32, 64, 128, 256]
  const sizes = Object.entries(bySize).map(([size, count]) => ({ size: Number(size), count }))
  const upTo = (bound: number) => sizes.filter((entry) => entry.size <= bound).reduce((sum, entry) => sum + entry.count, 0)
  const total = sizes.reduce((sum, entry) => sum + entry.count, 0)
  return [
    `# HELP ${BATCH_METRIC} Transactions applied per closed ledger`,
    `# TYPE ${BATCH_METRIC} histogram`,
    ...bounds.map((bound) => `${BATCH_METRIC}_bucket{le="${bound}"} ${upTo(bound)}`),
    `${BATCH_METRIC}_bucket{le="+Inf"} ${total}`,
    `${BATCH_METRIC}_sum ${sizes.reduce((sum, entry) => sum + entry.size * entry.count, 0)}`,
    `${BATCH_METRIC}_count ${total}`,
    '# TYPE plinth_process_cpu_seconds_total counter',
    'plinth_process_cpu_seconds_total 12.5',
  ].join('\n')
}

describe('the ledger batch figures', () => {
  it('are the batches closed between two scrapes of the histogram, by size', () => {
    const before = parseBatchHistogram(histogramText({ 1: 10, 2: 5, 3: 3 }))
    const after = parseBatchHistogram(histogramText({ 1: 12, 2: 15, 3: 3, 4: 20, 6: 2, 300: 1 }))
    assert.ok(before !== undefined && after !== undefined)
    const window = batchesBetween(before, after)
    assert.equal(window.batches, 35)
    // 2 × 1 + 10 × 2 + 20 × 4 + 2 × 6 + 300
    assert.equal(window.transactions, 414)
    assert.equal(window.meanPerBatch, 414 / 35)
    assert.deepEqual(window.sizes, [
      { sizes: '1', batches: 2 },
      { sizes: '2', batches: 10 },
      { sizes: '3–4', batches: 20 },
      { sizes: '5–8', batches: 2 },
      { sizes: '>256', batches: 1 },
    ])
  })

  it('are absent, not zero, when the server has no histogram', () => {
    assert.equal(parseBatchHistogram('# TYPE plinth_process_cpu_seconds_total counter\nplinth_process_cpu_seconds_total 12.5\n'), undefined)
  })
})

/** A run with the lifecycles, the ledger batch runs and pgbench: every ledger target has a row to judge. */
function ledgerReport(batches: BatchWindow | undefined): Report {
  const report = fakeReport()
  report.loads.push(
    // 1,000/s at 70% of a core: 0.7 ms each in Plinth; 90% in PostgreSQL: 0.9 ms.
    flowRow('A2U lifecycle', 'postgres', 1000, 8, { server: 70, postgres: 90 }),
    // 200/s: 3 ms in Plinth + 2.5 ms in PostgreSQL = 5.5 ms.
    flowRow('U2A lifecycle', 'postgres', 200, 8, { server: 60, postgres: 50 }),
    flowRow('A2U lifecycle', 'pglite', 170, 8, { server: 100 }),
  )
  report.ledgerBatches = [
    batchRow(1, { p99: 12, submit: { meanMs: 3.2, p99Ms: 6.4 } }, batches),
    batchRow(16, { p99: 35, submit: { meanMs: 9, p99Ms: 18 } }, batches),
    batchRow(64, { p99: 90, submit: { meanMs: 30, p99Ms: 60 } }, batches),
  ]
  report.pgbench = {
    scale: 10,
    clients: 16,
    threads: 2,
    seconds: 10,
    tps: 3000,
    latencyAverageMs: 5,
    transactions: 30_000,
    failedTransactions: 0,
    initSeconds: 1,
    machineCpuPercent: 190,
  }
  return report
}

describe('the benchmark report writer', () => {
  it('writes JSON that reads back to the same figures, with a version and the targets judged', () => {
    const report = fakeReport()
    const parsed = JSON.parse(resultsJson(report)) as Record<string, unknown> & { loads: LoadRow[]; targets: Array<{ target: string }> }
    assert.equal(parsed.version, 1)
    assert.equal(parsed.date, report.date)
    // undefined figures (no PostgreSQL CPU for the baseline) are left out, as JSON has no undefined.
    assert.deepEqual(parsed.loads, JSON.parse(JSON.stringify(report.loads)))
    assert.equal(parsed.loads[1]?.throughput, 20_000)
    assert.deepEqual(parsed.machine, report.machine)
    assert.ok(parsed.targets.some((target) => target.target.includes('GET /v2/me')))
  })

  it('renders the load table and the scaling model from the rows', () => {
    const report = fakeReport()
    const markdown = renderReport(report, '## Optimisations\n\nkept as written')
    const line = markdown.split('\n').find((l) => l.startsWith('| GET /v2/me') && l.includes('req/s'))
    assert.ok(line, 'a load row for GET /v2/me')
    assert.match(line, /20,000/)
    assert.match(line, /0\.63×/, 'the ratio to the hello-world baseline, 20,000 ÷ 32,000')
    const model = scalingModel(report)
    assert.ok(model !== undefined)
    const modelRow = model.split('\n').find((l) => l.startsWith('| GET /v2/me'))
    assert.ok(modelRow)
    // 50 µs in Plinth, 5 µs in PostgreSQL; a core of each serves 20,000 and 200,000; 4 + 4 cores: 80,000.
    assert.deepEqual(
      modelRow
        .split('|')
        .map((cell) => cell.trim())
        .slice(3, 8),
      ['50 µs', '5 µs', '20,000', '200,000', '80,000'],
    )
    assert.ok(markdown.includes('## Scaling model'))
    assert.ok(markdown.trimEnd().endsWith('kept as written'), 'hand-written sections come last, as written')
  })

  it('judges the ledger targets on the run', () => {
    const verdicts = new Map(targetRows(ledgerReport(undefined)).map((target) => [target.target, target]))
    const verdict = (name: string) => {
      const found = verdicts.get(name)
      assert.ok(found, `a target row "${name}"`)
      return found
    }
    assert.equal(verdict('A2U lifecycles/s vs `pgbench -b tpcb-like` TPS').goal, '≥ 30%')
    assert.equal(verdict('A2U lifecycles/s vs `pgbench -b tpcb-like` TPS').verdict, 'met', '1,000 ÷ 3,000 = 33%')
    assert.ok(![...verdicts.values()].some((target) => target.goal === '≥ 25%'), 'the 25% target is replaced')
    assert.deepEqual(
      [verdict('Plinth CPU per A2U lifecycle').verdict, verdict('Plinth CPU per A2U lifecycle').measured],
      ['met', '0.70 ms (1,000.0 lifecycles/s)'],
    )
    assert.equal(verdict('PostgreSQL CPU per A2U lifecycle').verdict, 'missed', '0.9 ms > 0.8 ms')
    assert.deepEqual(
      [verdict('U2A CPU per lifecycle, Plinth + PostgreSQL').verdict, verdict('U2A CPU per lifecycle, Plinth + PostgreSQL').goal],
      ['missed', '≤ 5.15 ms (half of 6.6 + 3.7 ms before)'],
    )
    assert.equal(verdict('A2U lifecycles/s on PGlite (memory)').verdict, 'met', '170 ≥ 2 × 83.8')
    // The lifecycle row ran 8 workers (a quick run): the 16-worker batch run's p99 is judged.
    assert.deepEqual(
      [verdict('A2U p99 latency at 16 workers').verdict, verdict('A2U p99 latency at 16 workers').measured],
      ['met', '35 ms (ledger batch run)'],
    )
    assert.deepEqual(
      [verdict('a lone submit (1 worker): submit step mean').verdict, verdict('a lone submit (1 worker): submit step mean').measured],
      ['met', '3.2 ms (p99 6.4 ms)'],
    )
    assert.equal(verdict('A2U lifecycles/s').goal, '≥ 1,000', 'the old A2U target stays')
  })

  it('judges the p99 at 16 workers on the lifecycle row when it ran 16 workers', () => {
    const report = ledgerReport(undefined)
    report.loads = report.loads.map((load) =>
      load.scenario === 'A2U lifecycle' && load.backend === 'postgres' && load.detail.kind === 'flow'
        ? { ...load, latencyP99: 45, detail: { ...load.detail, workers: 16 } }
        : load,
    )
    const p99 = targetRows(report).find((target) => target.target === 'A2U p99 latency at 16 workers')
    assert.deepEqual([p99?.verdict, p99?.measured], ['missed', '45 ms'])
  })

  it('renders the ledger batches section, and in JSON', () => {
    const window = batchesBetween(
      parseBatchHistogram(histogramText({ 1: 1 })) ?? assert.fail('no histogram'),
      parseBatchHistogram(histogramText({ 1: 5, 2: 4, 3: 1 })) ?? assert.fail('no histogram'),
    )
    const report = ledgerReport(window)
    const markdown = renderReport(report, undefined)
    assert.ok(markdown.includes('## Ledger batches'))
    const line = markdown.split('\n').find((l) => /^\|\s+16 \|/.test(l))
    assert.ok(line, 'a row for 16 workers')
    // 16 workers: 1,600/s at 50% of a core = 0.31 ms; 9 batches closed, 15 transactions: 4 of 1, 4 of 2, 1 of 3.
    assert.deepEqual(
      line
        .split('|')
        .map((cell) => cell.trim())
        .slice(1, 13),
      ['16', '1,600.0', '17', '35', '9.0', '18.0', '0.31 ms', '0.25 ms', '9', '1.67', '1: 44% · 2: 44% · 3–4: 11%', '0'],
    )
    assert.match(
      markdown,
      /A lone submit \(1 worker\): the submit step takes 3\.2 ms on average, p99 6\.4 ms; 8\.1 ms before the ledger closer/,
    )
    assert.ok(!markdown.includes(NO_BATCH_METRIC))
    const parsed = JSON.parse(resultsJson(report)) as { ledgerBatches: BatchRow[] }
    assert.deepEqual(parsed.ledgerBatches[1]?.batches, window)
  })

  it('says there are no batch figures while the server has no histogram', () => {
    const markdown = renderReport(ledgerReport(undefined), undefined)
    assert.ok(markdown.includes(`No batch figures: the server has no ${BATCH_METRIC}.`))
    const line = markdown.split('\n').find((l) => /^\|\s+64 \|/.test(l))
    assert.ok(line, 'a row for 64 workers')
    assert.deepEqual(
      line
        .split('|')
        .map((cell) => cell.trim())
        .slice(9, 12),
      ['–', '–', '–'],
      'no batch counts in the row',
    )
  })
})
