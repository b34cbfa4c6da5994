// @ts-check
/**
 * Tables of both pages: a table that scrolls sideways and rows that page with "More" (the platform
 * page); the console's tables with cursor paging are in its components.js.
 */
import { h } from './dom.js'

/**
 * @template T
 * @typedef {{ ok: true, value: T } | { ok: false, error?: unknown }} Attempted
 */
/** @typedef {<T>(work: () => Promise<T>) => Promise<Attempted<T>>} Attempt */

/**
 * A table's row saying it has nothing to show.
 * @param {number} columns
 * @param {string} text
 */
export const emptyRow = (columns, text) => h('tr', {}, h('td', { colspan: String(columns), class: 'muted' }, text))

/**
 * A table in a box that scrolls sideways: `headers` the column titles, `body` its tbody.
 * @param {string} label
 * @param {string[]} headers
 * @param {HTMLElement} body
 */
export function grid(label, headers, body) {
  return h(
    'div',
    { class: 'table-scroll' },
    h(
      'table',
      { class: 'grid', 'aria-label': label },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          headers.map((t) => h('th', { scope: 'col' }, t)),
        ),
      ),
      body,
    ),
  )
}

/**
 * Rows that page: `load(cursor)` reads a page (`cursor` undefined for the first one) whose `key`
 * array `row(item)` turns into elements in `container`, and whose `next_cursor` (if any) the
 * "More" button (`more`) reads next; `empty()` stands in for an empty first page. `reload()`
 * reads the first page again, through `attempt` (attempter), and answers what `attempt` did.
 * @template T
 * @param {{ container: HTMLElement, key: string, load: (cursor: string | undefined) => Promise<unknown>, row: (item: T) => Node, empty: () => Node, attempt: Attempt }} options
 */
export function pagedRows({ container, key, load, row, empty, attempt }) {
  const more = h('button', { type: 'button', hidden: true }, 'More')
  /** @type {string | null} */
  let next = null
  /** @param {boolean} append */
  const read = async (append) => {
    const done = await attempt(() => load(append && next !== null ? next : undefined))
    if (!done.ok) return done
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
