/** The ledger's batch runs (Settings.batches): one flow at several counts of workers on one process, with the closer's batches counted. */
import {
  type BatchHistogram,
  type BatchScenario,
  batchesBetween,
  describeError,
  formatLatency,
  formatNumber,
  log,
  NO_BATCH_METRIC,
  type PreparedFlow,
  type ProcessUsage,
  type RunningServer,
  readBatchHistogram,
  runFlow,
  type ScenarioContext,
  seedFlowTeams,
} from './lib.js'
import { describeServing, type Serving, samplerFor, shout } from './measure-common.js'
import { quietMachine } from './quiet.js'
import { type BatchRow, batchInvalid } from './rows.js'
import type { Settings } from './settings.js'
import { METRICS_TOKEN } from './targets.js'

/**
 * The batch runs: the scenario's flow at each count of workers (Settings.batches) on the one
 * process, each its own warm-up and measured window. A team (app and users) per worker, seeded
 * once for the largest count under a tag of its own (the flows' teams have the run's tag).
 */
export async function measureBatches(
  settings: Settings,
  scenario: BatchScenario,
  context: ScenarioContext,
  serving: Serving,
  tag: string,
): Promise<BatchRow[]> {
  const largest = Math.max(...settings.batches.workers)
  const teams = await context.shared(`${scenario.name} teams`, async () => {
    const seeded = await seedFlowTeams(context.baseUrl, {
      teams: largest,
      usersPerTeam: settings.flowUsersPerWorker,
      concurrency: settings.seedConcurrency,
      tag: `${tag}b`,
    })
    const users = seeded.teams.reduce((sum, team) => sum + team.users.length, 0)
    context.recordSeed({
      purpose: `${scenario.name} (one app per worker)`,
      made: `${seeded.teams.length} apps, ${users} users with wallet_address granted`,
      items: users,
      seconds: seeded.seedMs / 1000,
    })
    return seeded.teams
  })
  const rows: BatchRow[] = []
  for (const workers of settings.batches.workers) {
    rows.push(await measureBatchRun(settings, scenario, scenario.flow(teams.slice(0, workers), context.baseUrl), serving))
  }
  return rows
}

/**
 * One batch run: the flow's warm-up and measured window, the process and PostgreSQL sampled meanwhile,
 * and the ledger closer's histogram scraped as the window opens and as it closes: the batches closed
 * in between are the difference. A lifecycle's submit may straddle an edge, so the batches and the
 * lifecycles counted can differ by about the workers' number.
 */
async function measureBatchRun(settings: Settings, scenario: BatchScenario, prepared: PreparedFlow, serving: Serving): Promise<BatchRow> {
  const { baseUrl, pid } = serving.servers[0] as RunningServer
  const workers = prepared.lifecycles.length
  const where = `${describeServing(serving)}, ${workers} worker${workers === 1 ? '' : 's'}`
  const background = await quietMachine(settings, [pid])
  const sampler = await samplerFor(serving)
  // A scrape answers the histogram, or why there is none; it never rejects, as it runs unawaited during the flow.
  const scrape = (): Promise<BatchHistogram | string> =>
    readBatchHistogram(baseUrl, METRICS_TOKEN).then(
      (found) => found ?? NO_BATCH_METRIC,
      (error: unknown) => `no batch figures: ${describeError(error)}`,
    )
  const window: { before?: Promise<BatchHistogram | string>; after?: Promise<BatchHistogram | string>; usage?: Promise<ProcessUsage> } = {}
  let hrStart = 0n
  const flow = await runFlow({
    baseUrl,
    lifecycles: prepared.lifecycles,
    warmupSeconds: settings.batches.warmupSeconds,
    durationSeconds: settings.batches.durationSeconds,
    onMeasureStart: () => {
      window.before = scrape()
      sampler.start()
      hrStart = process.hrtime.bigint()
    },
    onMeasureEnd: () => {
      window.usage = sampler.stop()
      window.after = scrape()
      serving.profile?.windows.push({ label: `${scenario.name}, ${where}`, startNs: hrStart, endNs: process.hrtime.bigint() })
    },
  })
  const usage = window.usage === undefined ? undefined : await window.usage
  const before = (await window.before) ?? 'no batch figures: the measured window never opened'
  const after = (await window.after) ?? 'no batch figures: the measured window never closed'
  const missing = typeof before === 'string' ? before : typeof after === 'string' ? after : undefined
  const batches = typeof before === 'string' || typeof after === 'string' ? undefined : batchesBetween(before, after)
  const submit = flow.steps.find((step) => step.name === 'submit')
  log(
    `  ${scenario.name} (${where}): ${formatNumber(flow.lifecyclesPerSecond, 1)} lifecycles/s (${flow.lifecycles} in ${flow.measuredSeconds.toFixed(1)} s), ` +
      `p50 ${formatLatency(flow.latencyP50)} ms, p99 ${formatLatency(flow.latencyP99)} ms, submit mean ${submit?.meanMs.toFixed(1) ?? '?'} ms ` +
      `p99 ${submit?.p99Ms.toFixed(1) ?? '?'} ms, ${flow.errors + flow.warmupErrors} errors, CPU: server ${usage?.cpuPercent?.toFixed(0) ?? '?'}%, ` +
      `PostgreSQL ${usage?.postgresCpuPercent?.toFixed(0) ?? '?'}%`,
  )
  log(
    batches === undefined
      ? `    ${missing ?? NO_BATCH_METRIC}`
      : `    batches: ${batches.batches} closed, ${batches.meanPerBatch?.toFixed(2) ?? '–'} transactions each on average; by size: ` +
          (batches.sizes.map((bin) => `${bin.sizes} × ${bin.batches}`).join(', ') || 'none'),
  )
  const problems = await prepared.verify()
  const row: BatchRow = {
    scenario: scenario.name,
    backendLabel: serving.target.label,
    workers,
    flow,
    errors: flow.errors + flow.warmupErrors,
    problems,
    batches,
    batchesMissing: missing,
    serverCpuPercent: usage?.cpuPercent,
    postgresCpuPercent: usage?.postgresCpuPercent,
    machineCpuPercent: usage?.machineCpuPercent,
    backgroundCpuPercent: background,
  }
  if (batchInvalid(row)) {
    shout([
      `ERRORS in ${scenario.name} on ${where}: every lifecycle must succeed and leave nothing open; these numbers are not valid.`,
      ...flow.failures.flatMap((failure) => [`${failure.count} × ${failure.key}`, `    e.g. ${failure.example}`]),
      ...problems.slice(0, 20),
    ])
  }
  return row
}
