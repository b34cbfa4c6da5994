import { type Kysely, sql } from 'kysely'
import type { DB } from '../../db/schema.js'

/**
 * The SQL of reset and snapshots (world-service.ts), generic over the schema: the tables and
 * sequences are read from the catalog of the platform's schema, so a table a later migration
 * adds is reset and snapshotted without a change here. The same statements run on PGlite and
 * PostgreSQL.
 */

/**
 * Never touched by a reset or a restore: migration bookkeeping, the sandbox's own state, the clock
 * row (set apart), and the request log: the record of what was asked, not platform state (every
 * process writes it from a buffer, after the answer, so rows of calls made before a reset may land
 * after it; keeping the log whole makes that harmless, and shows the calls around a reset).
 */
export const KEPT_TABLES: ReadonlySet<string> = new Set([
  'request_log',
  'kysely_migration',
  'kysely_migration_lock',
  'platform_clock',
  'sandbox_generation',
  'sandbox_processes',
  'sandbox_snapshots',
  'sandbox_snapshot_rows',
])

/**
 * Emptied by a reset and a restore but not saved in a snapshot: the revocation feed (every cached
 * credential is voided by the new clock epoch instead; its ids never restart, credential-cache.ts
 * keys what it has read by them) and the injected faults (test set-up, not platform state).
 */
export const TRANSIENT_TABLES: ReadonlySet<string> = new Set(['credential_events', 'sandbox_faults'])

/**
 * The column whose values each standalone sequence hands out: a snapshot derives the sequence's
 * value from the rows it saves (owned sequences name their column in the catalog). A standalone
 * sequence missing here stops every snapshot (readCatalog throws) rather than save a value read
 * outside the snapshot's view.
 */
const STANDALONE_SEQUENCES: Readonly<Record<string, { table: string; column: string }>> = {
  ledger_numbers: { table: 'ledger_transactions', column: 'ledger' },
  // Pi Network's (migration 0029): saved from the same column, the highest number of both networks (a gap, never a number drawn twice).
  ledger_numbers_mainnet: { table: 'ledger_transactions', column: 'ledger' },
}

export interface SavedSequence {
  name: string
  /** The saved table and column holding the values it handed out. */
  table: string
  column: string
}

export interface Catalog {
  /** Tables a reset or a restore empties. */
  cleared: string[]
  /** Tables a snapshot saves, parents before children (the order a restore inserts them in). */
  saved: string[]
  /** Sequences a reset restarts and a snapshot saves: standalone ones, and those owned by a saved table. */
  sequences: SavedSequence[]
}

export interface SequenceValue {
  last: number
  called: boolean
}

export async function readCatalog(db: Kysely<DB>): Promise<Catalog> {
  const tables = await sql<{ name: string }>`
    select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = current_schema() and c.relkind in ('r', 'p') order by c.relname`.execute(db)
  const edges = await sql<{ child: string; parent: string }>`
    select ch.relname as child, pa.relname as parent from pg_constraint k
    join pg_class ch on ch.oid = k.conrelid join pg_class pa on pa.oid = k.confrelid
    join pg_namespace n on n.oid = ch.relnamespace
    where k.contype = 'f' and n.nspname = current_schema() and ch.oid <> pa.oid`.execute(db)
  const sequences = await sql<{ name: string; owner: string | null; column: string | null }>`
    select s.relname as name, t.relname as owner, a.attname as column from pg_class s
    join pg_namespace n on n.oid = s.relnamespace
    left join pg_depend d on d.classid = 'pg_class'::regclass and d.objid = s.oid
      and d.refclassid = 'pg_class'::regclass and d.deptype in ('a', 'i')
    left join pg_class t on t.oid = d.refobjid
    left join pg_attribute a on a.attrelid = d.refobjid and a.attnum = d.refobjsubid
    where s.relkind = 'S' and n.nspname = current_schema() order by s.relname`.execute(db)

  const cleared = tables.rows.map((row) => row.name).filter((name) => !KEPT_TABLES.has(name))
  const savedSet = new Set(cleared.filter((name) => !TRANSIENT_TABLES.has(name)))
  const parents = new Map<string, Set<string>>([...savedSet].map((name) => [name, new Set<string>()]))
  for (const edge of edges.rows) {
    if (savedSet.has(edge.child) && savedSet.has(edge.parent)) parents.get(edge.child)?.add(edge.parent)
  }
  const saved: string[] = []
  const placed = new Set<string>()
  while (saved.length < savedSet.size) {
    const ready = [...savedSet].filter((name) => !placed.has(name) && [...(parents.get(name) ?? [])].every((p) => placed.has(p)))
    if (ready.length === 0) throw new Error('the foreign keys between the data tables form a cycle')
    for (const name of ready) {
      placed.add(name)
      saved.push(name)
    }
  }
  const savedSequences: SavedSequence[] = []
  for (const row of sequences.rows) {
    if (row.owner !== null) {
      if (savedSet.has(row.owner) && row.column !== null) savedSequences.push({ name: row.name, table: row.owner, column: row.column })
      continue
    }
    const source = STANDALONE_SEQUENCES[row.name]
    if (source === undefined || !savedSet.has(source.table))
      throw new Error(`the sequence ${row.name} names no saved column its values come from (world-repo.ts, STANDALONE_SEQUENCES)`)
    savedSequences.push({ name: row.name, ...source })
  }
  return { cleared, saved, sequences: savedSequences }
}

/** The repository over one transaction. */
export function worldRepo(trx: Kysely<DB>) {
  return {
    /** Locks are waited for this long before the whole transaction is tried again (world-service.ts). */
    async limitLockWait(ms: number): Promise<void> {
      await sql`select set_config('lock_timeout', ${`${ms}ms`}, true)`.execute(trx)
    },

    /** Every cleared table emptied in one statement: it locks them all, so concurrent requests see the old world or the new. */
    async truncate(tables: string[]): Promise<void> {
      if (tables.length === 0) return
      await sql`truncate table ${sql.join(tables.map((table) => sql.table(table)))}`.execute(trx)
    },

    /**
     * The sequence's next number `value`, and its start too: the start is where the current world's
     * numbering began (`worldStartLedger` in ledger-repo.ts reads it for streams). ALTER SEQUENCE is
     * transactional (unlike setval): a rolled-back reset leaves the numbers as they were.
     */
    async restartSequence(name: string, value: number): Promise<void> {
      await sql`alter sequence ${sql.table(name)} start with ${sql.lit(value)} restart with ${sql.lit(value)}`.execute(trx)
    },

    /**
     * A sequence's value as the rows of this transaction's snapshot show it: the highest value its
     * column holds. PostgreSQL's sequences are not transactional (last_value read in a REPEATABLE
     * READ transaction is the latest, drawn by writers the snapshot does not see), so the value is
     * derived from the rows saved with it: the next number after a restore is max + 1.
     */
    async sequenceFromRows(sequence: SavedSequence): Promise<SequenceValue> {
      const { rows } = await sql<{ last: string | null }>`
        select max(${sql.ref(sequence.column)})::text as last from ${sql.table(sequence.table)}`.execute(trx)
      const last = rows[0]?.last ?? null
      return last === null ? { last: 1, called: false } : { last: Number(last), called: true }
    },

    /** The clock back to `offsetMs` in a new epoch: every process drops the credentials it cached (credential-cache.ts). */
    async setClock(offsetMs: number): Promise<{ offsetMs: number; epoch: number }> {
      const row = await trx
        .updateTable('platform_clock')
        .set((eb) => ({ offset_ms: offsetMs, epoch: eb('epoch', '+', 1) }))
        .where('id', '=', 1)
        .returning(['offset_ms', 'epoch'])
        .executeTakeFirstOrThrow()
      return { offsetMs: Number(row.offset_ms), epoch: Number(row.epoch) }
    },

    async clockReading(): Promise<{ offsetMs: number; epoch: number }> {
      const row = await trx.selectFrom('platform_clock').select(['offset_ms', 'epoch']).where('id', '=', 1).executeTakeFirstOrThrow()
      return { offsetMs: Number(row.offset_ms), epoch: Number(row.epoch) }
    },

    async clockOffsetMs(): Promise<number> {
      const row = await trx.selectFrom('platform_clock').select('offset_ms').where('id', '=', 1).executeTakeFirstOrThrow()
      return Number(row.offset_ms)
    },

    /** Serialises saves and deletions of snapshots (the count bound, one name). */
    async lockSnapshots(): Promise<void> {
      await sql`lock table sandbox_snapshots in share row exclusive mode`.execute(trx)
    },

    async countSnapshots(): Promise<number> {
      const row = await trx
        .selectFrom('sandbox_snapshots')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .executeTakeFirstOrThrow()
      return Number(row.n)
    },

    async findSnapshot(name: string) {
      return trx.selectFrom('sandbox_snapshots').selectAll().where('name', '=', name).executeTakeFirst()
    },

    async deleteSnapshot(name: string): Promise<boolean> {
      const result = await trx.deleteFrom('sandbox_snapshots').where('name', '=', name).executeTakeFirst()
      return Number(result.numDeletedRows) > 0
    },

    async insertSnapshot(name: string, offsetMs: number): Promise<Date> {
      const row = await trx
        .insertInto('sandbox_snapshots')
        .values({ name, created_at: sql<Date>`now()`, clock_offset_ms: offsetMs, sequences: JSON.stringify({}), bytes: 0 })
        .returning('created_at')
        .executeTakeFirstOrThrow()
      return row.created_at
    },

    /** Every row of `table` as jsonb under the snapshot's name. */
    async saveRows(name: string, table: string): Promise<void> {
      await sql`
        insert into sandbox_snapshot_rows (snapshot, table_name, data)
        select ${name}, ${table}, to_jsonb(t) from ${sql.table(table)} t`.execute(trx)
    },

    /** The snapshot's sequences and its size, once its rows are in. */
    async finishSnapshot(name: string, sequences: Record<string, SequenceValue>): Promise<number> {
      const row = await trx
        .updateTable('sandbox_snapshots')
        .set({
          sequences: JSON.stringify(sequences),
          bytes: sql<number>`(select coalesce(sum(pg_column_size(data)), 0) from sandbox_snapshot_rows where snapshot = ${name})`,
        })
        .where('name', '=', name)
        .returning('bytes')
        .executeTakeFirstOrThrow()
      return Number(row.bytes)
    },

    /** The saved rows back into `table`, with their own ids (identity columns too). */
    async restoreRows(name: string, table: string): Promise<void> {
      await sql`
        insert into ${sql.table(table)} overriding system value
        select r.* from sandbox_snapshot_rows s
        cross join lateral jsonb_populate_record(null::${sql.table(table)}, s.data) r
        where s.snapshot = ${name} and s.table_name = ${table}`.execute(trx)
    },

    /** The newest migration applied: a snapshot file restores only into the schema it was taken from. */
    async schemaVersion(): Promise<string> {
      const { rows } = await sql<{ name: string | null }>`select max(name) as name from kysely_migration`.execute(trx)
      return rows[0]?.name ?? ''
    },

    /** A saved snapshot's rows, one JSON array (as text) per table that has rows. */
    async exportRows(name: string): Promise<Array<{ table_name: string; rows: string }>> {
      const { rows } = await sql<{ table_name: string; rows: string }>`
        select table_name, json_agg(data)::text as rows from sandbox_snapshot_rows
        where snapshot = ${name} group by table_name order by table_name`.execute(trx)
      return rows
    },

    /** An imported table's rows (a JSON array, as text) under the snapshot's name, in one statement. */
    async importRows(name: string, table: string, rowsJson: string): Promise<void> {
      await sql`
        insert into sandbox_snapshot_rows (snapshot, table_name, data)
        select ${name}, ${table}, value from jsonb_array_elements(${rowsJson}::jsonb)`.execute(trx)
    },

    /**
     * Reads every imported row of `table` as a row of the table: a value the column's type cannot
     * take (a word for a number, a bad date) fails here, at import, instead of at a restore.
     */
    async checkRows(name: string, table: string): Promise<void> {
      await sql`
        select count(r.*) from sandbox_snapshot_rows s
        cross join lateral jsonb_populate_record(null::${sql.table(table)}, s.data) r
        where s.snapshot = ${name} and s.table_name = ${table}`.execute(trx)
    },

    async insertImportedSnapshot(name: string, offsetMs: number, createdAt: Date): Promise<void> {
      await trx
        .insertInto('sandbox_snapshots')
        .values({ name, created_at: createdAt, clock_offset_ms: offsetMs, sequences: JSON.stringify({}), bytes: 0 })
        .execute()
    },

    /** The demo app and user as the first start (or a demo reset) recorded them; undefined after an empty reset. */
    async demo(): Promise<string | undefined> {
      const row = await trx.selectFrom('platform_meta').select('value').where('key', '=', 'demo').executeTakeFirst()
      return row?.value === '' ? undefined : row?.value
    },

    async listSnapshots() {
      return trx.selectFrom('sandbox_snapshots').select(['name', 'created_at', 'bytes']).orderBy('created_at').orderBy('name').execute()
    },
  }
}
