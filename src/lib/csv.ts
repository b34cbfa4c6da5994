/**
 * CSV as the sandbox's exports write it (docs/api.md, "Exports"): RFC 4180, every cell quoted
 * (a `"` doubled), rows ended by CRLF, UTF-8 without a byte order mark. Text that a spreadsheet
 * would run as a formula is defused: a cell whose first character, after any spaces and byte
 * order marks, is `=`, `+`, `-` or `@`, or which starts with a tab or a carriage return, gets a
 * leading `'` (OWASP's advice). NUL and lone surrogates, which no UTF-8 file can carry, become
 * U+FFFD. A null is an empty cell; an object or array is its JSON.
 */

const FORMULA = /^(?:[\t\r]|[\s\uFEFF]*[=+\-@])/
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g

export function csvCell(value: unknown): string {
  let text: string
  if (value === null || value === undefined) text = ''
  else if (typeof value === 'string') text = value
  else if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') text = String(value)
  else if (value instanceof Date) text = value.toISOString()
  else text = JSON.stringify(value) ?? ''
  text = text.replaceAll('\u0000', '\uFFFD').replace(LONE_SURROGATE, '\uFFFD')
  if (typeof value === 'string' && FORMULA.test(text)) text = `'${text}`
  return `"${text.replaceAll('"', '""')}"`
}

export function csvRow(cells: readonly unknown[]): string {
  return `${cells.map(csvCell).join(',')}\r\n`
}

/** A whole file: the header row, then a row per record, each cell read by its column's name. */
export function toCsv(columns: readonly string[], records: readonly Record<string, unknown>[]): string {
  let out = csvRow(columns)
  for (const record of records) out += csvRow(columns.map((column) => record[column]))
  return out
}
