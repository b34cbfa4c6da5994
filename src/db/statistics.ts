import { type Kysely, sql } from 'kysely'

/**
 * The planner's statistics for this schema's tables (issue 40, "plans that do not rot").
 *
 * PostgreSQL plans a named prepared statement (src/db/database.ts) a few times, then keeps one
 * generic plan per connection until the statistics of a table it reads change. Autovacuum would
 * analyze the tables as they grow, but PGlite (single-user mode) never runs it, and a PostgreSQL
 * server may have it off (this machine's has): a plan made on a small table then keeps its
 * sequential scans as the table grows. In one 70 s run of A2U lifecycles on a fresh database,
 * `payments` was scanned whole 1,447 times, 24 to 30 times a second from 20 s to 60 s; in another,
 * 137 times, all in the first 20 s (which plan a connection keeps depends on the table's size when
 * it switched to a generic one). With this module: 114 to 192, all in the first 20 s.
 *
 * So the tables that hold rows are analyzed after migrations were applied and after the sandbox is
 * reset or restored, and any table that has grown by half since its last ANALYZE is analyzed again
 * at start (after the sandbox's demo seed) and every STATISTICS_CHECK_MS (`statisticsKeeper`): ANALYZE updates `pg_class`, which makes every connection plan its
 * statements again at their next run. Growth is read from the table's size on disk, not from the
 * cumulative statistics, which PGlite does not keep up to date.
 *
 * An empty table is never analyzed. Never analyzed (`reltuples` -1), the planner takes it for ten
 * pages and plans index scans; analyzed empty, it takes it for empty and plans sequential scans,
 * kept as the table fills: a fresh database whose empty tables were analyzed after migrating
 * scanned `payments` whole 2,216 times in its first ten seconds of A2U lifecycles, against 254
 * without (BENCHMARKS.md, "A2U lifecycle: where the CPU goes, and the floor").
 */

/** A table is analyzed again once it has this many more pages than at its last ANALYZE… */
const GROWTH_PAGES = 8
/** …and has grown by this factor of its pages then (so each table is analyzed a logarithmic number of times as it grows). */
const GROWTH_FACTOR = 1.5
/** How often the keeper looks for grown tables. */
export const STATISTICS_CHECK_MS = 10_000

/** The ordinary tables of the current schema (the one the connection's search_path names first), with their size now and at their last ANALYZE. */
const schemaTables = sql<{ name: string; pages: number; analyzed_pages: number }>`
  select c.relname as name,
         (pg_relation_size(c.oid) / current_setting('block_size')::int)::int as pages,
         c.relpages as analyzed_pages
  from pg_class c
  where c.relnamespace = (select n.oid from pg_namespace n where n.nspname = current_schema()) and c.relkind = 'r'
  order by c.relname`

const quoted = (name: string) => `"${name.replaceAll('"', '""')}"`

/**
 * ANALYZE the tables of the current schema that hold rows (`all`), or only those that grew past
 * their last ANALYZE by GROWTH_PAGES and GROWTH_FACTOR (`grown`); answers their names.
 */
export async function analyzeTables<T>(db: Kysely<T>, which: 'all' | 'grown'): Promise<string[]> {
  const names = (await schemaTables.execute(db)).rows
    .filter((row) =>
      which === 'all' ? row.pages > 0 : row.pages >= row.analyzed_pages + GROWTH_PAGES && row.pages >= row.analyzed_pages * GROWTH_FACTOR,
    )
    .map((row) => row.name)
  if (names.length > 0) await sql.raw(`analyze ${names.map(quoted).join(', ')}`).execute(db)
  return names
}

/** Analyzes the tables that grew, every STATISTICS_CHECK_MS, from start() to stop(). */
export function statisticsKeeper<T>(deps: { db: Kysely<T>; everyMs?: number; onError: (error: unknown) => void }) {
  let timer: NodeJS.Timeout | undefined
  /** The check under way: stop() waits for it, so that no ANALYZE outlives the database. */
  let checking: Promise<void> | undefined
  const check = () => {
    checking ??= analyzeTables(deps.db, 'grown')
      .then(
        () => undefined,
        (error: unknown) => deps.onError(error),
      )
      .finally(() => {
        checking = undefined
      })
    return checking
  }
  return {
    start() {
      timer ??= setInterval(() => void check(), deps.everyMs ?? STATISTICS_CHECK_MS)
      timer.unref()
    },
    async stop(): Promise<void> {
      if (timer !== undefined) clearInterval(timer)
      timer = undefined
      await checking
    },
  }
}

export type StatisticsKeeper = ReturnType<typeof statisticsKeeper>
