// @ts-check
/**
 * The sandbox console's tools for a live app, in the portal (docs/portal.md, "The app's tools"):
 * the app at a glance (its payments by state, its last errors, its setup checklist), its users as
 * the app sees them, downloads of its payments and request log, and a logged call as curl.
 * Everything goes in as text (dom.js).
 */

import { h } from '../../../web/ui/dom.js'
import { inlineForm } from '../../../web/ui/forms.js'
import { emptyRow, grid, pagedRows } from '../../../web/ui/tables.js'
import { account } from '../api.js'
import { alertLine, copyButton, query, when } from '../widgets.js'

/** @typedef {import('../types').PortalApp} PortalApp */

const enc = encodeURIComponent
/** The checklist's steps, in the order a developer meets them. */
const STEPS = /** @type {const} */ ([
  ['key_made', 'A server API key made'],
  ['url_set', 'The app’s URL set'],
  ['first_me', 'A first GET /v2/me (needs the request log on)'],
  ['first_approve', 'A first payment approved'],
  ['first_complete', 'A first payment completed'],
])

/**
 * `attempt(work, line?)`: the portal's way of running a call (widgets.js, attempter).
 * @param {{ attempt: import('../types').Attempt }} context
 */
export function createTools({ attempt }) {
  /** The users search of the app shown. */
  let usersQ = ''

  /**
   * The app's tools section: read each time the app's page is drawn.
   * @param {PortalApp} app
   */
  function section(app) {
    const overview = h('div', { 'data-testid': 'portal-overview', 'aria-live': 'polite' }, h('p', { class: 'muted' }, 'Reading…'))
    const problem = alertLine('portal-tools-error')
    attempt(() => account(`/portal/apps/${enc(app.app_id)}/overview`), problem).then((done) => {
      if (done.ok) overview.replaceChildren(...overviewOf(app, done.value))
    })
    return h(
      'section',
      { class: 'panel-section', 'aria-labelledby': 'portal-tools-title', 'data-testid': 'portal-tools' },
      h('h3', { id: 'portal-tools-title' }, 'Overview'),
      problem.element,
      overview,
      searchPart(app),
      usersPart(app),
      exportsPart(app),
    )
  }

  /**
   * @param {PortalApp} app
   * @param {import('./types').PortalOverview} o
   */
  function overviewOf(app, o) {
    const states = h(
      'tbody',
      {},
      o.payments.by_state.map((s) => h('tr', {}, h('td', {}, s.state.replace('_', ' ')), h('td', { class: 'num' }, String(s.count)))),
    )
    const errors = h(
      'tbody',
      {},
      o.last_errors.length === 0
        ? emptyRow(4, o.request_log ? 'No errors in the request log.' : 'The request log is off: no errors are kept.')
        : o.last_errors.map((e) =>
            h(
              'tr',
              { 'data-request-id': e.id },
              h('td', {}, when(e.at)),
              h('td', { class: 'mono' }, `${e.method} ${e.route || e.path}`),
              h('td', {}, h('span', { class: 'tag bad' }, String(e.status))),
              h('td', {}, e.error_code === null ? '—' : h('code', {}, e.error_code)),
            ),
          ),
    )
    const checklist = h(
      'ul',
      { class: 'checklist', 'data-testid': 'portal-checklist' },
      STEPS.map(([step, label]) => {
        const done = o.checklist[step]
        return h('li', { 'data-done': String(done.done) }, done.done ? '✓ ' : '○ ', label, done.at === null ? '' : ` (${when(done.at)})`)
      }),
    )
    return [
      h('p', {}, `${o.payments.count} payment${o.payments.count === 1 ? '' : 's'} in all.`),
      grid(`Payments of ${app.name} by state`, ['State', 'Payments'], states),
      h('h4', {}, 'Last errors'),
      grid('Last errors', ['When', 'Call', 'Status', 'Error'], errors),
      h('h4', {}, 'Setup checklist'),
      checklist,
    ]
  }

  /**
   * One box over the app's payments (id, txid, uid, memo), users (uid, granted username) and
   * request-log entries (request id): the first page of each list, side by side.
   * @param {PortalApp} app
   */
  function searchPart(app) {
    const q = h('input', {
      id: 'portal-find-q',
      type: 'search',
      maxlength: '200',
      placeholder: 'payment id, txid, uid, username, memo or request id',
    })
    const line = alertLine('portal-find-error')
    const hits = h('ul', { class: 'hits', 'aria-label': 'Found in the app', 'data-testid': 'portal-find-hits', 'aria-live': 'polite' })
    const find = async () => {
      const text = q.value.trim()
      if (text === '') return
      const id = enc(app.app_id)
      const done = await attempt(async () => {
        const [payments, users, requests] = await Promise.all([
          account(`/portal/apps/${id}/payments?${new URLSearchParams({ q: text, limit: '10' })}`),
          account(`/portal/apps/${id}/users?${new URLSearchParams({ q: text, limit: '10' })}`),
          account(`/portal/apps/${id}/requests?${new URLSearchParams({ request_id: text, limit: '10' })}`),
        ])
        return { payments, users, requests }
      }, line)
      if (!done.ok) return
      const { payments, users, requests } = done.value
      const items = [
        ...payments.payments.map((p) =>
          h(
            'li',
            { 'data-payment-id': p.identifier },
            'Payment ',
            h('span', { class: 'mono' }, p.identifier),
            ` · ${p.state.replace('_', ' ')} · ${p.amount} π · ${p.memo}`,
          ),
        ),
        ...users.users.map((u) =>
          h('li', { 'data-uid': u.uid }, 'User ', h('span', { class: 'mono' }, u.uid), u.username === null ? '' : ` (${u.username})`),
        ),
        ...requests.requests.map((r) =>
          h('li', { 'data-request-id': r.id }, `Call ${r.method} ${r.path} → ${r.status} · ${when(r.at)}`, curlPart(attempt, app, r.id)),
        ),
      ]
      hits.replaceChildren(...(items.length === 0 ? [h('li', { class: 'muted' }, 'Nothing in this app matches.')] : items))
    }
    return h(
      'div',
      {},
      h('h4', {}, 'Find'),
      inlineForm({ label: 'Find in the app', input: q, action: 'Find', search: true, onSubmit: find }),
      line.element,
      hits,
    )
  }

  /**
   * The users who granted the app: by uid, or by username where they granted that scope.
   * @param {PortalApp} app
   */
  function usersPart(app) {
    const q = h('input', { id: 'portal-users-q', type: 'search', maxlength: '200', value: usersQ, placeholder: 'uid or username' })
    const line = alertLine('portal-users-error')
    /** @param {import('./types').PortalAppUser} u */
    const row = (u) =>
      h(
        'tr',
        { 'data-uid': u.uid },
        h('td', { class: 'mono' }, u.uid),
        h('td', {}, u.username ?? h('span', { class: 'muted' }, 'not granted')),
        h('td', {}, u.scopes.join(', ')),
        h('td', {}, when(u.granted_at)),
      )
    const list = pagedRows({
      container: h('tbody'),
      key: 'users',
      load: (cursor) => account(`/portal/apps/${enc(app.app_id)}/users${query({ q: usersQ, before: cursor })}`),
      row,
      empty: () => emptyRow(4, usersQ === '' ? 'No user has signed in to the app yet.' : 'No user matches.'),
      attempt: (work) => attempt(work, line),
    })
    list.reload()
    return h(
      'div',
      {},
      h('h4', {}, 'Users'),
      inlineForm({
        label: 'Find users',
        input: q,
        action: 'Search users',
        search: true,
        onSubmit: () => {
          usersQ = q.value.trim()
          list.reload()
        },
      }),
      line.element,
      grid('Users', ['uid', 'Username', 'Scopes', 'Signed in'], list.container),
      list.more,
    )
  }

  /** @param {PortalApp} app */
  function exportsPart(app) {
    const base = `/portal/apps/${enc(app.app_id)}`
    /** @param {string} what @param {'csv' | 'json'} format @param {string} label */
    const link = (what, format, label) =>
      h('a', { class: 'button', href: `${base}/${what}/export?format=${format}`, download: `${app.app_id}-${what}.${format}` }, label)
    return h(
      'div',
      { 'data-testid': 'portal-exports' },
      h('h4', {}, 'Downloads'),
      h(
        'p',
        { class: 'actions' },
        link('payments', 'csv', 'Payments (CSV)'),
        link('payments', 'json', 'Payments (JSON)'),
        link('requests', 'csv', 'Request log (CSV)'),
        link('requests', 'json', 'Request log (JSON)'),
      ),
      h('p', { class: 'muted small' }, 'The newest 10,000 rows. The request log’s secrets are redacted as it stores them.'),
    )
  }

  return { section }
}

/**
 * A logged call's "Copy as curl": the command, its credential a shell variable ($PI_API_KEY), and a Copy button.
 * @param {import('../types').Attempt} attempt
 * @param {PortalApp} app
 * @param {string} id
 */
export function curlPart(attempt, app, id) {
  const out = h('div', { 'data-testid': 'request-curl' })
  const line = alertLine('request-curl-error')
  const show = async () => {
    const done = await attempt(() => account(`/portal/apps/${enc(app.app_id)}/requests/${enc(id)}/curl`), line)
    if (!done.ok) return
    out.replaceChildren(
      h('pre', { class: 'body' }, done.value.curl),
      h(
        'p',
        { class: 'muted small' },
        done.value.complete ? '' : 'Parts of this call were stored redacted: fill them in. ',
        'Set PI_API_KEY (or PI_ACCESS_TOKEN) in your shell first.',
      ),
      copyButton(done.value.curl, 'curl command'),
    )
  }
  return h('div', {}, h('button', { type: 'button', onclick: show }, 'Copy as curl'), line.element, out)
}
