/**
 * `DATABASE_URL=… PLINTH_TEST_DB=postgres node --import tsx bench/metrics-cost.ts`: the CPU that
 * /metrics' measuring adds to a request. Two production-mode apps in this process share one
 * PostgreSQL schema (seeded through a sandbox app on it): one without PLINTH_METRICS_TOKEN
 * (nothing measured), one with it (request histogram, statement timer, cache counters). Each
 * round runs GET /v2/me `REQUESTS` times through app.inject on each app, alternating which goes
 * first, and reads process.cpuUsage() around it; the medians are printed. CPU time, not wall
 * time: meaningful on a shared machine. app.inject skips the sockets, so the base figure is
 * lower than a real request's; the difference is what metrics cost.
 */
import { randomBytes } from 'node:crypto'
import { sandbox, startPlatform, type TestPlatform } from '../test/helpers/platform.js'

const REQUESTS = 2000
const ROUNDS = 9

async function cpuPerRequest(platform: TestPlatform, token: string): Promise<number> {
  const start = process.cpuUsage()
  for (let i = 0; i < REQUESTS; i++) {
    const response = await platform.app.inject({ method: 'GET', url: '/v2/me', headers: { authorization: `Bearer ${token}` } })
    if (response.statusCode !== 200) throw new Error(`GET /v2/me answered ${response.statusCode}: ${response.body}`)
  }
  const used = process.cpuUsage(start)
  return (used.user + used.system) / REQUESTS
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN

const seeding = await startPlatform()
const off = await startPlatform({ mode: 'production', sharing: seeding })
const on = await startPlatform({ mode: 'production', sharing: seeding, metricsToken: randomBytes(16).toString('hex') })
try {
  const s = sandbox(seeding.app)
  const app = await s.createApp()
  const user = await s.createUser()
  const { accessToken } = await s.authenticate(app.app_id, user.user_id)
  await cpuPerRequest(off, accessToken)
  await cpuPerRequest(on, accessToken)
  const offs: number[] = []
  const ons: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    if (round % 2 === 0) {
      offs.push(await cpuPerRequest(off, accessToken))
      ons.push(await cpuPerRequest(on, accessToken))
    } else {
      ons.push(await cpuPerRequest(on, accessToken))
      offs.push(await cpuPerRequest(off, accessToken))
    }
  }
  const fmt = (values: number[]) => values.map((value) => value.toFixed(1)).join(', ')
  process.stdout.write(
    `GET /v2/me through app.inject, CPU µs per request, ${ROUNDS} rounds of ${REQUESTS}:\n` +
      `  metrics off: median ${median(offs).toFixed(1)} (${fmt(offs)})\n` +
      `  metrics on:  median ${median(ons).toFixed(1)} (${fmt(ons)})\n` +
      `  difference:  ${(median(ons) - median(offs)).toFixed(1)} µs (${(((median(ons) - median(offs)) / median(offs)) * 100).toFixed(1)}%)\n`,
  )
} finally {
  await on.close()
  await off.close()
  await seeding.close()
}
