// @ts-check
// The request log of an app: filters (status, route, user, error), paging back, a live tail that
// polls for newer entries with after=<cursor>, and exports. One entry: its headers, query string
// and bodies (as stored, redacted), the call as a curl command, and a replay.

import { h } from '../../../../web/ui/dom.js'
import { formatUtcTime, shortId } from '../../../../web/ui/format.js'
import { action } from '../../../../web/ui/forms.js'
import { table, tableOf } from '../../../../web/ui/tables.js'
import { reportError, toast } from '../../../../web/ui/toast.js'
import { get, post, query, seg } from '../api.js'
import { exportButtons } from '../export.js'
import { badge, card, code, facts, field, pageTitle, select } from '../parts.js'
import { currentRoute, onLeave } from '../router.js'
import { copy } from '../shared.js'

const TAIL_MS = 1500
/** @typedef {import('../types').RequestEntry} RequestEntry */

/** @type {[text: string, value: string][]} */
const STATUSES = [
  ['any status', ''],
  ['2xx', '2xx'],
  ['4xx', '4xx'],
  ['5xx', '5xx'],
  ['400', '400'],
  ['401', '401'],
  ['404', '404'],
  ['409', '409'],
]

/** @param {number} status */
const statusBadge = (status) => badge(String(status), status < 300 ? 'ok' : status < 500 ? 'warn' : 'off')
/**
 * @param {string} appId
 * @param {string} id
 */
const requestHref = (appId, id) => `#/apps/${seg(appId)}/requests/${seg(id)}`

/**
 * @param {string} appId
 * @param {RequestEntry} entry
 */
function requestRow(appId, entry) {
  return h(
    'tr',
    { 'data-testid': 'request-row', 'data-status': entry.status, 'data-error': entry.error_code ?? '' },
    h('td', { class: 'time' }, h('a', { href: requestHref(appId, entry.id) }, formatUtcTime(entry.at))),
    h('td', {}, statusBadge(entry.status)),
    h(
      'td',
      { class: 'clip' },
      h('strong', {}, entry.method),
      ' ',
      h('span', { class: 'path', title: entry.path }, entry.path),
      entry.replay_of ? [' ', badge('replay', 'info')] : null,
    ),
    h('td', {}, entry.error_code === null ? '—' : code(entry.error_code)),
    h(
      'td',
      {},
      entry.key_id !== null
        ? ['key ', code(entry.key_id)]
        : entry.user_uid !== null
          ? ['user ', code(shortId(entry.user_uid, 8), entry.user_uid)]
          : '—',
    ),
    h('td', { class: 'num' }, `${Math.round(entry.latency_ms)} ms`),
    h('td', {}, code(shortId(entry.request_id, 12), entry.request_id)),
  )
}

/** @param {{ appId: string }} params */
export async function requestsPage({ appId }) {
  const app = await get(`/sandbox/apps/${seg(appId)}`)
  const initial = Object.fromEntries(new URLSearchParams(currentRoute().split('?')[1] ?? ''))
  const filters = { status: initial.status ?? '', route: initial.route ?? '', user: initial.user ?? '', error: initial.error ?? '' }
  const body = h('tbody', {})
  const status = h('span', { class: 'muted small', 'aria-live': 'polite', 'data-testid': 'requests-status' })
  const older = h('button', { type: 'button', class: 'small', 'data-testid': 'requests-next' }, 'Older →')
  const tailBox = h('input', { type: 'checkbox', checked: true, 'data-testid': 'live-tail' })
  /** @type {string | null} the cursor of the older entries */
  let next = null
  /** @type {string | null} the cursor after the newest entry shown, which the live tail polls from */
  let newest = null
  let total = 0
  let shown = 0
  // "N of total": what the table holds of every entry that matches the filters.
  const counted = () => `${shown} of ${total} shown`
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer
  let generation = 0
  const base = /** @type {const} */ (`/sandbox/apps/${seg(appId)}/requests`)
  const emptyRow = () => h('tr', { class: 'empty-row' }, h('td', { colspan: 7, class: 'empty' }, 'No request matches yet.'))

  const load = async () => {
    const mine = ++generation
    status.textContent = 'Loading…'
    try {
      const page = await get(`${base}${query({ ...filters, limit: 50 })}`)
      if (mine !== generation) return
      next = page.next_cursor
      newest = page.newest_cursor
      total = page.total
      shown = page.requests.length
      body.replaceChildren(...(page.requests.length > 0 ? page.requests.map((entry) => requestRow(appId, entry)) : [emptyRow()]))
      status.textContent = page.enabled ? counted() : 'The request log is off in this process (PLINTH_REQUEST_LOG).'
    } catch (error) {
      status.textContent = ''
      reportError(error)
    }
    older.disabled = next === null
  }
  const poll = async () => {
    const mine = generation
    if (tailBox.checked && newest !== null && document.visibilityState === 'visible') {
      try {
        const page = await get(`${base}${query({ ...filters, after: newest, limit: 200 })}`)
        if (mine === generation && page.requests.length > 0) {
          body.querySelector('.empty-row')?.remove()
          for (const entry of page.requests) body.prepend(requestRow(appId, entry))
          newest = page.next_cursor
          shown += page.requests.length
          total += page.requests.length
          status.textContent = counted()
        }
      } catch {
        // A missed poll is retried on the next tick.
      }
    }
    timer = setTimeout(poll, TAIL_MS)
  }
  older.addEventListener('click', async () => {
    if (next === null) return
    older.disabled = true
    try {
      const page = await get(`${base}${query({ ...filters, before: next, limit: 50 })}`)
      body.querySelector('.empty-row')?.remove()
      for (const entry of page.requests) body.append(requestRow(appId, entry))
      next = page.next_cursor
      shown += page.requests.length
      status.textContent = counted()
    } catch (error) {
      reportError(error)
    }
    older.disabled = next === null
  })
  onLeave(() => clearTimeout(timer))

  const filterForm = h('form', { class: 'inline-form', 'data-testid': 'request-filters' })
  const statusSelect = select('status', STATUSES, filters.status)
  /**
   * @param {'route' | 'user' | 'error'} name
   * @param {string} placeholder
   */
  const input = (name, placeholder) => h('input', { name, placeholder, maxlength: 200, value: filters[name] })
  filterForm.append(
    field('Status', statusSelect),
    field('Route', input('route', '/v2/payments or an operationId')),
    field('User uid or key id', input('user', 'uid or key id')),
    field('Error code', input('error', 'already_approved')),
    h('button', { type: 'submit', class: 'primary' }, 'Filter'),
  )
  const apply = () => {
    for (const name of /** @type {(keyof typeof filters)[]} */ (Object.keys(filters))) {
      filters[name] = /** @type {HTMLInputElement | HTMLSelectElement} */ (filterForm.elements.namedItem(name)).value.trim()
    }
    load()
  }
  filterForm.addEventListener('submit', (event) => {
    event.preventDefault()
    apply()
  })
  statusSelect.addEventListener('change', apply)
  await load()
  timer = setTimeout(poll, TAIL_MS)
  return [
    pageTitle(`Request log of ${app.name}`, 'Every /v2 call made with its keys or its users’ tokens, newest first, secrets redacted.', [
      `#/apps/${seg(appId)}`,
      app.name,
    ]),
    h(
      'nav',
      { class: 'subnav', 'aria-label': 'This app' },
      h('a', { href: `#/apps/${seg(appId)}/overview`, 'data-testid': 'link-overview' }, 'Overview'),
      h('a', { href: `#/apps/${seg(appId)}/payments` }, 'Payments'),
    ),
    card('Filters', h('label', { class: 'switch' }, tailBox, ' Live tail'), filterForm),
    card(
      'Requests',
      [
        action('Reload', load, { kind: 'small' }),
        ' ',
        // The export takes the filters in force when it is clicked.
        exportButtons(() => `${base}/export${query(filters)}`, 'export-requests'),
      ],
      tableOf(body, ['Time', 'Status', 'Call', 'Error', 'By', 'Latency', 'Request id'], { 'data-testid': 'requests' }),
      h('div', { class: 'pager' }, older, status),
    ),
  ]
}

/**
 * One entry; `by-request-id?request_id=…&user=…` finds it from a payment's timeline.
 * @param {{ appId: string, id: string }} params
 */
export async function requestPage({ appId, id }) {
  /** @type {RequestEntry} */
  let entry
  if (id === 'by-request-id') {
    entry = await findByRequestId(appId, Object.fromEntries(new URLSearchParams(currentRoute().split('?')[1] ?? '')))
  } else {
    entry = await get(`/sandbox/apps/${seg(appId)}/requests/${seg(id)}`)
  }
  /** @param {string | null} text */
  const pretty = (text) => {
    if (text === null) return '—'
    try {
      return JSON.stringify(JSON.parse(text), null, 2)
    } catch {
      return text
    }
  }
  const base = /** @type {const} */ (`/sandbox/apps/${seg(appId)}/requests`)
  const curl = curlCommand(entry)
  const result = h('div', { 'data-testid': 'replay-result', 'aria-live': 'polite' })
  const replay = action(
    'Replay',
    async () => {
      const answer = await post(`${base}/${seg(entry.id)}/replay`)
      const link =
        answer.entry === null
          ? null
          : h('a', { href: requestHref(appId, answer.entry.id), 'data-testid': 'replay-entry' }, 'open its entry')
      result.replaceChildren(
        h('p', {}, 'Replayed with key ', code(answer.key_id), ': ', statusBadge(answer.status), ' ', link ?? 'the request log is off'),
      )
      toast(`Replayed: ${answer.status}`)
    },
    { kind: 'primary', confirm: 'Click again to send it', testid: 'replay' },
  )
  const keyCall = entry.key_id !== null
  if (!keyCall) replay.disabled = true
  return [
    pageTitle(`${entry.method} ${entry.path}`, formatUtcTime(entry.at), [`#/apps/${seg(appId)}/requests`, 'Request log']),
    card(
      'Request',
      null,
      facts([
        ['Status', statusBadge(entry.status), 'request-status'],
        ['Error code', entry.error_code === null ? '—' : code(entry.error_code), 'request-error'],
        ['Route', code(entry.route)],
        ['Query string', entry.query === null ? '—' : code(entry.query), 'request-query'],
        ['Operation', entry.operation_id ?? '—'],
        ['Key id', entry.key_id ?? '—'],
        ['User uid', entry.user_uid ?? '—'],
        ['Latency', `${entry.latency_ms} ms`],
        ['Request id', code(entry.request_id), 'request-id'],
        entry.fault === null ? null : ['Injected fault', entry.fault],
        entry.replay_of === null
          ? null
          : ['Replay of', h('a', { href: requestHref(appId, entry.replay_of), 'data-testid': 'replay-of' }, `entry ${entry.replay_of}`)],
      ]),
    ),
    card(
      'Send it again',
      null,
      h(
        'p',
        { class: 'muted' },
        keyCall
          ? 'Replay sends this call again now, with the key that made it (or the app’s newest active key), and logs it as a new entry.'
          : 'Only calls made with a server API key can be replayed: Plinth keeps no user’s access token.',
      ),
      h(
        'div',
        { class: 'actions' },
        replay,
        ' ',
        action('Copy as curl', () => copy(curl), { testid: 'copy-curl' }),
      ),
      result,
      h('pre', { class: 'body curl', 'data-testid': 'curl' }, curl),
      h(
        'p',
        { class: 'muted small' },
        keyCall
          ? 'Set PLINTH_APP_KEY to the app’s server API key first (export PLINTH_APP_KEY=…). '
          : 'Set PLINTH_ACCESS_TOKEN to a user’s access token first. ',
        'Secrets were redacted when the call was logged: a [redacted] in the body is sent as written.',
      ),
    ),
    headersCard('Request headers', entry.request_headers, 'request-headers'),
    card('Request body', null, h('pre', { class: 'body' }, pretty(entry.request_body))),
    headersCard('Response headers', entry.response_headers, 'response-headers'),
    card('Response body', null, h('pre', { class: 'body', 'data-testid': 'response-body' }, pretty(entry.response_body))),
  ]
}

/**
 * @param {string} title
 * @param {Record<string, string> | null | undefined} headers
 * @param {string} testid
 */
function headersCard(title, headers, testid) {
  if (headers === null || headers === undefined) return card(title, null, h('p', { class: 'muted' }, 'Not recorded for this entry.'))
  const rows = Object.entries(headers).map(([name, value]) =>
    h('tr', { 'data-testid': `${testid}-row`, 'data-name': name }, h('td', {}, code(name)), h('td', { class: 'wrap' }, value)),
  )
  return card(title, null, table(['Name', 'Value'], rows, 'None.', { 'data-testid': testid }))
}

/** Headers a curl command leaves out: the connection's own, the browser's, and the credential (a placeholder instead). */
const NOT_COPIED =
  /^(host|content-length|connection|keep-alive|transfer-encoding|accept-encoding|user-agent|origin|referer|cookie|authorization|x-request-id|sec-.*)$/

/**
 * POSIX shell single quotes: the text exactly, whatever it holds.
 * @param {string} text
 */
const shellQuote = (text) => `'${String(text).replaceAll("'", "'\\''")}'`

/**
 * The call as a curl command: method, URL with its query, the headers worth sending, the body. The
 * credential is a shell variable, never a value: `$PLINTH_APP_KEY` for a key call (the key itself
 * is never stored), `$PLINTH_ACCESS_TOKEN` for a user's call.
 * @param {RequestEntry} entry
 */
export function curlCommand(entry) {
  const url = `${location.origin}${entry.path}${entry.query === null ? '' : `?${entry.query}`}`
  const lines = [`curl -X ${entry.method} ${shellQuote(url)}`]
  lines.push(entry.key_id !== null ? '-H "Authorization: Key $PLINTH_APP_KEY"' : '-H "Authorization: Bearer $PLINTH_ACCESS_TOKEN"')
  for (const [name, value] of Object.entries(entry.request_headers ?? {})) {
    if (NOT_COPIED.test(name) || value.includes('[redacted]')) continue
    lines.push(`-H ${shellQuote(`${name}: ${value}`)}`)
  }
  if (entry.request_body !== null) lines.push(`--data-raw ${shellQuote(entry.request_body)}`)
  return lines.join(' \\\n  ')
}

/**
 * The log has no request_id filter: look through the actor's latest entries (at most 1,000).
 * @param {string} appId
 * @param {{ request_id?: string, user?: string }} search
 */
async function findByRequestId(appId, { request_id: requestId, user }) {
  /** @type {string | undefined} */
  let before
  for (let page = 0; page < 5; page++) {
    const answer = await get(`/sandbox/apps/${seg(appId)}/requests${query({ user, before, limit: 200 })}`)
    const found = answer.requests.find((entry) => entry.request_id === requestId)
    if (found !== undefined) return found
    if (answer.next_cursor === null) break
    before = answer.next_cursor
  }
  throw new Error(`Request ${requestId} is not in the log (it may have been written by another process, or aged out).`)
}
