// @ts-check
/**
 * The portal's request log of an app: the calls it made (filtered by status, route, user and error),
 * each one's request and answer, and the owner's switch that turns the log on or off.
 */

import { openModal } from '../../../web/ui/dialogs.js'
import { h } from '../../../web/ui/dom.js'
import { shortMiddle } from '../../../web/ui/format.js'
import { filterForm } from '../../../web/ui/forms.js'
import { emptyRow, grid, pagedRows } from '../../../web/ui/tables.js'
import { toast } from '../../../web/ui/toast.js'
import { account } from '../api.js'
import { alertLine, facts, query, when } from '../widgets.js'
import { curlPart } from './portal-tools.js'

const enc = encodeURIComponent
const STATUSES = ['2xx', '4xx', '5xx', '400', '401', '403', '404', '409', '429', '500']
/** @param {number} status */
const statusTag = (status) => h('span', { class: `tag ${status < 400 ? 'ok' : 'bad'}` }, String(status))

/**
 * A logged body, as JSON laid out when it is JSON (a body cut at 8 KiB is not: it is shown as it is).
 * @param {string | null} body
 */
function bodyText(body) {
  if (body === null || body === '') return 'None.'
  try {
    return JSON.stringify(JSON.parse(body), null, 2)
  } catch {
    return body
  }
}

/**
 * `attempt(work, line?)` and `refresh()`, as the activity section's (portal-activity.js).
 * @param {import('./types').ActivityContext} context
 */
export function createRequestLog({ attempt, refresh }) {
  /** The filters of the selected app's request log. */
  let requests = { status: '', route: '', user: '', error: '' }

  /**
   * @param {import('../types').PortalApp} app
   * @returns {import('./types').ActivityPanel}
   */
  function requestsPanel(app) {
    const owner = app.role === 'owner'
    const problem = alertLine('request-log-error')
    const notes = h('div', { 'aria-live': 'polite' })
    const inputs = {
      status: h(
        'select',
        { id: 'requests-status' },
        h('option', { value: '' }, 'Any status'),
        STATUSES.map((s) => h('option', { value: s, selected: s === requests.status }, s)),
      ),
      route: h('input', { id: 'requests-route', type: 'search', maxlength: '200', value: requests.route, placeholder: '/v2/payments' }),
      user: h('input', { id: 'requests-user', maxlength: '64', value: requests.user, autocomplete: 'off', spellcheck: 'false' }),
      error: h('input', {
        id: 'requests-error',
        maxlength: '64',
        value: requests.error,
        autocomplete: 'off',
        placeholder: 'ongoing_payment_found',
      }),
    }
    const path = `/portal/apps/${enc(app.app_id)}/requests`
    /** @param {import('./types').RequestLogEntry} entry */
    const row = (entry) =>
      h(
        'tr',
        { 'data-request-id': entry.id, 'data-status': String(entry.status) },
        h('td', {}, when(entry.at)),
        h('td', {}, statusTag(entry.status)),
        h(
          'td',
          { class: 'memo-cell' },
          h('strong', {}, entry.method),
          ` ${entry.route}`,
          entry.path === entry.route ? '' : h('span', { class: 'mono muted small block', title: 'The path called' }, entry.path),
        ),
        h('td', {}, entry.error_code === null ? '—' : h('code', {}, entry.error_code)),
        h(
          'td',
          { class: 'mono small' },
          entry.key_id !== null
            ? h('span', { title: `Server API key ${entry.key_id}` }, shortMiddle(entry.key_id))
            : entry.user_uid !== null
              ? h('span', { title: `The user ${entry.user_uid}` }, `user ${shortMiddle(entry.user_uid)}`)
              : '—',
        ),
        h('td', { class: 'nowrap' }, `${entry.latency_ms.toFixed(1)} ms`),
        h(
          'td',
          {},
          h(
            'button',
            {
              type: 'button',
              'aria-label': `Request ${entry.id}: ${entry.method} ${entry.path}`,
              onclick: () => showRequest(app, entry.id),
            },
            'Details',
          ),
        ),
      )
    const list = pagedRows({
      container: h('tbody'),
      key: 'requests',
      load: (cursor) => account(`${path}${query({ ...requests, before: cursor })}`),
      row,
      empty: () => emptyRow(7, Object.values(requests).some((v) => v !== '') ? 'No logged call matches.' : 'No call logged.'),
      attempt,
    })
    const read = async () => {
      const done = await list.reload()
      if (!done.ok) return
      const { enabled, dropped } = /** @type {import('./types').RequestLogPage} */ (done.value)
      notes.replaceChildren(
        enabled ? '' : h('p', { class: 'status-line bad' }, 'The platform’s operator keeps no request log (PLINTH_REQUEST_LOG=off).'),
        dropped > 0
          ? h('p', { class: 'muted small' }, `This server dropped ${dropped} entries since it started: its buffer was full.`)
          : '',
      )
    }
    const element = h(
      'div',
      { class: 'tab-panel', 'aria-label': 'Request log' },
      h(
        'p',
        { class: `status-line ${app.request_log ? 'ok' : ''}`, 'data-testid': 'request-log-state' },
        app.request_log
          ? 'The request log is on: the /v2 calls made with the app’s keys and its users’ tokens are kept 7 days (the newest 10,000), secrets redacted.'
          : `The request log is off: no /v2 call of the app is kept. ${owner ? 'Turn it on to see them here.' : 'Only the app’s owner can turn it on.'}`,
      ),
      owner ? logSwitch(app, problem) : '',
      problem.element,
      notes,
      filterForm(
        [
          ['Status', inputs.status],
          ['Route or path', inputs.route],
          ['User uid or key id', inputs.user],
          ['Error code', inputs.error],
        ],
        () => {
          requests = {
            status: inputs.status.value.trim(),
            route: inputs.route.value.trim(),
            user: inputs.user.value.trim(),
            error: inputs.error.value.trim(),
          }
          read()
        },
        'Show',
      ),
      grid('Logged calls, newest first', ['When', 'Status', 'Call', 'Error', 'By', 'Time', ''], list.container),
      list.more,
    )
    return { element, shown: read }
  }

  /**
   * The owner's switch of the request log.
   * @param {import('../types').PortalApp} app
   * @param {import('../types').ProblemLine} problem
   */
  function logSwitch(app, problem) {
    const input = h('input', {
      id: 'request-log-switch',
      type: 'checkbox',
      role: 'switch',
      checked: app.request_log,
      onchange: async () => {
        const on = input.checked
        input.disabled = true
        const done = await attempt(
          () => account(`/portal/apps/${enc(app.app_id)}`, { method: 'PATCH', body: { request_log: on } }),
          problem,
        )
        input.disabled = false
        if (!done.ok) {
          input.checked = !on
          return
        }
        toast(on ? 'Request log on: new calls are kept.' : 'Request log off: no new call is kept.')
        await refresh()
      },
    })
    return h('p', { class: 'switch' }, input, h('label', { for: 'request-log-switch' }, 'Keep the app’s request log'))
  }

  /**
   * @param {import('../types').PortalApp} app
   * @param {string} id
   */
  async function showRequest(app, id) {
    const done = await attempt(() => account(`/portal/apps/${enc(app.app_id)}/requests/${enc(id)}`))
    if (!done.ok) return
    const entry = done.value
    const close = openModal({
      label: `${entry.method} ${entry.path}`,
      className: 'wide-modal',
      onDismiss: () => close(),
      render: () => [
        facts(
          [
            ['When', when(entry.at)],
            ['Status', statusTag(entry.status)],
            ['Error', entry.error_code === null ? undefined : h('code', {}, entry.error_code)],
            ['Route', h('code', {}, entry.route)],
            ['Operation', entry.operation_id],
            ['Server API key', entry.key_id === null ? undefined : h('span', { class: 'mono' }, entry.key_id)],
            ['User (uid)', entry.user_uid === null ? undefined : h('span', { class: 'mono' }, entry.user_uid)],
            ['Time to answer', `${entry.latency_ms} ms`],
            ['Request id', h('span', { class: 'mono' }, entry.request_id)],
            ['Fault', entry.fault],
          ],
          'Logged call',
        ),
        h('h3', {}, 'Request body'),
        h('pre', { class: 'body', 'data-testid': 'request-body' }, bodyText(entry.request_body)),
        h('h3', {}, 'Response body'),
        h('pre', { class: 'body', 'data-testid': 'response-body' }, bodyText(entry.response_body)),
        h('p', { class: 'muted small' }, 'Keys, tokens, seeds, hashes and addresses are redacted; a body is cut at 8 KiB.'),
        curlPart(attempt, app, entry.id),
        h('div', { class: 'actions' }, h('button', { type: 'button', onclick: () => close() }, 'Close')),
      ],
    })
  }

  return {
    panel: requestsPanel,
    /** Another app is shown: the filters go. */
    forget() {
      requests = { status: '', route: '', user: '', error: '' }
    },
  }
}
