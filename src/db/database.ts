import { mkdirSync } from 'node:fs'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { Kysely, PostgresDialect, sql } from 'kysely'
import pg from 'pg'
import { from as copyFrom } from 'pg-copy-streams'
import { CopyIn } from './copy-in.js'
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
  /** Connections open, idle, and callers waiting for one (GET /metrics). */
  poolStats(): { total: number; idle: number; waiting: number }
  close(): Promise<void>
  /**
   * PostgreSQL only: LISTEN, on one dedicated connection that reconnects, to the channel that
   * `channelSql` names (evaluated in this database's schema). Absent on PGlite, which is one
   * process: a signal within the process serves there.
   */
  listen?: Listen
  /** Memory PGlite only: the database's files as a tar, as `loadDataDir` takes them. */
  dumpDataDir?: () => Promise<Blob | File>
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
  /**
   * With `dataDir: 'memory'` only: the embedded database starts from this data directory (a tar,
   * as PGlite's `dumpDataDir()` writes it) instead of creating a new one. Creating one runs initdb
   * in WebAssembly, seconds of CPU; tests start many databases from one migrated image.
   */
  pgliteImage?: Blob
  /**
   * With `dataDir: 'memory'` and no `pgliteImage`: the first such database of this process is
   * created (initdb) and migrated, then its files are kept as an image (about 40 MB of memory for
   * the life of the process), and every later one starts from that image, at about a third of
   * the CPU. Starts that come while the first is being made wait for it. `startPlinth()` sets it:
   * an app's suite that starts several platforms runs initdb once. The server does not: it opens
   * one database.
   */
  shareMemoryImage?: boolean
}

/** The image of this process's first shared memory database (`shareMemoryImage`); undefined if making it failed. */
let sharedMemoryImage: Promise<Blob | undefined> | undefined

const INT8_OID = 20

/** Opens the database the configuration names and applies every pending migration. */
export async function openDatabase(options: DatabaseOptions): Promise<Database> {
  const dataDir = options.dataDir ?? 'memory'
  let image = options.pgliteImage
  let makesSharedImage: ((image: Blob | undefined) => void) | undefined
  if (options.databaseUrl === undefined && dataDir === 'memory' && image === undefined && options.shareMemoryImage === true) {
    if (sharedMemoryImage === undefined) sharedMemoryImage = new Promise((resolve) => (makesSharedImage = resolve))
    else image = await sharedMemoryImage
  }
  try {
    const database = options.databaseUrl === undefined ? await openPGlite(dataDir, image) : await openPostgres(options)
    try {
      await migrateToLatest(database.db as Kysely<unknown>, options.schema)
      if (makesSharedImage !== undefined) {
        // Before anything else uses it: the image holds the migrated, empty database.
        await sql`checkpoint`.execute(database.db)
        makesSharedImage(await database.dumpDataDir?.())
      }
    } catch (error) {
      await database.close()
      throw error
    }
    return database
  } catch (error) {
    if (makesSharedImage !== undefined) {
      // The starts waiting for the image create their own database; the next start tries again.
      sharedMemoryImage = undefined
      makesSharedImage(undefined)
    }
    throw error
  }
}

/**
 * PostgreSQL settings of the embedded database, passed as `-c` after PGlite's own start
 * parameters. Its memory is one WebAssembly memory that never shrinks: the module's floor is
 * 128 MiB, and `initdb`'s default `shared_buffers` of 128 MB grew it to about 190 MiB, every page
 * of it resident once touched. 16 MB of buffers (2,048 pages) holds the sandbox's working set many
 * times over; a page evicted from them is read back from the operating system's page cache. One
 * connection is all single-user mode has, so 100 connection slots only cost shared memory.
 * fsync and synchronous_commit are left as PGlite sets them (docs/operations.md, Memory).
 */
const PGLITE_SETTINGS = ['shared_buffers=16MB', 'max_connections=8']

/**
 * The database files live in `<dataDir>/pgdata`, so the data directory can hold other files (the
 * secret key, the lock). The directory is locked for this process until close (two processes on
 * one PGlite directory lose commits), and a new database is created whole or not at all
 * (data-dir.ts), so a process killed at any moment leaves a directory the next start opens.
 */
async function openPGlite(dataDir: string, image: Blob | undefined): Promise<Database> {
  // Loaded only when used: the WASM engine is large and a PostgreSQL deployment never needs it.
  const { PGlite } = await import('@electric-sql/pglite')
  const options = { startParams: [...PGlite.defaultStartParams, ...PGLITE_SETTINGS.flatMap((setting) => ['-c', setting])] }
  if (dataDir === 'memory') {
    const engine = new PGlite(image === undefined ? options : { ...options, loadDataDir: image })
    const dialect = new PGliteDialect(engine)
    return { ...wrap(new Kysely<DB>({ dialect }), 'pglite', () => dialect.stats()), dumpDataDir: () => engine.dumpDataDir('none') }
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  const unlock = await lockDataDir(dataDir)
  try {
    const pgdata = await ensurePGliteDatabase(dataDir, (path) => createAndCollect(() => PGlite.create(path, options)))
    const dialect = new PGliteDialect(new PGlite(pgdata, options))
    return wrap(new Kysely<DB>({ dialect }), 'pglite', () => dialect.stats(), unlock)
  } catch (error) {
    unlock()
    throw error
  }
}

/**
 * Creates a new embedded database, then collects the garbage once. Creating runs two WebAssembly
 * instances (initdb, then PostgreSQL to finish the cluster), each with a memory of 128 MiB or
 * more, freed only when a garbage collection finds them: one that an idle server never runs (a
 * first start idled at 365 MB, a restart at 241 MB). The collection is the one jest's leak
 * detector runs, through `--expose-gc` set at run time. Creating in a child process instead left
 * it writing the directory after its parent was killed (test/chaos/data-dir.test.ts).
 */
async function createAndCollect(create: () => Promise<{ close(): Promise<void> }>): Promise<{ close(): Promise<void> }> {
  const created = await create()
  return {
    async close() {
      await created.close()
      setFlagsFromString('--expose-gc')
      const gc: unknown = runInNewContext('gc')
      if (typeof gc === 'function') gc()
    },
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
  return { ...wrap(db, 'postgres', () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount })), listen }
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
      if (typeof text === 'string' && Array.isArray(values) && values[0] instanceof CopyIn) return copyIn(this, text, values[0])
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

/**
 * A CopyIn statement on this client (copy-in.ts): answers as pg answers an INSERT (a copy inserts;
 * Kysely reads the row count of INSERT, UPDATE, DELETE and MERGE only), with the rows copied.
 */
async function copyIn(client: pg.Client, text: string, data: CopyIn): Promise<pg.QueryResult> {
  const stream = client.query(copyFrom(text))
  await pipeline(Readable.from([data.text]), stream)
  return { command: 'INSERT', rowCount: stream.rowCount ?? 0, rows: [], oid: 0, fields: [] }
}

function wrap(db: Kysely<DB>, kind: DatabaseKind, poolStats: Database['poolStats'], release?: () => void): Database {
  return {
    db,
    kind,
    poolStats,
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
