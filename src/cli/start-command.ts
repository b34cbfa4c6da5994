import { existsSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { EXIT, UsageError } from './usage.js'

/** Resolves when `port` on `host` can be listened on; a UsageError naming the port when it cannot. */
async function checkPort(host: string, port: number): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const probe = createServer()
    probe.once('error', (error: NodeJS.ErrnoException) => reject(portError(error, host, port)))
    probe.listen(port, host, () => probe.close(() => resolve()))
  })
}

function portError(error: NodeJS.ErrnoException, host: string, port: number): Error {
  if (error.code === 'EADDRINUSE') return new UsageError(`port ${port} on ${host} is in use: stop what listens there, or pass --port`)
  if (error.code === 'EACCES') return new UsageError(`port ${port} on ${host} is not allowed to this user: pass --port 1024 or above`)
  if (error.code === 'EADDRNOTAVAIL') return new UsageError(`${host} is not an address of this machine: pass --host`)
  return error
}

/** `plinth start`: a platform in this process, as `npm start` runs it, until Ctrl-C or SIGTERM. */
export async function start(values: Record<string, string | boolean | undefined>, adminToken: string | undefined): Promise<number> {
  // Checked before anything is opened or created: a usage error leaves nothing behind.
  if (values.seed !== undefined && values.seed !== 'demo' && values.seed !== 'empty') {
    throw new UsageError(`--seed takes demo or empty, got "${values.seed}"`)
  }
  if (typeof values.port === 'string' && !(/^\d{1,5}$/.test(values.port) && Number(values.port) <= 65535)) {
    throw new UsageError(`--port takes 0 to 65535, got "${values.port}"`)
  }
  const set = (name: string, value: string | boolean | undefined) => {
    if (typeof value === 'string') process.env[name] = value
  }
  set('PORT', values.port)
  set('HOST', values.host)
  set('PLINTH_DATA_DIR', values['data-dir'])
  set('DATABASE_URL', values['database-url'])
  set('PLINTH_MODE', values.mode)
  set('PLINTH_ADMIN_TOKEN', adminToken)
  const { loadConfig, ConfigError } = await import('../config.js')
  let config: ReturnType<typeof loadConfig>
  try {
    config = loadConfig()
  } catch (error) {
    if (error instanceof ConfigError) throw new UsageError(error.message)
    throw error
  }
  if (config.port !== 0) await checkPort(config.host, config.port)
  // A start that fails removes the data directory it created (an existing one is never touched).
  const createdDir = config.databaseUrl === undefined && config.dataDir !== 'memory' && !existsSync(config.dataDir)
  const { startServer } = await import('../start.js')
  const { banner } = await import('./banner.js')
  let server: Awaited<ReturnType<typeof startServer>>
  try {
    server = await startServer(config, { seed: values.seed !== 'empty' })
  } catch (error) {
    if (createdDir) rmSync(config.dataDir, { recursive: true, force: true })
    // Taken between the check and the listen.
    throw portError(error as NodeJS.ErrnoException, config.host, config.port)
  }
  process.stdout.write(banner(config, server.databaseKind, server.demo, server.readyMs, process.stdout.isTTY === true))
  await new Promise<void>((resolve) => {
    const stop = () => {
      server.close().then(resolve, resolve)
    }
    process.once('SIGINT', stop)
    process.once('SIGTERM', stop)
  })
  return EXIT.ok
}
