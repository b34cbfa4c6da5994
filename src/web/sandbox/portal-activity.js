/**
 * What one app did, in the developer portal (docs/portal.md), in sub-tabs of its page: its
 * payments (with "why is this user blocked?"), its request log (turned on and off by its owner),
 * the notifications it sent and its rewarded ads. A tab's list is read each time it is shown.
 * Everything goes in as text (dom.js): bodies of logged calls included.
 */
import { account } from './api.js'
import { formatPi, h, openModal, short, toast } from './dom.js'
import { alertLine, facts, filterForm, grid, inlineForm, pagedRows, query, subTabs, when } from './widgets.js'

const enc = encodeURIComponent
const STATES = ['created', 'approved', 'transaction_linked', 'verified', 'completed', 'cancelled']
const STATUSES = ['2xx', '4xx', '5xx', '400', '401', '403', '404', '409', '429', '500']

const stateLabel = (state) => state.replace('_', ' ')
const directionLabel = (direction) => (direction === 'user_to_app' ? 'from a user' : 'to a user')
const emptyRow = (columns, text) => h('tr', {}, h('td', { colspan: String(columns), class: 'muted' }, text))
const statusTag = (status) => h('span', { class: `tag ${status < 400 ? 'ok' : 'bad'}` }, String(status))

/** A logged body, as JSON laid out when it is JSON (a body cut at 8 KiB is not: it is shown as it is). */
function bodyText(body) {
  if (body === null || body === '') return 'None.'
  try {
    return JSON.stringify(JSON.parse(body), null, 2)
  } catch {
    return body
  }
}

/**
 * `attempt(work, line?)`: the portal's way of running a call (widgets.js, attempter);
 * `refresh()`: draws the app's page again, after an act that changed it.
 */
export function createActivity({ attempt, refresh }) {
  /** The sub-tab shown: it stays when the page is drawn again, and when another app is chosen. */
  let tab = 'payments'
  /** The filters of the selected app's payments and request log. */
  let payments = { q: '', state: '' }
  let requests = { status: '', route: '', user: '', error: '' }

  /** The app's activity section: its sub-tabs, the one shown before open (and read). */
  function section(app) {
    const panels = [
      { id: 'payments', label: 'Payments', ...paymentsPanel(app) },
      { id: 'requests', label: 'Request log', ...requestsPanel(app) },
      { id: 'notifications', label: 'Notifications', ...notificationsPanel(app) },
      { id: 'ads', label: 'Rewarded ads', ...adsPanel(app) },
    ]
    const tabs = subTabs('The app’s activity', panels, (id) => {
      tab = id
    })
    tabs.open(tab)
    return h(
      'section',
      { class: 'panel-section', 'aria-labelledby': 'portal-activity-title' },
      h('h3', { id: 'portal-activity-title' }, 'Activity'),
      tabs.nav,
      panels.map((panel) => panel.element),
    )
  }

  // Payments

  function paymentsPanel(app) {
    const q = h('input', { id: 'payments-q', type: 'search', maxlength: '200', value: payments.q, placeholder: 'id, txid, uid or memo' })
    const state = h(
      'select',
      { id: 'payments-state' },
      h('option', { value: '' }, 'Any state'),
      STATES.map((s) => h('option', { value: s, selected: s === payments.state }, stateLabel(s))),
    )
    const row = (p) =>
      h(
        'tr',
        { 'data-payment-id': p.identifier },
        h('td', {}, when(p.created_at)),
        h('td', {}, formatPi(p.amount)),
        h('td', {}, directionLabel(p.direction)),
        h('td', { class: 'memo-cell' }, p.memo),
        h('td', {}, stateLabel(p.state)),
        h('td', {}, paymentButton(app, p.identifier)),
      )
    const list = pagedRows({
      container: h('tbody'),
      key: 'payments',
      load: (cursor) => account(`/portal/apps/${enc(app.app_id)}/payments${query({ ...payments, before: cursor })}`),
      row,
      empty: () => emptyRow(6, payments.q === '' && payments.state === '' ? 'No payments yet.' : 'No payment matches.'),
      attempt,
    })
    const element = h(
      'div',
      { class: 'tab-panel', 'aria-label': 'Payments' },
      inlineForm({
        label: 'Find payments',
        input: q,
        extra: [h('label', { for: 'payments-state', class: 'visually-hidden' }, 'State'), state],
        action: 'Search',
        search: true,
        onSubmit: () => {
          payments = { q: q.value.trim(), state: state.value }
          list.reload()
        },
      }),
      grid('Payments', ['Created', 'Amount', 'Direction', 'Memo', 'State', ''], list.container),
      list.more,
      blockingLookup(app),
    )
    return { element, shown: list.reload }
  }

  const paymentButton = (app, paymentId) =>
    h('button', { type: 'button', 'aria-label': `Payment ${paymentId}`, onclick: () => showPayment(app, paymentId) }, 'Details')

  /** "Why is this user blocked?": a user's open payments with the app, and which of them stop the next one. */
  function blockingLookup(app) {
    const problem = alertLine('blocking-error')
    const result = h('div', { 'data-testid': 'blocking-result', 'aria-live': 'polite' })
    const uid = h('input', { id: 'blocking-uid', class: 'mono', maxlength: '64', autocomplete: 'off', spellcheck: 'false', required: true })
    const show = ({ blocked, open_payments: open }) => {
      const stopped = [blocked.user_to_app ? 'user-to-app' : '', blocked.app_to_user ? 'app-to-user' : ''].filter(Boolean)
      result.replaceChildren(
        h(
          'p',
          { class: `status-line ${stopped.length === 0 ? 'ok' : 'bad'}` },
          stopped.length === 0
            ? 'Nothing blocks this user’s next payment.'
            : `Blocked: an open payment stops new ${stopped.join(' and ')} payments until it is completed or cancelled.`,
        ),
        open.length === 0
          ? h('p', { class: 'muted' }, 'No open payment with the app.')
          : h(
              'ul',
              { class: 'list', 'aria-label': 'Open payments' },
              open.map(({ payment, advice }) =>
                h(
                  'li',
                  { class: 'wrap', 'data-payment-id': payment.identifier },
                  h(
                    'span',
                    { class: 'grow' },
                    h('strong', {}, `${formatPi(payment.amount)} ${directionLabel(payment.direction)}`),
                    h('span', { class: 'muted' }, ` ${stateLabel(advice.state)}`),
                    advice.blocks_new_payment ? h('span', { class: 'tag bad' }, 'Blocks new payments') : '',
                    h('span', { class: 'small block' }, `Waiting for ${advice.waiting_for}.`),
                    advice.next_call === 'none' ? '' : h('code', { class: 'small block' }, advice.next_call),
                  ),
                  paymentButton(app, payment.identifier),
                ),
              ),
            ),
      )
    }
    return h(
      'div',
      { class: 'lookup' },
      h('h4', {}, 'Why is this user blocked?'),
      inlineForm({
        label: 'A user’s uid in the app',
        input: uid,
        action: 'Look up',
        onSubmit: async () => {
          result.replaceChildren()
          const value = uid.value.trim()
          if (value === '') return problem.set('Give a uid: the one the app got from /v2/me.')
          const done = await attempt(() => account(`/portal/apps/${enc(app.app_id)}/users/${enc(value)}/blocking`), problem)
          if (done.ok) show(done.value)
        },
      }),
      problem.element,
      result,
    )
  }

  async function showPayment(app, paymentId) {
    const path = `/portal/apps/${enc(app.app_id)}/payments/${enc(paymentId)}`
    const done = await attempt(() => account(path))
    if (!done.ok) return
    const { payment, state, uid, ledger_transaction: tx, timeline, advice } = done.value
    const problem = alertLine('payment-error')
    const txid = h('input', {
      id: 'complete-txid',
      class: 'mono',
      pattern: '[0-9a-f]{64}',
      required: true,
      value: payment.transaction?.txid ?? '',
    })
    const after = async (work, message) => {
      const result = await attempt(work, problem)
      if (!result.ok) return
      close()
      toast(message)
      await refresh()
    }
    const actions = advice.sandbox_actions ?? []
    const close = openModal({
      label: `Payment ${short(payment.identifier)}`,
      className: 'wide-modal',
      onDismiss: () => close(),
      render: () => [
        facts(
          [
            ['Identifier', h('span', { class: 'mono' }, payment.identifier)],
            ['Amount', formatPi(payment.amount)],
            ['Direction', payment.direction === 'user_to_app' ? 'A user pays the app' : 'The app pays a user'],
            ['Memo', payment.memo],
            ['User (uid)', h('span', { class: 'mono' }, uid)],
            ['State', stateLabel(state)],
            ['Created', when(payment.created_at)],
            [
              'Transaction',
              tx === null
                ? undefined
                : h('a', { href: `/ledger/transactions/${enc(tx.hash)}`, target: '_blank', rel: 'noopener' }, short(tx.hash)),
            ],
            ['Waiting for', advice.waiting_for],
            ['Next call', advice.next_call === 'none' ? undefined : h('code', {}, advice.next_call)],
          ],
          'Payment',
        ),
        h('h3', {}, 'Timeline'),
        timeline.length === 0
          ? h('p', { class: 'muted' }, 'Nothing recorded.')
          : h(
              'ol',
              { class: 'timeline' },
              timeline.map((event) =>
                h('li', {}, h('strong', {}, event.kind), h('span', { class: 'muted' }, ` ${when(event.at)} by ${event.actor}`)),
              ),
            ),
        problem.element,
        actions.includes('complete')
          ? h(
              'form',
              {
                class: 'stack',
                onsubmit: (event) => {
                  event.preventDefault()
                  after(() => account(`${path}/complete`, { method: 'POST', body: { txid: txid.value.trim() } }), 'Payment completed.')
                },
              },
              h('label', { for: 'complete-txid' }, 'Complete as the app, with the transaction id'),
              txid,
              h('button', { type: 'submit', class: 'primary' }, 'Complete the payment'),
            )
          : '',
        h(
          'div',
          { class: 'actions' },
          actions.includes('cancel')
            ? h(
                'button',
                {
                  type: 'button',
                  class: 'danger',
                  onclick: () => after(() => account(`${path}/cancel`, { method: 'POST' }), 'Payment cancelled.'),
                },
                'Cancel the payment',
              )
            : '',
          h('button', { type: 'button', onclick: () => close() }, 'Close'),
        ),
      ],
    })
  }

  // The request log

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
            ? h('span', { title: `Server API key ${entry.key_id}` }, short(entry.key_id))
            : entry.user_uid !== null
              ? h('span', { title: `The user ${entry.user_uid}` }, `user ${short(entry.user_uid)}`)
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
      const { enabled, dropped } = done.value
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
          requests = Object.fromEntries(Object.entries(inputs).map(([name, input]) => [name, input.value.trim()]))
          read()
        },
        'Show',
      ),
      grid('Logged calls, newest first', ['When', 'Status', 'Call', 'Error', 'By', 'Time', ''], list.container),
      list.more,
    )
    return { element, shown: read }
  }

  /** The owner's switch of the request log. */
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
        h('div', { class: 'actions' }, h('button', { type: 'button', onclick: () => close() }, 'Close')),
      ],
    })
  }

  // What the app sent: notifications, rewarded ads (the newest 50 of each)

  /** A tab of the newest entries `path` answers (its `key` array), as a table. */
  function newestPanel({ label, path, key, headers, row, empty, note }) {
    const list = pagedRows({
      container: h('tbody'),
      key,
      load: () => account(path),
      row,
      empty: () => emptyRow(headers.length, empty),
      attempt,
    })
    const element = h(
      'div',
      { class: 'tab-panel', 'aria-label': label },
      h('p', { class: 'muted small' }, note),
      grid(label, headers, list.container),
    )
    return { element, shown: list.reload }
  }

  const notificationsPanel = (app) =>
    newestPanel({
      label: 'Sent notifications',
      path: `/portal/apps/${enc(app.app_id)}/notifications`,
      key: 'notifications',
      headers: ['Sent', 'To (uid)', 'Notification', 'Opens', 'Seen'],
      empty: 'The app sent no notification yet.',
      note: 'The newest 50 notifications the app sent, and whether each user saw or dismissed it.',
      row: (n) =>
        h(
          'tr',
          { 'data-notification-id': n.id },
          h('td', {}, when(n.created_at)),
          h('td', { class: 'mono small', title: n.uid }, short(n.uid)),
          h('td', { class: 'memo-cell' }, h('strong', {}, n.title), h('span', { class: 'muted small block' }, n.body)),
          h('td', { class: 'mono small' }, n.subroute ?? '—'),
          h(
            'td',
            {},
            n.dismissed_at !== null
              ? `dismissed ${when(n.dismissed_at)}`
              : n.seen_at !== null
                ? `seen ${when(n.seen_at)}`
                : h('span', { class: 'muted' }, 'not yet'),
          ),
        ),
    })

  const adsPanel = (app) =>
    newestPanel({
      label: 'Rewarded ads',
      path: `/portal/apps/${enc(app.app_id)}/ads`,
      key: 'ads',
      headers: ['Shown', 'Ad id', 'To (uid)', 'Mediator’s verdict', 'Granted', 'Revoked'],
      empty: 'The app showed no rewarded ad yet.',
      note: 'The newest 50 rewarded ads the app showed, with the verdicts GET /v2/ads_network/status/{adId} answers.',
      row: (ad) =>
        h(
          'tr',
          { 'data-ad-id': ad.identifier },
          h('td', {}, when(ad.created_at)),
          h('td', { class: 'mono small', title: ad.identifier }, short(ad.identifier)),
          h('td', { class: 'mono small', title: ad.uid ?? '' }, ad.uid === null ? '—' : short(ad.uid)),
          h('td', {}, ad.mediator_ack_status ?? h('span', { class: 'muted' }, 'not decided yet')),
          h('td', {}, when(ad.mediator_granted_at)),
          h('td', {}, when(ad.mediator_revoked_at)),
        ),
    })

  /** Another app is shown: the filters go. */
  const forget = () => {
    payments = { q: '', state: '' }
    requests = { status: '', route: '', user: '', error: '' }
  }

  return {
    section,
    forget,
    /** Signing out: everything goes. */
    reset() {
      tab = 'payments'
      forget()
    },
  }
}
