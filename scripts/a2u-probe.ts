/**
 * A2U lifecycles in one process, on PostgreSQL, for CPU per lifecycle and plans over a long run
 * (BENCHMARKS.md, "A2U lifecycle: where the CPU goes, and the floor"). Not a benchmark of
 * throughput: `npm run bench` is. Each worker has its own app and 8 users; a lifecycle is create
 * (`POST /v2/payments`), sign, `POST /ledger/transactions`, `POST /v2/payments/{id}/complete`,
 * through `app.inject` (no sockets, no HTTP parser). Every window prints lifecycles/s, Plinth's
 * CPU per lifecycle less the signing (this process), PostgreSQL's (its own backends only, found by
 * application_name), statements sent per lifecycle, and the scans of the hot tables.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/test PLINTH_TEST_DB=postgres \
 *     [WORKERS=16] [SECONDS=70] [WINDOW=10] [STATEMENTS=1] node --import tsx scripts/a2u-probe.ts
 *
 * STATEMENTS=1 runs three lifecycles one at a time instead and prints every statement of each call.
 */
import { readFileSync } from 'node:fs'
import { Account } from '@stellar/stellar-base'
import pg from 'pg'
import { signerOf, signPayment } from '../bench/scenarios/lifecycles.js'
import { sandbox, startPlatform } from '../test/helpers/platform.js'

const APPLICATION = 'plinth-a2u-probe'
process.env.PGAPPNAME = APPLICATION
const WORKERS = Number(process.env.WORKERS ?? 16)
const SECONDS = Number(process.env.SECONDS ?? 70)
const WINDOW = Number(process.env.WINDOW ?? 10)
const LIST = process.env.STATEMENTS === '1'

const sent: string[] = []
let statements = 0
let counting = true
const query = pg.Client.prototype.query as (...args: unknown[]) => unknown
pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
  if (counting) statements++
  if (counting && LIST) {
    const first = args[0] as string | { text?: string }
    sent.push(
      String(typeof first === 'string' ? first : first?.text)
        .replace(/\s+/g, ' ')
        .slice(0, 120),
    )
  }
  return query.apply(this, args)
} as typeof pg.Client.prototype.query

const platform = await startPlatform({ requestLog: false })
const admin = new pg.Client({ connectionString: process.env.DATABASE_URL })
await admin.connect()
const sb = sandbox(platform.app)
interface Worker {
  key: { authorization: string }
  uids: string[]
  signer: ReturnType<typeof signerOf>
  account: Account
  started: number
}
const workers: Worker[] = []
for (let w = 0; w < (LIST ? 1 : WORKERS); w++) {
  const app = await sb.createApp()
  const uids: string[] = []
  for (let i = 0; i < 8; i++) {
    const user = await sb.createUser()
    uids.push((await sb.authenticate(app.app_id, user.user_id, ['username', 'payments', 'wallet_address'])).user.uid)
  }
  const found = JSON.parse((await platform.app.inject({ method: 'GET', url: `/ledger/accounts/${app.wallet.address}` })).body)
  const account = new Account(app.wallet.address, found.sequence)
  workers.push({ key: { authorization: `Key ${app.api_key}` }, uids, signer: signerOf(app.wallet.seed), account, started: 0 })
}

let signingMs = 0
let completed = 0
/** Runs one call; with STATEMENTS=1 prints the statements it sent. */
async function call(name: string, run: () => Promise<{ statusCode: number; body: string }>) {
  sent.length = 0
  const response = await run()
  if (response.statusCode !== 200) throw new Error(`${name}: ${response.statusCode} ${response.body}`)
  if (LIST) process.stdout.write(`${name}: ${sent.length} statements\n${sent.map((text) => `    ${text}\n`).join('')}`)
  return JSON.parse(response.body)
}
async function lifecycle(worker: Worker) {
  const uid = worker.uids[worker.started++ % worker.uids.length]
  const payment = { amount: 0.01, memo: 'probe', metadata: {}, uid }
  const created = await call('create', () =>
    platform.app.inject({ method: 'POST', url: '/v2/payments', headers: worker.key, payload: { payment } }),
  )
  const before = process.cpuUsage()
  const tx = signPayment(worker.signer, worker.account, { to: created.to_address, memo: created.identifier, network: created.network })
  const signing = process.cpuUsage(before)
  signingMs += (signing.user + signing.system) / 1000
  const submitted = await call('submit', () =>
    platform.app.inject({
      method: 'POST',
      url: '/ledger/transactions',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ tx }).toString(),
    }),
  )
  await call('complete', () =>
    platform.app.inject({
      method: 'POST',
      url: `/v2/payments/${created.identifier}/complete`,
      headers: worker.key,
      payload: { txid: submitted.hash },
    }),
  )
  completed++
}

/** CPU ticks (1/100 s) of a process, 0 once it is gone. */
function ticks(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
    return Number(fields[11]) + Number(fields[12])
  } catch {
    return 0
  }
}
// The pool opens and closes backends: their CPU is summed from each one's increments, read every 250 ms.
const seen = new Map<number, number>()
let postgresTicks = 0
async function readBackends(): Promise<void> {
  const { rows } = await admin.query<{ pid: number }>('select pid from pg_stat_activity where application_name = $1', [APPLICATION])
  for (const { pid } of rows) {
    const now = ticks(pid)
    if (now > 0) postgresTicks += now - (seen.get(pid) ?? now)
    if (now > 0) seen.set(pid, now)
  }
}
const scans = async () =>
  (
    await admin.query<{ relname: string; seq_scan: string; analyze_count: string }>(
      `select relname, seq_scan, analyze_count from pg_stat_user_tables
       where schemaname = $1 and relname in ('payments', 'ledger_accounts', 'ledger_transactions') order by relname`,
      [platform.schema],
    )
  ).rows
    .map((row) => `${row.relname} ${row.seq_scan} seq scans, analyzed ${row.analyze_count}×`)
    .join('; ')

if (LIST) {
  for (let i = 0; i < 3; i++) await lifecycle(workers[0] as Worker)
} else {
  await readBackends()
  const sampler = setInterval(() => void readBackends(), 250)
  let stop = false
  const running = workers.map(async (worker) => {
    while (!stop) await lifecycle(worker)
  })
  const start = performance.now()
  let last = { at: start, cpu: process.cpuUsage(), postgres: postgresTicks, completed, signingMs, statements }
  while (performance.now() - start < SECONDS * 1000) {
    await new Promise((resolve) => setTimeout(resolve, WINDOW * 1000))
    const now = { at: performance.now(), cpu: process.cpuUsage(), postgres: postgresTicks, completed, signingMs, statements }
    const n = now.completed - last.completed
    const plinthMs = (now.cpu.user + now.cpu.system - last.cpu.user - last.cpu.system) / 1000 - (now.signingMs - last.signingMs)
    process.stdout.write(
      `${((now.at - start) / 1000).toFixed(0)} s: ${(n / ((now.at - last.at) / 1000)).toFixed(0)} lifecycles/s, ` +
        `Plinth ${(plinthMs / n).toFixed(2)} ms (signing apart), PostgreSQL ${(((now.postgres - last.postgres) * 10) / n).toFixed(2)} ms, ` +
        `${((now.statements - last.statements) / n).toFixed(2)} statements per lifecycle; ${await scans()}\n`,
    )
    last = now
  }
  stop = true
  await Promise.all(running)
  clearInterval(sampler)
}
counting = false
await admin.end()
await platform.close()
