import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import type { DataSizes } from './lib.js'

export const ROOT = fileURLToPath(new URL('..', import.meta.url))
export const REPORT = join(ROOT, 'BENCHMARKS.md')
export const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/test'
/** Above this much CPU (in % of one core) used by others just before a run, the run is flagged as noisy. */
export const BUSY_MACHINE_PERCENT = 20
/** Above this much CPU (in % of one core) used by others during a measured run, it is measured again (time allowing). */
export const NOISY_PERCENT = 30

export interface Settings {
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
  /** The ledger batch runs (A2U batches): one per count of workers, each with its own short warm-up and measured window. */
  batches: { workers: number[]; warmupSeconds: number; durationSeconds: number }
  pgbench: { scale: number; clients: number; threads: number; seconds: number }
  /** Only the scenarios whose name contains this (case-insensitive); no startup on disk, nothing written. */
  only: string | undefined
  /** Plinth's servers run with --cpu-prof; the flows' measured windows are summarised from the profiles. */
  cpuProf: boolean
  /** Also write the results as JSON to this file (`--json`). */
  json: string | undefined
  command: string
  /** `--compare <commit>` (bench/compare.ts) or `--stages` (bench/stages.ts): their own runs, instead of the report's. */
  compare: CompareOptions | undefined
  stages: boolean
  /** The pairs, windows and load of --compare and --stages. */
  pairs: PairOptions
}

/** `--compare <commit>`: head against the commit, built in a temporary git worktree. */
export interface CompareOptions {
  commit: string
}

/** How --compare and --stages measure: alternating pairs of short windows. */
export interface PairOptions {
  pairs: number
  /** Warm-up and measured window of each request run, in seconds. */
  warmupSeconds: number
  seconds: number
  /** Warm-up and measured window of each A2U run (--steady: 15 s then 60 s). */
  a2uWarmupSeconds: number
  a2uSeconds: number
  /** A2U workers, each with its own app. */
  workers: number
  /** Users signed in (one token each) whose tokens GET /v2/me takes in turn. */
  tokens: number
  connections: number
}

/** A number option: absent, the fallback; else a positive number (a whole one when `whole`), or an error naming the flag. */
export function numberOption(flag: string, raw: string | undefined, fallback: number, whole = false): number {
  if (raw === undefined) return fallback
  const value = Number(raw)
  if (raw.trim() === '' || !Number.isFinite(value) || value <= 0 || (whole && !Number.isInteger(value))) {
    throw new Error(`--${flag} takes a positive ${whole ? 'whole ' : ''}number, got "${raw}"`)
  }
  return value
}

/** The pairs' options from the flags; --steady measures A2U for 60 s after a 15 s warm-up unless --a2u-seconds says otherwise. */
export function pairOptions(values: Record<string, string | boolean | undefined>): PairOptions {
  const text = (name: string) => {
    const value = values[name]
    return typeof value === 'string' ? value : undefined
  }
  const steady = values.steady === true
  return {
    pairs: numberOption('pairs', text('pairs'), 2, true),
    warmupSeconds: numberOption('warmup', text('warmup'), 3),
    seconds: numberOption('seconds', text('seconds'), 8),
    a2uWarmupSeconds: numberOption('a2u-warmup', text('a2u-warmup'), steady ? 15 : 5),
    a2uSeconds: numberOption('a2u-seconds', text('a2u-seconds'), steady ? 60 : 15),
    workers: numberOption('workers', text('workers'), 16, true),
    tokens: numberOption('tokens', text('tokens'), 300, true),
    connections: numberOption('connections', text('connections'), 50, true),
  }
}

const COMPARE_HELP =
  '\n' +
  'npm run bench -- --compare <commit> [--pairs N] [--seconds S] [--warmup S] [--steady | --a2u-seconds S] [--a2u-warmup S]\n' +
  '                 [--workers N] [--tokens N] [--connections N]\n' +
  '  --compare <commit>  the regression guard: builds <commit> in a temporary git worktree and head here, then measures\n' +
  '                 both on PostgreSQL (DATABASE_URL; each server on a fresh schema) in alternating pairs: a bare Fastify\n' +
  '                 hello, GET /v2/me with the request log on and off, GET /v2/payments/{id} with a key (log on), and\n' +
  "                 the A2U lifecycle, divided by a pgbench run made in its pair; prints each side's numbers and\n" +
  '                 head ÷ commit. Writes nothing. With the defaults, 5 minutes of measuring, after building and\n' +
  '                 seeding (2 to 4 minutes).\n' +
  '  --stages       the CPU per request of each part that can be switched from outside (request log, /metrics,\n' +
  '                 LOG_LEVEL, rate limits), head only, GET /v2/me on PostgreSQL, alternating with the base server\n' +
  '  --pairs N      alternating pairs (default 2)\n' +
  '  --seconds S    measured seconds of each request run (default 8); --warmup S before it (default 3)\n' +
  '  --a2u-seconds S  measured seconds of each A2U run (default 15); --a2u-warmup S before it (default 5)\n' +
  '  --steady       A2U at steady state: 60 s measured after a 15 s warm-up\n' +
  '  --workers N    A2U workers (default 16); --tokens N users whose tokens GET /v2/me takes (default 300);\n' +
  '                 --connections N autocannon connections (default 50)\n'

/** Where `--json` writes when no file follows it. */
export const DEFAULT_JSON = 'bench-results.json'

/** `--json` may stand alone (then DEFAULT_JSON) or take a file: parseArgs knows no optional values. */
function withJsonFile(args: readonly string[]): string[] {
  return args.map((arg, index) => {
    const next = args[index + 1]
    return arg === '--json' && (next === undefined || next.startsWith('--')) ? `--json=${DEFAULT_JSON}` : arg
  })
}

export function readSettings(args: readonly string[] = process.argv.slice(2)): Settings & { postgres: boolean; pglite: boolean } {
  const { values } = parseArgs({
    args: withJsonFile(args),
    options: {
      quick: { type: 'boolean', default: false },
      write: { type: 'boolean', default: false },
      'no-postgres': { type: 'boolean', default: false },
      'no-pglite': { type: 'boolean', default: false },
      only: { type: 'string' },
      'cpu-prof': { type: 'boolean', default: false },
      json: { type: 'string' },
      compare: { type: 'string' },
      stages: { type: 'boolean', default: false },
      pairs: { type: 'string' },
      seconds: { type: 'string' },
      warmup: { type: 'string' },
      'a2u-seconds': { type: 'string' },
      'a2u-warmup': { type: 'string' },
      steady: { type: 'boolean', default: false },
      workers: { type: 'string' },
      tokens: { type: 'string' },
      connections: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
    strict: true,
  })
  if (values.help) {
    process.stdout.write(
      'npm run bench [-- --quick] [--write] [--no-postgres] [--only <text>] [--cpu-prof] [--json [file]]\n' +
        '  --quick        less data, 8 flow workers, 0.5 s warm-up, 2 s runs, every scenario but GET /v2/me on PostgreSQL only,\n' +
        '                 scaling to 2 processes and of the request scenarios only, 1.5 s batch runs, no startup on disk (under a minute);\n' +
        '                 prints only (unless --write)\n' +
        '  --write        write BENCHMARKS.md (always done by a full run)\n' +
        '  --no-postgres  skip Plinth on PostgreSQL (and pgbench) even when one is reachable\n' +
        '  --no-pglite    skip Plinth on PGlite (a partial run: writes nothing)\n' +
        '  --only <text>  only the scenarios whose name contains <text>, e.g. --only A2U, --only "A2U batches" (writes nothing)\n' +
        "  --cpu-prof     profile Plinth's servers (node --cpu-prof) and print where their CPU went during each flow (writes nothing)\n" +
        `  --json [file]  also write the run's results as JSON (default ${DEFAULT_JSON}), to compare runs\n` +
        COMPARE_HELP,
    )
    process.exit(0)
  }
  const quick = values.quick
  const flags = args
  const compare = values.compare === undefined || values.compare === '' ? undefined : { commit: values.compare }
  const only = values.only === undefined || values.only === '' ? undefined : values.only
  const cpuProf = values['cpu-prof']
  return {
    quick,
    write: values.write || (!quick && only === undefined && !cpuProf && !values['no-pglite'] && compare === undefined && !values.stages),
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
    batches: { workers: [1, 4, 16, 64], warmupSeconds: quick ? 0.5 : 1, durationSeconds: quick ? 1.5 : 5 },
    pgbench: { scale: 10, clients: 16, threads: 2, seconds: quick ? 2 : 10 },
    only,
    cpuProf,
    json: values.json === '' ? DEFAULT_JSON : values.json,
    command: `npm run bench${flags.length > 0 ? ` -- ${flags.join(' ')}` : ''}`,
    compare,
    stages: values.stages,
    pairs: pairOptions(values),
  }
}
