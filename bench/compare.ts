/**
 * `npm run bench -- --compare <commit>`: the regression guard. Builds <commit> in a temporary git
 * worktree (node_modules linked from this checkout) and this checkout as it is (head), starts
 * both on PostgreSQL, each server on a fresh schema, then measures in alternating pairs (head,
 * commit, head, commit…): a bare Fastify hello at the start of each pair, GET /v2/me over many
 * tokens with the request log on (the sandbox default) and off, GET /v2/payments/{id} with a key
 * (log on), and the A2U lifecycle, after one pgbench run a pair. Prints, per scenario, each run's
 * throughput, its ratio to the pair's hello (A2U: to the pair's pgbench TPS), Plinth's CPU and its own PostgreSQL backends' CPU per request or lifecycle, p99
 * and the load average; then each side's medians and head ÷ commit. Writes nothing.
 */
import { mkdtempSync, realpathSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type CompareSection, compareSectionTable, type RunFigures } from './compare-report.js'
import {
  elapsedSeconds,
  ensureBuilt,
  execFileAsync,
  log,
  onCleanup,
  type PreparedRequests,
  pgbenchOrWhyNot,
  pgbenchVersion,
} from './lib.js'
import type { Serving } from './measure-common.js'
import { loadLine, measureFlowRun, measureRequestRun, type PairServer, runSettings, startPairServer } from './pairs.js'
import { a2uLifecycle } from './scenarios/lifecycles.js'
import { helloWorld, me, paymentRead } from './scenarios/requests.js'
import { ROOT, type Settings } from './settings.js'
import { helloTarget } from './targets.js'

/** pgbench's TPS on the server, or undefined (logged) when it failed: the A2U row then shows '?' for ÷ pgbench. */
async function pgbenchTps(databaseUrl: string, options: Settings['pgbench']): Promise<number | undefined> {
  const { result } = await pgbenchOrWhyNot(databaseUrl, options)
  if (result !== undefined) log(`  pgbench: ${result.tps.toFixed(0)} TPS`)
  return result?.tps
}

async function git(args: readonly string[], cwd = ROOT): Promise<string> {
  const { stdout } = await execFileAsync('git', [...args], { cwd, maxBuffer: 16 * 1024 * 1024 })
  return stdout.trim()
}

/** A checkout of `commit` in a temporary git worktree, node_modules linked from here, built; removed at cleanup. */
async function checkoutOf(commit: string): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'plinth-compare-'))
  await git(['worktree', 'add', '--detach', dir, commit])
  onCleanup(async () => {
    await git(['worktree', 'remove', '--force', dir])
    log(`removed the worktree ${dir}`)
  })
  symlinkSync(realpathSync(join(ROOT, 'node_modules')), join(dir, 'node_modules'))
  const startedAt = performance.now()
  await ensureBuilt(dir)
  log(`built ${commit} in ${dir} (${elapsedSeconds(startedAt)})`)
  return dir
}

/** One side: its servers with the request log on and off. */
interface Side {
  name: string
  logOn: PairServer
  logOff: PairServer
}

async function startSide(databaseUrl: string, settings: Settings, name: string, root: string): Promise<Side> {
  const options = settings.pairs
  return {
    name,
    logOn: await startPairServer(databaseUrl, options, { root, label: `${name}, log on`, env: { PLINTH_REQUEST_LOG: 'on' } }),
    logOff: await startPairServer(databaseUrl, options, { root, label: `${name}, log off`, env: { PLINTH_REQUEST_LOG: 'off' } }),
  }
}

/** A request scenario of one side, prepared (seeded) once on its server. */
interface Prepared {
  serving: Serving
  requests: PreparedRequests
}

export async function runCompare(settings: Settings, databaseUrl: string | undefined, commit: string): Promise<boolean> {
  if (databaseUrl === undefined) throw new Error('--compare runs on PostgreSQL: set DATABASE_URL (or start one on 127.0.0.1:5432)')
  const startedAt = performance.now()
  const options = settings.pairs
  const baseSha = await git(['rev-parse', '--verify', `${commit}^{commit}`])
  const headSha = await git(['rev-parse', 'HEAD'])
  const dirty = (await git(['status', '--porcelain', '--untracked-files=no'])) !== ''
  const names = { head: `head ${headSha.slice(0, 7)}${dirty ? '+' : ''}`, base: baseSha.slice(0, 7) }
  log(`--compare: ${names.head} (this checkout${dirty ? ', with its uncommitted changes' : ''}) against ${names.base}`)
  const [, baseRoot] = await Promise.all([ensureBuilt(ROOT), checkoutOf(baseSha)])

  const hello = await helloTarget.launch()
  const helloServing: Serving = { target: helloTarget, servers: [hello.server], profile: undefined }
  const head = await startSide(databaseUrl, settings, names.head, ROOT)
  const base = await startSide(databaseUrl, settings, names.base, baseRoot)
  const sides = [head, base]
  try {
    const requests = runSettings(settings, options, 'request')
    const a2uSettings = runSettings(settings, options, 'a2u')
    const helloPrepared = await helloWorld.prepare({ ...head.logOn.context, backend: 'fastify', baseUrl: hello.server.baseUrl })
    const prepare = async (server: PairServer, scenario: typeof me): Promise<Prepared> => ({
      serving: server.serving,
      requests: await scenario.prepare(server.context),
    })
    // Seeded before any measurement: the users and payments of each server, then the A2U teams.
    const scenarios = [
      { title: 'GET /v2/me, request log on (the sandbox default)', scenario: me, server: (side: Side) => side.logOn },
      { title: 'GET /v2/me, request log off', scenario: me, server: (side: Side) => side.logOff },
      { title: 'GET /v2/payments/{id} with a key, request log on', scenario: paymentRead, server: (side: Side) => side.logOn },
    ]
    const prepared = new Map<string, Prepared[]>()
    for (const entry of scenarios) {
      prepared.set(entry.title, await Promise.all(sides.map((side) => prepare(entry.server(side), entry.scenario))))
    }
    const flows = await Promise.all(sides.map((side) => a2uLifecycle.prepare(side.logOn.context)))
    log(`seeded (${elapsedSeconds(startedAt)} so far); load average ${loadLine()}`)

    const sections: CompareSection[] = [
      ...scenarios.map((entry) => ({ title: entry.title, unit: 'req/s', cpuUnit: 'µs/req', per: 'hello', head: [], base: [] })),
      {
        title: `A2U lifecycle (create, sign, submit, complete), ${options.workers} workers, request log on, ${options.a2uSeconds} s after ${options.a2uWarmupSeconds} s warm-up`,
        unit: 'lifecycles/s',
        cpuUnit: 'ms/lifecycle',
        per: 'pgbench',
        head: [],
        base: [],
      },
    ]
    const helloRuns: RunFigures[] = []
    const pgbench = await pgbenchVersion()
    if (pgbench === undefined) log('pgbench is not installed: the A2U runs have no ÷ pgbench')
    const pgbenchRuns: Array<number | undefined> = []
    for (let pair = 0; pair < options.pairs; pair++) {
      log(`pair ${pair + 1} of ${options.pairs}: load average ${loadLine()}`)
      const helloRun = await measureRequestRun(requests, helloWorld, helloPrepared, helloServing, undefined)
      helloRuns.push(helloRun)
      for (const [index, entry] of scenarios.entries()) {
        const section = sections[index]
        for (const [at, which] of (['head', 'base'] as const).entries()) {
          const found = prepared.get(entry.title)?.[at]
          if (section === undefined || found === undefined) continue
          section[which].push(await measureRequestRun(requests, entry.scenario, found.requests, found.serving, helloRun.throughput))
        }
      }
      // The A2U target is a share of pgbench's TPS on the same server: one pgbench run a pair, just before the A2U runs.
      const tps = pgbench === undefined ? undefined : await pgbenchTps(databaseUrl, settings.pgbench)
      pgbenchRuns.push(tps)
      const a2u = sections[scenarios.length]
      for (const [at, which] of (['head', 'base'] as const).entries()) {
        const side = sides[at]
        const flow = flows[at]
        if (a2u === undefined || side === undefined || flow === undefined) continue
        a2u[which].push(await measureFlowRun(a2uSettings, a2uLifecycle, flow, side.logOn.serving, tps))
      }
    }

    const helloLine = helloRuns.map((run) => run.throughput.toFixed(0)).join(', ')
    const { scale, clients, threads, seconds } = settings.pgbench
    const pgbenchLine =
      pgbench === undefined
        ? 'pgbench is not installed.'
        : `pgbench (-b tpcb-like -s ${scale} -c ${clients} -j ${threads} -T ${seconds}, a scratch database on the same server), TPS by pair: ${pgbenchRuns.map((tps) => (tps === undefined ? '?' : tps.toFixed(0))).join(', ')}.`
    process.stdout.write(
      `\n## ${names.head} against ${names.base}: ${options.pairs} alternating pairs\n\n` +
        `Fastify hello (bench/hello.ts), req/s by pair: ${helloLine}. ${pgbenchLine} ` +
        `${options.connections} connections, ${options.seconds} s after ${options.warmupSeconds} s warm-up per request run; ` +
        `${options.tokens} tokens for GET /v2/me. CPU from /proc: Plinth's process, and PostgreSQL's backends serving that server ` +
        `(by application_name). "load": the 1-minute load average as each run started; now ${loadLine()}.\n\n` +
        `${sections.map((section) => compareSectionTable(section, names)).join('\n\n')}\n`,
    )
    log(`--compare done in ${elapsedSeconds(startedAt)}`)
    return sections.every((section) => [...section.head, ...section.base].every((run) => run.errors === 0))
  } finally {
    for (const side of sides) {
      await side.logOn.release()
      await side.logOff.release()
    }
    await hello.release()
  }
}
