import { randomBytes } from 'node:crypto'
import { type Backend, freePort, PlinthProcess, setUpBackend, sleep } from '../helpers/server-process.js'
import { Client, newStats, Problems } from './load/client.js'
import { Gate } from './load/gate.js'
import { Journal, type JournalCounts } from './load/journal.js'
import { type Random, seededRandom } from './load/random.js'
import { runSqlChecks, SQL_CHECKS } from './load/sql-checks.js'
import { verifyJournal } from './load/verify.js'
import { newWorkFigures, Worker, type WorkFigures } from './load/worker.js'

/**
 * The crash suite: Plinth under sustained load (payments, ledger transactions, notifications) is
 * killed with SIGKILL at a random moment while requests are in flight, restarted on the same
 * data, and checked: every request that got a 2xx is still there and whole, the ledger's
 * invariants hold, the client can finish every payment, and the database agrees (SQL) at the end.
 */

export interface CrashSuiteOptions {
  backend: Backend
  /** How many times the server is killed. */
  kills: number
  /** Longest load before each kill (the kill comes at a random moment between 20 % and 100 % of it). */
  loadMsPerRound: number
  /** Concurrent workers (default 4). */
  workers?: number
  /** PRNG seed for the load and the kill moments (default: random, reported in the figures). */
  seed?: number
  /** PostgreSQL server (default DATABASE_URL, else the local test server). */
  databaseUrl?: string
  /** Keep the data directory or schema for a post-mortem. */
  keepData?: boolean
  /** Also verify every earlier 2xx after each restart (default: only those since the last restart; every one at the end). */
  verifyAllEachRound?: boolean
  /**
   * Also kill the server while it starts: the very first start (creating the database) and, in
   * about a third of the rounds, the restart, at a random moment before it is ready.
   */
  killDuringStartup?: boolean
  /** How long to wait for the server to be ready (default 120 s). */
  readyTimeoutMs?: number
  log?: (line: string) => void
}

export interface CrashFigures {
  backend: Backend
  seed: number
  kills: number
  /** Kills after which the server restarted on the same data and every check passed. */
  killsSurvived: number
  /** Extra kills of a starting server (killDuringStartup). */
  startupKills: number
  /** Rounds ended by SIGTERM under load, then SIGKILL within 0-300 ms (a supervisor's grace period running out). */
  shutdownsUnderLoad: number
  /** Of those, the ones the SIGKILL cut short (the others had finished their graceful shutdown). */
  killsDuringShutdown: number
  requestsSent: number
  responses2xx: number
  responses4xx: number
  responses5xx: number
  /** Requests whose outcome is unknown because the server was killed under them. */
  unknownOutcomes: number
  /** Requests in flight at the moments of the kills (total). */
  inFlightAtKills: number
  /** Distinct objects a 2xx answered for. */
  acknowledged: JournalCounts
  /** 2xx answers recorded (a payment moved four times counts four). */
  acknowledgedAnswers: number
  /** Objects read back and found whole in the final check (all of them, after the last restart). */
  verifiedAfterRestart: number
  /** Read-back checks made over all the restarts. */
  verificationsRun: number
  invariantChecks: number
  invariantChecksPassed: number
  /** Payments completed or cancelled by the finishing pass after the last restart. */
  paymentsFinishedAfterwards: number
  incompleteAtEnd: number
  paymentsInDatabase: { total: number; completed: number; cancelled: number }
  work: WorkFigures
  restartMs: { mean: number; max: number }
  durationMs: number
  problems: string[]
  problemCount: number
}

const DEFAULT_WORKERS = 4

export async function runCrashSuite(options: CrashSuiteOptions): Promise<CrashFigures> {
  const startedAt = performance.now()
  const log = options.log ?? (() => {})
  const seed = options.seed ?? randomBytes(4).readUInt32BE(0)
  const random: Random = seededRandom(seed)
  const problems = new Problems()
  const stats = newStats()
  const journal = new Journal(problems)
  const work = newWorkFigures()
  const gate = new Gate()
  const backend = await setUpBackend(options.backend, {
    databaseUrl: options.databaseUrl,
    keepData: options.keepData,
    // The first start is killed on purpose: it must be a real first start, creating the database.
    fresh: options.killDuringStartup === true,
  })
  const port = await freePort()
  const client = new Client(`http://127.0.0.1:${port}`, stats, problems)
  const env = { ...backend.env, PLINTH_RATE_LIMIT_KEY_PER_MINUTE: '0', PLINTH_RATE_LIMIT_TOKEN_PER_MINUTE: '0' }
  const readyTimeoutMs = options.readyTimeoutMs ?? 120_000
  const restartMs: number[] = []
  let killsSurvived = 0
  let startupKills = 0
  let killsDuringShutdown = 0
  let shutdownsUnderLoad = 0
  /** Kills a starting server at a random moment within `withinMs`. */
  const killWhileStarting = async (withinMs: number, what: string) => {
    const starting = PlinthProcess.spawn(port, env)
    const afterMs = Math.round(withinMs * random())
    await sleep(afterMs)
    const exit = await starting.kill()
    startupKills += 1
    log(`  killed the ${what} after ${afterMs} ms (${JSON.stringify(exit)})`)
  }
  let inFlightAtKills = 0
  let verificationsRun = 0
  let invariantChecks = 0
  let invariantChecksPassed = 0
  let verifiedAfterRestart = 0
  let paymentsFinishedAfterwards = 0
  let incompleteAtEnd = -1
  let paymentsInDatabase = { total: 0, completed: 0, cancelled: 0 }
  let server: PlinthProcess | undefined
  let stopped = false
  const workers: Worker[] = []
  let running: Promise<void>[] = []

  log(`crash suite on ${options.backend}: ${options.kills} kills, load up to ${options.loadMsPerRound} ms a round, seed ${seed}`)
  try {
    if (options.killDuringStartup === true) await killWhileStarting(6_000, 'first start (creating the database)')
    const first = await PlinthProcess.start(port, env, readyTimeoutMs)
    server = first.server
    log(`  started in ${first.readyMs} ms`)
    const tag = `c${randomBytes(3).toString('hex')}`
    for (let i = 0; i < (options.workers ?? DEFAULT_WORKERS); i++) {
      const worker = new Worker(i, { client, journal, problems, random, tag }, work)
      await worker.setUp()
      workers.push(worker)
    }
    running = workers.map(async (worker) => {
      while (!stopped) {
        await gate.pass()
        if (stopped) break
        try {
          await worker.step()
        } catch (error) {
          problems.add(`worker ${worker.index} threw: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`)
          await sleep(50)
        }
      }
    })

    for (let round = 1; round <= options.kills; round++) {
      const loadMs = Math.round(options.loadMsPerRound * (0.2 + 0.8 * random()))
      await sleep(loadMs)
      // On a loaded machine the first round may not have finished a payment or a transaction yet:
      // give it until it has (bounded), so every kill has acknowledged work to check afterwards.
      for (let waited = 0; waited < 30_000; waited += 50) {
        const counts = journal.counts()
        if (counts.payments > 0 && counts.ledgerTransactions > 0) break
        await sleep(50)
      }
      // Kill while requests are in flight (they almost always are under this load).
      for (let waited = 0; stats.inFlight === 0 && waited < 500; waited++) await sleep(1)
      gate.close()
      client.expectUp = false
      const inFlight = stats.inFlight
      inFlightAtKills += inFlight
      // About one kill in four comes during a graceful shutdown: SIGTERM, then SIGKILL before it is done.
      const duringShutdown = random() < 0.25
      const exit = duringShutdown ? await server.terminateThenKill(Math.round(300 * random())) : await server.kill()
      if (duringShutdown) shutdownsUnderLoad += 1
      if (duringShutdown && exit.signal === 'SIGKILL') killsDuringShutdown += 1
      const sentBefore = stats.sent
      log(
        `  kill ${round}/${options.kills} after ${loadMs} ms of load, ${inFlight} requests in flight` +
          `${duringShutdown ? ', SIGTERM then SIGKILL' : ''} (${JSON.stringify(exit)})`,
      )
      // Every worker's request in flight fails now; wait until they are all parked at the gate.
      for (let waited = 0; gate.waiting < workers.length && waited < 30_000; waited += 10) await sleep(10)
      if (gate.waiting < workers.length) problems.add(`round ${round}: workers did not park after the kill`)

      let restarted: { server: PlinthProcess; readyMs: number }
      try {
        if (options.killDuringStartup === true && random() < 0.35) {
          const typical = restartMs.length === 0 ? first.readyMs : Math.max(...restartMs)
          await killWhileStarting(typical, 'restarting server')
        }
        restarted = await PlinthProcess.start(port, env, readyTimeoutMs)
      } catch (error) {
        problems.add(`round ${round}: the server did not restart after SIGKILL: ${error instanceof Error ? error.message : String(error)}`)
        server = undefined
        break
      }
      server = restarted.server
      restartMs.push(restarted.readyMs)
      client.expectUp = true
      const problemsBefore = problems.count
      const verified = await verifyJournal(client, journal, problems, options.verifyAllEachRound === true ? 'all' : 'new')
      verificationsRun += verified.checked
      invariantChecks += 1
      if (verified.ledgerOk) invariantChecksPassed += 1
      const clean = problems.count === problemsBefore
      if (clean) killsSurvived += 1
      log(
        `  restarted in ${restarted.readyMs} ms; ${verified.checked} objects read back (${stats.sent - sentBefore} requests), ` +
          `ledger ${verified.ledgerOk ? 'ok' : 'NOT ok'}${clean ? '' : `, ${problems.count - problemsBefore} problems`}`,
      )
      gate.open()
    }

    // After the last restart the workers stop where the kill left them: the finishing pass below
    // (what an app's server does on start) must bring every payment that kill cut short to an end.
    stopped = true
    gate.open()
    await Promise.all(running)

    if (server !== undefined) {
      for (const worker of workers) paymentsFinishedAfterwards += await worker.finish()
      const final = await verifyJournal(client, journal, problems, 'all')
      verificationsRun += final.checked
      verifiedAfterRestart = final.checked
      invariantChecks += 1
      if (final.ledgerOk) invariantChecksPassed += 1
      log(
        `  finished ${paymentsFinishedAfterwards} payments; final read-back of ${final.checked} objects; ledger ${final.ledgerOk ? 'ok' : 'NOT ok'}`,
      )

      // A clean stop must still work on the data that went through the crashes.
      client.expectUp = false
      const exit = await server.stop()
      server = undefined
      if (exit.code !== 0) problems.add(`the graceful shutdown after the run exited ${JSON.stringify(exit)}`)

      const sql = await backend.sql()
      try {
        invariantChecks += SQL_CHECKS.length
        invariantChecksPassed += await runSqlChecks(sql, problems)
        const [counts] = await sql.query<{ total: number; completed: number; cancelled: number; open: number }>(
          `select count(*)::int as total, count(*) filter (where developer_completed)::int as completed,
             count(*) filter (where cancelled or user_cancelled)::int as cancelled,
             count(*) filter (where not developer_completed and not cancelled and not user_cancelled)::int as open
           from payments`,
        )
        if (counts !== undefined) {
          paymentsInDatabase = { total: counts.total, completed: counts.completed, cancelled: counts.cancelled }
          incompleteAtEnd = counts.open
        }
        const known = await sql.query<{ identifier: string }>('select identifier from payments where identifier = any($1)', [
          [...journal.payments.keys()],
        ])
        if (known.length !== journal.payments.size)
          problems.add(`SQL: ${journal.payments.size - known.length} acknowledged payments are missing`)
      } finally {
        await sql.close()
      }
    }
  } catch (error) {
    problems.add(`the suite stopped: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`)
  } finally {
    stopped = true
    gate.open()
    if (server !== undefined) {
      if (problems.count > 0) log(`  server output (tail):\n${server.output().slice(-4_000)}`)
      await server.kill()
    }
    await Promise.allSettled(running)
    await backend.cleanup().catch((error: unknown) => problems.add(`cleanup failed: ${String(error)}`))
  }

  return {
    backend: options.backend,
    seed,
    kills: options.kills,
    killsSurvived,
    startupKills,
    shutdownsUnderLoad,
    killsDuringShutdown,
    requestsSent: stats.sent,
    responses2xx: stats.ok,
    responses4xx: stats.refused,
    responses5xx: stats.serverErrors,
    unknownOutcomes: stats.unknown,
    inFlightAtKills,
    acknowledged: journal.counts(),
    acknowledgedAnswers: journal.acknowledged,
    verifiedAfterRestart,
    verificationsRun,
    invariantChecks,
    invariantChecksPassed,
    paymentsFinishedAfterwards,
    incompleteAtEnd,
    paymentsInDatabase,
    work,
    restartMs: {
      mean: restartMs.length === 0 ? 0 : Math.round(restartMs.reduce((a, b) => a + b, 0) / restartMs.length),
      max: Math.max(0, ...restartMs),
    },
    durationMs: Math.round(performance.now() - startedAt),
    problems: problems.list,
    problemCount: problems.count,
  }
}
