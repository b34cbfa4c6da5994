// Shared pieces: tables with cursor paging, forms and buttons with busy states, confirmation
// dialogs that keep the focus inside them.

import { h } from '../../../web/ui/dom.js'
import { toast } from '../../../web/ui/toast.js'
import { ApiFailure } from './api.js'

export function report(error) {
  if (error instanceof ApiFailure && error.code === 'invalid_admin_token') return
  toast(error instanceof Error ? error.message : String(error), 'error')
}

export async function copy(value) {
  try {
    await navigator.clipboard.writeText(value)
    toast('Copied')
  } catch {
    toast('Copy failed: select the text and copy it by hand', 'error')
  }
}

const emptyRow = (columns, text) => h('tr', {}, h('td', { colspan: columns, class: 'empty' }, text))

export function table(headers, rows, emptyText, props) {
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      props ?? {},
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          headers.map((text) => h('th', { scope: 'col' }, text)),
        ),
      ),
      h('tbody', {}, rows.length > 0 ? rows : emptyRow(headers.length, emptyText)),
    ),
  )
}

/**
 * A table over a cursor-paged list: `load(cursor)` answers `{ rows, next }` (rows as <tr>), and
 * "Older" follows next_cursor while "Newest" goes back to the first page. Loading shows.
 */
export function pagedTable({ headers, load, emptyText, testid }) {
  const body = h('tbody', {})
  const status = h('span', { class: 'muted small', 'aria-live': 'polite', 'data-testid': `${testid}-status` })
  const newest = h('button', { type: 'button', class: 'small', 'data-testid': `${testid}-first` }, 'Newest')
  const older = h('button', { type: 'button', class: 'small', 'data-testid': `${testid}-next` }, 'Older →')
  const stack = []
  let cursor
  let next = null
  const show = async (at) => {
    older.disabled = true
    newest.disabled = true
    status.textContent = 'Loading…'
    body.setAttribute('aria-busy', 'true')
    try {
      const page = await load(at)
      cursor = at
      next = page.next
      body.replaceChildren(...(page.rows.length > 0 ? page.rows : [emptyRow(headers.length, emptyText)]))
      status.textContent = `Page ${stack.length + 1}${page.total === undefined ? '' : ` of ${Math.max(1, Math.ceil(page.total / page.size))} · ${page.total} in all`}`
    } catch (error) {
      status.textContent = ''
      report(error)
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
    h(
      'div',
      { class: 'table-wrap' },
      h(
        'table',
        {},
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
    ),
    h('div', { class: 'pager' }, newest, older, status),
  )
  const reload = () => {
    stack.length = 0
    return show(undefined)
  }
  reload()
  return { el, reload }
}

/** A search box that calls `onSearch(text)` on submit and after a pause in typing. */
export function searchBox({ label, placeholder, maxlength, onSearch, testid, value = '' }) {
  const input = h('input', { type: 'search', name: 'q', placeholder, maxlength, value, 'data-testid': testid })
  let timer
  input.addEventListener('input', () => {
    clearTimeout(timer)
    timer = setTimeout(() => onSearch(input.value.trim()), 300)
  })
  const el = h('form', { class: 'inline-form search', role: 'search' }, h('label', { class: 'field' }, h('span', {}, label), input))
  el.addEventListener('submit', (event) => {
    event.preventDefault()
    clearTimeout(timer)
    onSearch(input.value.trim())
  })
  return el
}

/** A form whose submit handler gets its values; the button is disabled while it runs. */
export function form(props, children, onSubmit) {
  const el = h('form', props, children)
  el.addEventListener('submit', async (event) => {
    event.preventDefault()
    const values = Object.fromEntries(new FormData(el).entries())
    const buttons = el.querySelectorAll('button')
    for (const button of buttons) button.disabled = true
    try {
      await onSubmit(values, el)
    } catch (error) {
      report(error)
    } finally {
      for (const button of buttons) button.disabled = false
    }
  })
  return el
}

/** A button that runs an action once, with a busy state; `confirm` asks for a second click first. */
export function action(label, run, { kind = '', confirm, testid } = {}) {
  const button = h('button', { type: 'button', class: kind, 'data-testid': testid }, label)
  let armed = false
  button.addEventListener('click', async () => {
    if (confirm !== undefined && !armed) {
      armed = true
      button.textContent = confirm
      button.classList.add('armed')
      setTimeout(() => {
        armed = false
        button.textContent = label
        button.classList.remove('armed')
      }, 4000)
      return
    }
    button.disabled = true
    button.setAttribute('aria-busy', 'true')
    try {
      await run()
    } catch (error) {
      report(error)
    } finally {
      button.disabled = false
      button.removeAttribute('aria-busy')
    }
  })
  return button
}
