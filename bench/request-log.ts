/**
 * `node --import tsx bench/request-log.ts [--seconds 10] [--rounds 3] [--connections 32] [--postgres]`
 *
 * The request log's cost on the hot read, GET /v2/payments/{id}: two Plinth processes on PGlite
 * in memory (or, with --postgres, each on a schema of its own on DATABASE_URL), one with
 * PLINTH_REQUEST_LOG=on and one with it off, loaded in turn (off, on, off,
 * on, …) with autocannon in the same run, so that both see the same machine. Prints each round's
 * requests a second and the ratio of the medians (on / off). The machine is shared: quote ratios.
 */
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { dropSchema, ensureBuilt, postJson, type RunningServer, runLoad, startNodeFlags, startServer, stringField } from './lib.js'

const ROOT = join(fileURLToPath(import.meta.url), '..', '..')
const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '3' },
    connections: { type: 'string', default: '32' },
    postgres: { type: 'boolean', default: false },
  },
})
const databaseUrl = values.postgres ? (process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres') : undefined
const runTag = randomBytes(3).toString('hex')
const schemaOf = (requestLog: string) => `bench_request_log_${requestLog}_${runTag}`
const seconds = Number(values.seconds)
const rounds = Number(values.rounds)
const connections = Number(values.connections)

async function launch(requestLog: 'on' | 'off'): Promise<RunningServer> {
  return startServer({
    name: `plinth-log-${requestLog}`,
    command: process.execPath,
    args: [...startNodeFlags(ROOT), join(ROOT, 'dist', 'server.js')],
    cwd: ROOT,
    env: {
      LOG_LEVEL: 'warn',
      PLINTH_MODE: 'sandbox',
      PLINTH_DATA_DIR: 'memory',
      PLINTH_REQUEST_LOG: requestLog,
      ...(databaseUrl === undefined
        ? {}
        : { DATABASE_URL: databaseUrl, PLINTH_DB_SCHEMA: schemaOf(requestLog), PLINTH_SECRET_KEY: randomBytes(32).toString('hex') }),
      PLINTH_RATE_LIMIT_KEY_PER_MINUTE: '1000000000',
      PLINTH_RATE_LIMIT_TOKEN_PER_MINUTE: '1000000000',
    },
  })
}

/** An app, a user who signed in, and one payment of theirs to read. */
async function seedPayment(baseUrl: string): Promise<{ apiKey: string; paymentId: string }> {
  const app = await postJson(`${baseUrl}/sandbox/apps`, { name: 'bench' }, 201)
  const user = await postJson(`${baseUrl}/sandbox/users`, { username: `bench_${Date.now()}` }, 201)
  const appId = stringField(app, 'app_id', 'app')
  const auth = await postJson(
    `${baseUrl}/sandbox/apps/${appId}/authenticate`,
    { user_id: stringField(user, 'user_id', 'user'), scopes: ['username', 'payments'] },
    200,
  )
  const payment = await postJson(`${baseUrl}/v2/client/payments`, { amount: 1, memo: 'bench', metadata: { order: 1 } }, 201, {
    authorization: `Bearer ${stringField(auth, 'accessToken', 'authenticate')}`,
  })
  return { apiKey: stringField(app, 'api_key', 'app'), paymentId: stringField(payment, 'identifier', 'payment') }
}

const median = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] ?? 0
}

async function main(): Promise<void> {
  await ensureBuilt(ROOT)
  const servers = { off: await launch('off'), on: await launch('on') }
  try {
    const targets = { off: await seedPayment(servers.off.baseUrl), on: await seedPayment(servers.on.baseUrl) }
    const results: Record<'on' | 'off', number[]> = { on: [], off: [] }
    for (let round = 0; round < rounds; round++) {
      for (const which of ['off', 'on'] as const) {
        const { apiKey, paymentId } = targets[which]
        const result = await runLoad({
          baseUrl: servers[which].baseUrl,
          connections,
          durationSeconds: seconds,
          build: () => ({ method: 'GET', path: `/v2/payments/${paymentId}`, headers: { authorization: `Key ${apiKey}` } }),
        })
        if (result.errors > 0) throw new Error(`${which}: ${result.errors} errors ${JSON.stringify(result.statusCodes)}`)
        results[which].push(result.requestsPerSecond)
        process.stdout.write(
          `round ${round + 1} log ${which.padEnd(3)} ${result.requestsPerSecond.toFixed(0)} req/s  p50 ${result.latencyP50} ms  p99 ${result.latencyP99} ms\n`,
        )
      }
    }
    const off = median(results.off)
    const on = median(results.on)
    process.stdout.write(
      `${databaseUrl === undefined ? 'PGlite' : 'PostgreSQL'} median: off ${off.toFixed(0)} req/s, on ${on.toFixed(0)} req/s, on/off ${(on / off).toFixed(3)}\n`,
    )
  } finally {
    await servers.off.stop()
    await servers.on.stop()
    if (databaseUrl !== undefined) for (const which of ['on', 'off']) await dropSchema(databaseUrl, schemaOf(which))
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`)
  process.exit(1)
})
