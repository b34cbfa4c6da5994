/** Measuring: every scenario on every server, and the scaling runs (quiet.ts waits for a quiet machine; startup.ts has the startup rows, measure-batches.ts the ledger's batch runs). */
import { randomBytes } from 'node:crypto'
import { scenarioContext } from './context.js'
import {
  type Backend,
  type BatchScenario,
  elapsedSeconds,
  type FlowScenario,
  formatLatency,
  formatNumber,
  type LoadResult,
  ledgerCheck,
  log,
  type OwnBackends,
  type PreparedFlow,
  type PreparedRequests,
  type ProcessUsage,
  probe,
  type RequestScenario,
  type RunningServer,
  runFlow,
  runLoad,
  type Scenario,
  type SeedRecord,
} from './lib.js'
import { measureBatches } from './measure-batches.js'
import { describeServing, type ProfileRun, type Serving, samplerFor, shout, urlsOf } from './measure-common.js'
import { quietAllowance, quietMachine } from './quiet.js'
import { type BatchRow, invalid, type LedgerRow, type LoadRow, othersDuring, percent, type SeedRow, type StartupRow } from './rows.js'
import { scenarios } from './scenarios.js'
import { NOISY_PERCENT, type Settings } from './settings.js'
import { startupRow } from './startup.js'
import type { Target } from './targets.js'

// ---------------------------------------------------------------------------------------------
// Measuring.

interface Measured {
  loads: LoadRow[]
  ledgerBatches: BatchRow[]
  startups: StartupRow[]
  seeds: SeedRow[]
  ledgerChecks: LedgerRow[]
  profiles: ProfileRun[]
}

export function selected(settings: Settings, scenario: Scenario): boolean {
  return settings.only === undefined || scenario.name.toLowerCase().includes(settings.only.toLowerCase())
}

/** The scenarios measured as one row each (per process count), with measureQuietly. */
type LoadScenario = Exclude<Scenario, BatchScenario>

const isLoad = (scenario: Scenario): scenario is LoadScenario => scenario.kind !== 'batches'
const isBatches = (scenario: Scenario): scenario is BatchScenario => scenario.kind === 'batches'

/** Whether the scenario runs on this backend in this run (--quick runs some on fewer backends). */
function runsOn(settings: Settings, scenario: Scenario, backend: Backend): boolean {
  const backends = settings.quick ? (scenario.quickBackends ?? scenario.backends) : scenario.backends
  return backends.includes(backend) && scenario.backends.includes(backend) && selected(settings, scenario)
}

export async function measureTargets(settings: Settings, list: Target[]): Promise<Measured> {
  const loads: LoadRow[] = []
  const ledgerBatches: BatchRow[] = []
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

      const recordSeed = (record: SeedRecord) => {
        log(`  seeded for ${record.purpose}: ${record.made} in ${record.seconds.toFixed(1)} s`)
        seeds.push({ backendLabel: target.label, ...record })
      }
      const context = scenarioContext({
        backend: target.backend,
        baseUrl: server.baseUrl,
        settings,
        minUsersPerApp: Math.max(0, ...relevant.map((scenario) => scenario.minUsersPerApp ?? 0)),
        tag,
        recordSeed,
      })

      // Request scenarios are prepared (seeded) once per server; the scaling runs reuse what they made.
      const prepared = new Map<string, PreparedRequests>()
      const prepare = async (scenario: RequestScenario) => {
        const found = prepared.get(scenario.name)
        if (found !== undefined) return found
        const made = await scenario.prepare(context)
        prepared.set(scenario.name, made)
        return made
      }
      const single: Serving = { target, servers: [server], profile: settings.cpuProf ? profile : undefined, backends: launched.backends }
      const measureOnce = async (scenario: LoadScenario, serving: Serving) =>
        scenario.kind === 'flow'
          ? measureFlow(settings, scenario, await scenario.prepare(context), serving)
          : measureRequests(settings, scenario, await prepare(scenario), serving)
      const measure = (scenario: LoadScenario, serving: Serving) => measureQuietly(scenario, serving, measureOnce)

      for (const scenario of relevant.filter(isLoad).filter((candidate) => candidate.movesClock !== true))
        loads.push(await measure(scenario, single))
      for (const scenario of relevant.filter(isBatches))
        ledgerBatches.push(...(await measureBatches(settings, scenario, context, single, tag)))

      const replicate = launched.replicate
      if (replicate !== undefined) {
        // A --quick run scales the request scenarios only (the lifecycles' scaling is a full run's).
        const scaling = scenarios
          .filter(isLoad)
          .filter(
            (scenario) =>
              scenario.scaling === true && runsOn(settings, scenario, target.backend) && !(settings.quick && scenario.kind === 'flow'),
          )
        // The scaling runs; without any (--only), still one more process, for the warm start.
        if (scaling.length > 0 || settings.only === undefined) {
          const scaled = await measureScaling(settings, scaling, target, server, replicate, measure, launched.backends)
          loads.push(...scaled.rows)
          startups.push(scaled.warmStart)
        }
      }

      for (const scenario of relevant.filter(isLoad).filter((candidate) => candidate.movesClock === true))
        loads.push(await measure(scenario, single))

      if (relevant.some((scenario) => scenario.kind !== 'request')) {
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
  return { loads, ledgerBatches, startups, seeds, ledgerChecks, profiles }
}

/**
 * Measures once; when other work took more than NOISY_PERCENT of a core during the measured run
 * (and the first run had no errors, which must never be hidden), measures again after waiting for
 * quiet, within the run's allowance (Settings.quietWait), and keeps the quieter of the two.
 */
async function measureQuietly(
  scenario: LoadScenario,
  serving: Serving,
  measureOnce: (scenario: LoadScenario, serving: Serving) => Promise<LoadRow>,
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
  scaling: readonly LoadScenario[],
  target: Target,
  primary: RunningServer,
  replicate: (name: string) => Promise<RunningServer>,
  measure: (scenario: LoadScenario, serving: Serving) => Promise<LoadRow>,
  backends: OwnBackends | undefined,
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
      for (const scenario of scaling) rows.push(await measure(scenario, { target, servers, profile: undefined, backends }))
    }
    return { rows, warmStart }
  } finally {
    await Promise.all(replicas.map((replica) => replica.stop()))
  }
}

/** Probes, warms up, then loads a request scenario with autocannon over the serving processes, sampling them meanwhile. */
export async function measureRequests(
  settings: Settings,
  scenario: RequestScenario,
  prepared: PreparedRequests,
  serving: Serving,
): Promise<LoadRow> {
  const { servers } = serving
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
  const sampler = await samplerFor(serving)
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
    ...rowOf(scenario.name, serving, unit),
    throughput,
    latencyP50: load.latencyP50,
    latencyP99: load.latencyP99,
    latencyMax: load.latencyMax,
    errors: load.errors + warm.errors,
    detail: { kind: 'request', load, warmupErrors: warm.errors },
    summary,
    ...cpuOf(usage, generatorCpuPercent, background),
  }
}

/** Runs the flow's warm-up and measured window over the serving processes, samples them meanwhile, then checks what it left behind. */
export async function measureFlow(settings: Settings, scenario: FlowScenario, prepared: PreparedFlow, serving: Serving): Promise<LoadRow> {
  const { servers } = serving
  const pids = servers.map((server) => server.pid)
  const where = describeServing(serving)
  const background = await quietMachine(settings, pids)
  const sampler = await samplerFor(serving)
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
    ...rowOf(scenario.name, serving, unit),
    throughput: flow.lifecyclesPerSecond,
    latencyP50: flow.latencyP50,
    latencyP99: flow.latencyP99,
    latencyMax: flow.latencyMax,
    errors: flow.errors + flow.warmupErrors,
    detail: { kind: 'flow', flow, workers: prepared.lifecycles.length, problems },
    summary: undefined,
    ...cpuOf(usage, generatorCpuPercent, background),
  }
}

/** What names a row: the scenario, where it ran, and its unit. */
function rowOf(
  scenario: string,
  serving: Serving,
  unit: string,
): Pick<LoadRow, 'scenario' | 'backend' | 'backendLabel' | 'processes' | 'unit'> {
  return { scenario, backend: serving.target.backend, backendLabel: serving.target.label, processes: serving.servers.length, unit }
}

/** A row's memory and CPU figures from the sampled processes (undefined where nothing was sampled). */
function cpuOf(usage: ProcessUsage | undefined, generatorCpuPercent: number, background: number | undefined) {
  return {
    peakRssMb: usage?.peakRssMb,
    serverCpuPercent: usage?.cpuPercent,
    generatorCpuPercent,
    machineCpuPercent: usage?.machineCpuPercent,
    postgresCpuPercent: usage?.postgresCpuPercent,
    backgroundCpuPercent: background,
  }
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
