/**
 * The whole report: the generated sections in their order, then the hand-written ones a run keeps
 * from the previous BENCHMARKS.md; and the same results as JSON.
 */
import { packageVersion } from '../lib.js'
import { batchInvalid, invalid } from '../rows.js'
import { ROOT } from '../settings.js'
import { batchesSection } from './batches.js'
import { type Report, whereLabel } from './common.js'
import { notes } from './notes.js'
import { scalingModel, scalingNote, scalingTable } from './scaling.js'
import { cpuTable, flowTable, ledgerTable, loadTable, pgbenchTable, seedTable, startupTable } from './tables.js'
import { targetRows, targetsSection } from './targets.js'

/** Hand-written sections a run keeps, in this order, after the generated ones. */
export const KEPT_SECTIONS = [
  'Performance work',
  'Memory of the embedded default',
  'Reset, snapshots and start-up of the sandbox',
  'Optimisations',
] as const

export function renderReport(report: Report, preserved: string | undefined): string {
  const { machine, settings } = report
  const header = [
    '# Plinth benchmarks',
    '',
    `- Date: ${report.date}`,
    `- Machine: ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGiB.toFixed(1)} GiB memory, ${machine.os}`,
    `- Node.js ${machine.node}, Fastify ${packageVersion(ROOT, 'fastify')}, PGlite ${packageVersion(ROOT, '@electric-sql/pglite')}, ` +
      `autocannon ${packageVersion(ROOT, 'autocannon')}, @stellar/stellar-base ${packageVersion(ROOT, '@stellar/stellar-base')}`,
    `- PostgreSQL server: ${report.postgres ?? 'not used'}`,
    `- Command: \`${settings.command}\``,
  ]
  const failed = report.loads.filter(invalid)
  if (failed.length > 0) {
    header.push(
      '',
      `> **Warning: ${failed.map((row) => `${row.scenario} on ${whereLabel(row)}`).join(', ')} had errors; those rows are not valid measurements.**`,
    )
  }
  const failedBatches = report.ledgerBatches.filter(batchInvalid)
  if (failedBatches.length > 0) {
    header.push(
      '',
      `> **Warning: the ledger batch runs at ${failedBatches.map((row) => row.workers).join(', ')} workers had errors; those rows are not valid measurements.**`,
    )
  }
  const unbalanced = report.ledgerChecks.filter((row) => !row.check.ok)
  if (unbalanced.length > 0) {
    header.push('', `> **Warning: the ledger check failed on ${unbalanced.map((row) => row.backendLabel).join(', ')} after the flows.**`)
  }
  const pgbench =
    report.pgbench === undefined
      ? `No pgbench run: ${report.pgbenchMissing ?? 'not measured'}.`
      : `\`pgbench -b tpcb-like\` against the PostgreSQL server Plinth used, in a scratch database (see the notes).\n\n${pgbenchTable(report.pgbench, report.postgres)}`
  const flowSections =
    report.ledgerChecks.length === 0 && !report.loads.some((row) => row.detail.kind === 'flow')
      ? []
      : [
          `## Payment lifecycles\n\n${flowTable(report.loads)}\n\nThe step times are the mean milliseconds each step adds to a counted lifecycle, seen from the load generator ` +
            '(a request’s time includes waiting for a connection and the server’s queue; `sign` is building and signing the transaction in the load generator).',
          `### The ledger’s books after the flows (\`GET /sandbox/ledger/check\`)\n\n${ledgerTable(report.ledgerChecks)}`,
          ...(report.ledgerBatches.length === 0 ? [] : [`## Ledger batches\n\n${batchesSection(report.ledgerBatches, settings)}`]),
          `## pgbench\n\n${pgbench}`,
        ]
  const scaling = scalingTable(report.loads)
  const model = scalingModel(report)
  const sections = [
    header.join('\n'),
    `## Targets\n\n${targetsSection(report)}`,
    `## Throughput and latency\n\n${loadTable(report.loads, report.pgbench?.tps)}`,
    `## CPU during the measured runs\n\n${cpuTable(report.loads, report.machine.cores)}`,
    ...(scaling === undefined
      ? []
      : [`## Scaling: several Plinth processes on one PostgreSQL\n\n${scaling}\n\n${scalingNote(report.loads, report.machine.cores)}`]),
    ...(model === undefined ? [] : [`## Scaling model\n\n${model}`]),
    ...flowSections,
    `## Startup\n\n${startupTable(report.startups)}`,
    `## Seeding\n\n${seedTable(report.seeds, settings.seedConcurrency)}`,
    notes(report),
  ]
  if (preserved !== undefined) sections.push(preserved)
  return `${sections.join('\n\n')}\n`
}

/** The run's results as JSON (`--json`): the report's own data, its targets judged, bigints as strings. */
export function resultsJson(report: Report): string {
  const results = { version: 1, ...report, targets: targetRows(report) }
  return `${JSON.stringify(results, (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value), 2)}\n`
}
