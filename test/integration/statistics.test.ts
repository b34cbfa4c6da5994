/** The planner's statistics (src/db/statistics.ts): tables analyzed after migrations, a restore and as they grow; empty ones left never analyzed. */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { type Kysely, sql } from 'kysely'
import type { DB } from '../../src/db/schema.js'
import { analyzeTables, statisticsKeeper } from '../../src/db/statistics.js'
import { SANDBOX_CLIENT, sandbox, startPlatform, type TestPlatform } from '../helpers/platform.js'

interface TableStats {
  tuples: number
  analyzed: number
}

/** Each table of the platform's schema: `reltuples` (-1: never analyzed) and how many times it was analyzed. */
async function stats(db: Kysely<DB>): Promise<Map<string, TableStats>> {
  const { rows } = await sql<{ name: string; tuples: number; analyzed: number }>`
    select c.relname as name, c.reltuples::float8 as tuples, coalesce(s.analyze_count, 0)::int as analyzed
    from pg_class c left join pg_stat_user_tables s on s.relid = c.oid
    where c.relnamespace = (select oid from pg_namespace where nspname = current_schema()) and c.relkind = 'r'`.execute(db)
  return new Map(rows.map((row) => [row.name, { tuples: row.tuples, analyzed: row.analyzed }]))
}

const rowsOf = async (db: Kysely<DB>, table: string) =>
  Number((await sql<{ n: number }>`select count(*)::int as n from ${sql.table(table)}`.execute(db)).rows[0]?.n)

describe('planner statistics', () => {
  let platform: TestPlatform

  before(async () => {
    platform = await startPlatform()
  })
  after(() => platform.close())

  it('after migrating, every table holding rows has statistics and every empty one is left never analyzed', async () => {
    const tables = await stats(platform.db)
    assert.ok(tables.size > 20, `the schema's tables: ${[...tables.keys()].join(', ')}`)
    let withRows = 0
    for (const [name, table] of tables) {
      const rows = await rowsOf(platform.db, name)
      // The platform's start registers its process after migrating.
      if (name === 'sandbox_processes') continue
      if (rows > 0) {
        withRows += 1
        assert.ok(table.tuples >= 0, `${name} holds ${rows} rows but was never analyzed`)
      } else {
        // Never analyzed, the planner takes an empty table for ten pages and plans index scans on it.
        assert.equal(table.tuples, -1, `${name} is empty but was analyzed`)
      }
    }
    assert.ok(withRows > 0, 'the migrations leave some rows (the migration records, the clock)')
    for (const hot of ['payments', 'ledger_accounts', 'ledger_transactions', 'ledger_ledgers', 'request_log']) {
      if (tables.has(hot)) assert.equal(tables.get(hot)?.tuples, -1, `${hot} is empty after migrating`)
    }
  })

  it('analyzes a table again once it has grown by half, and not before', async () => {
    await sql`create table statistics_probe (id int primary key, note text not null)`.execute(platform.db)
    const insert = (from: number, to: number) =>
      sql`insert into statistics_probe select g, repeat('x', 60) from generate_series(${from}::int, ${to}::int) g`.execute(platform.db)
    const analyzed = async () => (await analyzeTables(platform.db, 'grown')).includes('statistics_probe')
    // Rows up to each bound, and whether the keeper's pass then analyzes the table (8 pages and half again since the last ANALYZE).
    const steps: Array<[rows: number, analyzed: boolean, why: string]> = [
      [0, false, 'empty'],
      [10, false, 'one page'],
      [3000, true, 'grown past eight pages'],
      [3000, false, 'not grown since'],
      [3500, false, 'grown by a sixth'],
      [6000, true, 'doubled'],
    ]
    let rows = 0
    for (const [upTo, expected, why] of steps) {
      if (upTo > rows) await insert(rows + 1, upTo)
      rows = upTo
      assert.equal(await analyzed(), expected, `${why} (${rows} rows)`)
      if (expected) assert.equal((await stats(platform.db)).get('statistics_probe')?.tuples, rows)
    }
    await sql`drop table statistics_probe`.execute(platform.db)
  })

  it('the keeper analyzes the grown tables in the background until stopped', async () => {
    await sql`create table statistics_kept (id int primary key, note text not null)`.execute(platform.db)
    await sql`insert into statistics_kept select g, repeat('x', 60) from generate_series(1, 3000) g`.execute(platform.db)
    const errors: unknown[] = []
    const keeper = statisticsKeeper({ db: platform.db, everyMs: 5, onError: (error) => errors.push(error) })
    keeper.start()
    try {
      for (let i = 0; i < 400 && (await stats(platform.db)).get('statistics_kept')?.tuples !== 3000; i++) {
        await new Promise((resolve) => setTimeout(resolve, 5))
      }
    } finally {
      keeper.stop()
    }
    assert.deepEqual(errors, [])
    assert.equal((await stats(platform.db)).get('statistics_kept')?.tuples, 3000)
    await sql`drop table statistics_kept`.execute(platform.db)
  })

  it('a snapshot restore and a reset analyze the tables that hold rows', async () => {
    const sb = sandbox(platform.app)
    const app = await sb.createApp()
    await sb.createUser()
    assert.ok(app.app_id)
    const post = (url: string, payload?: Record<string, unknown>) =>
      platform.app.inject({ method: 'POST', url, headers: SANDBOX_CLIENT, ...(payload === undefined ? {} : { payload }) })
    assert.equal((await post('/sandbox/snapshots', { name: 'statistics' })).statusCode, 201)

    const beforeReset = await stats(platform.db)
    assert.equal((await post('/sandbox/reset', { seed: 'demo' })).statusCode, 200)
    const afterReset = await stats(platform.db)
    // The demo seed writes an app, its wallets and a user.
    for (const table of ['apps', 'users', 'ledger_accounts']) {
      assert.ok(await rowsOf(platform.db, table), `${table} holds the demo's rows`)
      assert.ok((afterReset.get(table)?.analyzed ?? 0) > (beforeReset.get(table)?.analyzed ?? 0), `${table} analyzed after the reset`)
      assert.ok((afterReset.get(table)?.tuples ?? -1) >= 1, `${table}'s statistics count the demo's rows`)
    }

    assert.equal((await post('/sandbox/snapshots/statistics/restore')).statusCode, 200)
    const afterRestore = await stats(platform.db)
    for (const table of ['apps', 'users', 'ledger_accounts']) {
      const rows = await rowsOf(platform.db, table)
      assert.ok(rows >= 1)
      assert.ok((afterRestore.get(table)?.analyzed ?? 0) > (afterReset.get(table)?.analyzed ?? 0), `${table} analyzed after the restore`)
      assert.equal(afterRestore.get(table)?.tuples, rows, `${table}'s statistics count the restored rows`)
    }
  })
})
