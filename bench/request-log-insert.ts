/**
 * `node --import tsx bench/request-log-insert.ts [--rows 200] [--batches 40] [--rounds 3]`: what
 * writing the request log costs PostgreSQL's backend and the Node process a row, for each way of
 * sending a batch, on a table shaped as `request_log` (its two indexes), in a schema of its own on
 * DATABASE_URL. Rows are shaped as a `GET /v2/me` row (its headers and answer), and each way runs
 * in turn, round after round, so that all see the same machine:
 *
 * - `json`: the batch as one JSON parameter, read by `json_populate_recordset`;
 * - `values`: a multi-row `VALUES` with a parameter a field;
 * - `copy`: `COPY … FROM STDIN` (what src/request-log/request-log-repo.ts does, src/db/copy-in.ts);
 * - `unnest`: one array parameter a column (what it did before issue #40);
 *
 * CPU from /proc (10 ms ticks) of the backend (`pg_backend_pid()`) and of this process
 * (process.cpuUsage, which includes making the rows). Quote ratios: the machine is shared.
 */
import { readFileSync } from 'node:fs'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { from as copyFrom } from 'pg-copy-streams'
import { copyRows } from '../src/db/copy-in.js'
import { INSERT_COLUMNS } from '../src/request-log/request-log-repo.js'

const { values: args } = parseArgs({
  options: {
    rows: { type: 'string', default: '200' },
    batches: { type: 'string', default: '40' },
    rounds: { type: 'string', default: '3' },
  },
})
const ROWS = Number(args.rows)
const BATCHES = Number(args.batches)
const ROUNDS = Number(args.rounds)
const client = new pg.Client({ connectionString: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test' })
await client.connect()
const ticksMs = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
  return (Number(fields[11]) + Number(fields[12])) * 10
}
const backend = (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]?.pid ?? 0
const schema = `bench_rl_insert_${Math.random().toString(36).slice(2, 8)}`
await client.query(`create schema ${schema}; set search_path = ${schema}`)
await client.query(`create table request_log (id bigint generated always as identity primary key, app_id text not null,
  at timestamptz not null, logged_at timestamptz not null default now(), method text not null, path text not null,
  route text not null, operation_id text, key_id text, user_uid text, status integer not null, error_code text,
  latency_ms numeric(12, 3) not null, request_id text not null, request_body text, response_body text, fault text,
  query text, request_headers text, response_headers text, replay_of bigint)`)
await client.query('create index request_log_app_id on request_log (app_id, id desc)')

const COLUMNS = INSERT_COLUMNS
type Row = Record<(typeof COLUMNS)[number], string | number | Date | null>
const TYPES: Partial<Record<(typeof COLUMNS)[number], string>> = { at: 'timestamptz', status: 'int', latency_ms: 'numeric' }
const row = (): Row => ({
  app_id: 'app_0123456789',
  at: new Date(),
  method: 'GET',
  path: '/v2/me',
  route: '/v2/me',
  operation_id: 'getMe',
  key_id: null,
  user_uid: crypto.randomUUID(),
  status: 200,
  error_code: null,
  latency_ms: 1.234,
  request_id: crypto.randomUUID(),
  request_body: null,
  response_body: `{"uid":"${crypto.randomUUID()}","username":"user_1","credentials":{"scopes":["username"],"valid_until":{"timestamp":1764400000,"iso8601":"2026-11-29T07:00:00Z"}}}`,
  fault: null,
  query: null,
  request_headers: JSON.stringify({
    host: '127.0.0.1:40000',
    connection: 'keep-alive',
    authorization: 'Bearer [redacted]',
    'user-agent': 'axios/1.7.2',
    accept: 'application/json, text/plain, */*',
  }),
  response_headers: JSON.stringify({
    'content-type': 'application/json; charset=utf-8',
    'x-request-id': crypto.randomUUID(),
    'content-length': '160',
    date: new Date().toUTCString(),
    connection: 'keep-alive',
    'keep-alive': 'timeout=72',
  }),
})
const list = COLUMNS.join(', ')
const WAYS: Record<string, (rows: Row[]) => Promise<unknown>> = {
  unnest: (rows) =>
    client.query(
      `insert into request_log (${list}) select * from unnest(${COLUMNS.map((name, i) => `$${i + 1}::${TYPES[name] ?? 'text'}[]`).join(', ')})`,
      COLUMNS.map((name) => rows.map((r) => (r[name] instanceof Date ? (r[name] as Date).toISOString() : r[name]))),
    ),
  json: (rows) =>
    client.query(`insert into request_log (${list}) select ${list} from json_populate_recordset(null::request_log, $1::json)`, [
      JSON.stringify(rows),
    ]),
  values: (rows) => {
    const params: unknown[] = []
    const tuples = rows.map((r) => `(${COLUMNS.map((name) => `$${params.push(r[name])}`).join(', ')})`)
    return client.query(`insert into request_log (${list}) values ${tuples.join(', ')}`, params)
  },
  copy: async (rows) => {
    const copy = copyRows(
      'request_log',
      COLUMNS,
      rows.map((r) => COLUMNS.map((name) => r[name])),
    )
    await pipeline(Readable.from([copy.data.text]), client.query(copyFrom(copy.sql)))
  },
}

const results = new Map<string, { pg: number[]; node: number[] }>()
for (let round = 1; round <= ROUNDS; round++) {
  for (const [way, write] of Object.entries(WAYS)) {
    for (let i = 0; i < 5; i++) await write(Array.from({ length: ROWS }, row))
    const [pg0, node0] = [ticksMs(backend), process.cpuUsage()]
    for (let i = 0; i < BATCHES; i++) await write(Array.from({ length: ROWS }, row))
    const [pgMs, node] = [ticksMs(backend) - pg0, process.cpuUsage(node0)]
    const perRow = { pg: (pgMs * 1000) / (ROWS * BATCHES), node: (node.user + node.system) / (ROWS * BATCHES) }
    const kept = results.get(way) ?? { pg: [], node: [] }
    kept.pg.push(perRow.pg)
    kept.node.push(perRow.node)
    results.set(way, kept)
    process.stdout.write(`round ${round} ${way}: PostgreSQL ${perRow.pg.toFixed(1)} µs a row, Node ${perRow.node.toFixed(1)} µs a row\n`)
  }
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN
process.stdout.write(`\nmedians of ${ROUNDS} rounds, ${BATCHES} batches of ${ROWS} rows (µs a row; Node includes making the rows):\n`)
for (const [way, r] of results)
  process.stdout.write(`  ${way.padEnd(7)} PostgreSQL ${median(r.pg).toFixed(1)}, Node ${median(r.node).toFixed(1)}\n`)
await client.query(`drop schema ${schema} cascade`)
await client.end()
