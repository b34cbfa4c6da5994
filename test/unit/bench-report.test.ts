import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { LoadResult } from '../../bench/lib.js'
import type { Report } from '../../bench/report/common.js'
import { renderReport, resultsJson } from '../../bench/report/document.js'
import { scalingModel } from '../../bench/report/scaling.js'
import type { LoadRow } from '../../bench/rows.js'
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
})
