import { loadConfig } from '../config.js'
import { openDatabase } from '../db/database.js'

// `npm run db:migrate`: applies pending migrations to the configured database and exits.
// The server also migrates at start, so this is for deploys that migrate before rolling out.
const config = loadConfig()
const database = await openDatabase({
  databaseUrl: config.databaseUrl,
  schema: config.databaseSchema,
  dataDir: config.dataDir,
  poolSize: 1,
})
await database.close()
process.stdout.write(`migrations applied (${database.kind})\n`)
