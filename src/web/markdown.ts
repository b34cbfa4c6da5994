/**
 * The small part of Markdown that docs/errors.md is written in, as HTML: headings, paragraphs,
 * lists, fenced code, tables, `code`, **bold** and [links](…). Every character of the source is
 * escaped; a link becomes an <a> only when it points at this site (/…), a heading (#…) or an
 * http(s) URL, and a link to another .md file stays text (the platform serves only this one).
 */
const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }
export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c)

const slug = (text: string): string =>
  text
    .toLowerCase()
    .replace(/[^a-z0-9 -]/g, '')
    .trim()
    .replace(/ +/g, '-')

const SAFE_HREF = /^(https?:\/\/|\/(?!\/)|#)/

/** Inline Markdown: code spans and links first (their contents are not re-read), then bold. */
function inline(text: string): string {
  let html = ''
  let last = 0
  for (const match of text.matchAll(/`([^`]+)`|\[([^\]]+)\]\(([^)\s]+)\)/g)) {
    html += plain(text.slice(last, match.index))
    last = match.index + match[0].length
    const [, code, label, href] = match
    if (code !== undefined) html += `<code>${escapeHtml(code)}</code>`
    else if (label !== undefined && href !== undefined)
      html += SAFE_HREF.test(href) ? `<a href="${escapeHtml(href)}">${inline(label)}</a>` : inline(label)
  }
  return html + plain(text.slice(last))
}

const plain = (text: string): string => escapeHtml(text).replace(/\*\*(.+?)\*\*/g, '<strong>$1</strong>')

/** A table row's cells: split on `|` outside code spans (a `|` inside backticks is the cell's). */
function cells(line: string): string[] {
  const out: string[] = []
  let cell = ''
  let inCode = false
  for (const c of line.trim().replace(/^\|/, '').replace(/\|$/, '')) {
    if (c === '`') inCode = !inCode
    if (c === '|' && !inCode) {
      out.push(cell.trim())
      cell = ''
    } else cell += c
  }
  out.push(cell.trim())
  return out
}

export function markdownToHtml(source: string): string {
  const lines = source.replace(/\r\n?/g, '\n').split('\n')
  const out: string[] = []
  let i = 0
  const at = (n: number) => lines[n] ?? ''
  while (i < lines.length) {
    const line = at(i)
    if (line.trim() === '') {
      i++
      continue
    }
    const fence = /^```(.*)$/.exec(line)
    if (fence !== null) {
      const body: string[] = []
      for (i++; i < lines.length && !at(i).startsWith('```'); i++) body.push(at(i))
      i++
      out.push(`<pre><code>${escapeHtml(body.join('\n'))}</code></pre>`)
      continue
    }
    const heading = /^(#{1,6}) (.*)$/.exec(line)
    if (heading !== null) {
      const level = heading[1]?.length ?? 1
      const text = heading[2] ?? ''
      out.push(`<h${level} id="${escapeHtml(slug(text))}">${inline(text)}</h${level}>`)
      i++
      continue
    }
    if (line.startsWith('|')) {
      const rows: string[][] = []
      for (; i < lines.length && at(i).startsWith('|'); i++) rows.push(cells(at(i)))
      const [head = [], separator, ...body] = rows
      const isSeparator = separator?.every((cell) => /^:?-+:?$/.test(cell)) === true
      const bodyRows = isSeparator ? body : [separator ?? [], ...body]
      out.push(
        `<table><thead><tr>${head.map((c) => `<th scope="col">${inline(c)}</th>`).join('')}</tr></thead><tbody>` +
          bodyRows.map((row) => `<tr>${row.map((c) => `<td>${inline(c)}</td>`).join('')}</tr>`).join('') +
          '</tbody></table>',
      )
      continue
    }
    if (/^([-*]|\d+\.) /.test(line)) {
      const ordered = /^\d/.test(line)
      const items: string[] = []
      for (; i < lines.length && at(i).trim() !== ''; i++) {
        const item = /^(?:[-*]|\d+\.) (.*)$/.exec(at(i))
        if (item !== null) items.push(item[1] ?? '')
        else items[items.length - 1] += ` ${at(i).trim()}`
      }
      const tag = ordered ? 'ol' : 'ul'
      out.push(`<${tag}>${items.map((item) => `<li>${inline(item)}</li>`).join('')}</${tag}>`)
      continue
    }
    const paragraph: string[] = []
    for (; i < lines.length && at(i).trim() !== '' && !/^(#{1,6} |```|\||([-*]|\d+\.) )/.test(at(i)); i++) paragraph.push(at(i).trim())
    out.push(`<p>${inline(paragraph.join(' '))}</p>`)
  }
  return out.join('\n')
}
