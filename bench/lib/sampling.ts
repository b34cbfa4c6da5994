import { readdirSync, readFileSync } from 'node:fs'
import { execFileAsync, sleep } from './servers.js'

// ---------------------------------------------------------------------------------------------
// Resident memory of a process.

export async function readRssKb(pid: number): Promise<number | undefined> {
  try {
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    if (match?.[1] !== undefined) return Number(match[1])
  } catch {
    // No procfs (macOS): ask ps.
  }
  try {
    const { stdout } = await execFileAsync('ps', ['-o', 'rss=', '-p', String(pid)])
    const kb = Number(stdout.trim())
    return Number.isFinite(kb) && kb > 0 ? kb : undefined
  } catch {
    return undefined
  }
}

/** CPU time (user + system) a process has used so far, in ms; undefined without procfs. */
export function readCpuMs(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Fields after "(comm) ": state is field 3, utime 14, stime 15, in clock ticks (USER_HZ, 100 on Linux).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    const ticks = Number(fields[11]) + Number(fields[12])
    return Number.isFinite(ticks) ? ticks * 10 : undefined
  } catch {
    return undefined
  }
}

/**
 * CPU time (user + system) each process named `postgres` (the PostgreSQL server's postmaster,
 * backends and helpers) has used so far, in ms, by pid; undefined without procfs. A PostgreSQL
 * server on another machine is not seen; backends serving other clients of the same server are
 * counted too.
 */
export function readPostgresCpuMs(): Map<number, number> | undefined {
  let entries: string[]
  try {
    entries = readdirSync('/proc')
  } catch {
    return undefined
  }
  const byPid = new Map<number, number>()
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== 'postgres') continue
    } catch {
      continue
    }
    const ms = readCpuMs(Number(entry))
    if (ms !== undefined) byPid.set(Number(entry), ms)
  }
  return byPid
}

/**
 * Reads PostgreSQL's CPU over a window: begin() opens it (synchronously: a flow opens its window in
 * a timer), read() takes a reading (every sample), stop() closes it and answers the ms used.
 */
export interface PostgresCpuReader {
  begin(): void
  read(): void
  stop(): Promise<number | undefined>
}

/**
 * The whole local PostgreSQL cluster's CPU over an interval (every process named postgres: other
 * clients' backends and PostgreSQL's helpers too; OwnBackendsCpu, in backends.ts, counts only a
 * server's own backends), from readings by pid: a backend that started meanwhile counts
 * whole, one that exited counts up to its last reading. A sum over the processes alive at both
 * ends lost the CPU of every backend that exited during the run (a pool closing an idle
 * connection): runs read 0% while PostgreSQL was busy.
 */
export class PostgresCpu implements PostgresCpuReader {
  private start: Map<number, number> | undefined
  private readonly last = new Map<number, number>()

  /** Opens the window. */
  begin(): void {
    this.start = readPostgresCpuMs()
    for (const [pid, ms] of this.start ?? []) this.last.set(pid, ms)
  }

  /** Takes a reading; stop() takes a last one. */
  read(): void {
    for (const [pid, ms] of readPostgresCpuMs() ?? []) this.last.set(pid, ms)
  }

  /** The CPU used since begin(), in ms; undefined without procfs. */
  async stop(): Promise<number | undefined> {
    if (this.start === undefined) return undefined
    this.read()
    let total = 0
    for (const [pid, ms] of this.last) total += Math.max(0, ms - (this.start.get(pid) ?? 0))
    return total
  }
}

/** CPU time all cores have spent busy (not idle or waiting for I/O) since boot, in ms; undefined without procfs. */
export function readMachineBusyMs(): number | undefined {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0] ?? ''
    const ticks = line.trim().split(/\s+/).slice(1, 9).map(Number)
    const idle = (ticks[3] ?? 0) + (ticks[4] ?? 0)
    const total = ticks.reduce((sum, value) => sum + value, 0)
    return Number.isFinite(total) && total > 0 ? (total - idle) * 10 : undefined
  } catch {
    return undefined
  }
}

/**
 * CPU used over the next `ms` by every process but this one and the given ones (in % of one core):
 * other work on the machine, measured while the server under test sits idle.
 */
export async function otherProcessesBusyPercent(ms: number, excludedPids: readonly number[]): Promise<number | undefined> {
  const ownCpu = () => {
    const usage = process.cpuUsage()
    return (usage.user + usage.system) / 1000
  }
  const excluded = () => excludedPids.reduce((sum, pid) => sum + (readCpuMs(pid) ?? 0), ownCpu())
  const machineBefore = readMachineBusyMs()
  const excludedBefore = excluded()
  const startedAt = performance.now()
  await sleep(ms)
  const machineAfter = readMachineBusyMs()
  const excludedAfter = excluded()
  if (machineBefore === undefined || machineAfter === undefined) return undefined
  const othersMs = machineAfter - machineBefore - (excludedAfter - excludedBefore)
  return Math.max(0, (othersMs / (performance.now() - startedAt)) * 100)
}

export interface ProcessUsage {
  /** Peak RSS in MB (MiB), or undefined when nothing could be read; with several processes, the sum of each one's peak. */
  peakRssMb: number | undefined
  /** CPU used over the sampled interval, in % of one core (200 = two cores busy); with several processes, their sum. */
  cpuPercent: number | undefined
  /** CPU used by every process on the machine over the same interval, in % of one core. */
  machineCpuPercent: number | undefined
  /**
   * CPU PostgreSQL used over the same interval, in % of one core: the sampled server's own backends
   * when the sampler was given their reader (OwnBackendsCpu), else the whole local cluster (PostgresCpu).
   */
  postgresCpuPercent: number | undefined
}

/** Samples the RSS of one or more processes every intervalMs and keeps each one's peak; also measures the CPU they used meanwhile. */
export class ProcessSampler {
  private readonly pids: readonly number[]
  private readonly peakKb: Map<number, number>
  private timer: NodeJS.Timeout | undefined
  private startedAt = 0
  private cpuAtStart: number | undefined
  private machineAtStart: number | undefined
  private readonly postgres: PostgresCpuReader

  constructor(
    pids: number | readonly number[],
    private readonly intervalMs = 200,
    postgres: PostgresCpuReader = new PostgresCpu(),
  ) {
    this.postgres = postgres
    this.pids = typeof pids === 'number' ? [pids] : pids
    this.peakKb = new Map(this.pids.map((pid) => [pid, 0]))
  }

  private async sample(): Promise<void> {
    this.postgres.read()
    await Promise.all(
      this.pids.map(async (pid) => {
        const kb = await readRssKb(pid)
        if (kb !== undefined && kb > (this.peakKb.get(pid) ?? 0)) this.peakKb.set(pid, kb)
      }),
    )
  }

  /** The CPU time all the processes used so far, or undefined when any cannot be read. */
  private cpuMs(): number | undefined {
    let total = 0
    for (const pid of this.pids) {
      const ms = readCpuMs(pid)
      if (ms === undefined) return undefined
      total += ms
    }
    return total
  }

  start(): void {
    this.startedAt = performance.now()
    this.cpuAtStart = this.cpuMs()
    this.machineAtStart = readMachineBusyMs()
    this.postgres.begin()
    void this.sample()
    this.timer = setInterval(() => void this.sample(), this.intervalMs)
  }

  async stop(): Promise<ProcessUsage> {
    clearInterval(this.timer)
    const cpuAtEnd = this.cpuMs()
    const machineAtEnd = readMachineBusyMs()
    const wallMs = performance.now() - this.startedAt
    const postgresMs = await this.postgres.stop()
    await this.sample()
    const peaks = [...this.peakKb.values()]
    return {
      peakRssMb: peaks.some((kb) => kb === 0) ? undefined : peaks.reduce((sum, kb) => sum + kb, 0) / 1024,
      cpuPercent: cpuAtEnd === undefined || this.cpuAtStart === undefined ? undefined : ((cpuAtEnd - this.cpuAtStart) / wallMs) * 100,
      machineCpuPercent:
        machineAtEnd === undefined || this.machineAtStart === undefined ? undefined : ((machineAtEnd - this.machineAtStart) / wallMs) * 100,
      postgresCpuPercent: postgresMs === undefined ? undefined : (postgresMs / wallMs) * 100,
    }
  }
}
