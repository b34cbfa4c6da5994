/** What the measurements share: the servers one loads, where a profiled server's windows go, and the loud warning. */
import { type OwnBackends, OwnBackendsCpu, PostgresCpu, ProcessSampler, type RunningServer } from './lib.js'
import type { CpuProfileWindow } from './profile.js'
import type { Target } from './targets.js'

/** A profiled server and the measured windows of its scenarios (process.hrtime, which is the profile's clock). */
export interface ProfileRun {
  backendLabel: string
  pid: number
  windows: CpuProfileWindow[]
}

/** The servers a measurement loads: one, or several Plinth processes on one PostgreSQL. */
export interface Serving {
  target: Target
  servers: readonly RunningServer[]
  /** Where the measured windows of a profiled single server go. */
  profile: ProfileRun | undefined
  /** Plinth on PostgreSQL: its own backends, the only PostgreSQL CPU counted (else the whole local cluster's). */
  backends?: OwnBackends | undefined
}

/**
 * A sampler of the serving processes (every 200 ms) and of PostgreSQL: of the servers' own
 * backends, looked up before it answers (so that the window counts each from its first reading),
 * when the servers run on PostgreSQL; else of the whole local cluster.
 */
export async function samplerFor(serving: Serving): Promise<ProcessSampler> {
  const pids = serving.servers.map((server) => server.pid)
  if (serving.backends === undefined) return new ProcessSampler(pids, 200, new PostgresCpu())
  const backends = new OwnBackendsCpu(serving.backends)
  await backends.prepare()
  return new ProcessSampler(pids, 200, backends)
}

export function urlsOf(serving: Serving): string | string[] {
  const urls = serving.servers.map((server) => server.baseUrl)
  return urls.length === 1 ? (urls[0] ?? '') : urls
}

export function describeServing(serving: Serving): string {
  return serving.servers.length === 1 ? serving.target.label : `${serving.target.label}, ${serving.servers.length} processes`
}

/** A message nobody can miss, between two bars of `!`. */
export function shout(lines: readonly string[]): void {
  const bar = '!'.repeat(78)
  process.stderr.write(`\n${bar}\n${lines.map((line) => `!!! ${line}`).join('\n')}\n${bar}\n\n`)
}
