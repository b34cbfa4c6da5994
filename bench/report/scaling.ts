/**
 * The two scaling sections: what several Plinth processes on one PostgreSQL measured here, and what
 * the one-process CPU figures predict for bigger deployments.
 */
import { formatLatency, formatNumber, markdownTable, startNodeFlags } from '../lib.js'
import { invalid, type LoadRow, othersDuring, percent } from '../rows.js'
import { ROOT } from '../settings.js'
import { flagged, postgresCpu, type Report, single, whereLabel } from './common.js'

/** The scaling rows next to the one-process row of the same scenario on the same backend. */
export function scalingTable(loads: LoadRow[]): string | undefined {
  const scaled = loads.filter((row) => row.processes > 1)
  if (scaled.length === 0) return undefined
  const names = [...new Set(scaled.map((row) => row.scenario))]
  const rows: string[][] = []
  for (const name of names) {
    const base = loads.find((row) => row.scenario === name && row.processes === 1 && row.backend === scaled[0]?.backend)
    const family = [...(base === undefined ? [] : [base]), ...scaled.filter((row) => row.scenario === name)]
    for (const row of family) {
      const flow = row.detail.kind === 'flow'
      rows.push([
        row.scenario,
        String(row.processes),
        formatNumber(row.throughput, flow ? 1 : 0),
        row.unit,
        base === undefined || base.throughput === 0 ? 'n/a' : `${(row.throughput / base.throughput).toFixed(2)}×`,
        formatLatency(row.latencyP50),
        formatLatency(row.latencyP99),
        row.errors === 0 ? '0' : `**${row.errors}** ⚠`,
        row.peakRssMb === undefined ? 'n/a' : row.peakRssMb.toFixed(0),
        percent(row.serverCpuPercent),
        percent(postgresCpu(row)),
        percent(row.generatorCpuPercent),
        flagged(othersDuring(row)),
        percent(row.machineCpuPercent),
        flagged(row.backgroundCpuPercent),
      ])
    }
  }
  return markdownTable(
    [
      'scenario',
      'Plinth processes',
      'throughput',
      'unit',
      'vs 1 process',
      'p50 (ms)',
      'p99 (ms)',
      'errors',
      'peak RSS MB (sum)',
      'Plinth CPU (sum)',
      'PostgreSQL',
      'load generator',
      'others, during',
      'whole machine',
      'others, before',
    ],
    rows,
    ['left', 'right', 'right', 'left', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right'],
  )
}

/** The text under the scaling table: what limits it here, with this run's CPU figures. */
export function scalingNote(loads: LoadRow[], cores: number): string {
  const scaled = loads.filter((row) => row.processes > 1)
  const busiest = [...scaled].sort((a, b) => (b.machineCpuPercent ?? 0) - (a.machineCpuPercent ?? 0))[0]
  const oneProcess = single(loads).filter((row) => row.backend === 'postgres' && scaled.some((other) => other.scenario === row.scenario))
  const cpuOf = (row: LoadRow) =>
    `${row.scenario} (${whereLabel(row)}): whole machine ${percent(row.machineCpuPercent)}, Plinth ${percent(row.serverCpuPercent)}, ` +
    `PostgreSQL ${percent(postgresCpu(row))}, load generator ${percent(row.generatorCpuPercent)}, others ${percent(othersDuring(row))}`
  return [
    `The same scenarios with the load spread round robin over several Plinth processes (\`${['node', ...startNodeFlags(ROOT), 'dist/server.js'].join(' ')}\` each, on its own port, ` +
      'with the same `DATABASE_URL`, `PLINTH_DB_SCHEMA` and `PLINTH_SECRET_KEY`, each with its own connection pool and credential cache) on the data ' +
      'seeded for the one-process runs: one autocannon over one URL per process (its connections dealt round robin, the same total of connections), ' +
      'and for the A2U lifecycle, each worker sending its requests to the processes in turn. “vs 1 process” divides by the one-process row above; ' +
      'the RSS is the sum of each process’s peak.',
    '',
    `**This machine cannot show much scaling**: it has ${cores} cores, and PostgreSQL, the load generator and every Plinth process share them. ` +
      (oneProcess.length === 0
        ? ''
        : `With one process the machine is already ${oneProcess.map((row) => percent(row.machineCpuPercent)).join(' / ')} busy ` +
          `(of ${cores * 100}%) in ${oneProcess.map((row) => row.scenario).join(' / ')}. `) +
      (busiest === undefined ? '' : `The busiest multi-process run: ${cpuOf(busiest)}. `) +
      'More processes add parallelism only where a single one leaves cores idle (waiting on PostgreSQL round trips); once the cores are full they just ' +
      'split the same CPU and add scheduling and connection overhead. The factor is a lower bound of what separate machines (or more cores) would show.',
  ].join('\n')
}

/** CPU time per unit of work, in µs, from a % of one core over a run at `throughput` units/s. */
function microsPer(cpuPercent: number | undefined, throughput: number): number | undefined {
  return cpuPercent === undefined || throughput <= 0 ? undefined : (cpuPercent / 100) * (1_000_000 / throughput)
}

const micros = (value: number | undefined): string => (value === undefined ? '–' : `${formatNumber(Math.round(value))} µs`)

/** Units/s that `cores` cores give at `perUnit` µs of CPU each. */
const perCores = (perUnit: number | undefined, cores: number): number | undefined =>
  perUnit === undefined || perUnit <= 0 ? undefined : (cores * 1_000_000) / perUnit

/**
 * The scaling model, from the one-process PostgreSQL rows of this run: CPU
 * per unit of work in Plinth and in PostgreSQL, what one core of each serves, and what a few
 * deployment sizes would serve, the smaller of the two sides. Plinth processes share nothing but
 * the database, so Plinth's side scales with its cores; PostgreSQL's side is one primary here.
 */
export function scalingModel(report: Report): string | undefined {
  const rows = single(report.loads).filter((row) => row.backend === 'postgres' && !invalid(row))
  if (rows.length === 0) return undefined
  const deployments = [
    { plinth: 4, postgres: 4 },
    { plinth: 16, postgres: 8 },
    { plinth: 64, postgres: 32 },
  ]
  const table = markdownTable(
    [
      'scenario',
      'unit',
      'Plinth CPU per unit',
      'PostgreSQL CPU per unit',
      'per Plinth core',
      'per PostgreSQL core',
      ...deployments.map((d) => `${d.plinth} Plinth + ${d.postgres} PostgreSQL cores`),
    ],
    rows.map((row) => {
      const unit = row.unit.replace('/s', '')
      const plinth = microsPer(row.serverCpuPercent, row.throughput)
      const postgres = microsPer(row.postgresCpuPercent, row.throughput)
      const served = (cores: { plinth: number; postgres: number }) => {
        const sides = [perCores(plinth, cores.plinth), perCores(postgres, cores.postgres)].filter((v): v is number => v !== undefined)
        return sides.length === 0 ? '–' : formatNumber(Math.round(Math.min(...sides)))
      }
      return [
        row.scenario,
        unit,
        micros(plinth),
        micros(postgres),
        perCores(plinth, 1) === undefined ? '–' : formatNumber(Math.round(perCores(plinth, 1) ?? 0)),
        perCores(postgres, 1) === undefined ? '–' : formatNumber(Math.round(perCores(postgres, 1) ?? 0)),
        ...deployments.map(served),
      ]
    }),
    ['left', 'left', 'right', 'right', 'right', 'right', 'right', 'right', 'right'],
  )
  return (
    `${table}\n\nFrom the one-process PostgreSQL rows above: CPU per unit is the process's CPU over the run divided by what it served ` +
    '(Plinth: the server process; PostgreSQL: the backends serving it, so its background work, the WAL writer’s and checkpointer’s, is left out). ' +
    'A deployment serves the smaller of its two sides: Plinth processes share nothing but the database, so their side grows with their cores ' +
    '(one process per core: `npm start` is one event loop); the PostgreSQL side is one primary. Figures measured on a shared 2-core machine with the ' +
    'load generator on it, so CPU per unit is if anything high. What the model leaves out, and the limits it does not show, are in ' +
    '“Performance work” below.'
  )
}
