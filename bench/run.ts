/**
 * `npm run bench [-- --quick] [-- --write] [-- --no-postgres]`
 *
 * Starts each server as a child process, one after the other (the Fastify hello-world baseline,
 * Plinth on PGlite in memory, Plinth on PostgreSQL when one is available), seeds Plinth through
 * its sandbox API, loads every scenario with autocannon from this process, and measures startup.
 * Prints the results as Markdown; a full run also writes BENCHMARKS.md (a quick one only with --write).
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
  formatLatency,
  formatNumber,
  installSignalHandlers,
  type LoadResult,
  log,
  type MachineInfo,
  machineInfo,
  markdownSection,
  markdownTable,
  onCleanup,
  otherProcessesBusyPercent,
  ProcessSampler,
  packageVersion,
  pgIsReady,
  postgresVersion,
  probe,
  type RunningServer,
  readRssKb,
  runCleanup,
  runLoad,
  type ScenarioContext,
  type ServerSpec,
  seed,
  startServer,
} from './lib.js'
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
  command: string
}

function readSettings(): Settings & { postgres: boolean } {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: {
      quick: { type: 'boolean', default: false },
      write: { type: 'boolean', default: false },
      'no-postgres': { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  })
  if (values.help) {
    process.stdout.write(
      'npm run bench [-- --quick] [--write] [--no-postgres]\n' +
        '  --quick        300 users, 1 s warm-up, 3 s runs; prints only (unless --write)\n' +
        '  --write        write BENCHMARKS.md (always done by a full run)\n' +
        '  --no-postgres  skip Plinth on PostgreSQL even when one is reachable\n',
    )
    process.exit(0)
  }
  const quick = values.quick
  const flags = process.argv.slice(2)
  return {
    quick,
    write: !quick || values.write,
    postgres: !values['no-postgres'],
    connections: 32,
    durationSeconds: quick ? 3 : 10,
    warmupSeconds: quick ? 1 : 3,
    apps: quick ? 3 : 5,
    users: quick ? 300 : 2000,
    seedConcurrency: 16,
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

function plinthSpec(name: string, env: Record<string, string>): ServerSpec {
  return {
    name,
    command: process.execPath,
    args: [join(ROOT, 'dist', 'server.js')],
    cwd: ROOT,
    env: { LOG_LEVEL: 'warn', PLINTH_MODE: 'sandbox', ...env },
  }
}

async function launchSimple(spec: ServerSpec): Promise<Launched> {
  const server = await startServer(spec)
  return { server, release: () => server.stop() }
}

/** Plinth on a fresh schema of the PostgreSQL server; the schema is dropped when released (or on failure/Ctrl-C). */
async function launchPostgres(databaseUrl: string): Promise<Launched> {
  const schema = `bench_${randomBytes(6).toString('hex')}`
  const drop = async () => {
    await dropSchema(databaseUrl, schema)
    log(`dropped schema ${schema}`)
  }
  const unregister = onCleanup(drop)
  const server = await startServer(
    plinthSpec('plinth-postgres', {
      DATABASE_URL: databaseUrl,
      PLINTH_DB_SCHEMA: schema,
      PLINTH_SECRET_KEY: randomBytes(32).toString('hex'),
    }),
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

function targets(databaseUrl: string | undefined): Target[] {
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
      launch: () => launchSimple(plinthSpec('plinth-pglite', { PLINTH_DATA_DIR: 'memory' })),
    },
  ]
  if (databaseUrl !== undefined) list.push({ backend: 'postgres', label: 'PostgreSQL', launch: () => launchPostgres(databaseUrl) })
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

interface LoadRow {
  scenario: string
  backend: Backend
  backendLabel: string
  load: LoadResult
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
  apps: number
  users: number
  seconds: number
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

async function measureTargets(settings: Settings, list: Target[]): Promise<{ loads: LoadRow[]; startups: StartupRow[]; seeds: SeedRow[] }> {
  const loads: LoadRow[] = []
  const startups: StartupRow[] = []
  const seeds: SeedRow[] = []
  const tag = randomBytes(3).toString('hex')

  for (const target of list) {
    const relevant = scenarios.filter((scenario) => scenario.backends.includes(target.backend))
    if (relevant.length === 0) continue
    const phaseStart = performance.now()
    log(`starting ${target.label} (${target.backend})`)
    const { server, release } = await target.launch()
    try {
      log(`  ready in ${formatNumber(server.startupMs)} ms at ${server.baseUrl} (pid ${server.pid})`)
      if (target.backend !== 'fastify') startups.push(await startupRow(`Plinth, ${target.label}`, server))

      let fixtures: Promise<Fixtures> | undefined
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
            seeds.push({ backendLabel: target.label, apps: seeded.apps.length, users: seeded.users.length, seconds })
            return seeded
          })
          return fixtures
        },
      }

      for (const scenario of relevant) {
        const build = await scenario.prepare(context)
        await probe(server.baseUrl, build)
        const background = await otherProcessesBusyPercent(500, [server.pid])
        if (background !== undefined && background > BUSY_MACHINE_PERCENT) {
          log(`  !!! the machine is busy before the run: ${background.toFixed(0)}% of a core used by other processes; expect noisy numbers`)
        }
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
          load,
          peakRssMb: usage.peakRssMb,
          serverCpuPercent: usage.cpuPercent,
          generatorCpuPercent,
          machineCpuPercent: usage.machineCpuPercent,
          backgroundCpuPercent: background,
        })
      }
    } finally {
      await release()
    }
    log(`  ${target.label} done in ${elapsedSeconds(phaseStart)}`)
  }
  return { loads, startups, seeds }
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
}

function loadTable(loads: LoadRow[]): string {
  const baseline = loads.find((row) => row.backend === 'fastify')?.load.requestsPerSecond
  const rows = loads.map((row) => [
    row.scenario,
    row.backendLabel,
    formatNumber(row.load.requestsPerSecond),
    baseline === undefined || baseline === 0 ? 'n/a' : `${(row.load.requestsPerSecond / baseline).toFixed(2)}×`,
    formatLatency(row.load.latencyP50),
    formatLatency(row.load.latencyP99),
    formatLatency(row.load.latencyMax),
    row.load.errors === 0 ? '0' : `**${row.load.errors}** ⚠`,
    row.peakRssMb === undefined ? 'n/a' : row.peakRssMb.toFixed(0),
  ])
  return markdownTable(
    ['scenario', 'backend', 'req/s', 'ratio to hello-world', 'p50 (ms)', 'p99 (ms)', 'max (ms)', 'errors', 'peak RSS MB'],
    rows,
    ['left', 'left', 'right', 'right', 'right', 'right', 'right', 'right', 'right'],
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
  ).concat(`\n\nIn % of one core, over the measured run; the machine has ${cores} cores, so ${cores * 100}% is all of it.`)
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
    ['backend', 'apps', 'users (1 token each)', 'seconds', `users/s (${concurrency} requests in flight)`],
    seeds.map((row) => [
      row.backendLabel,
      String(row.apps),
      formatNumber(row.users),
      row.seconds.toFixed(1),
      formatNumber(row.users / row.seconds),
    ]),
    ['left', 'right', 'right', 'right', 'right'],
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
      'The load generator is autocannon’s programmatic API running in the orchestrator, so it is never in the server’s process; ' +
      `on this ${report.machine.cores}-core machine the two do share the CPU.`,
    `- Load: ${s.connections} connections, no pipelining, a ${s.warmupSeconds} s warm-up run that is not counted, then ` +
      `${s.durationSeconds} s measured. req/s is the mean of autocannon’s per-second samples; latencies are autocannon’s, in whole milliseconds (it truncates, so <1 is under a millisecond). ` +
      'The ratio is req/s divided by the hello-world req/s of the same run, which travels better between machines than raw numbers.',
    `- Data: ${s.apps} apps and ${formatNumber(s.users)} users are made through the sandbox API (\`POST /sandbox/apps\`, ` +
      '`POST /sandbox/users`, `POST /sandbox/apps/{app_id}/authenticate` with the `username` and `payments` scopes, ' +
      `${s.seedConcurrency} requests in flight), each user signed in to one app. \`GET /v2/me\` spreads its requests over all ` +
      `${formatNumber(s.users)} distinct access tokens (\`Authorization: Bearer …\`), dealt in a shuffled order that uses every token before any repeats.`,
    '- CPU is read from `/proc`: the server process’s user + system time, this process’s (autocannon’s) own, and the whole machine’s busy time; ' +
      '“everything else” is the difference, mostly the PostgreSQL backends when PostgreSQL is used. When the load generator is near 100% ' +
      'it, not the server, may be the limit, which matters most for the hello-world baseline. “Others, before the run” is the CPU used by other processes (neither the server nor ' +
      `the load generator) over half a second just before the warm-up: anything above ${BUSY_MACHINE_PERCENT}% (⚠) means other work shared the machine and the row is noisy.`,
    '- Errors are non-2xx answers plus connection errors (timeouts included); any other count than 0 invalidates the row and the run warns loudly.',
    '- Peak RSS is the server process’s VmRSS (from `/proc/<pid>/status`), sampled every 200 ms during the measured run only.',
    '- Startup is the time from spawn to the first 200 from `GET /readyz`, polled every 20 ms; “reported by Plinth” is the `ready in … ms` of ' +
      'its banner (configuration read to listening: opening the database, migrations, building the app), without Node’s own start and module loading. ' +
      'Cold is PGlite in a new temporary `PLINTH_DATA_DIR` (creating the database cluster, migrating, seeding the demo app); warm is a second start ' +
      'on the same directory. The in-memory and PostgreSQL rows are the starts of the servers measured above; on PostgreSQL the server ' +
      'creates a fresh schema `bench_<hex>`, which is dropped afterwards.',
  ]
  if (s.quick) lines.push('- This was a `--quick` run: fewer users and short runs, for a smoke test rather than numbers to compare.')
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
      `autocannon ${packageVersion(ROOT, 'autocannon')}`,
    `- PostgreSQL server: ${report.postgres ?? 'not used'}`,
    `- Command: \`${settings.command}\``,
  ]
  const failed = report.loads.filter((row) => row.load.errors > 0)
  if (failed.length > 0) {
    header.push(
      '',
      `> **Warning: ${failed.map((row) => `${row.scenario} on ${row.backendLabel}`).join(', ')} had errors; those rows are not valid measurements.**`,
    )
  }
  const sections = [
    header.join('\n'),
    `## Throughput and latency\n\n${loadTable(report.loads)}`,
    `## CPU during the measured runs\n\n${cpuTable(report.loads, report.machine.cores)}`,
    `## Startup\n\n${startupTable(report.startups)}`,
    `## Seeding\n\n${seedTable(report.seeds, settings.seedConcurrency)}`,
    notes(report),
  ]
  if (preserved !== undefined) sections.push(preserved)
  return `${sections.join('\n\n')}\n`
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const startedAt = performance.now()
  const settings = readSettings()
  installSignalHandlers()

  const buildStart = performance.now()
  const built = await ensureBuilt(ROOT)
  log(`dist/: ${built} (${elapsedSeconds(buildStart)})`)

  const databaseUrl = await resolveDatabaseUrl(settings.postgres)
  const postgres = databaseUrl === undefined ? undefined : await postgresVersion(databaseUrl)

  const { loads, startups, seeds } = await measureTargets(settings, targets(databaseUrl))
  const disk = await measureDiskStartup()
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
  }
  const previous = existsSync(REPORT) ? readFileSync(REPORT, 'utf8') : ''
  const document = renderReport(report, markdownSection(previous, 'Optimisations'))
  process.stdout.write(`\n${document}`)

  if (settings.write) {
    writeFileSync(REPORT, document)
    log(`wrote ${REPORT}`)
  } else {
    log('quick run: BENCHMARKS.md left alone (add --write to write it)')
  }

  const failed = loads.filter((row) => row.load.errors > 0)
  if (failed.length > 0) {
    log(`!!! ${failed.length} scenario(s) had errors: ${failed.map((row) => `${row.scenario} on ${row.backendLabel}`).join(', ')}`)
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
