import { CompiledQuery, type Kysely, type Selectable, sql } from 'kysely'
import { copyRows } from '../db/copy-in.js'
import type { DB, RequestLogTable } from '../db/schema.js'

export type RequestLogRow = Selectable<RequestLogTable>

/** A row as the buffer hands it over (bodies already redacted and bounded). */
export interface RequestLogInsert {
  app_id: string
  at: Date
  method: string
  path: string
  route: string
  operation_id: string | null
  key_id: string | null
  user_uid: string | null
  status: number
  error_code: string | null
  latency_ms: number
  request_id: string
  request_body: string | null
  response_body: string | null
  fault: string | null
  query: string | null
  /** JSON objects of the redacted headers. */
  request_headers: string | null
  response_headers: string | null
}

/** The columns a batch writes, in the order of its COPY. */
export const INSERT_COLUMNS = [
  'app_id',
  'at',
  'method',
  'path',
  'route',
  'operation_id',
  'key_id',
  'user_uid',
  'status',
  'error_code',
  'latency_ms',
  'request_id',
  'request_body',
  'response_body',
  'fault',
  'query',
  'request_headers',
  'response_headers',
] as const satisfies readonly (keyof RequestLogInsert)[]

export interface RequestLogFilter {
  appId: string
  /** An exact status (404) or a class (4 for 4xx). */
  status?: { exact: number } | { class: number }
  /** A route pattern, an operationId, or the start of a path. */
  route?: string
  /** A user's uid or a key id. */
  user?: string
  error?: string
  /** The call's X-Request-Id, exactly. */
  requestId?: string
  /** Older than this id, newest first. */
  before?: number
  /** Newer than this id, oldest first. */
  after?: number
  limit: number
}

export function requestLogRepo(db: Kysely<DB>) {
  /** The app's entries that match the filter (all of them, unordered). */
  const filtered = (filter: RequestLogFilter) => {
    let query = db.selectFrom('request_log').selectAll().where('app_id', '=', filter.appId)
    const { status } = filter
    if (status !== undefined) {
      query =
        'exact' in status
          ? query.where('status', '=', status.exact)
          : query.where('status', '>=', status.class * 100).where('status', '<', status.class * 100 + 100)
    }
    if (filter.route !== undefined) {
      const route = filter.route
      query = query.where((eb) =>
        eb.or([eb('route', '=', route), eb('operation_id', '=', route), eb(sql`left(path, ${route.length})`, '=', route)]),
      )
    }
    if (filter.user !== undefined) {
      const user = filter.user
      query = query.where((eb) => eb.or([eb('user_uid', '=', user), eb('key_id', '=', user)]))
    }
    if (filter.error !== undefined) query = query.where('error_code', '=', filter.error)
    if (filter.requestId !== undefined) query = query.where('request_id', '=', filter.requestId)
    return query
  }

  return {
    /**
     * One `COPY … FROM STDIN` for a whole batch (copy-in.ts). Measured against the alternatives
     * (issue #40, `bench/request-log-insert.ts`, BENCHMARKS.md): an `INSERT … SELECT FROM
     * unnest(…)` of one array parameter a column costs PostgreSQL about twice as much a row (its
     * arrays' text input) and Node as much again (pg escapes each element); one JSON parameter read
     * by `json_populate_recordset`, or a multi-row `VALUES`, cost PostgreSQL more still.
     */
    async insertMany(rows: RequestLogInsert[]): Promise<void> {
      if (rows.length === 0) return
      const copy = copyRows(
        'request_log',
        INSERT_COLUMNS,
        rows.map((row) => INSERT_COLUMNS.map((column) => row[column])),
      )
      await db.executeQuery(CompiledQuery.raw(copy.sql, [copy.data]))
    },

    async list(filter: RequestLogFilter): Promise<RequestLogRow[]> {
      const query = filtered(filter)
      if (filter.after !== undefined) {
        return query.where('id', '>', filter.after).orderBy('id', 'asc').limit(filter.limit).execute()
      }
      const older = filter.before === undefined ? query : query.where('id', '<', filter.before)
      return older.orderBy('id', 'desc').limit(filter.limit).execute()
    },

    /** How many entries match the filter, on every page (the table keeps at most 10,000 an app). */
    async count(filter: Omit<RequestLogFilter, 'limit' | 'before' | 'after'>): Promise<number> {
      const row = await filtered({ ...filter, limit: 0 })
        .clearSelect()
        .select(sql<number>`count(*)::int`.as('n'))
        .executeTakeFirstOrThrow()
      return row.n
    },

    async find(appId: string, id: number): Promise<RequestLogRow | undefined> {
      return db.selectFrom('request_log').selectAll().where('app_id', '=', appId).where('id', '=', id).executeTakeFirst()
    },

    /** The newest entry of the app with this request id (a replay's own entry, once written). */
    async findByRequestId(appId: string, requestId: string): Promise<RequestLogRow | undefined> {
      return db
        .selectFrom('request_log')
        .selectAll()
        .where('app_id', '=', appId)
        .where('request_id', '=', requestId)
        .orderBy('id', 'desc')
        .limit(1)
        .executeTakeFirst()
    },

    async markReplay(appId: string, id: number, replayOf: number): Promise<void> {
      await db.updateTable('request_log').set({ replay_of: replayOf }).where('app_id', '=', appId).where('id', '=', id).execute()
    },

    /**
     * Retention: rows older than `maxAgeSeconds` (by the database's clock when written, not the
     * platform clock the sandbox moves), and each given app's rows beyond its newest `maxRowsPerApp`.
     */
    async prune(appIds: string[], maxRowsPerApp: number, maxAgeSeconds: number): Promise<void> {
      await db.deleteFrom('request_log').where('logged_at', '<', sql<Date>`now() - make_interval(secs => ${maxAgeSeconds})`).execute()
      for (const appId of appIds) {
        await sql`
          delete from request_log where app_id = ${appId} and id <= (
            select id from request_log where app_id = ${appId} order by id desc offset ${maxRowsPerApp} limit 1)`.execute(db)
      }
    },
  }
}
