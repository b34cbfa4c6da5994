/**
 * npm run test:soak: sustained load without kills, watching the server's memory and the invariants.
 *
 *   npm run test:soak -- [--duration-s 180] [--workers 4] [--backend pglite|postgres|both] [--sample-s 5] [--check-s 30]
 *                        [--max-rss-growth-mb 160 on PGlite, 96 on PostgreSQL]
 *
 * Workers run the crash suite's load (A2U and U2A lifecycles, ledger transfers, notify) for the
 * duration. Every sample the server's RSS and the request rate are recorded; every check
 * GET /sandbox/ledger/check must be ok. At the end every payment is finished, every 2xx answer is
 * read back, the server stops gracefully and the SQL invariants are checked. Memory is bounded when RSS, after the first quarter (warm-up),
 * grows by less than --max-rss-growth-mb to the end. On PGlite the database's shared buffers
 * (128 MB) live in the server process and fill as the database grows, so RSS rises by up to that
 * much before it levels off: hence the larger default. The second half's trend is printed.
 */
import { randomBytes } from 'node:crypto'
import { parseArgs } from 'node:util'
import { type Backend, freePort, PlinthProcess, setUpBackend, sleep } from '../helpers/server-process.js'
import { Client, newStats, Problems } from './load/client.js'
import { Gate } from './load/gate.js'
import { Journal } from './load/journal.js'
import { seededRandom } from './load/random.js'
import { runSqlChecks, SQL_CHECKS } from './load/sql-checks.js'
import { checkLedger, verifyJournal } from './load/verify.js'
import { newWorkFigures, Worker } from './load/worker.js'

const { values } = parseArgs({
  options: {
    'duration-s': { type: 'string', default: '180' },
    workers: { type: 'string', default: '4' },
    backend: { type: 'string', default: 'both' },
    'sample-s': { type: 'string', default: '5' },
    'check-s': { type: 'string', default: '30' },
    'max-rss-growth-mb': { type: 'string' },
    seed: { type: 'string' },
  },
})

interface Sample {
  atS: number
  rssMb: number
  requests: number
}

interface SoakFigures {
  backend: Backend
  seed: number
  durationS: number
  /** Every request during the run (the ledger checks beside the load included). */
  requests: number
  /** Ledger checks made beside the load. */
  checkReads: number
  requestsPerSecond: number
  meanLatencyMs: number
  responses2xx: number
  responses4xx: number
  responses5xx: number
  connectionErrors: number
  acknowledged: number
  verified: number
  invariantChecks: number
  invariantChecksPassed: number
  paymentsFinished: number
  incompleteAtEnd: number
  rss: { startMb: number; warmMb: number; maxMb: number; endMb: number; growthMb: number; trendMbPerMin: number; bounded: boolean }
  minuteRates: number[]
  problems: string[]
  problemCount: number
}

/** Least-squares slope of RSS over time, in MB a minute. */
function trend(samples: Sample[]): number {
  if (samples.length < 2) return 0
  const n = samples.length
  const mx = samples.reduce((a, s) => a + s.atS, 0) / n
  const my = samples.reduce((a, s) => a + s.rssMb, 0) / n
  const num = samples.reduce((a, s) => a + (s.atS - mx) * (s.rssMb - my), 0)
  const den = samples.reduce((a, s) => a + (s.atS - mx) ** 2, 0)
  return den === 0 ? 0 : (num / den) * 60
}

async function soak(backendName: Backend): Promise<SoakFigures> {
  const durationMs = Number(values['duration-s']) * 1000
  const sampleMs = Number(values['sample-s']) * 1000
  const checkMs = Number(values['check-s']) * 1000
  const seed = values.seed === undefined ? randomBytes(4).readUInt32BE(0) : Number(values.seed)
  const problems = new Problems()
  const stats = newStats()
  const journal = new Journal(problems)
  const work = newWorkFigures()
  const gate = new Gate()
  const random = seededRandom(seed)
  const backend = await setUpBackend(backendName)
  const port = await freePort()
  const client = new Client(`http://127.0.0.1:${port}`, stats, problems)
  const env = { ...backend.env, PLINTH_RATE_LIMIT_KEY_PER_MINUTE: '0', PLINTH_RATE_LIMIT_TOKEN_PER_MINUTE: '0' }
  const samples: Sample[] = []
  let invariantChecks = 0
  let invariantChecksPassed = 0
  let verified = 0
  let paymentsFinished = 0
  let incompleteAtEnd = -1
  let server: PlinthProcess | undefined
  let stopped = false
  let running: Promise<void>[] = []
  console.log(`soak on ${backendName}: ${values['duration-s']} s, ${values.workers} workers, seed ${seed}`)
  try {
    const started = await PlinthProcess.start(port, env)
    server = started.server
    const startRss = server.rssKb() ?? 0
    const workers: Worker[] = []
    const tag = `s${randomBytes(3).toString('hex')}`
    for (let i = 0; i < Number(values.workers); i++) {
      const worker = new Worker(i, { client, journal, problems, random, tag }, work)
      await worker.setUp()
      workers.push(worker)
    }
    const t0 = performance.now()
    running = workers.map(async (worker) => {
      while (!stopped) {
        await gate.pass()
        try {
          await worker.step()
        } catch (error) {
          problems.add(`worker ${worker.index} threw: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`)
          await sleep(50)
        }
      }
    })
    let sampling = true
    let checkReads = 0
    // The ledger's invariants are checked beside the load (one consistent statement); the read-back of
    // every 2xx comes at the end, so that it does not eat into the load the rates measure.
    const checker = (async () => {
      while (sampling) {
        await sleep(checkMs)
        if (!sampling) break
        checkReads += 1
        invariantChecks += 1
        if (await checkLedger(client, problems)) invariantChecksPassed += 1
      }
    })()
    while (performance.now() - t0 < durationMs) {
      await sleep(sampleMs)
      const atS = (performance.now() - t0) / 1000
      const rss = server.rssKb()
      if (rss === undefined) {
        problems.add(`the server is gone at ${atS.toFixed(0)} s: ${server.output().slice(-2000)}`)
        break
      }
      const previous = samples.at(-1)
      samples.push({ atS, rssMb: rss / 1024, requests: stats.sent })
      const rate = previous === undefined ? stats.sent / atS : (stats.sent - previous.requests) / (atS - previous.atS)
      process.stdout.write(
        `  ${atS.toFixed(0).padStart(5)} s  ${rate.toFixed(0).padStart(5)} req/s  RSS ${(rss / 1024).toFixed(0).padStart(4)} MB  ` +
          `5xx ${stats.serverErrors}  problems ${problems.count}\n`,
      )
    }
    const elapsedS = (performance.now() - t0) / 1000
    const requests = stats.sent
    const answered = { ok: stats.ok, refused: stats.refused, serverErrors: stats.serverErrors, unknown: stats.unknown }
    const latency = stats.latencyMsTotal / Math.max(1, stats.ok + stats.refused + stats.serverErrors)
    stopped = true
    sampling = false
    await Promise.all([...running, checker])

    for (const worker of workers) paymentsFinished += await worker.finish()
    const final = await verifyJournal(client, journal, problems, 'all')
    verified = final.checked
    invariantChecks += 1
    if (final.ledgerOk) invariantChecksPassed += 1
    invariantChecks += 1
    if (await checkLedger(client, problems)) invariantChecksPassed += 1
    const exit = await server.stop()
    server = undefined
    if (exit.code !== 0) problems.add(`the graceful shutdown exited ${JSON.stringify(exit)}`)
    const sql = await backend.sql()
    try {
      invariantChecks += SQL_CHECKS.length
      invariantChecksPassed += await runSqlChecks(sql, problems)
      const [open] = await sql.query<{ n: number }>(
        'select count(*)::int as n from payments where not developer_completed and not cancelled and not user_cancelled',
      )
      incompleteAtEnd = open?.n ?? -1
    } finally {
      await sql.close()
    }

    const warm = samples.find((s) => s.atS >= elapsedS / 4) ?? samples[0]
    const last = samples.at(-1)
    const warmMb = warm?.rssMb ?? 0
    const endMb = last?.rssMb ?? 0
    const growthMb = endMb - warmMb
    const trendMbPerMin = trend(samples.filter((s) => s.atS >= elapsedS / 2))
    const maxGrowth = Number(values['max-rss-growth-mb'] ?? (backendName === 'pglite' ? 160 : 96))
    const bounded = growthMb < maxGrowth
    if (!bounded) {
      problems.add(
        `server RSS grew ${growthMb.toFixed(0)} MB after warm-up (limit ${maxGrowth} MB); ${trendMbPerMin.toFixed(1)} MB/min in the second half`,
      )
    }
    const minuteRates: number[] = []
    for (let minute = 1; minute * 60 <= elapsedS + 1; minute++) {
      const end = samples.filter((s) => s.atS <= minute * 60).at(-1)
      const begin = samples.filter((s) => s.atS <= (minute - 1) * 60).at(-1) ?? { atS: 0, requests: 0 }
      if (end !== undefined && end.atS > begin.atS) minuteRates.push(Math.round((end.requests - begin.requests) / (end.atS - begin.atS)))
    }
    return {
      backend: backendName,
      seed,
      durationS: Math.round(elapsedS),
      requests,
      requestsPerSecond: Math.round(requests / elapsedS),
      meanLatencyMs: Math.round(latency * 10) / 10,
      checkReads,
      responses2xx: answered.ok,
      responses4xx: answered.refused,
      responses5xx: answered.serverErrors,
      connectionErrors: answered.unknown,
      acknowledged: journal.counts().total,
      verified,
      invariantChecks,
      invariantChecksPassed,
      paymentsFinished,
      incompleteAtEnd,
      rss: {
        startMb: Math.round(startRss / 1024),
        warmMb: Math.round(warmMb),
        maxMb: Math.round(Math.max(...samples.map((s) => s.rssMb))),
        endMb: Math.round(endMb),
        growthMb: Math.round(growthMb),
        trendMbPerMin: Math.round(trendMbPerMin * 10) / 10,
        bounded,
      },
      minuteRates,
      problems: problems.list,
      problemCount: problems.count,
    }
  } finally {
    stopped = true
    gate.open()
    if (server !== undefined) {
      console.log(`  server output (tail):\n${server.output().slice(-3000)}`)
      await server.kill()
    }
    await Promise.allSettled(running)
    await backend.cleanup()
  }
}

const backends: Backend[] = values.backend === 'both' ? ['pglite', 'postgres'] : [values.backend as Backend]
const results: SoakFigures[] = []
let failed = false
for (const backend of backends) {
  try {
    const figures = await soak(backend)
    results.push(figures)
    for (const problem of figures.problems) console.log(`  PROBLEM: ${problem}`)
    if (figures.problemCount > 0 || figures.incompleteAtEnd !== 0 || figures.invariantChecksPassed < figures.invariantChecks) failed = true
  } catch (error) {
    failed = true
    console.log(`soak on ${backend} stopped: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`)
  }
}

const rows: Array<[string, (f: SoakFigures) => string | number]> = [
  ['seed', (f) => f.seed],
  ['duration s', (f) => f.durationS],
  ['requests (of which ledger checks)', (f) => `${f.requests} (${f.checkReads})`],
  ['requests/s (mean)', (f) => f.requestsPerSecond],
  ['requests/s by minute', (f) => f.minuteRates.join(' ')],
  ['mean latency ms', (f) => f.meanLatencyMs],
  ['2xx / 4xx / 5xx', (f) => `${f.responses2xx} / ${f.responses4xx} / ${f.responses5xx}`],
  ['connection errors', (f) => f.connectionErrors],
  ['objects acknowledged / verified', (f) => `${f.acknowledged} / ${f.verified}`],
  ['invariant checks passed / run', (f) => `${f.invariantChecksPassed} / ${f.invariantChecks}`],
  ['payments finished / incomplete at end', (f) => `${f.paymentsFinished} / ${f.incompleteAtEnd}`],
  ['RSS MB start / warm / max / end', (f) => `${f.rss.startMb} / ${f.rss.warmMb} / ${f.rss.maxMb} / ${f.rss.endMb}`],
  ['RSS growth after warm-up MB', (f) => f.rss.growthMb],
  ['RSS trend 2nd half MB/min', (f) => f.rss.trendMbPerMin],
  ['RSS bounded', (f) => (f.rss.bounded ? 'yes' : 'NO')],
  ['problems', (f) => f.problemCount],
]
const width = Math.max(...rows.map(([label]) => label.length))
console.log(`\n${'figure'.padEnd(width)}  ${results.map((f) => f.backend.padStart(24)).join('  ')}`)
for (const [label, value] of rows) console.log(`${label.padEnd(width)}  ${results.map((f) => String(value(f)).padStart(24)).join('  ')}`)
console.log(failed ? '\nFAILED' : '\nOK')
process.exit(failed ? 1 : 0)
