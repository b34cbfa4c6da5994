import { ConfigError, loadConfig } from '../config.js'
import { openDatabase } from '../db/database.js'

// `npm run db:migrate`: applies pending migrations to the configured database and exits.
// The server also migrates at start, so this is for deploys that migrate before rolling out.
// Exit codes: 0 applied, 2 a configuration to fix (a bad setting, no such database, no server
// listening), 1 anything else. Each error is one line; PLINTH_DEBUG=1 adds the stack.

/** The line that says what to do, for the errors a person fixes by hand; undefined for the rest. */
function advice(error: unknown, databaseUrl: string | undefined): string | undefined {
  if (error instanceof ConfigError) return `configuration error: ${error.message}`
  const code = (error as { code?: unknown }).code
  if (databaseUrl === undefined) return undefined
  let url: URL | undefined
  try {
    url = new URL(databaseUrl)
  } catch {
    return undefined
  }
  const name = decodeURIComponent(url.pathname.slice(1)) || 'postgres'
  const where = `${url.hostname}:${url.port || '5432'}`
  // PostgreSQL's invalid_catalog_name: the server answers, the database is not there.
  if (code === '3D000')
    return `database "${name}" does not exist on ${where}: create it with createdb ${name} (or CREATE DATABASE "${name}"), then run this again`
  if (code === 'ECONNREFUSED') return `no PostgreSQL server answers at ${where} (DATABASE_URL): start it, or fix the URL`
  if (code === 'ENOTFOUND') return `the host ${url.hostname} of DATABASE_URL is not found`
  if (code === '28P01' || code === '28000') return `PostgreSQL at ${where} refused the user or password of DATABASE_URL`
  return undefined
}

let databaseUrl: string | undefined
try {
  const config = loadConfig()
  databaseUrl = config.databaseUrl
  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    schema: config.databaseSchema,
    dataDir: config.dataDir,
    poolSize: 1,
  })
  await database.close()
  process.stdout.write(`migrations applied (${database.kind})\n`)
} catch (error) {
  const line = advice(error, databaseUrl)
  const message = error instanceof Error ? error.message : String(error)
  process.stderr.write(`db:migrate: ${line ?? message.split('\n', 1)[0]}\n`)
  if (process.env.PLINTH_DEBUG === '1' && error instanceof Error) process.stderr.write(`${error.stack}\n`)
  process.exitCode = line === undefined ? 1 : 2
}
