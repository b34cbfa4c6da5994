/** The "Ledger batches" section: the A2U lifecycle at several counts of workers, and the batches its submits were closed in. */
import { BATCH_METRIC, formatLatency, formatNumber, markdownTable } from '../lib.js'
import { type BatchRow, batchInvalid } from '../rows.js'
import type { Settings } from '../settings.js'
import { BEFORE_LEDGER_BATCHES } from './before.js'
import { cpuMsPer } from './common.js'

const ms = (value: number | undefined): string => (value === undefined ? 'n/a' : value.toFixed(1))
const cpuMs = (value: number | undefined): string => (value === undefined ? 'n/a' : `${value.toFixed(2)} ms`)

/** "1, 4, 16 and 64". */
function counts(values: readonly number[]): string {
  return values.length < 2 ? values.join('') : `${values.slice(0, -1).join(', ')} and ${values[values.length - 1]}`
}

/** The submit step of a batch run: its mean per lifecycle and the p99 of its calls. */
export function submitStep(row: BatchRow): { meanMs: number; p99Ms: number } | undefined {
  return row.flow.steps.find((step) => step.name === 'submit')
}

/** The row of one worker: its submits are never queued behind another's. */
export function loneSubmitRow(rows: readonly BatchRow[]): BatchRow | undefined {
  return rows.find((row) => row.workers === 1)
}

export function batchesSection(rows: readonly BatchRow[], settings: Settings): string {
  const table = markdownTable(
    [
      'workers',
      'lifecycles/s',
      'p50 (ms)',
      'p99 (ms)',
      'submit mean (ms)',
      'submit p99 (ms)',
      'Plinth CPU per lifecycle',
      'PostgreSQL CPU per lifecycle',
      'batches closed',
      'transactions per batch',
      'batches by size (share)',
      'errors',
    ],
    rows.map((row) => {
      const submit = submitStep(row)
      const { batches } = row
      return [
        String(row.workers),
        formatNumber(row.flow.lifecyclesPerSecond, 1),
        formatLatency(row.flow.latencyP50),
        formatLatency(row.flow.latencyP99),
        ms(submit?.meanMs),
        ms(submit?.p99Ms),
        cpuMs(cpuMsPer(row.serverCpuPercent, row.flow.lifecyclesPerSecond)),
        cpuMs(cpuMsPer(row.postgresCpuPercent, row.flow.lifecyclesPerSecond)),
        batches === undefined ? '–' : formatNumber(batches.batches),
        batches?.meanPerBatch === undefined ? '–' : batches.meanPerBatch.toFixed(2),
        batches === undefined || batches.batches === 0
          ? '–'
          : batches.sizes.map((bin) => `${bin.sizes}: ${((bin.batches / batches.batches) * 100).toFixed(0)}%`).join(' · '),
        batchInvalid(row) ? `**${row.errors}${row.problems.length > 0 ? `, ${row.problems.length} left open` : ''}** ⚠` : '0',
      ]
    }),
    ['right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'left', 'right'],
  )
  const missing = [...new Set(rows.map((row) => row.batchesMissing).filter((why): why is string => why !== undefined))]
  const lone = loneSubmitRow(rows)
  const loneSubmit = lone === undefined ? undefined : submitStep(lone)
  const before = BEFORE_LEDGER_BATCHES.loneSubmitMeanMs
  const { warmupSeconds, durationSeconds } = settings.batches
  return [
    `The A2U lifecycle on ${rows[0]?.backendLabel ?? 'PostgreSQL'}, one Plinth process, at ${counts(rows.map((row) => row.workers))} workers ` +
      `(a team of its own for each worker, as in the lifecycle rows), each a ${warmupSeconds} s warm-up and ${durationSeconds} s measured: ` +
      'shorter runs than the rows above. The ledger closer applies the transactions submitted to it in batches, one database transaction closing ' +
      `one ledger; \`${BATCH_METRIC}\` (\`GET /metrics\`, with the server’s metrics token) counts the transactions of each closed ledger. ` +
      'It is read as the measured window opens and as it closes, and the batches are the difference: how many closed, their mean size, and ' +
      'the share of them in each bucket of sizes. The submit step is `POST /ledger/transactions` seen from the load generator (mean per lifecycle, p99 of its calls); ' +
      'CPU per lifecycle is the process’s (or every PostgreSQL process’s) CPU over the window ÷ the lifecycles counted.',
    '',
    table,
    ...missing.map((why) => `\n${why[0]?.toUpperCase() ?? ''}${why.slice(1)}.`),
    '',
    lone === undefined
      ? 'No 1-worker run: no figure for a lone submit’s latency.'
      : `A lone submit (1 worker): the submit step takes ${ms(loneSubmit?.meanMs)} ms on average, p99 ${ms(loneSubmit?.p99Ms)} ms; ` +
        (before === undefined
          ? 'not measured before the ledger closer, so reported, not judged.'
          : `${ms(before)} ms before the ledger closer.`),
  ].join('\n')
}
