/**
 * PostgreSQL's CPU spent serving one Plinth server (or the processes of one scaling run): only the
 * backends whose `application_name` is the server's, found in `pg_stat_activity` and read from
 * /proc/<pid>/stat. The whole cluster (readPostgresCpuMs) also counts other clients of the same
 * PostgreSQL (another benchmark, a test suite) and its own helpers (checkpointer, WAL writer,
 * autovacuum), which on a shared machine is noise, not the server's cost.
 */
import { readFileSync } from 'node:fs'
import pg from 'pg'
import { type PostgresCpuReader, readCpuMs } from './sampling.js'

/** The connection URL with `application_name` set: every connection a server opens with it names its backends. */
export function withApplicationName(databaseUrl: string, applicationName: string): string {
  const url = new URL(databaseUrl)
  url.searchParams.set('application_name', applicationName)
  return url.toString()
}

/** Which backends serve a server: its DATABASE_URL (without the name) and the application_name its URL carries. */
export interface OwnBackends {
  databaseUrl: string
  applicationName: string
}

/** When a process started, in clock ticks since boot (field 22 of /proc/<pid>/stat); undefined when it is gone. */
function startTicks(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const value = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19])
    return Number.isFinite(value) ? value : undefined
  } catch {
    return undefined
  }
}

/** Clock ticks since boot now (/proc/uptime, in the 100 Hz ticks of /proc/<pid>/stat). */
function nowTicks(): number | undefined {
  try {
    return Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]) * 100
  } catch {
    return undefined
  }
}

/**
 * The CPU (user + system) the server's own backends used over a window, in ms. The backends are
 * looked up in `pg_stat_activity` when the window opens, at every reading and when it closes. A
 * backend found during the window counts from its start when it started inside the window, from
 * its first reading otherwise; one that exited counts up to its last reading.
 */
export class OwnBackendsCpu implements PostgresCpuReader {
  private client: pg.Client | undefined
  private lookup: Promise<void> | undefined
  private windowStart: number | undefined
  private readonly first = new Map<number, number>()
  private readonly last = new Map<number, number>()
  /** A backend listed whose /proc entry cannot be read: PostgreSQL runs on another machine or in a container. */
  private unseen = false
  /** Closed: later readings (a sampler's last) look nothing up. */
  private stopped = false

  constructor(private readonly backends: OwnBackends) {}

  private async pids(): Promise<number[]> {
    if (this.client === undefined) {
      const client = new pg.Client({ connectionString: this.backends.databaseUrl, application_name: 'plinth_bench_monitor' })
      await client.connect()
      this.client = client
    }
    const result = await this.client.query<{ pid: number }>('select pid from pg_stat_activity where application_name = $1', [
      this.backends.applicationName,
    ])
    return result.rows.map((row) => row.pid)
  }

  /** Looks the backends up again (one lookup at a time) and notes those not seen before. */
  private refresh(): Promise<void> {
    if (this.stopped) return Promise.resolve()
    this.lookup ??= this.pids()
      .then((pids) => {
        for (const pid of pids) {
          if (this.first.has(pid)) continue
          const ms = readCpuMs(pid)
          if (ms === undefined) {
            this.unseen = true
            continue
          }
          const started = startTicks(pid)
          const inside = this.windowStart !== undefined && started !== undefined && started >= this.windowStart
          this.first.set(pid, inside ? 0 : ms)
          this.last.set(pid, ms)
        }
      })
      .finally(() => {
        this.lookup = undefined
      })
    return this.lookup
  }

  /** Finds the backends before the window opens (call it, then begin()): those found later count from their first reading. */
  async prepare(): Promise<void> {
    await this.refresh()
  }

  begin(): void {
    this.windowStart = nowTicks()
    for (const pid of this.first.keys()) {
      const ms = readCpuMs(pid)
      if (ms === undefined) {
        this.first.delete(pid)
        this.last.delete(pid)
      } else {
        this.first.set(pid, ms)
        this.last.set(pid, ms)
      }
    }
    void this.refresh().catch(() => undefined)
  }

  private readAll(): void {
    for (const pid of this.first.keys()) {
      const ms = readCpuMs(pid)
      if (ms !== undefined) this.last.set(pid, ms)
    }
  }

  read(): void {
    if (this.stopped) return
    this.readAll()
    void this.refresh().catch(() => undefined)
  }

  /** The CPU used since begin(), in ms (with the backends found up to the last reading); undefined when they cannot be read (PostgreSQL elsewhere). */
  async stop(): Promise<number | undefined> {
    this.readAll()
    this.stopped = true
    await this.lookup?.catch(() => undefined)
    await this.client?.end().catch(() => undefined)
    this.client = undefined
    if (this.unseen && this.first.size === 0) return undefined
    let total = 0
    for (const [pid, ms] of this.last) total += Math.max(0, ms - (this.first.get(pid) ?? ms))
    return total
  }
}
