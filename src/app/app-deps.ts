import type { Kysely } from 'kysely'
import type { PlatformClock } from '../clock/clock.js'
import type { Config, StreamLimits } from '../config.js'
import type { Listen } from '../db/database.js'
import type { DB } from '../db/schema.js'

/** What the application is built from: the entry points (src/start.ts) and the tests give it. */
export interface AppDeps {
  db: Kysely<DB>
  clock: PlatformClock
  config: Pick<
    Config,
    | 'mode'
    | 'adminToken'
    | 'logLevel'
    | 'publicUrl'
    | 'tokenTtlSeconds'
    | 'approvalWindowSeconds'
    | 'adVerdictDelaySeconds'
    | 'rateLimitKeyPerMinute'
    | 'rateLimitTokenPerMinute'
  > & { streams?: StreamLimits } & Partial<
      Pick<
        Config,
        'requestLog' | 'metricsToken' | 'allowedHosts' | 'accounts' | 'portal' | 'payments' | 'ledgerCloser' | 'faucet' | 'horizons'
      >
    >
  /** Encrypts wallet seeds held by the platform. */
  secretKey: Buffer
  /** Readiness probe of the database. */
  ping: () => Promise<void>
  /** PostgreSQL's LISTEN (Database.listen): ledger streams learn of other processes' transactions through it. */
  listen?: Listen | undefined
  /** Where log lines go (standard output when absent). */
  logStream?: { write(line: string): void }
  /** The rate limits' clock, in milliseconds (a monotonic clock when absent): tests move it. */
  rateLimitNow?: () => number
  /** The database's connections, for /metrics: a pool's (total, idle, waiting), or PGlite's one connection and its queue. */
  poolStats?: () => PoolStats
}

export interface PoolStats {
  total: number
  idle: number
  waiting: number
}
