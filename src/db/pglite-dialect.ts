import type { PGlite } from '@electric-sql/pglite'
import {
  CompiledQuery,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type DialectAdapter,
  type Driver,
  type Kysely,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type QueryCompiler,
  type QueryResult,
  type TransactionSettings,
} from 'kysely'
import { CopyIn, pgliteCopySql } from './copy-in.js'

/**
 * Kysely dialect for embedded PostgreSQL (PGlite). PGlite is one connection, so the driver
 * hands it out to one caller at a time: a transaction holds it from BEGIN to COMMIT and no
 * other request's statement can slip in between.
 */
export class PGliteDialect implements Dialect {
  #driver: PGliteDriver | undefined
  constructor(private readonly pglite: PGlite) {
    keepByteOrderMarks(pglite)
  }
  /** The one connection: whether a caller holds it, and how many wait for it. */
  stats(): { total: number; idle: number; waiting: number } {
    const waiting = this.#driver?.waiting ?? 0
    const busy = this.#driver?.busy ?? false
    return { total: 1, idle: busy ? 0 : 1, waiting }
  }
  createAdapter(): DialectAdapter {
    return new PostgresAdapter()
  }
  createDriver(): Driver {
    this.#driver = new PGliteDriver(this.pglite)
    return this.#driver
  }
  createQueryCompiler(): QueryCompiler {
    return new PostgresQueryCompiler()
  }
  createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new PostgresIntrospector(db)
  }
}

class PGliteConnection implements DatabaseConnection {
  constructor(private readonly pglite: PGlite) {}

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    const [first] = compiled.parameters
    if (first instanceof CopyIn) {
      const copied = await this.pglite.query(pgliteCopySql(compiled.sql), [], { blob: new Blob([first.text]) })
      return { rows: [], numAffectedRows: BigInt(copied.affectedRows ?? 0) }
    }
    const result = await this.pglite.query<R>(compiled.sql, [...compiled.parameters])
    return result.affectedRows === undefined ? { rows: result.rows } : { rows: result.rows, numAffectedRows: BigInt(result.affectedRows) }
  }

  // biome-ignore lint/correctness/useYield: streaming is not offered by PGlite; the generator only throws.
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('PGlite dialect does not support streaming')
  }
}

class PGliteDriver implements Driver {
  readonly #connection: PGliteConnection
  #queue: Promise<void> = Promise.resolve()
  #release: (() => void) | undefined
  /** Callers waiting for the connection (GET /metrics). */
  waiting = 0

  constructor(private readonly pglite: PGlite) {
    this.#connection = new PGliteConnection(pglite)
  }

  async init(): Promise<void> {
    await this.pglite.waitReady
  }

  async acquireConnection(): Promise<DatabaseConnection> {
    const previous = this.#queue
    let release: () => void = () => {}
    this.#queue = new Promise<void>((resolve) => {
      release = resolve
    })
    this.waiting++
    try {
      await previous
    } finally {
      this.waiting--
    }
    this.#release = release
    return this.#connection
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const level = settings.isolationLevel === undefined ? '' : ` isolation level ${settings.isolationLevel}`
    await connection.executeQuery(CompiledQuery.raw(`begin${level}`))
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'))
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('rollback'))
  }

  get busy(): boolean {
    return this.#release !== undefined
  }

  async releaseConnection(): Promise<void> {
    const release = this.#release
    this.#release = undefined
    release?.()
  }

  async destroy(): Promise<void> {
    await this.#queue
    await this.pglite.close()
  }
}

const BOM = Buffer.from([0xef, 0xbb, 0xbf])
/** Decodes text as it is: TextDecoder's default drops a leading U+FEFF as a byte order mark. */
const exactUtf8 = new TextDecoder('utf-8', { ignoreBOM: true })

/**
 * PGlite's protocol parser decodes every column value with `new TextDecoder('utf-8')`, which
 * drops a leading U+FEFF: a memo or title that starts with one would be stored whole but read
 * back without it (PostgreSQL's own driver keeps it). Every query PGlite runs goes through its
 * public `execProtocolStream`; this instance's copy runs the same messages through
 * `execProtocol`, which also hands back the raw response, and when that response holds the
 * bytes of U+FEFF at all, decodes each DataRow's values again from the raw bytes, exactly.
 */
function keepByteOrderMarks(pglite: PGlite): void {
  pglite.execProtocolStream = async (message, options) => {
    const { messages, data } = await pglite.execProtocol(message, options)
    const raw = Buffer.from(data.buffer, data.byteOffset, data.byteLength)
    if (raw.indexOf(BOM) === -1) return messages
    const rows = messages.filter((m): m is typeof m & { fields: Array<string | null> } => m.name === 'dataRow')
    let row = 0
    for (let offset = 0; offset + 5 <= raw.length; ) {
      const length = raw.readInt32BE(offset + 1)
      if (raw[offset] === 0x44 /* 'D' */) {
        const target = rows[row++]
        if (target === undefined) break
        let at = offset + 7
        for (let field = 0; field < raw.readInt16BE(offset + 5); field++) {
          const size = raw.readInt32BE(at)
          at += 4
          if (size >= 0) {
            if (raw[at] === 0xef && raw[at + 1] === 0xbb && raw[at + 2] === 0xbf)
              target.fields[field] = exactUtf8.decode(raw.subarray(at, at + size))
            at += size
          }
        }
      }
      offset += 1 + length
    }
    return messages
  }
}
