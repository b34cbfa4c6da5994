/**
 * `node --import tsx bench/cpu-per-request.ts [--rounds 5] [--seconds 4] [checkout …]`: the CPU a
 * `GET /v2/me` costs the server, for one or more built checkouts of Plinth (each a directory with
 * `dist/server.js`, e.g. a `git worktree` of an older commit after `npm run build`; the default
 * is this one), measured in alternating rounds so that they share the machine's moods. Each round
 * starts the checkout's server as `npm start` does (embedded database in memory, sandbox mode,
 * `LOG_LEVEL=warn`, request log off, the token limit out of the way), signs 50 users in, loads it
 * with autocannon (32 connections, 4 s warm-up), and reads the server's CPU from /proc (all its
 * threads, and the main thread alone) over the measured seconds. Prints every round and the
 * medians. CPU time, not throughput: meaningful on a shared machine, where req/s is not.
 */
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import autocannon from 'autocannon'
import { freePort } from './lib.js'

const args = process.argv.slice(2)
const option = (name: string, fallback: number): number => {
  const at = args.indexOf(name)
  if (at === -1) return fallback
  const [value] = args.splice(at, 2).slice(1)
  return Number(value)
}
const rounds = option('--rounds', 5)
const seconds = option('--seconds', 4)
const checkouts = (args.length > 0 ? args : ['.']).map((dir) => resolve(dir))
const USERS = 50

/** User and system CPU of `pid` (or of one of its threads) in milliseconds. */
function cpuMs(pid: number, thread?: number): number {
  const path = thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`
  const fields = readFileSync(path, 'utf8').split(') ')[1]?.split(' ') ?? []
  return (Number(fields[11]) + Number(fields[12])) * 10
}

async function round(checkout: string): Promise<{ perSecond: number; cpuUs: number; mainUs: number }> {
  const port = await freePort()
  const base = `http://127.0.0.1:${port}`
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    PLINTH_MODE: 'sandbox',
    PLINTH_REQUEST_LOG: 'off',
    PLINTH_DATA_DIR: 'memory',
    PLINTH_RATE_LIMIT_TOKEN_PER_MINUTE: '100000000',
  }
  delete env.DATABASE_URL
  const server = spawn(process.execPath, ['--max-old-space-size=384', 'dist/server.js'], { cwd: checkout, env, stdio: 'ignore' })
  const pid = server.pid
  if (pid === undefined) throw new Error(`${checkout}: the server did not start`)
  try {
    for (let tries = 0; ; tries++) {
      const ready = await fetch(`${base}/readyz`).then(
        (response) => response.status === 200,
        () => false,
      )
      if (ready) break
      if (tries > 300) throw new Error(`${checkout}: not ready after 30 s`)
      await new Promise((done) => setTimeout(done, 100))
    }
    const post = async (path: string, body: object) => {
      const response = await fetch(base + path, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
      if (response.status >= 300) throw new Error(`${path}: ${response.status} ${await response.text()}`)
      return (await response.json()) as Record<string, string>
    }
    const app = await post('/sandbox/apps', { name: 'cpu per request' })
    const tokens: string[] = []
    for (let i = 0; i < USERS; i++) {
      const user = await post('/sandbox/users', { username: `cpu_user_${i}` })
      const signedIn = await post(`/sandbox/apps/${app.app_id}/authenticate`, { user_id: user.user_id as string, scopes: ['username'] })
      tokens.push((signedIn.accessToken ?? signedIn.access_token) as string)
    }
    let next = 0
    const load = (duration: number) =>
      autocannon({
        url: `${base}/v2/me`,
        connections: 32,
        duration,
        requests: [{ setupRequest: (request) => ({ ...request, headers: { authorization: `Bearer ${tokens[next++ % USERS]}` } }) }],
      })
    await load(4)
    const [all, main] = [cpuMs(pid), cpuMs(pid, pid)]
    const result = await load(seconds)
    const [allAfter, mainAfter] = [cpuMs(pid), cpuMs(pid, pid)]
    if (result.non2xx > 0 || result.errors > 0) throw new Error(`${checkout}: ${result.non2xx} non-2xx answers, ${result.errors} errors`)
    const requests = result.requests.total
    return { perSecond: requests / seconds, cpuUs: ((allAfter - all) * 1000) / requests, mainUs: ((mainAfter - main) * 1000) / requests }
  } finally {
    server.kill('SIGKILL')
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN
const results = new Map(checkouts.map((checkout) => [checkout, [] as Awaited<ReturnType<typeof round>>[]]))
for (let i = 0; i < rounds; i++) {
  for (const checkout of checkouts) {
    const result = await round(checkout)
    results.get(checkout)?.push(result)
    process.stdout.write(
      `round ${i + 1} ${checkout}: ${result.perSecond.toFixed(0)} req/s, ${result.cpuUs.toFixed(1)} µs of CPU a request (main thread ${result.mainUs.toFixed(1)})\n`,
    )
  }
}
process.stdout.write(`\nGET /v2/me, CPU µs a request, median of ${rounds} rounds:\n`)
for (const [checkout, list] of results) {
  process.stdout.write(
    `  ${checkout}: ${median(list.map((r) => r.cpuUs)).toFixed(1)} (main thread ${median(list.map((r) => r.mainUs)).toFixed(1)}), ${median(list.map((r) => r.perSecond)).toFixed(0)} req/s\n`,
  )
}
