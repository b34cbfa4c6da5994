import { createServer as createHttpServer, type Server } from 'node:http'
import type { FastifyInstance } from 'fastify'
import { DRAIN } from './app/pipeline.js'
import { buildApp } from './app.js'
import { createPlatformClock } from './clock/clock.js'
import { clockRepo } from './clock/clock-repo.js'
import type { Config } from './config.js'
import { type DatabaseKind, openDatabase } from './db/database.js'
import { analyzeTables } from './db/statistics.js'
import { resolveSecretKey } from './lib/secret-key.js'
import { type DemoInfo, seedDemo } from './sandbox/world/demo-seed.js'

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

export interface RunningServer {
  app: Awaited<ReturnType<typeof buildApp>>
  databaseKind: DatabaseKind
  /** The demo app and user, in sandbox mode when seeded. */
  demo: DemoInfo | undefined
  readyMs: number
  /** The graceful stop: every request received is answered, connections close, then the database. */
  close(): Promise<void>
}

/**
 * One Plinth on its database, listening: what `npm start` (server.ts) and `startPlinth()`
 * (index.ts) both run. `seed: false` leaves a sandbox empty (no demo app and user);
 * `shareMemoryImage` is openDatabase's (startPlinth() sets it).
 */
export async function startServer(config: Config, options: { seed?: boolean; shareMemoryImage?: boolean } = {}): Promise<RunningServer> {
  const startedAt = performance.now()
  const secretKey = resolveSecretKey(config)
  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    schema: config.databaseSchema,
    dataDir: config.dataDir,
    poolSize: config.databasePoolSize,
    shareMemoryImage: options.shareMemoryImage,
  })
  try {
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
    const demo = config.mode === 'sandbox' && options.seed !== false ? await seedDemo(database.db, { clock, secretKey }) : undefined
    // Statistics for the tables the seed grew, before the first request plans a statement (src/db/statistics.ts):
    // a table of a few rows is better left as it was (never analyzed, or analyzed at its size on the last start).
    await analyzeTables(database.db, 'grown')

    const { drain } = DRAIN.register(app)
    app.server.headersTimeout = HEADERS_TIMEOUT_MS
    app.server.requestTimeout = REQUEST_TIMEOUT_MS
    app.server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS
    app.server.setTimeout(SOCKET_IDLE_TIMEOUT_MS)
    await app.listen({ port: config.port, host: config.host })
    const horizons = await listenForHorizons(app, config)
    const readyMs = Math.round(performance.now() - startedAt)
    app.log.info({ readyMs, database: database.kind, mode: config.mode }, 'plinth ready')
    let closed: Promise<void> | undefined
    return {
      app,
      databaseKind: database.kind,
      demo,
      readyMs,
      close: () => {
        // The Horizon listeners stop taking connections first; their streams end with the application's drain.
        for (const server of horizons) stopListening(server)
        closed ??= drain().then(() => {
          clock.stop()
          return database.close()
        })
        return closed
      },
    }
  } catch (error) {
    await database.close().catch(() => undefined)
    throw error
  }
}

/**
 * Each network's Horizon on its own listener (PLINTH_TESTNET_HORIZON_PORT, PLINTH_MAINNET_HORIZON_PORT;
 * docs/ledger.md): the application's own routing, which sends what arrives there to that network's
 * Horizon at the root (src/ledger/horizon/origins.ts).
 */
async function listenForHorizons(app: FastifyInstance, config: Config): Promise<Server[]> {
  const servers: Server[] = []
  for (const origin of Object.values(config.horizons ?? {})) {
    if (origin.port === undefined) continue
    const server = createHttpServer((request, response) => app.routing(request, response))
    server.headersTimeout = HEADERS_TIMEOUT_MS
    server.requestTimeout = REQUEST_TIMEOUT_MS
    server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS
    server.setTimeout(SOCKET_IDLE_TIMEOUT_MS)
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(origin.port, config.host, () => resolve())
    })
    servers.push(server)
  }
  return servers
}

/** Stops taking connections and ends the idle ones; open streams end with the application's close. */
function stopListening(server: Server): void {
  if (!server.listening) return
  server.close()
  server.closeIdleConnections()
}
