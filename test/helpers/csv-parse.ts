/**
 * A strict RFC 4180 reader for the tests of the exports: quoted or bare cells, `""` inside quotes,
 * CRLF between rows. Throws on anything else (a bare `"`, text after a closing quote), so a test
 * that parses an export also checks that it is well formed.
 */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = []
  let row: string[] = []
  let i = 0
  while (i < text.length) {
    let cell = ''
    if (text[i] === '"') {
      i++
      for (;;) {
        if (i >= text.length) throw new Error('an unclosed quoted cell')
        if (text[i] === '"') {
          if (text[i + 1] === '"') {
            cell += '"'
            i += 2
            continue
          }
          i++
          break
        }
        cell += text[i]
        i++
      }
    } else {
      while (i < text.length && text[i] !== ',' && text[i] !== '\r') {
        if (text[i] === '"' || text[i] === '\n') throw new Error(`a bare ${JSON.stringify(text[i])} at ${i}`)
        cell += text[i]
        i++
      }
    }
    row.push(cell)
    if (text[i] === ',') {
      i++
      continue
    }
    if (text.startsWith('\r\n', i)) {
      rows.push(row)
      row = []
      i += 2
      continue
    }
    if (i < text.length) throw new Error(`text after a cell at ${i}: ${JSON.stringify(text.slice(i, i + 10))}`)
  }
  if (row.length > 0) throw new Error('the last row does not end with CRLF')
  return rows
}
