import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { compareSectionTable, median, type RunFigures, ratio, stageTable } from '../../bench/compare-report.js'
import { pgbenchOrWhyNot, withApplicationName } from '../../bench/lib.js'
import { numberOption, readSettings } from '../../bench/settings.js'

function run(throughput: number, figures: Partial<RunFigures> = {}): RunFigures {
  return { throughput, reference: 10_000, plinthCpu: 100, postgresCpu: 20, p99: 10, errors: 0, load: 1.5, ...figures }
}

/** The cells after the first of the table row whose first cell is `label`. */
function cells(table: string, label: string): string[] {
  const line = table.split('\n').find((candidate) => candidate.split('|')[1]?.trim() === label)
  assert.ok(line !== undefined, `no row "${label}" in\n${table}`)
  return line
    .split('|')
    .slice(2, -1)
    .map((cell) => cell.trim())
}

/** The A2U section's table, as --compare prints it: lifecycles/s, divided by the pair's pgbench TPS. */
const a2uTable = (head: RunFigures[], base: RunFigures[]) =>
  compareSectionTable(
    { title: 'A2U', unit: 'lifecycles/s', cpuUnit: 'ms/lifecycle', per: 'pgbench', head, base },
    { head: 'head', base: 'base' },
  )

describe('bench --compare: options', () => {
  it('reads the commit, the pairs and the windows, and writes nothing', () => {
    const settings = readSettings(['--compare', '1d42cb5', '--pairs', '3', '--seconds', '2', '--warmup', '0.5'])
    assert.deepEqual(settings.compare, { commit: '1d42cb5' })
    assert.equal(settings.write, false)
    assert.equal(settings.pairs.pairs, 3)
    assert.equal(settings.pairs.seconds, 2)
    assert.equal(settings.pairs.warmupSeconds, 0.5)
    assert.equal(settings.pairs.workers, 16)
    assert.equal(settings.pairs.tokens, 300)
  })

  it('--steady measures A2U 60 s after a 15 s warm-up, unless --a2u-seconds says otherwise', () => {
    const steady = readSettings(['--compare', 'main', '--steady']).pairs
    assert.equal(steady.a2uSeconds, 60)
    assert.equal(steady.a2uWarmupSeconds, 15)
    assert.equal(readSettings(['--compare', 'main', '--steady', '--a2u-seconds', '90']).pairs.a2uSeconds, 90)
    assert.equal(readSettings(['--compare', 'main']).pairs.a2uSeconds, 15)
  })

  it('without --compare or --stages, none of it applies', () => {
    const settings = readSettings(['--quick'])
    assert.equal(settings.compare, undefined)
    assert.equal(settings.stages, false)
    assert.equal(readSettings(['--stages']).stages, true)
    assert.equal(readSettings(['--stages']).write, false)
  })

  it('refuses a count that is not a positive number', () => {
    assert.equal(numberOption('pairs', undefined, 2, true), 2)
    assert.equal(numberOption('seconds', '2.5', 8), 2.5)
    assert.throws(() => numberOption('pairs', '0', 2, true), /--pairs takes a positive whole number, got "0"/)
    assert.throws(() => numberOption('pairs', '1.5', 2, true), /--pairs/)
    assert.throws(() => numberOption('seconds', 'ten', 8), /--seconds takes a positive number/)
    assert.throws(() => readSettings(['--compare', 'main', '--pairs', '-1']), /--pairs/)
  })
})

describe('bench --compare: the tables', () => {
  it('prints each run, each side’s medians, and head ÷ commit of the medians', () => {
    const table = compareSectionTable(
      {
        title: 'GET /v2/me',
        unit: 'req/s',
        cpuUnit: 'µs/req',
        per: 'hello',
        head: [run(4000, { plinthCpu: 50 }), run(3000, { plinthCpu: 60, reference: 8000 })],
        base: [run(2000, { plinthCpu: 100, postgresCpu: 40 }), run(2000, { plinthCpu: 120, postgresCpu: 40 })],
      },
      { head: 'head', base: 'abc1234' },
    )
    assert.match(table, /\| run +\| req\/s \| ÷ hello \|/)
    assert.deepEqual(cells(table, 'pair 2, head'), ['3000', '0.38', '60.0', '20.0', '10', '1.50', ''])
    // Medians of two runs: the mean of the two.
    assert.deepEqual(cells(table, 'median, head'), ['3500', '0.39', '55.0', '20.0', '10', '1.50', ''])
    assert.deepEqual(cells(table, 'median, abc1234'), ['2000', '0.20', '110.0', '40.0', '10', '1.50', ''])
    assert.deepEqual(cells(table, 'head ÷ abc1234'), ['1.75', '1.94', '0.50', '0.50', '1.00', '', ''])
  })

  it('marks runs with errors, and prints ? where a figure is missing', () => {
    const table = a2uTable(
      [run(50, { reference: undefined, postgresCpu: undefined, errors: 3, plinthCpu: 2.5 })],
      [run(80, { reference: undefined, postgresCpu: 1.25, plinthCpu: 3 })],
    )
    assert.match(table, /\| lifecycles\/s \| ÷ pgbench \|/)
    assert.deepEqual(cells(table, 'pair 1, head'), ['50.0', '?', '2.50', '?', '10', '1.50', '3 ERRORS'])
    assert.deepEqual(cells(table, 'head ÷ base'), ['0.63', '?', '0.83', '?', '1.00', '', ''])
  })

  it('divides an A2U run by the pgbench TPS measured in its pair', () => {
    const table = a2uTable(
      [run(300, { reference: 1500 }), run(280, { reference: 1400 })],
      [run(200, { reference: 1500 }), run(210, { reference: 1400 })],
    )
    assert.deepEqual(cells(table, 'pair 1, head')[1], '0.20')
    assert.deepEqual(cells(table, 'pair 2, base')[1], '0.15')
    assert.deepEqual(cells(table, 'median, head')[1], '0.20')
    // The commit's median: of 200 ÷ 1500 and 210 ÷ 1400, 0.1417; head ÷ commit 0.20 ÷ 0.1417.
    assert.deepEqual(cells(table, 'head ÷ base')[1], '1.41')
  })

  it('ratio and median', () => {
    assert.equal(ratio(3, 2), '1.50')
    assert.equal(ratio(3, 0), '?')
    assert.equal(ratio(undefined, 2), '?')
    assert.equal(median([3, 1, 2]), 2)
    assert.equal(median([]), undefined)
  })

  it('the stage table gives what each setting adds to the base, per request', () => {
    const table = stageTable(
      [run(3000, { plinthCpu: 40, postgresCpu: 1 }), run(3000, { plinthCpu: 44, postgresCpu: 1 })],
      [{ name: 'request log', switch: 'PLINTH_REQUEST_LOG=on', runs: [run(1500, { plinthCpu: 110, postgresCpu: 21 })] }],
    )
    assert.deepEqual(cells(table, 'base'), ['', '42.0', '1.0', '', '', '3000'])
    assert.deepEqual(cells(table, 'request log'), ['PLINTH_REQUEST_LOG=on', '110.0', '21.0', '+68.0', '+20.0', '1500'])
  })
})

describe('bench: the backends a server’s PostgreSQL CPU is counted from', () => {
  it('names every connection of the server by the URL’s application_name, keeping its other parameters', () => {
    const url = new URL(withApplicationName('postgres://postgres@127.0.0.1:5432/test?sslmode=disable', 'plinth_bench_abc'))
    assert.equal(url.searchParams.get('application_name'), 'plinth_bench_abc')
    assert.equal(url.searchParams.get('sslmode'), 'disable')
    assert.equal(url.pathname, '/test')
  })
})

describe('bench: pgbench for a run that goes on without it', () => {
  it('returns why pgbench could not run, as one line, instead of throwing', async () => {
    // Port 1 on the loopback: nothing listens, so the scratch database cannot be made.
    const { result, failure } = await pgbenchOrWhyNot('postgres://nobody@127.0.0.1:1/none', {
      scale: 1,
      clients: 1,
      threads: 1,
      seconds: 1,
    })
    assert.equal(result, undefined)
    assert.match(failure ?? '', /ECONNREFUSED|connect/)
    assert.ok(!(failure ?? '').includes('\n'))
  })
})
