/** The tables `npm run bench -- --compare` and `--stages` print: pure functions of the measured figures. */
import { markdownTable } from './lib.js'

/** One side's figures in one run of a scenario. */
export interface RunFigures {
  /** Requests or lifecycles a second. */
  throughput: number
  /** What the same pair measured to divide by (the section's `per`): a hello-world's req/s, or pgbench's TPS. */
  reference: number | undefined
  /** Plinth's CPU per request (µs) or per lifecycle (ms); undefined when /proc could not be read. */
  plinthCpu: number | undefined
  /** The server's own PostgreSQL backends' CPU, in the same unit. */
  postgresCpu: number | undefined
  /** p99 latency of a request or a lifecycle, ms. */
  p99: number
  errors: number
  /** The 1-minute load average as the run started. */
  load: number
}

export interface CompareSection {
  title: string
  /** 'req/s' or 'lifecycles/s'. */
  unit: string
  /** 'µs/req' or 'ms/lifecycle'. */
  cpuUnit: string
  /** What `reference` is, in the ratio's column heading: 'hello' (req/s) or 'pgbench' (TPS). */
  per: string
  head: RunFigures[]
  base: RunFigures[]
}

export function median(values: readonly number[]): number | undefined {
  if (values.length === 0) return undefined
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle] : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2
}

/** The median of the defined values (undefined when there is none). */
function medianOf(runs: readonly RunFigures[], pick: (run: RunFigures) => number | undefined): number | undefined {
  return median(runs.map(pick).filter((value): value is number => value !== undefined && Number.isFinite(value)))
}

const perReference = (run: RunFigures) => (run.reference === undefined || run.reference <= 0 ? undefined : run.throughput / run.reference)

function fixed(value: number | undefined, digits: number): string {
  return value === undefined || !Number.isFinite(value) ? '?' : value.toFixed(digits)
}

/** head ÷ commit, or '?' when either is missing or the commit's is 0. */
export function ratio(head: number | undefined, base: number | undefined): string {
  return head === undefined || base === undefined || base === 0 ? '?' : (head / base).toFixed(2)
}

/** CPU per unit: µs per request with one decimal, ms per lifecycle with two. */
const cpuDigits = (section: CompareSection) => (section.cpuUnit.startsWith('ms') ? 2 : 1)

function row(section: CompareSection, label: string, run: RunFigures): string[] {
  const digits = cpuDigits(section)
  return [
    label,
    fixed(run.throughput, run.throughput < 100 ? 1 : 0),
    fixed(perReference(run), 2),
    fixed(run.plinthCpu, digits),
    fixed(run.postgresCpu, digits),
    fixed(run.p99, 0),
    fixed(run.load, 2),
    run.errors > 0 ? `${run.errors} ERRORS` : '',
  ]
}

/** One scenario: every run of each side (pair by pair), each side's medians, and head ÷ commit of the medians. */
export function compareSectionTable(section: CompareSection, names: { head: string; base: string }): string {
  const rows: string[][] = []
  const pairs = Math.max(section.head.length, section.base.length)
  for (let pair = 0; pair < pairs; pair++) {
    const head = section.head[pair]
    const base = section.base[pair]
    if (head !== undefined) rows.push(row(section, `pair ${pair + 1}, ${names.head}`, head))
    if (base !== undefined) rows.push(row(section, `pair ${pair + 1}, ${names.base}`, base))
  }
  const medians = (runs: RunFigures[]) => ({
    throughput: medianOf(runs, (run) => run.throughput),
    perReference: medianOf(runs, perReference),
    plinthCpu: medianOf(runs, (run) => run.plinthCpu),
    postgresCpu: medianOf(runs, (run) => run.postgresCpu),
    p99: medianOf(runs, (run) => run.p99),
    load: medianOf(runs, (run) => run.load),
    errors: runs.reduce((sum, run) => sum + run.errors, 0),
  })
  const head = medians(section.head)
  const base = medians(section.base)
  const digits = cpuDigits(section)
  for (const [name, m] of [
    [names.head, head],
    [names.base, base],
  ] as const) {
    rows.push([
      `median, ${name}`,
      fixed(m.throughput, (m.throughput ?? 0) < 100 ? 1 : 0),
      fixed(m.perReference, 2),
      fixed(m.plinthCpu, digits),
      fixed(m.postgresCpu, digits),
      fixed(m.p99, 0),
      fixed(m.load, 2),
      m.errors > 0 ? `${m.errors} ERRORS` : '',
    ])
  }
  rows.push([
    `${names.head} ÷ ${names.base}`,
    ratio(head.throughput, base.throughput),
    ratio(head.perReference, base.perReference),
    ratio(head.plinthCpu, base.plinthCpu),
    ratio(head.postgresCpu, base.postgresCpu),
    ratio(head.p99, base.p99),
    '',
    '',
  ])
  const table = markdownTable(
    ['run', section.unit, `÷ ${section.per}`, `Plinth CPU ${section.cpuUnit}`, `PostgreSQL CPU ${section.cpuUnit}`, 'p99 ms', 'load', ''],
    rows,
    ['left', 'right', 'right', 'right', 'right', 'right', 'right', 'left'],
  )
  return `### ${section.title}\n\n${table}`
}

/** One switchable part of the pipeline: its runs with the part on and the base runs beside them. */
export interface StageFigures {
  name: string
  /** What differs from the base server (an environment variable). */
  switch: string
  runs: RunFigures[]
}

/**
 * The per-stage table of --stages: each variant's median CPU per request (Plinth and its own
 * PostgreSQL backends), and what it adds to the base server's, measured in the same pairs.
 */
export function stageTable(base: readonly RunFigures[], stages: readonly StageFigures[]): string {
  const plinth = (runs: readonly RunFigures[]) => medianOf(runs, (run) => run.plinthCpu)
  const postgres = (runs: readonly RunFigures[]) => medianOf(runs, (run) => run.postgresCpu)
  const basePlinth = plinth(base)
  const basePostgres = postgres(base)
  const diff = (value: number | undefined, from: number | undefined) =>
    value === undefined || from === undefined ? '?' : `${value - from >= 0 ? '+' : ''}${(value - from).toFixed(1)}`
  const rows = [
    [
      'base',
      '',
      fixed(basePlinth, 1),
      fixed(basePostgres, 1),
      '',
      '',
      fixed(
        medianOf(base, (run) => run.throughput),
        0,
      ),
    ],
    ...stages.map((stage) => {
      const p = plinth(stage.runs)
      const g = postgres(stage.runs)
      return [
        stage.name,
        stage.switch,
        fixed(p, 1),
        fixed(g, 1),
        diff(p, basePlinth),
        diff(g, basePostgres),
        fixed(
          medianOf(stage.runs, (run) => run.throughput),
          0,
        ),
      ]
    }),
  ]
  return markdownTable(
    ['server', 'differs from base by', 'Plinth µs/req', 'PostgreSQL µs/req', 'Δ Plinth', 'Δ PostgreSQL', 'req/s'],
    rows,
    ['left', 'left', 'right', 'right', 'right', 'right', 'right'],
  )
}
