/**
 * `npm run bench [-- --quick] [-- --write] [-- --no-postgres] [-- --only <text>] [-- --cpu-prof]`
 *
 * Starts each server as a child process, one after the other (the Fastify hello-world baseline,
 * Plinth on PGlite in memory, Plinth on PostgreSQL when one is available), seeds Plinth through
 * its sandbox API, loads every request scenario with autocannon and runs every flow scenario (the
 * payment lifecycles) with concurrent fetch workers, all from this process; runs pgbench against
 * the same PostgreSQL server for scale, and measures startup. Prints the results as Markdown; a
 * full run also writes BENCHMARKS.md (a quick one only with --write).
 */
import { randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import {
  type Backend,
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
  ProcessSampler,
  type ProcessUsage,
  packageVersion,
  pgbenchVersion,
  pgIsReady,
  postgresVersion,
  probe,
  type RunningServer,
  readRssKb,
  runCleanup,
  runFlow,
  runLoad,
  runPgbench,
  type Scenario,
  type ScenarioContext,
  type ServerSpec,
  seed,
  seedFlowTeams,
  startServer,
} from './lib.js'
import { type CpuProfileWindow, cpuProfileReport, findCpuProfile } from './profile.js'
import { scenarios } from './scenarios.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const REPORT = join(ROOT, 'BENCHMARKS.md')
const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test'
/** Above this much CPU (in % of one core) used by others just before a run, the run is flagged as noisy. */
const BUSY_MACHINE_PERCENT = 20

interface Settings {
  quick: boolean
  write: boolean
  connections: number
  durationSeconds: number
  warmupSeconds: number
  apps: number
  users: number
  seedConcurrency: number
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

function readSettings(): Settings & { postgres: boolean } {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      quick: { type: 'boolean', default: false },
      write: { type: 'boolean', default: false },
      'no-postgres': { type: 'boolean', default: false },
      only: { type: 'string' },
      'cpu-prof': { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  })
  if (values.help) {
    process.stdout.write(
      'npm run bench [-- --quick] [--write] [--no-postgres] [--only <text>] [--cpu-prof]\n' +
        '  --quick        300 users, 8 flow workers, 1 s warm-up, 3 s runs; prints only (unless --write)\n' +
        '  --write        write BENCHMARKS.md (always done by a full run)\n' +
        '  --no-postgres  skip Plinth on PostgreSQL (and pgbench) even when one is reachable\n' +
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
    write: values.write || (!quick && only === undefined && !cpuProf),
    postgres: !values['no-postgres'],
    connections: 32,
    durationSeconds: quick ? 3 : 10,
    warmupSeconds: quick ? 1 : 3,
    apps: quick ? 3 : 5,
    users: quick ? 300 : 2000,
    seedConcurrency: 16,
    flowWorkers: quick ? 8 : 16,
    flowUsersPerWorker: quick ? 4 : 8,
    pgbench: { scale: 10, clients: 16, threads: 2, seconds: quick ? 3 : 10 },
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
    args: [...nodeArgs, join(ROOT, 'dist', 'server.js')],
    cwd: ROOT,
    env: { LOG_LEVEL: 'warn', PLINTH_MODE: 'sandbox', ...env },
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
  const server = await startServer(
    plinthSpec(
      'plinth-postgres',
      {
        DATABASE_URL: databaseUrl,
        PLINTH_DB_SCHEMA: schema,
        PLINTH_SECRET_KEY: randomBytes(32).toString('hex'),
      },
      nodeArgs,
    ),
  )
  return {
    server,
    async release() {
      await server.stop()
      unregister()
      await drop()
    },
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

/** One measured row: a request scenario (autocannon, req/s) or a flow scenario (runFlow, lifecycles/s). */
interface LoadRow {
  scenario: string
  backend: Backend
  backendLabel: string
  /** 'req/s' or 'lifecycles/s'. */
  unit: string
  throughput: number
  /** Per request (request scenarios) or per lifecycle (flows), in ms. */
  latencyP50: number
  latencyP99: number
  latencyMax: number
  /** Request scenarios: measured non-2xx + connection errors. Flows: failed lifecycles, warm-up included. */
  errors: number
  detail: { kind: 'request'; load: LoadResult } | { kind: 'flow'; flow: FlowResult; workers: number; problems: string[] }
  peakRssMb: number | undefined
  /** CPU used by the server process during the measured run, in % of one core. */
  serverCpuPercent: number | undefined
  /** CPU used by this process (autocannon) meanwhile, in % of one core. */
  generatorCpuPercent: number
  /** CPU used by the whole machine meanwhile, in % of one core. */
  machineCpuPercent: number | undefined
  /** CPU other processes (not the server, not this one) used over half a second just before the warm-up. */
  backgroundCpuPercent: number | undefined
}

interface StartupRow {
  label: string
  startupMs: number
  /** The readyMs Plinth prints: configuration read to listening, without Node's own start and module loading. */
  serverReadyMs: number | undefined
  rssMb: number | undefined
}

interface SeedRow {
  backendLabel: string
  /** What the data is for. */
  purpose: string
  apps: number
  users: number
  seconds: number
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

/** A profiled server and the measured windows of its flows (process.hrtime, which is the profile's clock). */
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

async function measureTargets(settings: Settings, list: Target[]): Promise<Measured> {
  const loads: LoadRow[] = []
  const startups: StartupRow[] = []
  const seeds: SeedRow[] = []
  const ledgerChecks: LedgerRow[] = []
  const profiles: ProfileRun[] = []
  const tag = randomBytes(3).toString('hex')

  for (const target of list) {
    const relevant = scenarios.filter((scenario) => scenario.backends.includes(target.backend) && selected(settings, scenario))
    if (relevant.length === 0) continue
    const phaseStart = performance.now()
    log(`starting ${target.label} (${target.backend})`)
    const { server, release } = await target.launch()
    try {
      log(`  ready in ${formatNumber(server.startupMs)} ms at ${server.baseUrl} (pid ${server.pid})`)
      if (target.backend !== 'fastify') startups.push(await startupRow(`Plinth, ${target.label}`, server))
      const profile: ProfileRun = { backendLabel: target.label, pid: server.pid, windows: [] }
      if (settings.cpuProf && target.backend !== 'fastify') profiles.push(profile)

      let fixtures: Promise<Fixtures> | undefined
      let flowTeams: Promise<FlowTeam[]> | undefined
      const context: ScenarioContext = {
        backend: target.backend,
        baseUrl: server.baseUrl,
        quick: settings.quick,
        fixtures: () => {
          fixtures ??= seed(server.baseUrl, {
            apps: settings.apps,
            users: settings.users,
            concurrency: settings.seedConcurrency,
            tag,
          }).then((seeded) => {
            const seconds = seeded.seedMs / 1000
            log(`  seeded ${seeded.apps.length} apps, ${seeded.users.length} users with tokens in ${seconds.toFixed(1)} s`)
            seeds.push({ backendLabel: target.label, purpose: 'GET /v2/me', apps: seeded.apps.length, users: seeded.users.length, seconds })
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
            const seconds = seedMs / 1000
            const users = teams.reduce((sum, team) => sum + team.users.length, 0)
            log(`  seeded ${teams.length} flow apps, ${users} users with wallet_address granted in ${seconds.toFixed(1)} s`)
            seeds.push({ backendLabel: target.label, purpose: 'payment flows (one app per worker)', apps: teams.length, users, seconds })
            return teams
          })
          return flowTeams
        },
      }

      let flowsRan = false
      for (const scenario of relevant) {
        if (scenario.kind === 'flow') {
          loads.push(await measureFlow(settings, scenario, context, target, server, profile))
          flowsRan = true
          continue
        }
        const build = await scenario.prepare(context)
        await probe(server.baseUrl, build)
        const background = await otherProcessesBusyPercent(500, [server.pid])
        warnBusy(background)
        const common = { baseUrl: server.baseUrl, connections: settings.connections, build }
        const warm = await runLoad({ ...common, durationSeconds: settings.warmupSeconds })
        log(`  ${scenario.name}: warm-up ${formatNumber(warm.requestsPerSecond)} req/s, ${warm.errors} errors`)
        const sampler = new ProcessSampler(server.pid, 200)
        const generatorCpuAtStart = process.cpuUsage()
        const generatorStartedAt = performance.now()
        sampler.start()
        const load = await runLoad({ ...common, durationSeconds: settings.durationSeconds })
        const usage = await sampler.stop()
        const generatorCpu = process.cpuUsage(generatorCpuAtStart)
        const generatorCpuPercent = (generatorCpu.user + generatorCpu.system) / 10 / (performance.now() - generatorStartedAt)
        log(
          `  ${scenario.name}: ${formatNumber(load.requestsPerSecond)} req/s, p50 ${formatLatency(load.latencyP50)} ms, ` +
            `p99 ${formatLatency(load.latencyP99)} ms, ${load.errors} errors, peak RSS ${usage.peakRssMb?.toFixed(0) ?? '?'} MB, ` +
            `CPU: server ${usage.cpuPercent?.toFixed(0) ?? '?'}%, load generator ${generatorCpuPercent.toFixed(0)}%, ` +
            `whole machine ${usage.machineCpuPercent?.toFixed(0) ?? '?'}%`,
        )
        if (load.errors > 0 || warm.errors > 0) warnErrors(scenario.name, target.label, warm, load)
        loads.push({
          scenario: scenario.name,
          backend: target.backend,
          backendLabel: target.label,
          unit: 'req/s',
          throughput: load.requestsPerSecond,
          latencyP50: load.latencyP50,
          latencyP99: load.latencyP99,
          latencyMax: load.latencyMax,
          errors: load.errors,
          detail: { kind: 'request', load },
          peakRssMb: usage.peakRssMb,
          serverCpuPercent: usage.cpuPercent,
          generatorCpuPercent,
          machineCpuPercent: usage.machineCpuPercent,
          backgroundCpuPercent: background,
        })
      }

      if (flowsRan) {
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

function warnBusy(background: number | undefined): void {
  if (background !== undefined && background > BUSY_MACHINE_PERCENT) {
    log(`  !!! the machine is busy before the run: ${background.toFixed(0)}% of a core used by other processes; expect noisy numbers`)
  }
}

/** Seeds (once per server), runs the flow's warm-up and measured window, samples the server meanwhile, then checks what it left behind. */
async function measureFlow(
  settings: Settings,
  scenario: FlowScenario,
  context: ScenarioContext,
  target: Target,
  server: RunningServer,
  profile: ProfileRun,
): Promise<LoadRow> {
  const prepared = await scenario.prepare(context)
  const background = await otherProcessesBusyPercent(500, [server.pid])
  warnBusy(background)
  const sampler = new ProcessSampler(server.pid, 200)
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
    baseUrl: server.baseUrl,
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
      profile.windows.push({ label: scenario.name, startNs: window.hrStart, endNs: process.hrtime.bigint() })
    },
  })
  const usage = window.usage === undefined ? undefined : await window.usage
  const generatorCpuPercent = window.generatorCpuPercent ?? 0
  const unit = `${scenario.unit}/s`
  log(
    `  ${scenario.name}: ${formatNumber(flow.lifecyclesPerSecond, 1)} ${unit} (${flow.lifecycles} in ${flow.measuredSeconds.toFixed(1)} s, ` +
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
      `ERRORS in ${scenario.name} on ${target.label}: every lifecycle must succeed; these numbers are not valid.`,
      `warm-up: ${flow.warmupErrors} failed; measured (and draining): ${flow.errors} failed`,
      ...flow.failures.flatMap((failure) => [`${failure.count} × ${failure.key}`, `    e.g. ${failure.example}`]),
    ])
  }
  if (problems.length > 0) {
    shout([`${scenario.name} on ${target.label} left the server in an unexpected state:`, ...problems.slice(0, 20)])
  } else {
    log(
      `  ${scenario.name}: afterwards no open payment is left${scenario.name.startsWith('A2U') ? ' and every app account sequence is as counted' : ''}`,
    )
  }
  return {
    scenario: scenario.name,
    backend: target.backend,
    backendLabel: target.label,
    unit,
    throughput: flow.lifecyclesPerSecond,
    latencyP50: flow.latencyP50,
    latencyP99: flow.latencyP99,
    latencyMax: flow.latencyMax,
    errors: flow.errors + flow.warmupErrors,
    detail: { kind: 'flow', flow, workers: prepared.lifecycles.length, problems },
    peakRssMb: usage?.peakRssMb,
    serverCpuPercent: usage?.cpuPercent,
    generatorCpuPercent,
    machineCpuPercent: usage?.machineCpuPercent,
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
  process.stderr.write(
    `\n${bar}\n!!! ERRORS in ${scenario} on ${backend}: every request must succeed; these numbers are not valid.\n` +
      `!!! warm-up: ${warm.non2xx} non-2xx, ${warm.connectionErrors} connection errors (${warm.timeouts} timeouts)\n` +
      `!!! measured: ${load.non2xx} non-2xx, ${load.connectionErrors} connection errors (${load.timeouts} timeouts)\n` +
      `!!! status codes: ${JSON.stringify(load.statusCodes)}\n${bar}\n\n`,
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

function loadTable(loads: LoadRow[], pgbenchTps: number | undefined): string {
  const baseline = loads.find((row) => row.backend === 'fastify')?.throughput
  const rows = loads.map((row) => {
    const flow = row.detail.kind === 'flow'
    const toHello =
      baseline === undefined || baseline === 0
        ? 'n/a'
        : flow
          ? `${smallRatio(row.throughput / baseline)}× (lifecycles/s ÷ req/s)`
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
    '\n\nThroughput is in the row’s unit. For the request rows (req/s), the ratio is req/s ÷ the hello-world req/s and latencies are per request. ' +
      'For the lifecycle rows (lifecycles/s), the ratio to hello-world is **lifecycles/s ÷ hello-world req/s** (a lifecycle is 3 HTTP requests ' +
      'for A2U plus a transaction signed by the load generator, 4 for U2A), latencies are per whole lifecycle, and errors are failed lifecycles, warm-up included. ' +
      'The A2U rows also show **lifecycles/s ÷ `pgbench -b tpcb-like` TPS** of the PostgreSQL server Plinth used (see pgbench below; ' +
      'on the PGlite row it compares with that same PostgreSQL figure, as PGlite has no pgbench).',
  )
}

function cpuTable(loads: LoadRow[], cores: number): string {
  const percent = (value: number | undefined) => (value === undefined ? 'n/a' : `${Math.max(0, value).toFixed(0)}%`)
  const rest = (row: LoadRow) =>
    row.machineCpuPercent === undefined || row.serverCpuPercent === undefined
      ? undefined
      : row.machineCpuPercent - row.serverCpuPercent - row.generatorCpuPercent
  return markdownTable(
    [
      'scenario',
      'backend',
      'server process',
      'load generator',
      'everything else (PostgreSQL, …)',
      'whole machine',
      'others, before the run',
    ],
    loads.map((row) => [
      row.scenario,
      row.backendLabel,
      percent(row.serverCpuPercent),
      percent(row.generatorCpuPercent),
      percent(rest(row)),
      percent(row.machineCpuPercent),
      `${percent(row.backgroundCpuPercent)}${(row.backgroundCpuPercent ?? 0) > BUSY_MACHINE_PERCENT ? ' ⚠' : ''}`,
    ]),
    ['left', 'left', 'right', 'right', 'right', 'right', 'right'],
  ).concat(
    `\n\nIn % of one core, over the measured run; the machine has ${cores} cores, so ${cores * 100}% is all of it. ` +
      'The load generator of the lifecycle rows includes building and signing the A2U transactions (@stellar/stellar-base, ed25519).',
  )
}

function flowTable(loads: LoadRow[]): string {
  const rows: string[][] = []
  for (const row of loads) {
    if (row.detail.kind !== 'flow') continue
    const { flow, workers, problems } = row.detail
    rows.push([
      row.scenario,
      row.backendLabel,
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
    ['backend', 'for', 'apps', 'users (1 token each)', 'seconds', `users/s (${concurrency} requests in flight)`],
    seeds.map((row) => [
      row.backendLabel,
      row.purpose,
      String(row.apps),
      formatNumber(row.users),
      row.seconds.toFixed(1),
      formatNumber(row.users / row.seconds),
    ]),
    ['left', 'left', 'right', 'right', 'right', 'right'],
  )
}

function notes(report: Report): string {
  const s = report.settings
  const lines = [
    '## Notes',
    '',
    `- Every server is a separate child process started by \`bench/run.ts\`, one at a time, on 127.0.0.1 and a random free port: ` +
      '`node --import tsx bench/hello.ts` for the baseline (Fastify, logger off, a response schema), and the built server ' +
      '`node dist/server.js` for Plinth (`LOG_LEVEL=warn`, `PLINTH_MODE=sandbox`; `dist/` is rebuilt first when older than `src/`). ' +
      'The load generator (autocannon’s programmatic API for the request scenarios, fetch workers for the lifecycles) runs in the orchestrator, ' +
      `so it is never in the server’s process; on this ${report.machine.cores}-core machine the two do share the CPU.`,
    `- Load: ${s.connections} connections, no pipelining, a ${s.warmupSeconds} s warm-up run that is not counted, then ` +
      `${s.durationSeconds} s measured. req/s is the mean of autocannon’s per-second samples; latencies are autocannon’s, in whole milliseconds (it truncates, so <1 is under a millisecond). ` +
      'The ratio is req/s divided by the hello-world req/s of the same run, which travels better between machines than raw numbers.',
    `- Data: ${s.apps} apps and ${formatNumber(s.users)} users are made through the sandbox API (\`POST /sandbox/apps\`, ` +
      '`POST /sandbox/users`, `POST /sandbox/apps/{app_id}/authenticate` with the `username` and `payments` scopes, ' +
      `${s.seedConcurrency} requests in flight), each user signed in to one app. \`GET /v2/me\` spreads its requests over all ` +
      `${formatNumber(s.users)} distinct access tokens (\`Authorization: Bearer …\`), dealt in a shuffled order that uses every token before any repeats.`,
    `- Payment lifecycles are flows of several requests, so they are not run by autocannon: ${s.flowWorkers} workers in the orchestrator each loop one ` +
      'lifecycle after another over keep-alive connections (Node’s fetch, i.e. undici), for the same warm-up (not counted) and measured time as the request ' +
      'scenarios; a lifecycle counts when its last answer arrives inside the measured window, and lifecycles/s is that count ÷ the window. ' +
      'Latency is per whole lifecycle (first request sent to last answer read). Any answer but the expected status (or a body that says otherwise) fails ' +
      'the lifecycle and counts as an error; the run warns loudly. After the window each worker finishes the lifecycle it is in (not counted), so nothing is left half paid.',
    `- Each worker has its own app and its own ${s.flowUsersPerWorker} users of that app, seeded for the flows (\`POST /sandbox/apps\`, whose wallet seed the ` +
      'worker signs with, and users signed in with the `username`, `payments` and `wallet_address` scopes): a user has at most one open payment per app ' +
      'in each direction, and an app account’s transactions must carry consecutive sequence numbers. Each lifecycle pays 0.01 test Pi to or from the ' +
      'worker’s next user in turn.',
    '- **A2U lifecycle**: `POST /v2/payments` (`Authorization: Key`, `{payment: {amount: 0.01, memo, metadata: {}, uid}}`, 200) → the worker builds and ' +
      'signs with @stellar/stellar-base a native payment of the amount from the app wallet to the payment’s `to_address`, text memo = the payment ' +
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
    '- CPU is read from `/proc`: the server process’s user + system time, this process’s (the load generator’s) own, and the whole machine’s busy time; ' +
      '“everything else” is the difference, mostly the PostgreSQL backends when PostgreSQL is used. When the load generator is near 100% ' +
      'it, not the server, may be the limit, which matters most for the hello-world baseline. “Others, before the run” is the CPU used by other processes (neither the server nor ' +
      `the load generator) over half a second just before the warm-up: anything above ${BUSY_MACHINE_PERCENT}% (⚠) means other work shared the machine and the row is noisy.`,
    '- Errors are non-2xx answers plus connection errors (timeouts included) for the request rows, failed lifecycles for the lifecycle rows; any other count than 0 invalidates the row and the run warns loudly.',
    '- Peak RSS is the server process’s VmRSS (from `/proc/<pid>/status`), sampled every 200 ms during the measured run only.',
    '- Startup is the time from spawn to the first 200 from `GET /readyz`, polled every 20 ms; “reported by Plinth” is the `ready in … ms` of ' +
      'its banner (configuration read to listening: opening the database, migrations, building the app), without Node’s own start and module loading. ' +
      'Cold is PGlite in a new temporary `PLINTH_DATA_DIR` (creating the database cluster, migrating, seeding the demo app); warm is a second start ' +
      'on the same directory. The in-memory and PostgreSQL rows are the starts of the servers measured above; on PostgreSQL the server ' +
      'creates a fresh schema `bench_<hex>`, which is dropped afterwards.',
    '- `npm run bench -- --only A2U --cpu-prof` runs just the A2U lifecycle with the Plinth servers under `node --cpu-prof` and prints where their CPU ' +
      'went during the measured window (by package and by function); it writes nothing here, as the profiler slows the server.',
  ]
  if (s.quick)
    lines.push('- This was a `--quick` run: fewer users and workers and short runs, for a smoke test rather than numbers to compare.')
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
      `> **Warning: ${failed.map((row) => `${row.scenario} on ${row.backendLabel}`).join(', ')} had errors; those rows are not valid measurements.**`,
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
  const sections = [
    header.join('\n'),
    `## Throughput and latency\n\n${loadTable(report.loads, report.pgbench?.tps)}`,
    `## CPU during the measured runs\n\n${cpuTable(report.loads, report.machine.cores)}`,
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
  installSignalHandlers()

  const buildStart = performance.now()
  const built = await ensureBuilt(ROOT)
  log(`dist/: ${built} (${elapsedSeconds(buildStart)})`)

  const databaseUrl = await resolveDatabaseUrl(settings.postgres)
  const postgres = databaseUrl === undefined ? undefined : await postgresVersion(databaseUrl)

  const profileDir = settings.cpuProf ? mkdtempSync(join(tmpdir(), 'plinth-bench-profile-')) : undefined
  const nodeArgs = profileDir === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', profileDir]
  const { loads, startups, seeds, ledgerChecks, profiles } = await measureTargets(settings, targets(databaseUrl, nodeArgs))
  if (profileDir !== undefined) reportProfiles(profileDir, profiles)
  const pgbench = await measurePgbench(settings, databaseUrl)
  const disk = settings.only === undefined && !settings.cpuProf ? await measureDiskStartup() : []
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
    log(`!!! ${failed.length} scenario(s) had errors: ${failed.map((row) => `${row.scenario} on ${row.backendLabel}`).join(', ')}`)
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
