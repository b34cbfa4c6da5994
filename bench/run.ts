/**
 * `npm run bench [-- --quick] [-- --write] [-- --no-postgres] [-- --only <text>] [-- --cpu-prof]`
 *
 * Starts each server as a child process, one after the other (the Fastify hello-world baseline,
 * Plinth on PGlite in memory, Plinth on PostgreSQL when one is available), seeds Plinth through
 * its sandbox API, loads every request scenario with autocannon and runs every flow scenario (the
 * payment lifecycles) with concurrent workers (undici), all from this process. On PostgreSQL it then
 * starts more Plinth processes on the same database and runs the scaling scenarios over 2 and 4
 * of them (load round robin), then the scenarios that move the platform clock (notify). Runs
 * pgbench against the same PostgreSQL server for scale, measures startup, and judges issue 6's
 * targets on the results. Prints the results as Markdown; a full run also writes BENCHMARKS.md (a
 * quick one only with --write).
 */
import { randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import {
  type Backend,
  type DataSizes,
  describeError,
  dropSchema,
  elapsedSeconds,
  ensureBuilt,
  type Fixtures,
  type FlowResult,
  type FlowScenario,
  type FlowTeam,
  formatLatency,
  formatNumber,
  installSignalHandlers,
  type LedgerCheck,
  type LoadResult,
  ledgerCheck,
  log,
  type MachineInfo,
  machineInfo,
  markdownSection,
  markdownTable,
  onCleanup,
  otherProcessesBusyPercent,
  type PgbenchResult,
  type PreparedFlow,
  type PreparedRequests,
  ProcessSampler,
  type ProcessUsage,
  packageVersion,
  pgbenchVersion,
  pgIsReady,
  postgresVersion,
  probe,
  type RequestScenario,
  type RunningServer,
  readRssKb,
  runCleanup,
  runFlow,
  runLoad,
  runPgbench,
  type Scenario,
  type ScenarioContext,
  type SeedRecord,
  type ServerSpec,
  seed,
  seedFlowTeams,
  startNodeFlags,
  startServer,
} from './lib.js'
import { type CpuProfileWindow, cpuProfileReport, findCpuProfile } from './profile.js'
import { scenarios } from './scenarios.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const REPORT = join(ROOT, 'BENCHMARKS.md')
const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test'
/** Above this much CPU (in % of one core) used by others just before a run, the run is flagged as noisy. */
const BUSY_MACHINE_PERCENT = 20
/** Above this much CPU (in % of one core) used by others during a measured run, it is measured again (time allowing). */
const NOISY_PERCENT = 30

interface Settings {
  quick: boolean
  write: boolean
  connections: number
  durationSeconds: number
  warmupSeconds: number
  apps: number
  users: number
  /** Server API keys per seeded app. */
  keysPerApp: number
  /** Payments and ads seeded for the server-key reads. */
  data: DataSizes
  seedConcurrency: number
  /** How long to wait for other processes to go quiet before a measurement, at most, and over the whole run. */
  quietWait: { perMeasurementSeconds: number; totalSeconds: number }
  /** Plinth processes sharing one PostgreSQL in the scaling runs, besides the single one (none: no scaling runs). */
  scalingProcesses: number[]
  /** Concurrent workers of a flow scenario, each with its own app and users. */
  flowWorkers: number
  flowUsersPerWorker: number
  pgbench: { scale: number; clients: number; threads: number; seconds: number }
  /** Only the scenarios whose name contains this (case-insensitive); no startup on disk, nothing written. */
  only: string | undefined
  /** Plinth's servers run with --cpu-prof; the flows' measured windows are summarised from the profiles. */
  cpuProf: boolean
  command: string
}

function readSettings(): Settings & { postgres: boolean; pglite: boolean } {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      quick: { type: 'boolean', default: false },
      write: { type: 'boolean', default: false },
      'no-postgres': { type: 'boolean', default: false },
      'no-pglite': { type: 'boolean', default: false },
      only: { type: 'string' },
      'cpu-prof': { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  })
  if (values.help) {
    process.stdout.write(
      'npm run bench [-- --quick] [--write] [--no-postgres] [--only <text>] [--cpu-prof]\n' +
        '  --quick        less data, 8 flow workers, 0.5 s warm-up, 2 s runs, every scenario but GET /v2/me on PostgreSQL only,\n' +
        '                 scaling to 2 processes and of the request scenarios only, no startup on disk (under a minute);\n' +
        '                 prints only (unless --write)\n' +
        '  --write        write BENCHMARKS.md (always done by a full run)\n' +
        '  --no-postgres  skip Plinth on PostgreSQL (and pgbench) even when one is reachable\n' +
        '  --no-pglite    skip Plinth on PGlite (a partial run: writes nothing)\n' +
        '  --only <text>  only the scenarios whose name contains <text>, e.g. --only A2U (writes nothing)\n' +
        "  --cpu-prof     profile Plinth's servers (node --cpu-prof) and print where their CPU went during each flow (writes nothing)\n",
    )
    process.exit(0)
  }
  const quick = values.quick
  const flags = process.argv.slice(2)
  const only = values.only === undefined || values.only === '' ? undefined : values.only
  const cpuProf = values['cpu-prof']
  return {
    quick,
    write: values.write || (!quick && only === undefined && !cpuProf && !values['no-pglite']),
    postgres: !values['no-postgres'],
    pglite: !values['no-pglite'],
    connections: 32,
    durationSeconds: quick ? 2 : 10,
    warmupSeconds: quick ? 0.5 : 3,
    apps: quick ? 2 : 4,
    // More where a scenario needs more per app (notify: see minUsersPerApp).
    users: quick ? 300 : 2400,
    keysPerApp: 2,
    data: {
      paymentsPerUser: quick ? 0.5 : 1,
      completedPaymentsPerApp: quick ? 4 : 10,
      adsPerUser: quick ? 0.5 : 1,
      seedConcurrency: 16,
    },
    seedConcurrency: 16,
    scalingProcesses: quick ? [2] : [2, 4],
    quietWait: quick ? { perMeasurementSeconds: 0, totalSeconds: 0 } : { perMeasurementSeconds: 15, totalSeconds: 60 },
    flowWorkers: quick ? 8 : 16,
    flowUsersPerWorker: quick ? 4 : 8,
    pgbench: { scale: 10, clients: 16, threads: 2, seconds: quick ? 2 : 10 },
    only,
    cpuProf,
    command: `npm run bench${flags.length > 0 ? ` -- ${flags.join(' ')}` : ''}`,
  }
}

// ---------------------------------------------------------------------------------------------
// The servers.

interface Launched {
  server: RunningServer
  /** Stops the server and removes what it used (schema, directory). */
  release(): Promise<void>
  /**
   * PostgreSQL only: starts another Plinth process on the same database, schema and secret key
   * (never profiled); the caller stops it, before release.
   */
  replicate?(name: string): Promise<RunningServer>
}

interface Target {
  backend: Backend
  label: string
  launch(): Promise<Launched>
}

/** nodeArgs go before the script: `--cpu-prof …` when profiling. */
function plinthSpec(name: string, env: Record<string, string>, nodeArgs: readonly string[] = []): ServerSpec {
  return {
    name,
    command: process.execPath,
    // The flags of `npm start` (the heap bound), then the benchmark's own (--cpu-prof).
    args: [...startNodeFlags(ROOT), ...nodeArgs, join(ROOT, 'dist', 'server.js')],
    cwd: ROOT,
    // The load is thousands of requests a second on one key and one token: limits far above it, so
    // the check's cost is measured but nothing is refused.
    env: {
      LOG_LEVEL: 'warn',
      PLINTH_MODE: 'sandbox',
      PLINTH_RATE_LIMIT_KEY_PER_MINUTE: '1000000000',
      PLINTH_RATE_LIMIT_TOKEN_PER_MINUTE: '1000000000',
      ...env,
    },
  }
}

async function launchSimple(spec: ServerSpec): Promise<Launched> {
  const server = await startServer(spec)
  return { server, release: () => server.stop() }
}

/** Plinth on a fresh schema of the PostgreSQL server; the schema is dropped when released (or on failure/Ctrl-C). */
async function launchPostgres(databaseUrl: string, nodeArgs: readonly string[]): Promise<Launched> {
  const schema = `bench_${randomBytes(6).toString('hex')}`
  const drop = async () => {
    await dropSchema(databaseUrl, schema)
    log(`dropped schema ${schema}`)
  }
  const unregister = onCleanup(drop)
  const env = {
    DATABASE_URL: databaseUrl,
    PLINTH_DB_SCHEMA: schema,
    PLINTH_SECRET_KEY: randomBytes(32).toString('hex'),
  }
  const server = await startServer(plinthSpec('plinth-postgres', env, nodeArgs))
  return {
    server,
    async release() {
      await server.stop()
      unregister()
      await drop()
    },
    replicate: (name) => startServer(plinthSpec(name, env)),
  }
}

function targets(databaseUrl: string | undefined, nodeArgs: readonly string[]): Target[] {
  const list: Target[] = [
    {
      backend: 'fastify',
      label: 'Fastify only',
      launch: () =>
        launchSimple({
          name: 'hello-world',
          command: process.execPath,
          args: ['--import', 'tsx', join(ROOT, 'bench', 'hello.ts')],
          cwd: ROOT,
          env: {},
        }),
    },
    {
      backend: 'pglite',
      label: 'PGlite (memory)',
      launch: () => launchSimple(plinthSpec('plinth-pglite', { PLINTH_DATA_DIR: 'memory' }, nodeArgs)),
    },
  ]
  if (databaseUrl !== undefined)
    list.push({ backend: 'postgres', label: 'PostgreSQL', launch: () => launchPostgres(databaseUrl, nodeArgs) })
  return list
}

async function resolveDatabaseUrl(wanted: boolean): Promise<string | undefined> {
  if (!wanted) return undefined
  const given = process.env.DATABASE_URL
  if (given !== undefined && given !== '') return given
  if (await pgIsReady('127.0.0.1')) return DEFAULT_DATABASE_URL
  log('no DATABASE_URL and pg_isready -h 127.0.0.1 failed: skipping Plinth on PostgreSQL')
  return undefined
}

// ---------------------------------------------------------------------------------------------
// Measuring.

/** One measured row: a request scenario (autocannon, req/s or items/s) or a flow scenario (runFlow, lifecycles/s). */
interface LoadRow {
  scenario: string
  backend: Backend
  backendLabel: string
  /** Plinth processes serving the load (1, or more in the scaling runs). */
  processes: number
  /** 'req/s', 'notifications/s' or 'lifecycles/s'. */
  unit: string
  throughput: number
  /** Per request (request scenarios) or per lifecycle (flows), in ms. */
  latencyP50: number
  latencyP99: number
  latencyMax: number
  /** Request scenarios: measured non-2xx + connection errors + answers that failed their check. Flows: failed lifecycles, warm-up included. */
  errors: number
  detail:
    | { kind: 'request'; load: LoadResult; warmupErrors: number }
    | { kind: 'flow'; flow: FlowResult; workers: number; problems: string[] }
  /** What the run did besides the numbers (the scenario's own summary). */
  summary: string | undefined
  /** Of the server process; with several, the sum of each one's peak. */
  peakRssMb: number | undefined
  /** CPU used by the server process(es) during the measured run, in % of one core. */
  serverCpuPercent: number | undefined
  /** CPU used by this process (autocannon) meanwhile, in % of one core. */
  generatorCpuPercent: number
  /** CPU used by the whole machine meanwhile, in % of one core. */
  machineCpuPercent: number | undefined
  /** CPU used by the local PostgreSQL server's processes meanwhile, in % of one core. */
  postgresCpuPercent: number | undefined
  /** Measured twice because other work disturbed the first run; this is the quieter one. */
  remeasured?: boolean
  /** CPU other processes (not the server, not this one) used over half a second just before the warm-up. */
  backgroundCpuPercent: number | undefined
}

interface StartupRow {
  label: string
  startupMs: number
  /** The readyMs Plinth prints: configuration read to listening, without Node's own start and module loading. */
  serverReadyMs: number | undefined
  rssMb: number | undefined
  /** Which start the warm-start target is judged on. */
  warmPostgres?: boolean
}

interface SeedRow extends SeedRecord {
  backendLabel: string
}

interface LedgerRow {
  backendLabel: string
  check: LedgerCheck
}

interface Measured {
  loads: LoadRow[]
  startups: StartupRow[]
  seeds: SeedRow[]
  ledgerChecks: LedgerRow[]
  profiles: ProfileRun[]
}

/** A profiled server and the measured windows of its scenarios (process.hrtime, which is the profile's clock). */
interface ProfileRun {
  backendLabel: string
  pid: number
  windows: CpuProfileWindow[]
}

async function startupRow(label: string, server: RunningServer): Promise<StartupRow> {
  const banner = await server.waitForOutput(/ready in (\d+) ms/, 2_000)
  const rssKb = await readRssKb(server.pid)
  return {
    label,
    startupMs: server.startupMs,
    serverReadyMs: banner?.[1] === undefined ? undefined : Number(banner[1]),
    rssMb: rssKb === undefined ? undefined : rssKb / 1024,
  }
}

function selected(settings: Settings, scenario: Scenario): boolean {
  return settings.only === undefined || scenario.name.toLowerCase().includes(settings.only.toLowerCase())
}

/** Whether the scenario runs on this backend in this run (--quick runs some on fewer backends). */
function runsOn(settings: Settings, scenario: Scenario, backend: Backend): boolean {
  const backends = settings.quick ? (scenario.quickBackends ?? scenario.backends) : scenario.backends
  return backends.includes(backend) && scenario.backends.includes(backend) && selected(settings, scenario)
}

/** The servers a measurement loads: one, or several Plinth processes on one PostgreSQL. */
interface Serving {
  target: Target
  servers: readonly RunningServer[]
  /** Where the measured windows of a profiled single server go. */
  profile: ProfileRun | undefined
}

function urlsOf(serving: Serving): string | string[] {
  const urls = serving.servers.map((server) => server.baseUrl)
  return urls.length === 1 ? (urls[0] ?? '') : urls
}

function describeServing(serving: Serving): string {
  return serving.servers.length === 1 ? serving.target.label : `${serving.target.label}, ${serving.servers.length} processes`
}

async function measureTargets(settings: Settings, list: Target[]): Promise<Measured> {
  const loads: LoadRow[] = []
  const startups: StartupRow[] = []
  const seeds: SeedRow[] = []
  const ledgerChecks: LedgerRow[] = []
  const profiles: ProfileRun[] = []
  const tag = randomBytes(3).toString('hex')

  for (const target of list) {
    const relevant = scenarios.filter((scenario) => runsOn(settings, scenario, target.backend))
    if (relevant.length === 0) continue
    const phaseStart = performance.now()
    log(`starting ${target.label} (${target.backend})`)
    const launched = await target.launch()
    const { server, release } = launched
    try {
      log(`  ready in ${formatNumber(server.startupMs)} ms at ${server.baseUrl} (pid ${server.pid})`)
      if (target.backend !== 'fastify') {
        const label = target.backend === 'postgres' ? `Plinth, ${target.label}, new schema (migrations run)` : `Plinth, ${target.label}`
        startups.push(await startupRow(label, server))
      }
      const profile: ProfileRun = { backendLabel: target.label, pid: server.pid, windows: [] }
      if (settings.cpuProf && target.backend !== 'fastify') profiles.push(profile)

      let fixtures: Promise<Fixtures> | undefined
      let flowTeams: Promise<FlowTeam[]> | undefined
      const shared = new Map<string, Promise<unknown>>()
      const recordSeed = (record: SeedRecord) => {
        log(`  seeded for ${record.purpose}: ${record.made} in ${record.seconds.toFixed(1)} s`)
        seeds.push({ backendLabel: target.label, ...record })
      }
      const context: ScenarioContext = {
        backend: target.backend,
        baseUrl: server.baseUrl,
        quick: settings.quick,
        data: settings.data,
        fixtures: () => {
          fixtures ??= seed(server.baseUrl, {
            apps: settings.apps,
            users: Math.max(settings.users, settings.apps * Math.max(0, ...relevant.map((scenario) => scenario.minUsersPerApp ?? 0))),
            keysPerApp: settings.keysPerApp,
            concurrency: settings.seedConcurrency,
            tag,
          }).then((seeded) => {
            recordSeed({
              purpose: 'users with tokens (every request scenario)',
              made:
                `${seeded.apps.length} apps (${settings.keysPerApp} server keys each), ${formatNumber(seeded.users.length)} users, ` +
                'each signed in to one app (1 token)',
              items: seeded.users.length,
              seconds: seeded.seedMs / 1000,
            })
            return seeded
          })
          return fixtures
        },
        flowTeams: () => {
          flowTeams ??= seedFlowTeams(server.baseUrl, {
            teams: settings.flowWorkers,
            usersPerTeam: settings.flowUsersPerWorker,
            concurrency: settings.seedConcurrency,
            tag,
          }).then(({ teams, seedMs }) => {
            const users = teams.reduce((sum, team) => sum + team.users.length, 0)
            recordSeed({
              purpose: 'payment flows (one app per worker)',
              made: `${teams.length} apps, ${users} users with wallet_address granted`,
              items: users,
              seconds: seedMs / 1000,
            })
            return teams
          })
          return flowTeams
        },
        shared: <T>(key: string, make: () => Promise<T>): Promise<T> => {
          let found = shared.get(key)
          if (found === undefined) {
            found = make()
            shared.set(key, found)
          }
          return found as Promise<T>
        },
        recordSeed,
      }

      // Request scenarios are prepared (seeded) once per server; the scaling runs reuse what they made.
      const prepared = new Map<string, PreparedRequests>()
      const prepare = async (scenario: RequestScenario) => {
        const found = prepared.get(scenario.name)
        if (found !== undefined) return found
        const made = await scenario.prepare(context)
        prepared.set(scenario.name, made)
        return made
      }
      const single: Serving = { target, servers: [server], profile: settings.cpuProf ? profile : undefined }
      const measureOnce = async (scenario: Scenario, serving: Serving) =>
        scenario.kind === 'flow'
          ? measureFlow(settings, scenario, await scenario.prepare(context), serving)
          : measureRequests(settings, scenario, await prepare(scenario), serving)
      const measure = (scenario: Scenario, serving: Serving) => measureQuietly(scenario, serving, measureOnce)

      for (const scenario of relevant.filter((candidate) => candidate.movesClock !== true)) loads.push(await measure(scenario, single))

      const replicate = launched.replicate
      if (replicate !== undefined) {
        // A --quick run scales the request scenarios only (the lifecycles' scaling is a full run's).
        const scaling = scenarios.filter(
          (scenario) =>
            scenario.scaling === true && runsOn(settings, scenario, target.backend) && !(settings.quick && scenario.kind === 'flow'),
        )
        // The scaling runs; without any (--only), still one more process, for the warm start.
        if (scaling.length > 0 || settings.only === undefined) {
          const scaled = await measureScaling(settings, scaling, target, server, replicate, measure)
          loads.push(...scaled.rows)
          startups.push(scaled.warmStart)
        }
      }

      for (const scenario of relevant.filter((candidate) => candidate.movesClock === true)) loads.push(await measure(scenario, single))

      if (relevant.some((scenario) => scenario.kind === 'flow')) {
        const check = await ledgerCheck(server.baseUrl)
        ledgerChecks.push({ backendLabel: target.label, check })
        log(
          `  ledger check after the flows: ok ${check.ok} (balances ${check.totalBalances} = funded ${check.totalFunded} − fees ${check.totalFees}; ` +
            `${check.negativeBalances} negative, ${check.mismatchedAccounts} mismatched)`,
        )
        if (!check.ok)
          shout([`the ledger check FAILED on ${target.label} after the flows: the books do not balance`, JSON.stringify(check)])
      }
    } finally {
      await release()
    }
    log(`  ${target.label} done in ${elapsedSeconds(phaseStart)}`)
  }
  return { loads, startups, seeds, ledgerChecks, profiles }
}

/**
 * Measures once; when other work took more than NOISY_PERCENT of a core during the measured run
 * (and the first run had no errors, which must never be hidden), measures again after waiting for
 * quiet, within the run's allowance (Settings.quietWait), and keeps the quieter of the two.
 */
async function measureQuietly(
  scenario: Scenario,
  serving: Serving,
  measureOnce: (scenario: Scenario, serving: Serving) => Promise<LoadRow>,
): Promise<LoadRow> {
  const first = await measureOnce(scenario, serving)
  const noise = othersDuring(first)
  if (noise === undefined || noise <= NOISY_PERCENT || invalid(first) || quietAllowance.remainingMs <= 0) return first
  const startedAt = performance.now()
  log(
    `  ${scenario.name} (${describeServing(serving)}): other work took ${noise.toFixed(0)}% of a core during the measured run: measuring again`,
  )
  const second = await measureOnce(scenario, serving)
  quietAllowance.remainingMs = Math.max(0, quietAllowance.remainingMs - (performance.now() - startedAt))
  if (invalid(second)) return second
  const kept = (othersDuring(second) ?? Number.POSITIVE_INFINITY) < noise ? second : first
  log(`  kept the ${kept === second ? 'second' : 'first'} run (others ${percent(othersDuring(kept))} during it)`)
  return { ...kept, remeasured: true }
}

/**
 * More Plinth processes on the first one's database (same schema and secret key, each its own
 * pool), then the scaling scenarios with the load spread round robin over all of them, for each
 * process count. The first extra process is started alone, on the already migrated schema: that
 * is the warm start on PostgreSQL. The extra processes are stopped before anything else runs.
 */
async function measureScaling(
  settings: Settings,
  scaling: readonly Scenario[],
  target: Target,
  primary: RunningServer,
  replicate: (name: string) => Promise<RunningServer>,
  measure: (scenario: Scenario, serving: Serving) => Promise<LoadRow>,
): Promise<{ rows: LoadRow[]; warmStart: StartupRow }> {
  const replicas: RunningServer[] = []
  const rows: LoadRow[] = []
  try {
    const first = await replicate('plinth-postgres-2')
    replicas.push(first)
    const warmStart = {
      ...(await startupRow(`Plinth, ${target.label}, warm (schema already migrated; another process running, idle)`, first)),
      warmPostgres: true,
    }
    log(`  warm start of another process on the same schema: ${formatNumber(first.startupMs)} ms (pid ${first.pid})`)
    for (const count of scaling.length === 0 ? [] : settings.scalingProcesses) {
      const started = await Promise.all(
        Array.from({ length: Math.max(0, count - 1 - replicas.length) }, (_, index) =>
          replicate(`plinth-postgres-${replicas.length + index + 2}`),
        ),
      )
      replicas.push(...started)
      const servers = [primary, ...replicas.slice(0, count - 1)]
      log(`  scaling: ${servers.length} Plinth processes (pids ${servers.map((server) => server.pid).join(', ')})`)
      for (const scenario of scaling) rows.push(await measure(scenario, { target, servers, profile: undefined }))
    }
    return { rows, warmStart }
  } finally {
    await Promise.all(replicas.map((replica) => replica.stop()))
  }
}

/** What is left of the run's allowance for waiting on other work (Settings.quietWait). */
const quietAllowance = { remainingMs: 0 }

/**
 * The CPU other processes use (over half a second) just before a measurement. On a shared machine,
 * when they are busy, waits for them (up to Settings.quietWait) before measuring anyway; the row is
 * flagged when they were still busy.
 */
async function quietMachine(settings: Settings, pids: readonly number[]): Promise<number | undefined> {
  const startedAt = performance.now()
  const limitMs = Math.min(settings.quietWait.perMeasurementSeconds * 1000, quietAllowance.remainingMs)
  const sampleMs = settings.quick ? 250 : 500
  let background = await otherProcessesBusyPercent(sampleMs, pids)
  const busy = () => background !== undefined && background > BUSY_MACHINE_PERCENT
  if (busy() && limitMs > 0) {
    log(`  other processes use ${background?.toFixed(0) ?? '?'}% of a core: waiting up to ${(limitMs / 1000).toFixed(0)} s for them`)
    while (busy() && performance.now() - startedAt < limitMs) background = await otherProcessesBusyPercent(sampleMs, pids)
    quietAllowance.remainingMs = Math.max(0, quietAllowance.remainingMs - (performance.now() - startedAt))
    log(`  waited ${elapsedSeconds(startedAt)}; ${busy() ? 'still busy' : 'quiet now'} (${background?.toFixed(0) ?? '?'}%)`)
  }
  if (busy()) {
    log(
      `  !!! the machine is busy before the run: ${background?.toFixed(0) ?? '?'}% of a core used by other processes; expect noisy numbers`,
    )
  }
  return background
}

/** Probes, warms up, then loads a request scenario with autocannon over the serving processes, sampling them meanwhile. */
async function measureRequests(
  settings: Settings,
  scenario: RequestScenario,
  prepared: PreparedRequests,
  serving: Serving,
): Promise<LoadRow> {
  const { target, servers } = serving
  const pids = servers.map((server) => server.pid)
  const where = describeServing(serving)
  for (const server of servers) await probe(server.baseUrl, prepared.build)
  const background = await quietMachine(settings, pids)
  const common = {
    baseUrl: urlsOf(serving),
    connections: settings.connections,
    build: prepared.build,
    checksAnswers: prepared.checksAnswers,
  }
  const warm = await runLoad({ ...common, durationSeconds: settings.warmupSeconds })
  prepared.afterRun()
  log(
    `  ${scenario.name} (${where}): warm-up ${formatNumber(warm.totalRequests / Math.max(warm.durationSeconds, 0.01))} req/s, ${warm.errors} errors`,
  )
  const sampler = new ProcessSampler(pids, 200)
  const generatorCpuAtStart = process.cpuUsage()
  const generatorStartedAt = performance.now()
  const hrStart = process.hrtime.bigint()
  sampler.start()
  const load = await runLoad({ ...common, durationSeconds: settings.durationSeconds })
  const usage = await sampler.stop()
  prepared.afterRun()
  serving.profile?.windows.push({ label: scenario.name, startNs: hrStart, endNs: process.hrtime.bigint() })
  const generatorCpu = process.cpuUsage(generatorCpuAtStart)
  const generatorCpuPercent = (generatorCpu.user + generatorCpu.system) / 10 / (performance.now() - generatorStartedAt)
  const unit = prepared.itemUnit ?? 'req/s'
  const throughput = prepared.itemUnit === undefined ? load.requestsPerSecond : load.items / load.durationSeconds
  const summary = prepared.summary()
  log(
    `  ${scenario.name} (${where}): ${formatNumber(throughput)} ${unit}` +
      `${prepared.itemUnit === undefined ? '' : ` (${formatNumber(load.requestsPerSecond)} req/s)`}, p50 ${formatLatency(load.latencyP50)} ms, ` +
      `p99 ${formatLatency(load.latencyP99)} ms, ${load.errors} errors, peak RSS ${usage.peakRssMb?.toFixed(0) ?? '?'} MB, ` +
      `CPU: server ${usage.cpuPercent?.toFixed(0) ?? '?'}%, load generator ${generatorCpuPercent.toFixed(0)}%, ` +
      `whole machine ${usage.machineCpuPercent?.toFixed(0) ?? '?'}%`,
  )
  if (summary !== undefined) log(`    ${summary}`)
  if (load.errors > 0 || warm.errors > 0) warnErrors(`${scenario.name}`, where, warm, load)
  return {
    scenario: scenario.name,
    backend: target.backend,
    backendLabel: target.label,
    processes: servers.length,
    unit,
    throughput,
    latencyP50: load.latencyP50,
    latencyP99: load.latencyP99,
    latencyMax: load.latencyMax,
    errors: load.errors + warm.errors,
    detail: { kind: 'request', load, warmupErrors: warm.errors },
    summary,
    peakRssMb: usage.peakRssMb,
    serverCpuPercent: usage.cpuPercent,
    generatorCpuPercent,
    machineCpuPercent: usage.machineCpuPercent,
    postgresCpuPercent: usage.postgresCpuPercent,
    backgroundCpuPercent: background,
  }
}

/** Runs the flow's warm-up and measured window over the serving processes, samples them meanwhile, then checks what it left behind. */
async function measureFlow(settings: Settings, scenario: FlowScenario, prepared: PreparedFlow, serving: Serving): Promise<LoadRow> {
  const { target, servers } = serving
  const pids = servers.map((server) => server.pid)
  const where = describeServing(serving)
  const background = await quietMachine(settings, pids)
  const sampler = new ProcessSampler(pids, 200)
  // Set by the callbacks at the edges of the measured window.
  const window: {
    usage?: Promise<ProcessUsage>
    cpuAtStart?: NodeJS.CpuUsage
    startedAt: number
    generatorCpuPercent?: number
    hrStart: bigint
  } = {
    startedAt: 0,
    hrStart: 0n,
  }
  const flow = await runFlow({
    baseUrl: urlsOf(serving),
    lifecycles: prepared.lifecycles,
    warmupSeconds: settings.warmupSeconds,
    durationSeconds: settings.durationSeconds,
    onMeasureStart: () => {
      sampler.start()
      window.cpuAtStart = process.cpuUsage()
      window.startedAt = performance.now()
      window.hrStart = process.hrtime.bigint()
    },
    onMeasureEnd: () => {
      window.usage = sampler.stop()
      const cpu = process.cpuUsage(window.cpuAtStart)
      window.generatorCpuPercent = (cpu.user + cpu.system) / 10 / (performance.now() - window.startedAt)
      serving.profile?.windows.push({ label: scenario.name, startNs: window.hrStart, endNs: process.hrtime.bigint() })
    },
  })
  const usage = window.usage === undefined ? undefined : await window.usage
  const generatorCpuPercent = window.generatorCpuPercent ?? 0
  const unit = `${scenario.unit}/s`
  log(
    `  ${scenario.name} (${where}): ${formatNumber(flow.lifecyclesPerSecond, 1)} ${unit} (${flow.lifecycles} in ${flow.measuredSeconds.toFixed(1)} s, ` +
      `${prepared.lifecycles.length} workers), p50 ${formatLatency(flow.latencyP50)} ms, p99 ${formatLatency(flow.latencyP99)} ms, ` +
      `${flow.errors + flow.warmupErrors} errors (warm-up: ${flow.warmupLifecycles} ${scenario.unit}, ${flow.warmupErrors} errors), ` +
      `peak RSS ${usage?.peakRssMb?.toFixed(0) ?? '?'} MB, CPU: server ${usage?.cpuPercent?.toFixed(0) ?? '?'}%, ` +
      `load generator ${generatorCpuPercent.toFixed(0)}%, whole machine ${usage?.machineCpuPercent?.toFixed(0) ?? '?'}%`,
  )
  log(
    `    steps (mean ms per ${scenario.unit.replace(/s$/, '')}): ${flow.steps.map((step) => `${step.name} ${step.meanMs.toFixed(1)}`).join(', ')}`,
  )
  const problems = await prepared.verify()
  if (flow.errors + flow.warmupErrors > 0) {
    shout([
      `ERRORS in ${scenario.name} on ${where}: every lifecycle must succeed; these numbers are not valid.`,
      `warm-up: ${flow.warmupErrors} failed; measured (and draining): ${flow.errors} failed`,
      ...flow.failures.flatMap((failure) => [`${failure.count} × ${failure.key}`, `    e.g. ${failure.example}`]),
    ])
  }
  if (problems.length > 0) {
    shout([`${scenario.name} on ${where} left the server in an unexpected state:`, ...problems.slice(0, 20)])
  } else {
    log(
      `  ${scenario.name}: afterwards no open payment is left${scenario.name.startsWith('A2U') ? ' and every app account sequence is as counted' : ''}`,
    )
  }
  return {
    scenario: scenario.name,
    backend: target.backend,
    backendLabel: target.label,
    processes: servers.length,
    unit,
    throughput: flow.lifecyclesPerSecond,
    latencyP50: flow.latencyP50,
    latencyP99: flow.latencyP99,
    latencyMax: flow.latencyMax,
    errors: flow.errors + flow.warmupErrors,
    detail: { kind: 'flow', flow, workers: prepared.lifecycles.length, problems },
    summary: undefined,
    peakRssMb: usage?.peakRssMb,
    serverCpuPercent: usage?.cpuPercent,
    generatorCpuPercent,
    machineCpuPercent: usage?.machineCpuPercent,
    postgresCpuPercent: usage?.postgresCpuPercent,
    backgroundCpuPercent: background,
  }
}

/** A message nobody can miss, between two bars of `!`. */
function shout(lines: readonly string[]): void {
  const bar = '!'.repeat(78)
  process.stderr.write(`\n${bar}\n${lines.map((line) => `!!! ${line}`).join('\n')}\n${bar}\n\n`)
}

/** Cold: PGlite in a fresh directory (initdb, migrations, demo seed); warm: the same directory again. */
async function measureDiskStartup(): Promise<StartupRow[]> {
  const phaseStart = performance.now()
  const dir = mkdtempSync(join(tmpdir(), 'plinth-bench-'))
  const unregister = onCleanup(() => rmSync(dir, { recursive: true, force: true }))
  const rows: StartupRow[] = []
  try {
    for (const phase of ['cold', 'warm'] as const) {
      const server = await startServer(plinthSpec(`plinth-pglite-${phase}`, { PLINTH_DATA_DIR: dir }))
      try {
        const label = phase === 'cold' ? 'Plinth, PGlite on disk, cold (new directory)' : 'Plinth, PGlite on disk, warm (same directory)'
        rows.push(await startupRow(label, server))
        log(`  ${phase} start on disk: ${formatNumber(server.startupMs)} ms`)
      } finally {
        await server.stop()
      }
    }
  } finally {
    unregister()
    rmSync(dir, { recursive: true, force: true })
  }
  log(`  disk startup done in ${elapsedSeconds(phaseStart)}`)
  return rows
}

function warnErrors(scenario: string, backend: string, warm: LoadResult, load: LoadResult): void {
  const bar = '!'.repeat(78)
  const problems = (result: LoadResult) =>
    result.problems === 0
      ? ''
      : `, ${result.problems} answers failed their check (${result.problemKinds.map((kind) => `${kind.count} × ${kind.key}`).join('; ')})`
  process.stderr.write(
    `\n${bar}\n!!! ERRORS in ${scenario} on ${backend}: every request must succeed; these numbers are not valid.\n` +
      `!!! warm-up: ${warm.non2xx} non-2xx, ${warm.connectionErrors} connection errors (${warm.timeouts} timeouts)${problems(warm)}\n` +
      `!!! measured: ${load.non2xx} non-2xx, ${load.connectionErrors} connection errors (${load.timeouts} timeouts)${problems(load)}\n` +
      `!!! status codes: warm-up ${JSON.stringify(warm.statusCodes)}, measured ${JSON.stringify(load.statusCodes)}\n${bar}\n\n`,
  )
}

// ---------------------------------------------------------------------------------------------
// The report.

interface Report {
  settings: Settings
  machine: MachineInfo
  postgres: string | undefined
  date: string
  loads: LoadRow[]
  startups: StartupRow[]
  seeds: SeedRow[]
  ledgerChecks: LedgerRow[]
  pgbench: PgbenchResult | undefined
  /** Why there is no pgbench row, when there is none. */
  pgbenchMissing: string | undefined
}

/** Two significant digits, for ratios far below 1 (0.0057). */
function smallRatio(value: number): string {
  return value >= 0.1 ? value.toFixed(2) : value.toPrecision(2)
}

function invalid(row: LoadRow): boolean {
  return row.errors > 0 || (row.detail.kind === 'flow' && row.detail.problems.length > 0)
}

function whereLabel(row: LoadRow): string {
  return row.processes === 1 ? row.backendLabel : `${row.backendLabel}, ${row.processes} processes`
}

function single(loads: readonly LoadRow[]): LoadRow[] {
  return loads.filter((row) => row.processes === 1)
}

/** The request rate of a row: req/s for request rows (also those that count items), undefined for flows. */
function requestRate(row: LoadRow): number | undefined {
  return row.detail.kind === 'request' ? row.detail.load.requestsPerSecond : undefined
}

function helloBaseline(loads: readonly LoadRow[]): number | undefined {
  return loads.find((row) => row.backend === 'fastify')?.throughput
}

function loadTable(loads: LoadRow[], pgbenchTps: number | undefined): string {
  const baseline = helloBaseline(loads)
  const rows = single(loads).map((row) => {
    const flow = row.detail.kind === 'flow'
    const rate = requestRate(row)
    const toHello =
      baseline === undefined || baseline === 0
        ? 'n/a'
        : flow
          ? `${smallRatio(row.throughput / baseline)}× (lifecycles/s ÷ req/s)`
          : row.unit !== 'req/s' && rate !== undefined
            ? `${smallRatio(rate / baseline)}× (${formatNumber(rate)} req/s ÷ req/s)`
            : `${(row.throughput / baseline).toFixed(2)}×`
    const toPgbench = !row.scenario.startsWith('A2U')
      ? ''
      : pgbenchTps === undefined || pgbenchTps === 0
        ? 'n/a'
        : `${smallRatio(row.throughput / pgbenchTps)}× (lifecycles/s ÷ TPS)`
    return [
      row.scenario,
      row.backendLabel,
      formatNumber(row.throughput, flow ? 1 : 0),
      row.unit,
      toHello,
      toPgbench,
      formatLatency(row.latencyP50),
      formatLatency(row.latencyP99),
      formatLatency(row.latencyMax),
      row.errors === 0 ? '0' : `**${row.errors}** ⚠`,
      row.peakRssMb === undefined ? 'n/a' : row.peakRssMb.toFixed(0),
    ]
  })
  const summaries = single(loads)
    .filter((row) => row.summary !== undefined)
    .map((row) => `- ${row.scenario}, ${row.backendLabel}: ${row.summary ?? ''}.`)
  return markdownTable(
    [
      'scenario',
      'backend',
      'throughput',
      'unit',
      'ratio to hello-world req/s',
      'ratio to pgbench TPS',
      'p50 (ms)',
      'p99 (ms)',
      'max (ms)',
      'errors',
      'peak RSS MB',
    ],
    rows,
    ['left', 'left', 'right', 'left', 'right', 'right', 'right', 'right', 'right', 'right', 'right'],
  ).concat(
    '\n\nOne Plinth process. Throughput is in the row’s unit. For the request rows (req/s), the ratio is req/s ÷ the hello-world req/s and latencies are per request. ' +
      'For notify, the throughput is the notifications delivered per second (every request carries 256, and every answer must be a 201 delivering all 256), ' +
      'the ratio compares its requests per second with hello-world’s and the latencies are per request of 256. ' +
      'For the lifecycle rows (lifecycles/s), the ratio to hello-world is **lifecycles/s ÷ hello-world req/s** (a lifecycle is 3 HTTP requests ' +
      'for A2U plus a transaction signed by the load generator, 4 for U2A), latencies are per whole lifecycle. Errors include the warm-up’s: failed lifecycles, ' +
      'non-2xx answers, connection errors and answers that failed their check. ' +
      'The A2U rows also show **lifecycles/s ÷ `pgbench -b tpcb-like` TPS** of the PostgreSQL server Plinth used (see pgbench below; ' +
      'on the PGlite row it compares with that same PostgreSQL figure, as PGlite has no pgbench).',
    summaries.length === 0 ? '' : `\n\n${summaries.join('\n')}`,
  )
}

function percent(value: number | undefined): string {
  return value === undefined ? 'n/a' : `${Math.max(0, value).toFixed(0)}%`
}

/** The PostgreSQL server's share, on the rows that use it. */
function postgresCpu(row: LoadRow): number | undefined {
  return row.backend === 'postgres' ? row.postgresCpuPercent : undefined
}

/** CPU used during the measured run by neither the server(s), the load generator nor (on PostgreSQL rows) PostgreSQL: other work on the machine. */
function othersDuring(row: LoadRow): number | undefined {
  if (row.machineCpuPercent === undefined || row.serverCpuPercent === undefined) return undefined
  const postgres = row.backend === 'postgres' ? row.postgresCpuPercent : 0
  if (postgres === undefined) return undefined
  return row.machineCpuPercent - row.serverCpuPercent - row.generatorCpuPercent - postgres
}

function flagged(value: number | undefined): string {
  return `${percent(value)}${(value ?? 0) > BUSY_MACHINE_PERCENT ? ' ⚠' : ''}`
}

function cpuTable(loads: LoadRow[], cores: number): string {
  return markdownTable(
    [
      'scenario',
      'backend',
      'server process',
      'load generator',
      'PostgreSQL',
      'others, during the run',
      'whole machine',
      'others, before the run',
    ],
    single(loads).map((row) => [
      row.scenario,
      row.backendLabel,
      percent(row.serverCpuPercent),
      percent(row.generatorCpuPercent),
      row.backend === 'postgres' ? percent(postgresCpu(row)) : '–',
      `${flagged(othersDuring(row))}${row.remeasured === true ? ' (run twice)' : ''}`,
      percent(row.machineCpuPercent),
      flagged(row.backgroundCpuPercent),
    ]),
    ['left', 'left', 'right', 'right', 'right', 'right', 'right', 'right'],
  ).concat(
    `\n\nIn % of one core, over the measured run; the machine has ${cores} cores, so ${cores * 100}% is all of it. ` +
      'The load generator of the lifecycle rows includes building and signing the A2U transactions (@stellar/stellar-base, node:crypto ed25519); ' +
      'the notify row’s includes building the 256-notification bodies and reading every answer.',
  )
}

/** The scaling rows next to the one-process row of the same scenario on the same backend. */
function scalingTable(loads: LoadRow[]): string | undefined {
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
function scalingNote(loads: LoadRow[], cores: number): string {
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

function flowTable(loads: LoadRow[]): string {
  const rows: string[][] = []
  for (const row of loads) {
    if (row.detail.kind !== 'flow') continue
    const { flow, workers, problems } = row.detail
    rows.push([
      row.scenario,
      whereLabel(row),
      String(workers),
      `${formatNumber(flow.lifecycles)} in ${flow.measuredSeconds.toFixed(1)} s`,
      flow.requestsPerLifecycle.toFixed(1),
      flow.steps.map((step) => `${step.name} ${step.meanMs.toFixed(1)}`).join(' · '),
      `${formatNumber(flow.warmupLifecycles)}, ${flow.warmupErrors} errors`,
      problems.length === 0 ? 'none' : `**${problems.length}** ⚠`,
    ])
  }
  return markdownTable(
    [
      'scenario',
      'backend',
      'workers',
      'lifecycles counted',
      'HTTP requests per lifecycle',
      'mean ms per step (client side)',
      'warm-up (not counted)',
      'left open afterwards',
    ],
    rows,
    ['left', 'left', 'right', 'right', 'right', 'left', 'right', 'right'],
  )
}

type Verdict = 'met' | 'missed' | 'not measured' | 'invalid'

interface TargetRow {
  target: string
  goal: string
  measured: string
  verdict: Verdict
}

/** Issue 6's targets, judged on this run's one-process PostgreSQL rows. */
function targetRows(report: Report): TargetRow[] {
  const postgres = single(report.loads).filter((row) => row.backend === 'postgres')
  const hello = report.loads.find((row) => row.backend === 'fastify')
  const find = (scenario: string) => postgres.find((row) => row.scenario === scenario)
  const judge = (
    row: LoadRow | undefined,
    value: (row: LoadRow) => number | undefined,
    ok: (value: number) => boolean,
    show: (value: number, row: LoadRow) => string,
  ) => {
    if (row === undefined) return { measured: 'not in this run', verdict: 'not measured' as const }
    const found = value(row)
    if (found === undefined) return { measured: 'n/a', verdict: 'not measured' as const }
    const text = show(found, row)
    if (invalid(row) || (hello !== undefined && invalid(hello)))
      return { measured: `${text} (the run had errors)`, verdict: 'invalid' as const }
    return { measured: text, verdict: ok(found) ? ('met' as const) : ('missed' as const) }
  }
  const toHello = (scenario: string, share: number): TargetRow => ({
    target: `\`${scenario}\` req/s vs hello-world`,
    goal: `≥ ${(share * 100).toFixed(0)}%`,
    ...judge(
      find(scenario),
      (row) => (hello === undefined || hello.throughput === 0 ? undefined : row.throughput / hello.throughput),
      (ratio) => ratio >= share,
      (ratio, row) => `${(ratio * 100).toFixed(1)}% (${formatNumber(row.throughput)} ÷ ${formatNumber(hello?.throughput ?? 0)})`,
    ),
  })
  const a2u = find('A2U lifecycle')
  const pgbench = report.pgbench?.tps
  const notify = postgres.find((row) => row.unit === 'notifications/s')
  const rssRows = postgres.filter((row) => row.peakRssMb !== undefined)
  const heaviest = [...rssRows].sort((a, b) => (b.peakRssMb ?? 0) - (a.peakRssMb ?? 0))[0]
  const warm = report.startups.find((row) => row.warmPostgres === true)
  return [
    toHello('GET /v2/me', 0.5),
    toHello('GET /v2/payments/{id}', 0.3),
    toHello('GET /v2/ads_network/status/{adId}', 0.3),
    {
      target: 'A2U lifecycles/s',
      goal: '≥ 1,000',
      ...judge(
        a2u,
        (row) => row.throughput,
        (value) => value >= 1000,
        (value) => formatNumber(value, 1),
      ),
    },
    {
      target: 'A2U lifecycles/s vs `pgbench -b tpcb-like` TPS',
      goal: '≥ 25%',
      ...judge(
        a2u,
        (row) => (pgbench === undefined || pgbench === 0 ? undefined : row.throughput / pgbench),
        (ratio) => ratio >= 0.25,
        (ratio, row) => `${(ratio * 100).toFixed(1)}% (${formatNumber(row.throughput, 1)} ÷ ${formatNumber(pgbench ?? 0)})`,
      ),
    },
    {
      target: 'notify, delivered notifications/s in 256-batches (quota enforced)',
      goal: '≥ 50,000',
      ...judge(
        notify,
        (row) => row.throughput,
        (value) => value >= 50_000,
        (value) => formatNumber(value),
      ),
    },
    {
      target: 'peak RSS under load (the highest of the scenarios)',
      goal: '< 250 MB',
      ...(heaviest === undefined
        ? { measured: 'not in this run', verdict: 'not measured' as const }
        : {
            measured: `${(heaviest.peakRssMb ?? 0).toFixed(0)} MB (${heaviest.scenario}; lowest ${Math.min(...rssRows.map((row) => row.peakRssMb ?? 0)).toFixed(0)} MB)`,
            verdict: (heaviest.peakRssMb ?? 0) < 250 ? ('met' as const) : ('missed' as const),
          }),
    },
    {
      target: 'warm start, spawn → `/readyz` 200 (migrated schema)',
      goal: '< 1.5 s',
      ...(warm === undefined
        ? { measured: 'not in this run', verdict: 'not measured' as const }
        : {
            measured: `${formatNumber(warm.startupMs)} ms (Plinth’s own ready: ${warm.serverReadyMs === undefined ? 'n/a' : `${formatNumber(warm.serverReadyMs)} ms`})`,
            verdict: warm.startupMs < 1500 ? ('met' as const) : ('missed' as const),
          }),
    },
  ]
}

function targetsSection(report: Report): string {
  const rows = targetRows(report)
  const mark = (verdict: Verdict) => (verdict === 'met' ? 'met ✓' : verdict === 'missed' ? '**missed** ✗' : verdict)
  const counted = (verdict: Verdict) => rows.filter((row) => row.verdict === verdict).length
  return [
    'Issue 6’s targets for a 2-core machine, judged on this run: PostgreSQL, one Plinth process, hello-world and pgbench measured minutes apart on the same machine.',
    '',
    markdownTable(
      ['target', 'goal', 'this run', 'verdict'],
      rows.map((row) => [row.target, row.goal, row.measured, mark(row.verdict)]),
      ['left', 'left', 'right', 'left'],
    ),
    '',
    `${counted('met')} met, ${counted('missed')} missed${counted('invalid') > 0 ? `, ${counted('invalid')} invalid (errors)` : ''}` +
      `${counted('not measured') > 0 ? `, ${counted('not measured')} not measured in this run` : ''}. ` +
      'Issue 6 also asks that revocation and consent withdrawal take effect on every process within a second while `GET /v2/me` is fast; ' +
      'that is a correctness property the tests check, not something this benchmark measures.' +
      (report.settings.quick ? ' This was a `--quick` run: short runs on less data, a smoke test rather than a verdict.' : ''),
  ].join('\n')
}

function ledgerTable(checks: LedgerRow[]): string {
  return markdownTable(
    ['backend', 'ok', 'total balances', 'total funded', 'fees burned', 'negative balances', 'mismatched accounts'],
    checks.map(({ backendLabel, check }) => [
      backendLabel,
      check.ok ? 'yes' : '**NO** ⚠',
      check.totalBalances,
      check.totalFunded,
      check.totalFees,
      String(check.negativeBalances),
      String(check.mismatchedAccounts),
    ]),
    ['left', 'left', 'right', 'right', 'right', 'right', 'right'],
  )
}

function pgbenchTable(result: PgbenchResult, postgres: string | undefined): string {
  const server = postgres === undefined ? 'PostgreSQL' : (/^PostgreSQL [\d.]+/.exec(postgres)?.[0] ?? 'PostgreSQL')
  return markdownTable(
    ['server', 'scale', 'clients', 'threads', 'duration (s)', 'TPS', 'latency average (ms)', 'transactions', 'failed', 'whole machine CPU'],
    [
      [
        server,
        String(result.scale),
        String(result.clients),
        String(result.threads),
        String(result.seconds),
        formatNumber(result.tps),
        result.latencyAverageMs === undefined ? 'n/a' : result.latencyAverageMs.toFixed(1),
        result.transactions === undefined ? 'n/a' : formatNumber(result.transactions),
        result.failedTransactions === undefined ? 'n/a' : String(result.failedTransactions),
        result.machineCpuPercent === undefined ? 'n/a' : `${result.machineCpuPercent.toFixed(0)}%`,
      ],
    ],
    ['left', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right', 'right'],
  )
}

function startupTable(startups: StartupRow[]): string {
  return markdownTable(
    ['server', 'spawn → /readyz 200 (ms)', 'reported by Plinth (ms)', 'RSS when ready MB'],
    startups.map((row) => [
      row.label,
      formatNumber(row.startupMs),
      row.serverReadyMs === undefined ? 'n/a' : formatNumber(row.serverReadyMs),
      row.rssMb === undefined ? 'n/a' : row.rssMb.toFixed(0),
    ]),
    ['left', 'right', 'right', 'right'],
  )
}

function seedTable(seeds: SeedRow[], concurrency: number): string {
  return markdownTable(
    ['backend', 'for', 'made', 'seconds', `made per second (${concurrency} requests in flight)`],
    seeds.map((row) => [row.backendLabel, row.purpose, row.made, row.seconds.toFixed(1), formatNumber(row.items / row.seconds)]),
    ['left', 'left', 'left', 'right', 'right'],
  )
}

function notes(report: Report): string {
  const s = report.settings
  const lines = [
    '## Notes',
    '',
    `- Every server is a separate child process started by \`bench/run.ts\`, one at a time, on 127.0.0.1 and a random free port: ` +
      '`node --import tsx bench/hello.ts` for the baseline (Fastify, logger off, a response schema), and the built server ' +
      `\`${['node', ...startNodeFlags(ROOT), 'dist/server.js'].join(' ')}\` for Plinth, as \`npm start\` runs it (\`LOG_LEVEL=warn\`, \`PLINTH_MODE=sandbox\`; \`dist/\` is rebuilt first when older than \`src/\`). ` +
      'The load generator (autocannon’s programmatic API for the request scenarios, workers on undici’s `request()` for the lifecycles) runs in the orchestrator, ' +
      `so it is never in the server’s process; on this ${report.machine.cores}-core machine the two do share the CPU.`,
    `- Load: ${s.connections} connections, no pipelining, a ${s.warmupSeconds} s warm-up run that is not counted, then ` +
      `${s.durationSeconds} s measured. req/s is the mean of autocannon’s per-second samples; latencies are autocannon’s, in whole milliseconds (it truncates, so <1 is under a millisecond). ` +
      'The ratio is req/s divided by the hello-world req/s of the same run, which travels better between machines than raw numbers.',
    `- Data: ${s.apps} apps (each with ${s.keysPerApp} server API keys: \`POST /sandbox/apps\`, \`POST /sandbox/apps/{app_id}/keys\`) and ` +
      `${formatNumber(s.users)} users (more where a scenario needs more per app: notify needs 550) are made through the sandbox API (\`POST /sandbox/users\`, ` +
      '`POST /sandbox/apps/{app_id}/authenticate` with the `username`, `payments`, `wallet_address` and `in_app_notifications` scopes, ' +
      `${s.seedConcurrency} requests in flight), each user signed in to one app (round robin). Every request scenario deals its requests in a shuffled ` +
      'order that uses every item before any repeats. `GET /v2/me` spreads its requests over every seeded user’s ' +
      'access token (`Authorization: Bearer …`), all distinct; the seeding table says how many were made on each server.',
    `- **\`GET /v2/payments/{id}\`** (\`Authorization: Key\`, a random key of the payment’s own app): over A2U payments made with \`POST /v2/payments\` for every ` +
      `seeded user (${s.data.paymentsPerUser} per user on average; each cancelled with \`POST /v2/payments/{id}/cancel\` before the user’s next one, ` +
      `the last one of every fourth user left open), plus ${s.data.completedPaymentsPerApp} per app taken to completion first, as the A2U flow does ` +
      '(signed with the app wallet, `POST /ledger/transactions`, `POST /v2/payments/{id}/complete`), so the answers have every shape: open, cancelled, ' +
      'completed with a linked transaction.',
    `- **\`GET /v2/ads_network/status/{adId}\`** (Key, a random key of the ad’s app): over ${s.data.adsPerUser} rewarded ad(s) per seeded user, ` +
      'shown with `POST /v2/client/ads/rewarded/show` and the user’s token (`AD_REWARDED` with an `adId`; pending, or granted once 2 s of platform time have passed).',
    '- **`GET /ledger/accounts/{address}`** (Horizon, no authentication, what stellar-sdk’s `loadAccount` calls): over every seeded user’s and app’s wallet.',
    `- **notify**: \`POST /v2/in_app_notifications/notify\` (Key) with \`{notifications: [256 × {title, body, user_uid, subroute: '/x'}]}\`, the 256 being ` +
      'distinct users of the key’s app, chosen at random among the apps. An answer counts only when it is a 201 with `success: true` and all 256 in ' +
      '`delivered_notifications` (autocannon hands every answer to a check); a 403 (quota) or anything else is an error. The quota, 48 notifications per ' +
      'app and user in any 24 hours of platform time, is kept exactly from the load generator: each app’s users are split in two halves; a batch takes the ' +
      'next 256 users of the current half in a shuffled order, so after n batches every user of a half of H has had ⌊256n/H⌋ or ⌈256n/H⌉; at ⌊48H/256⌋ ' +
      'batches (an epoch) the platform clock is moved a day and a second (`POST /sandbox/clock {advance_seconds: 86401}`), which takes everything ' +
      'sent before out of every window, and the next epoch uses the other half. A batch still in flight across a clock move therefore never counts in ' +
      'the window of the users being notified next (an epoch starting before every batch of the epoch before last was answered would be named in ' +
      'the summary under the table; a 403 would show any slip), and the quota is used to the last notification. Notify runs last on its server ' +
      '(after the scaling runs), as moving the clock a day expires the access tokens and puts freshly signed transactions outside their time bounds. ' +
      'The server must lock, count and insert for 256 users per request; batches of the same app share most of their users, so concurrent ' +
      'requests of one app queue on the same rows, as they would for an app broadcasting to its users. Notify runs on PostgreSQL only: on PGlite ' +
      '(one connection, so every transaction waits for the one before) trial runs of 32 concurrent batches had a tail past autocannon’s 10 s ' +
      'timeout (p99 7.5 s, a few timeouts), which would void the row.',
    `- Payment lifecycles are flows of several requests, so they are not run by autocannon: ${s.flowWorkers} workers in the orchestrator each loop one ` +
      'lifecycle after another over keep-alive connections (undici’s `request()`), for the same warm-up (not counted) and measured time as the request ' +
      'scenarios; a lifecycle counts when its last answer arrives inside the measured window, and lifecycles/s is that count ÷ the window. ' +
      'Latency is per whole lifecycle (first request sent to last answer read). Any answer but the expected status (or a body that says otherwise) fails ' +
      'the lifecycle and counts as an error; the run warns loudly. After the window each worker finishes the lifecycle it is in (not counted), so nothing is left half paid.',
    `- Each worker has its own app and its own ${s.flowUsersPerWorker} users of that app, seeded for the flows (\`POST /sandbox/apps\`, whose wallet seed the ` +
      'worker signs with, and users signed in with the `username`, `payments` and `wallet_address` scopes): a user has at most one open payment per app ' +
      'in each direction, and an app account’s transactions must carry consecutive sequence numbers. Each lifecycle pays 0.01 test Pi to or from the ' +
      'worker’s next user in turn.',
    '- **A2U lifecycle**: `POST /v2/payments` (`Authorization: Key`, `{payment: {amount: 0.01, memo, metadata: {}, uid}}`, 200) → the worker builds and ' +
      'signs (built with @stellar/stellar-base, signed with node:crypto’s ed25519, as stellar-base does when sodium-native is installed) a native payment of the amount from the app wallet to the payment’s `to_address`, text memo = the payment ' +
      'identifier, network passphrase = the payment’s `network`, fee 100, timeout 180 s → `POST /ledger/transactions` with the form field ' +
      '`tx=<base64 envelope>` (200, `{hash, …}`) → `POST /v2/payments/{id}/complete {txid: hash}` (200, `developer_completed: true`). The app ' +
      'account’s sequence is read once from `GET /ledger/accounts/{address}` and then counted locally (+1 per transaction), as a busy app backend ' +
      'would; afterwards the ledger’s sequence of every app account must equal the count. Signing costs the load generator CPU (see the step times).',
    '- **U2A lifecycle**: `POST /v2/client/payments` (`Authorization: Bearer`, `{amount: 0.01, memo, metadata: {}}`, 201) → ' +
      '`POST /v2/payments/{id}/approve` (Key, 200) → `POST /v2/client/payments/{id}/submit` (Bearer, 200: the platform signs the user’s ' +
      'transaction and submits it to the ledger; `transaction.verified: true`) → `POST /v2/payments/{id}/complete {txid}` (Key, 200). Here the signing is the server’s.',
    '- After the flows, no payment of the flow apps may be left open (`GET /v2/payments/incomplete_server_payments`, `GET /v2/client/payments/incomplete`), ' +
      'and `GET /sandbox/ledger/check` must answer `ok: true` (every balance = its fundings + payments received − payments sent − fees, total balances = total funded − fees burned).',
    `- pgbench is PostgreSQL’s own benchmark, run against the same PostgreSQL server while no Plinth runs: a scratch database \`bench_pgbench_<hex>\` ` +
      `(created, then dropped), \`pgbench -i -s ${s.pgbench.scale}\`, then \`pgbench -b tpcb-like -c ${s.pgbench.clients} -j ${s.pgbench.threads} -T ${s.pgbench.seconds}\` ` +
      '(pgbench’s client shares the machine like the load generator does). A TPC-B-like transaction is 5 statements (3 updates, a select, an insert) ' +
      'in one commit; an A2U lifecycle is three HTTP requests, each with its own database work (authenticating the key, reading and writing the ' +
      'payment; applying the ledger transaction locks both accounts, moves the sequence and the balances, inserts the transaction and its operation ' +
      'and links the payment), so the ratio says how much of what the database itself can commit one payment costs.',
    '- CPU is read from `/proc`: the server process’s user + system time, this process’s (the load generator’s) own, every `postgres` process’s ' +
      '(the local PostgreSQL server: its backends serve Plinth, but also any other client of that server), and the whole machine’s busy time; ' +
      '“others, during the run” is what is left: other work on the machine (on the Fastify and PGlite rows, PostgreSQL’s own CPU counts there too). ' +
      'When the load generator is near 100% ' +
      'it, not the server, may be the limit, which matters most for the hello-world baseline. “Others, before the run” is the CPU used by other processes (neither the server nor ' +
      `the load generator) over half a second (a quarter in --quick) just before the warm-up: anything above ${BUSY_MACHINE_PERCENT}% (⚠) means other work shared the machine and the row is noisy. ` +
      (s.quietWait.totalSeconds > 0
        ? `When others are that busy, the run first waits for them, up to ${s.quietWait.perMeasurementSeconds} s per measurement; when others took more than ` +
          `${NOISY_PERCENT}% during a measured run, it is run again once and the quieter of the two kept (“run twice”); waiting and running again ` +
          `share an allowance of ${s.quietWait.totalSeconds} s per benchmark run.`
        : 'A `--quick` run neither waits for them nor measures again.'),
    '- Errors are non-2xx answers, connection errors (timeouts included) and answers that failed their check for the request rows, failed lifecycles ' +
      'for the lifecycle rows, warm-up included; any other count than 0 invalidates the row and the run warns loudly.',
    `- Scaling: after the one-process runs on PostgreSQL, ${s.scalingProcesses.length === 0 ? 'no' : s.scalingProcesses.join(' and ')} Plinth ` +
      'processes on the same database and data (see the scaling section). The first extra process is started alone on the migrated schema: its ' +
      'spawn → `/readyz` is the warm start on PostgreSQL in the startup table (the first row of PostgreSQL is a new schema, with its migrations).',
    '- Peak RSS is the server process’s VmRSS (from `/proc/<pid>/status`), sampled every 200 ms during the measured run only; one server process ' +
      'serves every scenario of its backend in turn, so a row also carries what earlier scenarios left in memory. With several processes it is the sum of each one’s peak.',
    '- Startup is the time from spawn to the first 200 from `GET /readyz`, polled every 20 ms; “reported by Plinth” is the `ready in … ms` of ' +
      'its banner (configuration read to listening: opening the database, migrations, building the app), without Node’s own start and module loading. ' +
      'Cold is PGlite in a new temporary `PLINTH_DATA_DIR` (creating the database cluster, migrating, seeding the demo app); warm is a second start ' +
      'on the same directory. The in-memory and PostgreSQL rows are the starts of the servers measured above; on PostgreSQL the server ' +
      'creates a fresh schema `bench_<hex>`, which is dropped afterwards.',
    '- `npm run bench -- --only A2U --cpu-prof` (or `--only notify`, `--only payments`, …) runs just the matching scenarios with the one-process Plinth servers ' +
      'under `node --cpu-prof` and prints where their CPU went during each measured window (by package and by function); it writes nothing here, as the ' +
      'profiler slows the server.',
  ]
  if (s.quick)
    lines.push(
      '- This was a `--quick` run: fewer users, payments and workers, short runs, every scenario but `GET /v2/me` on PostgreSQL only, ' +
        `the scaling runs with ${s.scalingProcesses.join(' and ')} processes and of the request scenarios only, and no startup on disk: a smoke test rather than numbers to compare.`,
    )
  return lines.join('\n')
}

function renderReport(report: Report, preserved: string | undefined): string {
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
          `## pgbench\n\n${pgbench}`,
        ]
  const scaling = scalingTable(report.loads)
  const sections = [
    header.join('\n'),
    `## Targets\n\n${targetsSection(report)}`,
    `## Throughput and latency\n\n${loadTable(report.loads, report.pgbench?.tps)}`,
    `## CPU during the measured runs\n\n${cpuTable(report.loads, report.machine.cores)}`,
    ...(scaling === undefined
      ? []
      : [`## Scaling: several Plinth processes on one PostgreSQL\n\n${scaling}\n\n${scalingNote(report.loads, report.machine.cores)}`]),
    ...flowSections,
    `## Startup\n\n${startupTable(report.startups)}`,
    `## Seeding\n\n${seedTable(report.seeds, settings.seedConcurrency)}`,
    notes(report),
  ]
  if (preserved !== undefined) sections.push(preserved)
  return `${sections.join('\n\n')}\n`
}

// ---------------------------------------------------------------------------------------------

/** pgbench against the PostgreSQL server, when it is used, installed and a flow is measured; answers the result or why there is none. */
async function measurePgbench(
  settings: Settings,
  databaseUrl: string | undefined,
): Promise<{ result: PgbenchResult | undefined; missing: string | undefined }> {
  if (databaseUrl === undefined) return { result: undefined, missing: 'no PostgreSQL server was used' }
  if (!scenarios.some((scenario) => scenario.kind === 'flow' && selected(settings, scenario))) {
    return { result: undefined, missing: 'no lifecycle was measured' }
  }
  const version = await pgbenchVersion()
  if (version === undefined) {
    log('pgbench is not installed: no pgbench row')
    return { result: undefined, missing: '`pgbench` is not installed' }
  }
  const phaseStart = performance.now()
  const { scale, clients, threads, seconds } = settings.pgbench
  log(`pgbench (${version}): -i -s ${scale}, then -b tpcb-like -c ${clients} -j ${threads} -T ${seconds}`)
  try {
    const result = await runPgbench(databaseUrl, settings.pgbench)
    log(
      `  pgbench: ${formatNumber(result.tps)} TPS, latency average ${result.latencyAverageMs?.toFixed(1) ?? '?'} ms, ` +
        `${result.failedTransactions ?? '?'} failed, init ${result.initSeconds.toFixed(1)} s, whole machine ${result.machineCpuPercent?.toFixed(0) ?? '?'}% ` +
        `(${elapsedSeconds(phaseStart)})`,
    )
    return { result, missing: undefined }
  } catch (error) {
    log(`  !!! pgbench failed: ${describeError(error)}`)
    return { result: undefined, missing: `pgbench failed (${describeError(error).split('\n', 1)[0]})` }
  }
}

/** Prints where each profiled server's CPU went during each flow's measured window. */
function reportProfiles(dir: string, profiles: readonly ProfileRun[]): void {
  for (const run of profiles) {
    const path = findCpuProfile(dir, run.pid)
    if (path === undefined) {
      log(`no CPU profile of ${run.backendLabel} (pid ${run.pid}) in ${dir}`)
      continue
    }
    log(`CPU profile of Plinth on ${run.backendLabel}: ${path}`)
    for (const window of run.windows) process.stderr.write(`\n${cpuProfileReport(path, window)}\n`)
  }
}

async function main(): Promise<void> {
  const startedAt = performance.now()
  const settings = readSettings()
  quietAllowance.remainingMs = settings.quietWait.totalSeconds * 1000
  installSignalHandlers()

  const buildStart = performance.now()
  const built = await ensureBuilt(ROOT)
  log(`dist/: ${built} (${elapsedSeconds(buildStart)})`)

  const databaseUrl = await resolveDatabaseUrl(settings.postgres)
  const postgres = databaseUrl === undefined ? undefined : await postgresVersion(databaseUrl)

  const profileDir = settings.cpuProf ? mkdtempSync(join(tmpdir(), 'plinth-bench-profile-')) : undefined
  const nodeArgs = profileDir === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', profileDir]
  const { loads, startups, seeds, ledgerChecks, profiles } = await measureTargets(
    settings,
    targets(databaseUrl, nodeArgs).filter((target) => settings.pglite || target.backend !== 'pglite'),
  )
  if (profileDir !== undefined) reportProfiles(profileDir, profiles)
  const pgbench = await measurePgbench(settings, databaseUrl)
  const disk = settings.only === undefined && !settings.cpuProf && settings.pglite && !settings.quick ? await measureDiskStartup() : []
  const memoryRows = startups.filter((row) => !row.label.includes('PostgreSQL'))
  const postgresRows = startups.filter((row) => row.label.includes('PostgreSQL'))

  const report: Report = {
    settings,
    machine: machineInfo(),
    postgres,
    date: new Date().toISOString(),
    loads,
    startups: [...memoryRows, ...disk, ...postgresRows],
    seeds,
    ledgerChecks,
    pgbench: pgbench.result,
    pgbenchMissing: pgbench.missing,
  }
  const previous = existsSync(REPORT) ? readFileSync(REPORT, 'utf8') : ''
  const document = renderReport(report, markdownSection(previous, 'Optimisations'))
  process.stdout.write(`\n${document}`)

  if (settings.write) {
    writeFileSync(REPORT, document)
    log(`wrote ${REPORT}`)
  } else {
    log(`${settings.quick ? 'quick' : 'partial'} run: BENCHMARKS.md left alone (add --write to write it)`)
  }

  const failed = loads.filter(invalid)
  if (failed.length > 0) {
    log(`!!! ${failed.length} scenario(s) had errors: ${failed.map((row) => `${row.scenario} on ${whereLabel(row)}`).join(', ')}`)
    process.exitCode = 1
  }
  const unbalanced = ledgerChecks.filter((row) => !row.check.ok)
  if (unbalanced.length > 0) {
    log(`!!! the ledger check failed on ${unbalanced.map((row) => row.backendLabel).join(', ')}`)
    process.exitCode = 1
  }
  log(`total ${elapsedSeconds(startedAt)}`)
}

main()
  .catch((error: unknown) => {
    process.stderr.write(`[bench] failed: ${error instanceof Error ? (error.stack ?? error.message) : describeError(error)}\n`)
    process.exitCode = 1
  })
  .finally(async () => {
    await runCleanup()
  })
