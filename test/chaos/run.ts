/**
 * npm run test:chaos: the crash suite, long, on PGlite and on PostgreSQL, with a summary table.
 *
 *   npm run test:chaos -- [--kills 12] [--load-ms 6000] [--workers 4] [--backend pglite|postgres|both] [--seed N] [--keep-data]
 *                         [--startup-kills yes|no]
 *
 * With --startup-kills yes (the default) the server is also killed while it starts: its first start
 * (creating the database) and about a third of the restarts.
 *
 * PostgreSQL is DATABASE_URL, else postgres://postgres@127.0.0.1:5432/test; each run uses a schema of its own, dropped afterwards.
 */
import { parseArgs } from 'node:util'
import type { Backend } from '../helpers/server-process.js'
import { type CrashFigures, runCrashSuite } from './crash.js'

const { values } = parseArgs({
  options: {
    kills: { type: 'string', default: '12' },
    'load-ms': { type: 'string', default: '6000' },
    workers: { type: 'string', default: '4' },
    backend: { type: 'string', default: 'both' },
    seed: { type: 'string' },
    'keep-data': { type: 'boolean', default: false },
    'startup-kills': { type: 'string', default: 'yes' },
  },
})

const backends: Backend[] = values.backend === 'both' ? ['pglite', 'postgres'] : [values.backend as Backend]
const results: CrashFigures[] = []
for (const backend of backends) {
  const figures = await runCrashSuite({
    backend,
    kills: Number(values.kills),
    loadMsPerRound: Number(values['load-ms']),
    workers: Number(values.workers),
    ...(values.seed === undefined ? {} : { seed: Number(values.seed) }),
    keepData: values['keep-data'],
    killDuringStartup: values['startup-kills'] !== 'no',
    log: (line) => console.log(line),
  })
  results.push(figures)
  for (const problem of figures.problems) console.log(`  PROBLEM: ${problem}`)
  if (figures.problemCount > figures.problems.length) console.log(`  … and ${figures.problemCount - figures.problems.length} more problems`)
}

const rows: Array<[string, (f: CrashFigures) => string | number]> = [
  ['seed', (f) => f.seed],
  ['kills survived / kills', (f) => `${f.killsSurvived} / ${f.kills}`],
  ['  of which SIGTERM, then SIGKILL mid-shutdown', (f) => `${f.shutdownsUnderLoad}, ${f.killsDuringShutdown}`],
  ['extra kills while starting', (f) => f.startupKills],
  ['requests sent', (f) => f.requestsSent],
  ['2xx / 4xx / 5xx', (f) => `${f.responses2xx} / ${f.responses4xx} / ${f.responses5xx}`],
  ['unknown outcomes (killed in flight)', (f) => f.unknownOutcomes],
  ['requests in flight at the kills', (f) => f.inFlightAtKills],
  ['2xx answers recorded', (f) => f.acknowledgedAnswers],
  [
    'objects acknowledged (pay/tx/notif/user/app)',
    (f) =>
      `${f.acknowledged.total} (${f.acknowledged.payments}/${f.acknowledged.ledgerTransactions}/${f.acknowledged.notifications}/${f.acknowledged.users}/${f.acknowledged.apps})`,
  ],
  ['objects verified after the last restart', (f) => f.verifiedAfterRestart],
  ['read-back checks over all restarts', (f) => f.verificationsRun],
  ['invariant checks passed / run', (f) => `${f.invariantChecksPassed} / ${f.invariantChecks}`],
  ['A2U / U2A completed, cancelled (by workers)', (f) => `${f.work.a2uCompleted} / ${f.work.u2aCompleted}, ${f.work.cancelled}`],
  ['lifecycles resumed after a kill', (f) => f.work.resumed],
  ['payments finished afterwards', (f) => f.paymentsFinishedAfterwards],
  [
    'payments in DB: total / completed / cancelled',
    (f) => `${f.paymentsInDatabase.total} / ${f.paymentsInDatabase.completed} / ${f.paymentsInDatabase.cancelled}`,
  ],
  ['incomplete payments at the end', (f) => f.incompleteAtEnd],
  ['restart ms: mean / max', (f) => `${f.restartMs.mean} / ${f.restartMs.max}`],
  ['duration s', (f) => (f.durationMs / 1000).toFixed(1)],
  ['problems', (f) => f.problemCount],
]
const width = Math.max(...rows.map(([label]) => label.length))
console.log(`\n${'figure'.padEnd(width)}  ${results.map((f) => f.backend.padStart(18)).join('  ')}`)
for (const [label, value] of rows) console.log(`${label.padEnd(width)}  ${results.map((f) => String(value(f)).padStart(18)).join('  ')}`)

const failed = results.some((f) => f.problemCount > 0 || f.killsSurvived < f.kills || f.incompleteAtEnd !== 0)
console.log(failed ? '\nFAILED' : '\nOK')
process.exit(failed ? 1 : 0)
