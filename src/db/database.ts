import { mkdirSync } from 'node:fs'
import { Kysely, PostgresDialect, sql } from 'kysely'
import pg from 'pg'
import { ensurePGliteDatabase, lockDataDir } from './data-dir.js'
import { type ListenHandlers, listenOn } from './listener.js'
import { migrateToLatest } from './migrate.js'
import { PGliteDialect } from './pglite-dialect.js'
import type { DB } from './schema.js'

export type DatabaseKind = 'pglite' | 'postgres'

export interface Database {
  db: Kysely<DB>
  kind: DatabaseKind
  /** Resolves when a trivial query round-trips. */
  ping(): Promise<void>
  close(): Promise<void>
  /**
   * PostgreSQL only: LISTEN, on one dedicated connection that reconnects, to the channel that
   * `channelSql` names (evaluated in this database's schema). Absent on PGlite, which is one
   * process: a signal within the process serves there.
   */
  listen?: Listen
}

export type Listen = (channelSql: string, handlers: ListenHandlers) => { close(): Promise<void> }

export interface DatabaseOptions {
  /** PostgreSQL server URL; when absent, the embedded database is used. */
  databaseUrl?: string | undefined
  /** Schema on the PostgreSQL server (created if missing). */
  schema?: string | undefined
  /** `memory` or a directory, for the embedded database. */
  dataDir?: string
  poolSize?: number
}

const INT8_OID = 20

/** Opens the database the configuration names and applies every pending migration. */
export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  const database = options.databaseUrl === undefined ? await openPGlite(options.dataDir ?? 'memory') : await openPostgres(options)
  try {
    await migrateToLatest(database.db as Kysely<unknown>, options.schema)
  } catch (error) {
    await database.close()
    throw error
  }
  return database
}

/**
 * The database files live in `<dataDir>/pgdata`, so the data directory can hold other files (the
 * secret key, the lock). The directory is locked for this process until close (two processes on
 * one PGlite directory lose commits), and a new database is created whole or not at all
 * (data-dir.ts), so a process killed at any moment leaves a directory the next start opens.
 */
async function openPGlite(dataDir: string): Promise<Database> {
  // Loaded only when used: the WASM engine is large and a PostgreSQL deployment never needs it.
  const { PGlite } = await import('@electric-sql/pglite')
  if (dataDir === 'memory') return wrap(new Kysely<DB>({ dialect: new PGliteDialect(new PGlite()) }), 'pglite')
  mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  const unlock = await lockDataDir(dataDir)
  try {
    const pgdata = await ensurePGliteDatabase(dataDir, (path) => PGlite.create(path))
    const db = new Kysely<DB>({ dialect: new PGliteDialect(new PGlite(pgdata)) })
    return wrap(db, 'pglite', unlock)
  } catch (error) {
    unlock()
    throw error
  }
}

async function openPostgres(options: DatabaseOptions): Promise<Database> {
  const { databaseUrl, schema } = options
  if (schema !== undefined) {
    const client = new pg.Client({ connectionString: databaseUrl })
    await client.connect()
    try {
      await client.query(`create schema if not exists "${schema}"`).catch((error: unknown) => {
        // Processes starting together on a new schema race here: PostgreSQL's IF NOT EXISTS is not atomic, and
        // the loser fails on the catalog's unique index (23505) or as a duplicate (42P06); the schema exists then.
        const code = (error as { code?: unknown }).code
        if (code !== '23505' && code !== '42P06') throw error
      })
    } finally {
      await client.end()
    }
  }
  const pool = new pg.Pool({
    Client: preparingClient(),
    connectionString: databaseUrl,
    max: options.poolSize ?? 10,
    // Counts and other int8 values fit a JS number in this schema; read them as numbers, as PGlite does.
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === INT8_OID ? (value: string) => Number(value) : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
    },
    ...(schema === undefined ? {} : { options: `-c search_path="${schema}"` }),
  })
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) })
  const listen: Listen = (channelSql, handlers) => listenOn({ connectionString: databaseUrl, schema }, channelSql, handlers)
  return { ...wrap(db, 'postgres'), listen }
}

/** How many distinct statements one pool names (prepares once per connection); any beyond run unnamed. */
const MAX_NAMED_STATEMENTS = 2000
/** Statements with more parameters (multi-row inserts) vary in length and are not worth a plan per connection. */
const MAX_NAMED_PARAMETERS = 100

/**
 * A pg client class that sends every parameterised statement as a named prepared statement:
 * PostgreSQL parses and plans it once per connection, and later executions send only Bind and
 * Execute. The same SQL text has the same name on every connection of the pool. Plinth's
 * statements come from a fixed set of query builders (lists go in as one array parameter,
 * `= any($1)`), so the set is small; the bound only keeps a surprise from growing it without
 * end. Kysely always passes (text, values); anything else goes through untouched.
 */
function preparingClient(): typeof pg.Client {
  const names = new Map<string, string>()
  const nameOf = (text: string): string | undefined => {
    let name = names.get(text)
    if (name === undefined && names.size < MAX_NAMED_STATEMENTS) {
      name = `plinth_${names.size}`
      names.set(text, name)
    }
    return name
  }
  return class PreparingClient extends pg.Client {
    // biome-ignore lint/suspicious/noExplicitAny: pg's query() is heavily overloaded; this forwards every form unchanged.
    override query(...args: any[]): any {
      const [text, values] = args
      if (
        typeof text === 'string' &&
        Array.isArray(values) &&
        values.length > 0 &&
        values.length <= MAX_NAMED_PARAMETERS &&
        args.length === 2
      ) {
        const name = nameOf(text)
        if (name !== undefined) return super.query({ name, text, values })
      }
      // biome-ignore lint/suspicious/noExplicitAny: as above.
      return (super.query as any)(...args)
    }
  }
}

function wrap(db: Kysely<DB>, kind: DatabaseKind, release?: () => void): Database {
  return {
    db,
    kind,
    async ping() {
      await sql`select 1`.execute(db)
    },
    async close() {
      try {
        await db.destroy()
      } finally {
        release?.()
      }
    },
  }
}
