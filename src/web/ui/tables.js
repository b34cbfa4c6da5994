// @ts-check
/**
 * Tables of both pages: a table in a box that scrolls sideways on a narrow screen, a table over a
 * cursor-paged list ("Newest" and "Older →", the console), and rows that page with "More" (the
 * platform page).
 */
import { h } from './dom.js'
import { reportError } from './toast.js'

/**
 * @template T
 * @typedef {{ ok: true, value: T } | { ok: false, error?: unknown }} Attempted
 */
/** @typedef {<T>(work: () => Promise<T>) => Promise<Attempted<T>>} Attempt */

/**
 * A table's row saying it has nothing to show; `kind` its cell's class (the console's is `empty`).
 * @param {number} columns
 * @param {string} text
 * @param {string} [kind]
 */
export const emptyRow = (columns, text, kind = 'muted') => h('tr', {}, h('td', { colspan: String(columns), class: kind }, text))

/**
 * A table in a box that scrolls sideways: `box` the box's class, `props` the table's attributes.
 * @param {string} box
 * @param {Record<string, unknown>} props
 * @param {string[]} headers the column titles
 * @param {HTMLElement} body
 */
const scrolling = (box, props, headers, body) =>
  h(
    'div',
    // A box that may scroll is reachable by the keyboard, to scroll it with the arrow keys (WCAG 2.1.1;
    // axe's scrollable-region-focusable, test/e2e/page-axe.e2e.ts), and named by its table when it has a name.
    typeof props['aria-label'] === 'string'
      ? { class: box, tabindex: '0', role: 'region', 'aria-label': props['aria-label'] }
      : { class: box, tabindex: '0' },
    h(
      'table',
      props,
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          headers.map((text) => h('th', { scope: 'col' }, text)),
        ),
      ),
      body,
    ),
  )

/**
 * The platform page's table: `headers` the column titles, `body` its tbody.
 * @param {string} label
 * @param {string[]} headers
 * @param {HTMLElement} body
 */
export const grid = (label, headers, body) => scrolling('table-scroll', { class: 'grid', 'aria-label': label }, headers, body)

/**
 * The console's table around `body` (a tbody the page fills, as a live list does); `props` are the table's attributes.
 * @param {HTMLElement} body
 * @param {string[]} headers
 * @param {Record<string, unknown>} [props]
 */
export const tableOf = (body, headers, props) => scrolling('table-wrap', props ?? {}, headers, body)

/**
 * The console's table of `rows` (<tr>s); `emptyText` stands in for none, `props` are the table's attributes.
 * @param {string[]} headers
 * @param {Node[]} rows
 * @param {string} emptyText
 * @param {Record<string, unknown>} [props]
 */
export const table = (headers, rows, emptyText, props) =>
  tableOf(h('tbody', {}, rows.length > 0 ? rows : emptyRow(headers.length, emptyText, 'empty')), headers, props)

/**
 * One page of a cursor-paged list: its rows (<tr>s), the cursor of the next (older) page, and, when
 * the list says how long it is, `total` entries in pages of `size`.
 * @typedef {{ rows: Node[], next: string | null } & ({ total?: undefined } | { total: number, size: number })} TablePage
 */

/**
 * A table over a cursor-paged list: `load(cursor)` reads a page (`cursor` undefined for the first),
 * "Older →" follows its `next` while "Newest" goes back to the first page. Loading shows (aria-busy,
 * "Loading…"), and an error is reported (reportError). Answers the table (`el`, with `testid`) and
 * `reload()`, which reads the first page again.
 * @param {{ headers: string[], load: (cursor: string | undefined) => Promise<TablePage>, emptyText: string, testid: string }} options
 */
export function pagedTable({ headers, load, emptyText, testid }) {
  const body = h('tbody', {})
  const status = h('span', { class: 'muted small', 'aria-live': 'polite', 'data-testid': `${testid}-status` })
  const newest = h('button', { type: 'button', class: 'small', 'data-testid': `${testid}-first` }, 'Newest')
  const older = h('button', { type: 'button', class: 'small', 'data-testid': `${testid}-next` }, 'Older →')
  /** @type {(string | undefined)[]} the cursors of the pages before this one */
  const stack = []
  /** @type {string | undefined} */
  let cursor
  /** @type {string | null} */
  let next = null
  /** @param {string | undefined} at */
  const show = async (at) => {
    older.disabled = true
    newest.disabled = true
    status.textContent = 'Loading…'
    body.setAttribute('aria-busy', 'true')
    try {
      const page = await load(at)
      cursor = at
      next = page.next
      body.replaceChildren(...(page.rows.length > 0 ? page.rows : [emptyRow(headers.length, emptyText, 'empty')]))
      status.textContent = `Page ${stack.length + 1}${page.total === undefined ? '' : ` of ${Math.max(1, Math.ceil(page.total / page.size))} · ${page.total} in all`}`
    } catch (error) {
      status.textContent = ''
      reportError(error)
    } finally {
      body.removeAttribute('aria-busy')
      older.disabled = next === null
      newest.disabled = stack.length === 0
    }
  }
  older.addEventListener('click', () => {
    if (next === null) return
    stack.push(cursor)
    show(next)
  })
  newest.addEventListener('click', () => {
    stack.length = 0
    show(undefined)
  })
  const el = h(
    'div',
    { 'data-testid': testid },
    scrolling('table-wrap', {}, headers, body),
    h('div', { class: 'pager' }, newest, older, status),
  )
  const reload = () => {
    stack.length = 0
    return show(undefined)
  }
  reload()
  return { el, reload }
}

/**
 * Rows that page: `load(cursor)` reads a page (`cursor` undefined for the first one) whose `key`
 * array `row(item)` turns into elements in `container`, and whose `next_cursor` (if any) the
 * "More" button (`more`) reads next; `empty()` stands in for an empty first page. `reload()`
 * reads the first page again, through `attempt` (attempter), and answers what `attempt` did; of
 * overlapping reads, the newest reload's answer is the one shown.
 * @template T
 * @param {{ container: HTMLElement, key: string, load: (cursor: string | undefined) => Promise<unknown>, row: (item: T) => Node, empty: () => Node, attempt: Attempt }} options
 */
export function pagedRows({ container, key, load, row, empty, attempt }) {
  const more = h('button', { type: 'button', hidden: true }, 'More')
  /** @type {string | null} */
  let next = null
  // Each reload is a new generation. An answer that comes back after a newer reload began is
  // dropped: read before it (before an act, or for another filter), it would put back what the
  // newer one replaced. Answers can come back out of order on a busy server.
  let generation = 0
  /** @param {boolean} append */
  const read = async (append) => {
    const mine = append ? generation : ++generation
    const done = await attempt(() => load(append && next !== null ? next : undefined))
    if (mine !== generation || !done.ok) return done
    const page = /** @type {Record<string, unknown>} */ (done.value)
    const rows = /** @type {T[]} */ (page[key]).map(row)
    if (append) container.append(...rows)
    else container.replaceChildren(...(rows.length === 0 ? [empty()] : rows))
    next = /** @type {string | null | undefined} */ (page.next_cursor) ?? null
    more.hidden = next === null
    return done
  }
  more.addEventListener('click', () => read(true))
  return { container, more, reload: () => read(false) }
}
