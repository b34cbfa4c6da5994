import { randomBytes } from 'node:crypto'
import { createServer } from 'node:net'
import pg from 'pg'
import { createSandboxClient, type SandboxClient } from './client/sandbox-client.js'
import { loadConfig } from './config.js'
import { startServer } from './start.js'

export { createSandboxClient, type SandboxClient, SandboxError } from './client/sandbox-client.js'

/**
 * Options of `startPlinth()`: the environment variables of README's configuration table, in
 * camelCase. Anything left out takes the variable's default, except where said.
 */
export interface PlinthOptions {
  /** Default: a free port. */
  port?: number
  /** Default: 127.0.0.1. */
  host?: string
  mode?: 'sandbox' | 'production'
  /** PostgreSQL instead of the embedded database. The platform gets a schema of its own. */
  databaseUrl?: string
  /** With databaseUrl: the schema to use (default: a fresh one, dropped on stop unless keepSchema). */
  databaseSchema?: string
  keepSchema?: boolean
  /** The embedded database's directory. Default: in memory (nothing written to disk). */
  dataDir?: string
  /** 32 bytes as 64 hex characters. Default with databaseUrl: a random key of this run. */
  secretKey?: string
  adminToken?: string
  tokenTtlSeconds?: number
  approvalWindowSeconds?: number
  adVerdictDelaySeconds?: number
  requestLog?: boolean
  /** Default: silent. */
  logLevel?: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'
  /** `demo` creates the demo app and user, as `npm start` does; default `empty`. */
  seed?: 'demo' | 'empty'
}

export interface RunningPlinth {
  /** http://host:port: the API is `${url}/v2`, the sandbox API `${url}/sandbox`. */
  url: string
  /** The Horizon-compatible ledger (for stellar-sdk or pi-backend). */
  ledgerUrl: string
  /** The schema on PostgreSQL (undefined on the embedded database). */
  schema: string | undefined
  /** How long the start took, in milliseconds. */
  readyMs: number
  sandbox: SandboxClient
  /** Stops the server (requests in flight are answered) and closes the database; drops a fresh schema. */
  stop(): Promise<void>
}

/** How many free ports startPlinth() tries when another process takes the one it found first. */
const PORT_ATTEMPTS = 5

async function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, host, () => {
      const address = server.address()
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))))
    })
  })
}

/** A whole Plinth in this process, for an app's test suite (docs/testing.md). */
export async function startPlinth(options: PlinthOptions = {}): Promise<RunningPlinth> {
  const host = options.host ?? '127.0.0.1'
  const freshSchema = options.databaseUrl !== undefined && options.databaseSchema === undefined
  const schema =
    options.databaseUrl === undefined ? undefined : (options.databaseSchema ?? `plinth_${process.pid}_${randomBytes(4).toString('hex')}`)
  const env: Record<string, string> = {
    HOST: host,
    PLINTH_DATA_DIR: options.dataDir ?? 'memory',
    LOG_LEVEL: options.logLevel ?? 'silent',
  }
  const set = (name: string, value: string | number | boolean | undefined) => {
    if (value !== undefined) env[name] = typeof value === 'boolean' ? (value ? 'on' : 'off') : String(value)
  }
  set('PLINTH_MODE', options.mode)
  set('DATABASE_URL', options.databaseUrl)
  set('PLINTH_DB_SCHEMA', schema)
  set('PLINTH_SECRET_KEY', options.secretKey ?? (options.databaseUrl === undefined ? undefined : randomBytes(32).toString('hex')))
  set('PLINTH_ADMIN_TOKEN', options.adminToken)
  set('PLINTH_TOKEN_TTL_SECONDS', options.tokenTtlSeconds)
  set('PLINTH_APPROVAL_WINDOW_SECONDS', options.approvalWindowSeconds)
  set('PLINTH_AD_VERDICT_DELAY_SECONDS', options.adVerdictDelaySeconds)
  set('PLINTH_REQUEST_LOG', options.requestLog)
  // A free port is found by listening on port 0 and closing; another process may take it before
  // the platform listens on it (EADDRINUSE), so a port this function chose is chosen again, a few times.
  let server: Awaited<ReturnType<typeof startServer>> | undefined
  let port = 0
  for (let attempt = 1; server === undefined; attempt++) {
    port = options.port ?? (await freePort(host))
    const config = loadConfig({ ...env, PORT: String(port) })
    try {
      // In memory mode, the process's later platforms start from a migrated image of its first (openDatabase).
      server = await startServer(config, { seed: options.seed === 'demo', shareMemoryImage: true })
    } catch (error) {
      if (options.port !== undefined || attempt >= PORT_ATTEMPTS || (error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error
    }
  }
  const running = server
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`
  return {
    url,
    ledgerUrl: `${url}/ledger`,
    schema,
    readyMs: running.readyMs,
    sandbox: createSandboxClient(url, { adminToken: options.adminToken }),
    async stop() {
      await running.close()
      if (freshSchema && options.keepSchema !== true && options.databaseUrl !== undefined) {
        const client = new pg.Client({ connectionString: options.databaseUrl })
        await client.connect()
        try {
          await client.query(`drop schema if exists "${schema}" cascade`)
        } finally {
          await client.end()
        }
      }
    },
  }
}
