/**
 * CSV as the sandbox's exports write it (docs/api.md, "Exports"): RFC 4180, every cell quoted
 * (a `"` doubled), rows ended by CRLF, UTF-8 without a byte order mark. Text that a spreadsheet
 * would run as a formula is defused: a cell whose first character, after any spaces and byte
 * order marks, is `=`, `+`, `-` or `@`, or which starts with a tab or a carriage return, gets a
 * leading `'` (OWASP's advice). NUL and lone surrogates, which no UTF-8 file can carry, become
 * U+FFFD. A null is an empty cell; an object or array is its JSON.
 *
 * Identifiers the platform made (a payment's identifier, a txid, a user or app id) are written as
 * they are, never defused: nobody chooses them, so they carry no formula, and a payment identifier
 * is base64url, which starts with `-` once in 64; a `'` before it would make the export name a
 * payment that does not exist.
 */

const FORMULA = /^(?:[\t\r]|[\s\uFEFF]*[=+\-@])/
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g

export function csvCell(value: unknown, options: { verbatim?: boolean } = {}): string {
  let text: string
  if (value === null || value === undefined) text = ''
  else if (typeof value === 'string') text = value
  else if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') text = String(value)
  else if (value instanceof Date) text = value.toISOString()
  else text = JSON.stringify(value) ?? ''
  text = text.replaceAll('\u0000', '\uFFFD').replace(LONE_SURROGATE, '\uFFFD')
  if (typeof value === 'string' && options.verbatim !== true && FORMULA.test(text)) text = `'${text}`
  return `"${text.replaceAll('"', '""')}"`
}

export function csvRow(cells: readonly unknown[], verbatim: readonly boolean[] = []): string {
  return `${cells.map((cell, i) => csvCell(cell, { verbatim: verbatim[i] === true })).join(',')}\r\n`
}

/**
 * A whole file: the header row, then a row per record, each cell read by its column's name.
 * `identifiers` names the columns of identifiers the platform made, written verbatim.
 */
export function toCsv(
  columns: readonly string[],
  records: readonly Record<string, unknown>[],
  identifiers: ReadonlySet<string> = new Set(),
): string {
  const verbatim = columns.map((column) => identifiers.has(column))
  let out = csvRow(columns)
  for (const record of records)
    out += csvRow(
      columns.map((column) => record[column]),
      verbatim,
    )
  return out
}
