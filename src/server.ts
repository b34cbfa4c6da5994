import { buildApp, VERSION } from './app.js'
import { createPlatformClock } from './clock/clock.js'
import { clockRepo } from './clock/clock-repo.js'
import { type Config, ConfigError, loadConfig } from './config.js'
import { openDatabase } from './db/database.js'
import { registerDrain } from './http/drain.js'
import { resolveSecretKey } from './lib/secret-key.js'
import { type DemoInfo, seedDemo } from './sandbox/demo-seed.js'

const SHUTDOWN_GRACE_MS = 10_000
/**
 * Slow clients may not hold connections: a request's headers must arrive within 10 s and the
 * whole request (headers and body) within 30 s, else 408 `request_timeout` (Node checks every
 * 30 s, so a timeout fires up to 30 s late). A socket silent for 60 s mid-request is closed; an
 * idle keep-alive connection is closed after 72 s (longer than the 60 s idle timeout of common
 * load balancers, so they close first). None bounds a handler's own work.
 */
const HEADERS_TIMEOUT_MS = 10_000
const REQUEST_TIMEOUT_MS = 30_000
const SOCKET_IDLE_TIMEOUT_MS = 60_000
const KEEP_ALIVE_TIMEOUT_MS = 72_000

export async function main(): Promise<void> {
  let config: Config
  try {
    config = loadConfig()
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`plinth: configuration error: ${error.message}\n`)
      process.exit(78)
    }
    throw error
  }

  const startedAt = performance.now()
  const secretKey = resolveSecretKey(config)
  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    schema: config.databaseSchema,
    dataDir: config.dataDir,
    poolSize: config.databasePoolSize,
  })
  // No timer of its own: every read of the revocation feed (every 200 ms) brings the stored offset.
  const clock = await createPlatformClock({ store: clockRepo(database.db) })
  const app = await buildApp({
    db: database.db,
    clock,
    config,
    secretKey,
    ping: database.ping,
    listen: database.listen,
    poolStats: database.poolStats,
  })
  const demo = config.mode === 'sandbox' ? await seedDemo(database.db, { clock, secretKey }) : undefined

  const { drain } = registerDrain(app)
  let closing = false
  const shutdown = (signal: string) => {
    if (closing) return
    closing = true
    app.log.info({ signal }, 'shutting down: no new connections, finishing requests in flight')
    const force = setTimeout(() => {
      app.log.error('shutdown took too long; exiting')
      process.exit(1)
    }, SHUTDOWN_GRACE_MS)
    force.unref()
    drain()
      .then(() => {
        clock.stop()
        return database.close()
      })
      .then(() => {
        app.log.info({ signal }, 'database closed; exiting')
        process.exit(0)
      })
      .catch((error: unknown) => {
        app.log.error({ err: error }, 'error during shutdown')
        process.exit(1)
      })
  }
  process.on('SIGTERM', () => shutdown('SIGTERM'))
  process.on('SIGINT', () => shutdown('SIGINT'))

  app.server.headersTimeout = HEADERS_TIMEOUT_MS
  app.server.requestTimeout = REQUEST_TIMEOUT_MS
  app.server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS
  app.server.setTimeout(SOCKET_IDLE_TIMEOUT_MS)
  await app.listen({ port: config.port, host: config.host })
  const readyMs = Math.round(performance.now() - startedAt)
  app.log.info({ readyMs, database: database.kind, mode: config.mode }, 'plinth ready')
  process.stdout.write(banner(config, database.kind, demo, readyMs, process.stdout.isTTY === true))
}

/**
 * What the process prints once it listens. The demo app's first key is printed only to a
 * terminal: standard output that is a pipe usually ends in a log store, where a key must not go.
 */
function banner(config: Config, kind: string, demo: DemoInfo | undefined, readyMs: number, terminal: boolean): string {
  const url = config.publicUrl
  const storage =
    kind === 'postgres'
      ? 'PostgreSQL server (DATABASE_URL)'
      : config.dataDir === 'memory'
        ? 'embedded PostgreSQL, in memory'
        : `embedded PostgreSQL in ${config.dataDir}`
  const lines = [
    '',
    `Plinth ${VERSION}: ${config.mode} mode, ${storage}, ready in ${readyMs} ms`,
    `  API base URL   ${url}/v2`,
    `  Docs           ${url}/docs   (OpenAPI: ${url}/v2/openapi.json)`,
    `  Ledger         ${url}/ledger   (Horizon-compatible; client SDK: ${url}/sdk/pi-sdk.js)`,
  ]
  if (config.mode === 'sandbox') {
    lines.push(`  Sandbox        ${url}/sandbox/   (the platform's browser: sign in as a user, open an app)`)
    lines.push(`  Console        ${url}/console/   (apps, keys, users, payments, ads, notifications, clock)`)
  }
  if (demo !== undefined) {
    lines.push(`  Demo app       ${demo.appName}, app_id ${demo.appId}`)
    const adminHeader = config.adminToken === undefined ? '' : ` -H "X-Admin-Token: $PLINTH_ADMIN_TOKEN"`
    const mint = `curl -s -X POST ${url}/sandbox/apps/${demo.appId}/keys${adminHeader}`
    lines.push(
      demo.apiKey !== undefined && terminal
        ? `                 server API key ${demo.apiKey}   (shown once: save it)`
        : demo.apiKey !== undefined
          ? `                 its server API key is printed only to a terminal; make one: ${mint}`
          : `                 its first server API key was shown at first start; make another: ${mint}`,
    )
    lines.push(`  Demo user      ${demo.username}, user_id ${demo.userId}`)
    lines.push('  Sign the demo user in to the demo app (what the client SDK does after the consent dialog):')
    lines.push(
      `    curl -s -X POST ${url}/sandbox/apps/${demo.appId}/authenticate${adminHeader} -H 'content-type: application/json' -d '{"user_id":"${demo.userId}","scopes":["username","payments"]}'`,
    )
    lines.push(`  then: curl -s ${url}/v2/me -H 'Authorization: Bearer <accessToken>'`)
  }
  lines.push('')
  return `${lines.join('\n')}\n`
}

main().catch((error: unknown) => {
  process.stderr.write(`plinth: failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
  process.exit(1)
})
