import { ApiError } from './errors.js'

/**
 * The sandbox API's paging cursors: opaque strings (base64url) naming the list they belong to
 * (`kind`, and the app for an app's lists) and the position (the last row's sort key). A cursor
 * of another list or another app, one not made here, or one naming an impossible position is a
 * 400 `invalid_arguments` that says so; it never reads anything.
 */
export interface CursorPosition {
  /** Microseconds since 1970 (a row's created_at), or a row id. */
  n: number
  /** The row's identifier, the tie-breaker (absent for id-ordered lists). */
  id?: string
}

const SEP = '|'
const ID = /^[A-Za-z0-9_-]{1,64}$/

export function encodeCursor(kind: string, scope: string, position: CursorPosition): string {
  return Buffer.from([kind, scope, String(position.n), position.id ?? ''].join(SEP)).toString('base64url')
}

export function decodeCursor(name: string, given: string, kind: string, scope: string): CursorPosition {
  const bad = (why: string) =>
    new ApiError('invalid_arguments', `querystring/${name} is not a cursor of this list (${why}): pass back a next_cursor this list gave.`)
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(given)) throw bad('not a cursor')
  const parts = Buffer.from(given, 'base64url').toString('utf8').split(SEP)
  if (parts.length !== 4) throw bad('not a cursor')
  const [k, s, n, id] = parts as [string, string, string, string]
  if (k !== kind) throw bad('another list')
  if (s !== scope) throw bad('another app')
  if (!/^(0|[1-9][0-9]{0,15})$/.test(n) || !Number.isSafeInteger(Number(n))) throw bad('impossible position')
  if (id !== '' && !ID.test(id)) throw bad('impossible position')
  return id === '' ? { n: Number(n) } : { n: Number(n), id }
}

/** A LIKE pattern that finds `text` anywhere in a lower-cased column (its %, _ and \\ taken literally). */
export function containsPattern(text: string): string {
  return `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`
}

/** One page of a keyset-paged list, and the cursor of the next page (null on the last one). */
export interface Page<Row> {
  rows: Row[]
  next: string | null
}

/**
 * Cuts a keyset page from `rows`, which the query fetched with `limit + 1`: the extra row only
 * says that another page follows, and the next page starts after the last row kept.
 */
export function page<Row>(rows: readonly Row[], limit: number, cursorOf: (last: Row) => string): Page<Row> {
  const kept = rows.slice(0, limit)
  const last = kept[kept.length - 1]
  return { rows: kept, next: rows.length > limit && last !== undefined ? cursorOf(last) : null }
}
