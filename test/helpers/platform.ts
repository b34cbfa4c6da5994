import { randomBytes } from 'node:crypto'
import { after, before } from 'node:test'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { type Kysely, sql } from 'kysely'
import pg from 'pg'
import { type AppDeps, buildApp } from '../../src/app.js'
import { createPlatformClock, type PlatformClock } from '../../src/clock/clock.js'
import { clockRepo } from '../../src/clock/clock-repo.js'
import {
  type AccountLimits,
  type FaucetSettings,
  faucetSettings,
  type LedgerCloserLimits,
  type PaymentSettings,
  type PortalSettings,
  portalSettings,
  type StreamLimits,
} from '../../src/config.js'
import { type Database, openDatabase } from '../../src/db/database.js'
import type { DB } from '../../src/db/schema.js'
import { pgliteImage } from './pglite-image.js'

/** Which database this test run uses: `npm test` runs the suite once per backend. */
export const TEST_DB: 'pglite' | 'postgres' = process.env.PLINTH_TEST_DB === 'postgres' ? 'postgres' : 'pglite'

export interface TestPlatform {
  app: FastifyInstance
  db: Kysely<DB>
  clock: PlatformClock
  secretKey: Buffer
  /** The database schema of this platform on PostgreSQL (undefined on PGlite). */
  schema: string | undefined
  ping(): Promise<void>
  poolStats(): { total: number; idle: number; waiting: number }
  close(): Promise<void>
}

export interface PlatformOptions {
  mode?: 'sandbox' | 'production'
  adminToken?: string
  logStream?: AppDeps['logStream']
  /** Routes a test adds before the app is ready (for example to exercise the error handler). */
  extend?: (app: FastifyInstance) => void
  /**
   * A second platform on the same database, with its own app and clock. On PostgreSQL it opens
   * its own pool on the same schema, as a second Plinth process sharing the database would; on
   * PGlite it runs over the first platform's Kysely instance (one process, one engine). Config
   * variants (production mode, an admin token, stream limits) use it to cost no new database.
   * The first platform owns the database: it drops the schema or closes the engine.
   */
  sharing?: TestPlatform
  /** What the app's services use instead of the database itself (for example the database with a Kysely plugin that counts statements). */
  wrapDb?: (db: Kysely<DB>) => Kysely<DB>
  /**
   * Requests a minute per server API key and per access token, and the limiter's clock (ms).
   * Off (0) unless given, so that tests making many requests are not throttled.
   */
  rateLimits?: { keyPerMinute: number; tokenPerMinute: number; now?: () => number }
  /** The ledger streams' bounds (the defaults when absent). */
  streams?: StreamLimits
  /** The ledger closer's bounds (the defaults when absent). */
  ledgerCloser?: LedgerCloserLimits
  /** The request log (PLINTH_REQUEST_LOG): on in sandbox mode and off in production unless given. */
  requestLog?: boolean
  /** PLINTH_METRICS_TOKEN: GET /metrics then needs it (and is served in production too). */
  metricsToken?: string
  /** PLINTH_APPROVAL_WINDOW_SECONDS (60 unless given). */
  approvalWindowSeconds?: number
  /** PLINTH_ALLOWED_HOSTS: Host names served besides loopback and the public URL's (http://plinth.test). */
  allowedHosts?: string[]
  /** Production's sessions and sign-in throttling (the defaults when absent). */
  accounts?: AccountLimits
  /** Production's portal settings (the defaults when absent: developers by operator, no private app URLs). */
  portal?: Partial<PortalSettings>
  /** Production's payment settings (the defaults when absent: the step-up above 100 Pi). */
  payments?: PaymentSettings
  /** The faucet's settings (the defaults when absent). */
  faucet?: Partial<FaucetSettings>
}

/**
 * A whole platform on a fresh database: an in-memory PGlite started from the migrated image
 * (pglite-image.ts), or a schema of its own on the PostgreSQL server in DATABASE_URL, dropped
 * again on close.
 */
export async function startPlatform(options: PlatformOptions = {}): Promise<TestPlatform> {
  let schema: string | undefined
  let databaseUrl: string | undefined
  if (TEST_DB === 'postgres') {
    databaseUrl = process.env.DATABASE_URL
    if (databaseUrl === undefined) throw new Error('PLINTH_TEST_DB=postgres needs DATABASE_URL')
    schema = options.sharing?.schema ?? `plinth_test_${process.pid}_${randomBytes(4).toString('hex')}`
  }
  const owner = options.sharing === undefined
  const database =
    TEST_DB === 'pglite' && options.sharing !== undefined
      ? borrowed(options.sharing)
      : await openDatabase({
          databaseUrl,
          schema,
          dataDir: 'memory',
          poolSize: 10,
          ...(TEST_DB === 'pglite' ? { pgliteImage: await pgliteImage() } : {}),
        })
  const clock = await createPlatformClock({ store: clockRepo(database.db) })
  const secretKey = options.sharing?.secretKey ?? randomBytes(32)
  const app = await buildApp({
    db: options.wrapDb?.(database.db) ?? database.db,
    clock,
    secretKey,
    ping: database.ping,
    listen: database.listen,
    config: {
      mode: options.mode ?? 'sandbox',
      adminToken: options.adminToken,
      logLevel: options.logStream === undefined ? 'silent' : 'info',
      publicUrl: 'http://plinth.test',
      tokenTtlSeconds: 3600,
      approvalWindowSeconds: options.approvalWindowSeconds ?? 60,
      adVerdictDelaySeconds: 2,
      rateLimitKeyPerMinute: options.rateLimits?.keyPerMinute ?? 0,
      rateLimitTokenPerMinute: options.rateLimits?.tokenPerMinute ?? 0,
      ...(options.streams === undefined ? {} : { streams: options.streams }),
      ...(options.ledgerCloser === undefined ? {} : { ledgerCloser: options.ledgerCloser }),
      ...(options.requestLog === undefined ? {} : { requestLog: options.requestLog }),
      metricsToken: options.metricsToken,
      allowedHosts: options.allowedHosts ?? [],
      ...(options.accounts === undefined ? {} : { accounts: options.accounts }),
      ...(options.portal === undefined ? {} : { portal: { ...portalSettings(), ...options.portal } }),
      ...(options.payments === undefined ? {} : { payments: options.payments }),
      ...(options.faucet === undefined ? {} : { faucet: { ...faucetSettings(), ...options.faucet } }),
    },
    poolStats: database.poolStats,
    ...(options.logStream === undefined ? {} : { logStream: options.logStream }),
    ...(options.rateLimits?.now === undefined ? {} : { rateLimitNow: options.rateLimits.now }),
  })
  options.extend?.(app)
  await app.ready()

  const platform: TestPlatform = {
    app,
    db: database.db,
    clock,
    secretKey,
    schema,
    ping: database.ping,
    poolStats: database.poolStats,
    async close() {
      await app.close()
      clock.stop()
      await database.close()
      if (owner && schema !== undefined && databaseUrl !== undefined) {
        const client = new pg.Client({ connectionString: databaseUrl })
        await client.connect()
        try {
          await client.query(`drop schema if exists "${schema}" cascade`)
        } finally {
          await client.end()
        }
      }
    },
  }
  return platform
}

/** The first platform's database as a second platform on PGlite sees it: closing it is the owner's job. */
function borrowed(owner: TestPlatform): Pick<Database, 'db' | 'ping' | 'poolStats' | 'listen' | 'close'> {
  return { db: owner.db, ping: owner.ping, poolStats: owner.poolStats, close: async () => {} }
}

/**
 * A platform for the enclosing suite: started in `before`, closed in `after`. The handle's fields
 * are read inside tests (reading one before the suite starts throws). `options` may be a function,
 * evaluated when the suite starts, so a variant can share another handle's database:
 * `const production = usePlatform(() => ({ mode: 'production', sharing: platform }))`.
 */
export function usePlatform(options: PlatformOptions | (() => PlatformOptions) = {}): TestPlatform {
  let started: TestPlatform | undefined
  before(async () => {
    started = await startPlatform(typeof options === 'function' ? options() : options)
  })
  after(async () => {
    await started?.close()
  })
  const current = (): TestPlatform => {
    if (started === undefined) throw new Error('usePlatform(): the platform is read before its suite started')
    return started
  }
  return {
    get app() {
      return current().app
    },
    get db() {
      return current().db
    },
    get clock() {
      return current().clock
    },
    get secretKey() {
      return current().secretKey
    },
    get schema() {
      return current().schema
    },
    get ping() {
      return current().ping
    },
    get poolStats() {
      return current().poolStats
    },
    close: () => current().close(),
  }
}

/** The parsed JSON body of a response. */
export function json<T = Record<string, unknown>>(response: LightMyRequestResponse): T {
  return response.json() as T
}

export interface SandboxApp {
  app_id: string
  name: string
  network: string
  api_key: string
  key_id: string
  wallet: { address: string; seed: string }
}

export interface SandboxUser {
  user_id: string
  username: string
  wallet: { address: string; seed: string }
}

let counter = 0
export function uniqueName(prefix: string): string {
  counter += 1
  return `${prefix}_${process.pid}_${counter}_${randomBytes(2).toString('hex')}`
}

/**
 * The header a sandbox request without a JSON body must carry (src/http/site-guard.ts): spread it
 * into the headers of a body-less `POST`, `PUT`, `PATCH` or `DELETE` to the sandbox API.
 */
export const SANDBOX_CLIENT: Readonly<Record<string, string>> = { 'x-plinth-client': 'test' }

/** Thin client for the sandbox API; each call asserts success so tests read as steps. */
export function sandbox(app: FastifyInstance, headers: Record<string, string> = {}) {
  async function call<T>(options: InjectOptions, expected: number): Promise<T> {
    const response = await app.inject({ ...options, headers: { ...SANDBOX_CLIENT, ...headers, ...(options.headers ?? {}) } })
    if (response.statusCode !== expected) {
      throw new Error(`${options.method} ${options.url} answered ${response.statusCode}: ${response.body}`)
    }
    return response.json() as T
  }
  return {
    createApp: (name = uniqueName('app'), network?: string) =>
      call<SandboxApp>({ method: 'POST', url: '/sandbox/apps', payload: network === undefined ? { name } : { name, network } }, 201),
    createUser: (username = uniqueName('u')) => call<SandboxUser>({ method: 'POST', url: '/sandbox/users', payload: { username } }, 201),
    createKey: (appId: string) => call<{ key_id: string; api_key: string }>({ method: 'POST', url: `/sandbox/apps/${appId}/keys` }, 201),
    revokeKey: (appId: string, keyId: string) =>
      call<{ key_id: string; revoked_at: string }>({ method: 'DELETE', url: `/sandbox/apps/${appId}/keys/${keyId}` }, 200),
    authenticate: (appId: string, userId: string, scopes: string[] = ['username', 'payments'], expiresIn?: number) =>
      call<{ accessToken: string; user: { uid: string; username?: string }; expires_at: string }>(
        {
          method: 'POST',
          url: `/sandbox/apps/${appId}/authenticate`,
          payload: expiresIn === undefined ? { user_id: userId, scopes } : { user_id: userId, scopes, expires_in: expiresIn },
        },
        200,
      ),
    revokeToken: (accessToken: string) =>
      call<{ revoked: boolean }>({ method: 'POST', url: '/sandbox/tokens/revoke', payload: { accessToken } }, 200),
    advanceClock: (seconds: number) =>
      call<{ now: string; timestamp: number; offset_seconds: number }>(
        { method: 'POST', url: '/sandbox/clock', payload: { advance_seconds: seconds } },
        200,
      ),
  }
}

/**
 * Reads every row of every table as text: what a database dump would contain, each table's rows
 * in a fixed order. `except` leaves tables out; `withoutColumns` leaves columns of a table out.
 */
export async function dumpDatabase(
  db: Kysely<DB>,
  except: readonly string[] = [],
  withoutColumns: Readonly<Record<string, readonly string[]>> = {},
): Promise<string> {
  const tables = await sql<{ table_name: string }>`
    select table_name from information_schema.tables
    where table_schema = current_schema() and table_type = 'BASE TABLE'`.execute(db)
  const parts: string[] = []
  for (const { table_name } of tables.rows) {
    if (except.includes(table_name)) continue
    const rows = await sql<Record<string, unknown>>`select * from ${sql.table(table_name)}`.execute(db)
    const left = withoutColumns[table_name] ?? []
    // Rows in a fixed order: an UPDATE moves a row in the heap, so the order of `select *` is no part of the state.
    const kept = rows.rows
      .map((row) => JSON.stringify(Object.fromEntries(Object.entries(row).filter(([column]) => !left.includes(column)))))
      .sort()
    parts.push(`${table_name}: [${kept.join(',')}]`)
  }
  return parts.join('\n')
}

/**
 * The platform's state as text: what a refused call must leave unchanged. Left out: the request
 * log, which records refused calls too, by design; the time of each process's sandbox
 * heartbeat (sandbox/sandbox-sync.ts), which its poll rewrites every 5 s whatever is asked (the
 * registry's rows and the generation each process applied are still compared); and a server API
 * key's last use (`api_keys.last_used_at`), written when the key authenticates a request, refused
 * or not, at most once a minute.
 */
export function dumpState(db: Kysely<DB>): Promise<string> {
  return dumpDatabase(db, ['request_log'], { sandbox_processes: ['seen_at'], api_keys: ['last_used_at'] })
}

/**
 * The platform's state as text that only a change makes differ: dumpState's,
 * tables and rows in a fixed order.
 */
export async function stableState(db: Kysely<DB>): Promise<string> {
  const dump = await dumpState(db)
  return dump
    .split('\n')
    .map((line) => {
      const colon = line.indexOf(': ')
      const rows = (JSON.parse(line.slice(colon + 2)) as unknown[]).map((row) => JSON.stringify(row)).sort()
      return `${line.slice(0, colon)}: ${rows.join('\n  ')}`
    })
    .sort()
    .join('\n')
}
