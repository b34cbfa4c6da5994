import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runCompare } from './compare.js'
import {
  describeError,
  elapsedSeconds,
  ensureBuilt,
  formatNumber,
  installSignalHandlers,
  log,
  machineInfo,
  markdownSection,
  type PgbenchResult,
  pgbenchOrWhyNot,
  pgbenchVersion,
  postgresVersion,
  runCleanup,
} from './lib.js'
import { measureTargets, selected } from './measure.js'
import type { ProfileRun } from './measure-common.js'
import { cpuProfileReport, findCpuProfile } from './profile.js'
import { quietAllowance } from './quiet.js'
import { type Report, whereLabel } from './report/common.js'
import { KEPT_SECTIONS, renderReport, resultsJson } from './report/document.js'
import { batchInvalid, invalid } from './rows.js'
import { scenarios } from './scenarios.js'
import { REPORT, ROOT, readSettings, type Settings } from './settings.js'
import { runStages } from './stages.js'
import { measureDiskStartup } from './startup.js'
import { resolveDatabaseUrl, targets } from './targets.js'

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
  const { result, failure } = await pgbenchOrWhyNot(databaseUrl, settings.pgbench)
  if (result === undefined) return { result: undefined, missing: `pgbench failed (${failure})` }
  log(
    `  pgbench: ${formatNumber(result.tps)} TPS, latency average ${result.latencyAverageMs?.toFixed(1) ?? '?'} ms, ` +
      `${result.failedTransactions ?? '?'} failed, init ${result.initSeconds.toFixed(1)} s, whole machine ${result.machineCpuPercent?.toFixed(0) ?? '?'}% ` +
      `(${elapsedSeconds(phaseStart)})`,
  )
  return { result, missing: undefined }
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
  if (settings.compare !== undefined || settings.stages) {
    const databaseUrl = await resolveDatabaseUrl(true)
    const ok =
      settings.compare === undefined
        ? await runStages(settings, databaseUrl)
        : await runCompare(settings, databaseUrl, settings.compare.commit)
    if (!ok) {
      log('!!! some runs had errors: their numbers are not valid')
      process.exitCode = 1
    }
    return
  }

  const buildStart = performance.now()
  const built = await ensureBuilt(ROOT)
  log(`dist/: ${built} (${elapsedSeconds(buildStart)})`)

  const databaseUrl = await resolveDatabaseUrl(settings.postgres)
  const postgres = databaseUrl === undefined ? undefined : await postgresVersion(databaseUrl)

  const profileDir = settings.cpuProf ? mkdtempSync(join(tmpdir(), 'plinth-bench-profile-')) : undefined
  const nodeArgs = profileDir === undefined ? [] : ['--cpu-prof', '--cpu-prof-dir', profileDir]
  const { loads, ledgerBatches, startups, seeds, ledgerChecks, profiles } = await measureTargets(
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
    ledgerBatches,
    startups: [...memoryRows, ...disk, ...postgresRows],
    seeds,
    ledgerChecks,
    pgbench: pgbench.result,
    pgbenchMissing: pgbench.missing,
  }
  const previous = existsSync(REPORT) ? readFileSync(REPORT, 'utf8') : ''
  const kept = KEPT_SECTIONS.map((title) => markdownSection(previous, title)).filter((section) => section !== undefined)
  const document = renderReport(report, kept.length === 0 ? undefined : kept.join('\n\n'))
  process.stdout.write(`\n${document}`)
  if (settings.json !== undefined) {
    writeFileSync(settings.json, resultsJson(report))
    log(`wrote the results as JSON to ${settings.json}`)
  }

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
  const failedBatches = ledgerBatches.filter(batchInvalid)
  if (failedBatches.length > 0) {
    log(`!!! ${failedBatches.length} ledger batch run(s) had errors: ${failedBatches.map((row) => `${row.workers} workers`).join(', ')}`)
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
