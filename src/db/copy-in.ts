/**
 * `COPY … FROM STDIN` through Kysely (issue #40): a statement whose one parameter is a CopyIn is
 * sent by each driver as a copy, on the connection Kysely hands out (so inside a transaction
 * when it is one, and never between another caller's statements on PGlite's one connection).
 * PostgreSQL's driver streams the text (pg-copy-streams); PGlite reads it as `/dev/blob`. The
 * text is COPY's text format: fields split by tabs, rows ended by newlines, `\N` for null.
 */
export class CopyIn {
  constructor(readonly text: string) {}
}

/** The statement `COPY table (columns) FROM STDIN` with its data, for `db.executeQuery`. */
export function copyRows(
  table: string,
  columns: readonly string[],
  rows: readonly (readonly CopyValue[])[],
): { sql: string; data: CopyIn } {
  let text = ''
  for (const row of rows) {
    for (let i = 0; i < row.length; i++) text += (i === 0 ? '' : '\t') + copyField(row[i])
    text += '\n'
  }
  return { sql: `copy ${table} (${columns.join(', ')}) from stdin`, data: new CopyIn(text) }
}

export type CopyValue = string | number | Date | null

const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' }
const NEEDS_ESCAPE = /[\\\n\r\t]/g

/** One field in COPY's text format. */
export function copyField(value: CopyValue | undefined): string {
  if (value === null || value === undefined) return '\\N'
  const text = value instanceof Date ? value.toISOString() : String(value)
  NEEDS_ESCAPE.lastIndex = 0
  return NEEDS_ESCAPE.test(text) ? text.replace(NEEDS_ESCAPE, (c) => COPY_ESCAPES[c] ?? c) : text
}

/** The `from stdin` of a CopyIn statement, as PGlite reads it. */
export function pgliteCopySql(sql: string): string {
  return sql.replace(/ from stdin$/i, " from '/dev/blob'")
}
