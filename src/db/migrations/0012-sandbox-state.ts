import { type Kysely, sql } from 'kysely'

/**
 * The sandbox's own state (docs/testing.md, "Reset and snapshots" and "Fault injection"):
 *
 * - `sandbox_generation`: one row, bumped in every transaction that changes what processes hold
 *   in memory for the sandbox (a reset, a restore, a fault created or deleted). Every process
 *   reads it with its sandbox poll and writes the generation it has applied to its own row of
 *   `sandbox_processes`; a change answers once every live process has applied it (or once no
 *   process can still be serving from an older copy), so it holds everywhere the moment it answers.
 * - `sandbox_faults`: injected faults, by app. `times_left` is decremented atomically by the
 *   process that injects, so "the next N calls" is exact across processes.
 * - `sandbox_snapshots` and `sandbox_snapshot_rows`: named snapshots, every row of every data table
 *   as jsonb (the same SQL on PGlite and PostgreSQL, no DDL per snapshot), with the sequences' values.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    create table sandbox_generation (
      id smallint primary key default 1 check (id = 1),
      value bigint not null default 0
    )`.execute(db)
  await sql`insert into sandbox_generation (id, value) values (1, 0)`.execute(db)

  await sql`
    create table sandbox_processes (
      id text primary key,
      generation bigint not null,
      seen_at timestamptz not null default now()
    )`.execute(db)

  await sql`
    create table sandbox_faults (
      id text primary key,
      app_id text not null,
      route text,
      operation_id text,
      user_uid text,
      effect jsonb not null,
      run_when text not null check (run_when in ('before', 'after')),
      times_left integer check (times_left is null or times_left >= 0),
      probability double precision not null check (probability > 0 and probability <= 1),
      created_at timestamptz not null
    )`.execute(db)
  await sql`create index sandbox_faults_app on sandbox_faults (app_id, created_at)`.execute(db)

  await sql`
    create table sandbox_snapshots (
      name text primary key,
      created_at timestamptz not null,
      clock_offset_ms double precision not null,
      sequences jsonb not null,
      bytes bigint not null
    )`.execute(db)
  await sql`
    create table sandbox_snapshot_rows (
      snapshot text not null references sandbox_snapshots (name) on delete cascade,
      table_name text not null,
      data jsonb not null
    )`.execute(db)
  await sql`create index sandbox_snapshot_rows_snapshot on sandbox_snapshot_rows (snapshot, table_name)`.execute(db)
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['sandbox_snapshot_rows', 'sandbox_snapshots', 'sandbox_faults', 'sandbox_processes', 'sandbox_generation']) {
    await sql`drop table ${sql.table(table)}`.execute(db)
  }
}
