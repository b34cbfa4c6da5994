// ---------------------------------------------------------------------------------------------
// Formatting.

export type Align = 'left' | 'right'

/** A Markdown table padded to line up in a terminal as well. */
export function markdownTable(headers: readonly string[], rows: readonly (readonly string[])[], align: readonly Align[] = []): string {
  const widths = headers.map((header, column) => Math.max(header.length, ...rows.map((row) => (row[column] ?? '').length), 3))
  const pad = (cell: string, column: number) => {
    const width = widths[column] ?? cell.length
    return align[column] === 'right' ? cell.padStart(width) : cell.padEnd(width)
  }
  const line = (cells: readonly string[]) => `| ${headers.map((_, column) => pad(cells[column] ?? '', column)).join(' | ')} |`
  const rule = `| ${widths.map((width, column) => (align[column] === 'right' ? `${'-'.repeat(width - 1)}:` : '-'.repeat(width))).join(' | ')} |`
  return [line(headers), rule, ...rows.map(line)].join('\n')
}

export function formatNumber(value: number, digits = 0): string {
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
}

/** Whole milliseconds, as autocannon records latencies (truncated); 0 means under 1 ms. */
export function formatLatency(value: number): string {
  return value < 1 ? '<1' : formatNumber(Math.floor(value))
}

/** The text of the `## Title` section of a Markdown document, heading included, up to the next `## `; undefined when absent. */
export function markdownSection(document: string, title: string): string | undefined {
  const lines = document.split('\n')
  const heading = title.toLowerCase()
  const start = lines.findIndex((line) => {
    const text = line.trim().toLowerCase()
    return text === `## ${heading}` || text.startsWith(`## ${heading} `) || text.startsWith(`## ${heading}:`)
  })
  if (start < 0) return undefined
  let end = lines.findIndex((line, index) => index > start && line.startsWith('## '))
  if (end < 0) end = lines.length
  return lines.slice(start, end).join('\n').trimEnd()
}
