import { banner } from './cli/banner.js'
import { type Config, ConfigError, loadConfig } from './config.js'
import { startServer } from './start.js'

const SHUTDOWN_GRACE_MS = 10_000

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

  const server = await startServer(config)
  const { app } = server
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
    server
      .close()
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
  process.stdout.write(banner(config, server.databaseKind, server.demo, server.readyMs, process.stdout.isTTY === true))
}

main().catch((error: unknown) => {
  process.stderr.write(`plinth: failed to start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
  process.exit(1)
})
