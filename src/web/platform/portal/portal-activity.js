// @ts-check
/**
 * What one app did, in the developer portal (docs/portal.md), in sub-tabs of its page: its
 * payments (with "why is this user blocked?"), its request log (turned on and off by its owner),
 * the notifications it sent and its rewarded ads. A tab's list is read each time it is shown.
 * Everything goes in as text (dom.js): bodies of logged calls included.
 */

import { openModal } from '../../../web/ui/dialogs.js'
import { h } from '../../../web/ui/dom.js'
import { formatPi, shortMiddle } from '../../../web/ui/format.js'
import { inlineForm } from '../../../web/ui/forms.js'
import { emptyRow, grid, pagedRows } from '../../../web/ui/tables.js'
import { toast } from '../../../web/ui/toast.js'
import { account } from '../api.js'
import { receiptLink } from '../receipt.js'
import { alertLine, facts, query, subTabs, when } from '../widgets.js'
import { createRequestLog } from './request-log.js'

/** @typedef {import('../types').PortalApp} PortalApp */

const enc = encodeURIComponent
const STATES = ['created', 'approved', 'transaction_linked', 'verified', 'completed', 'cancelled']

/** @param {string} state */
const stateLabel = (state) => state.replace('_', ' ')
/** @param {string} direction */
const directionLabel = (direction) => (direction === 'user_to_app' ? 'from a user' : 'to a user')

/**
 * `attempt(work, line?)`: the portal's way of running a call (widgets.js, attempter);
 * `refresh()`: draws the app's page again, after an act that changed it.
 * @param {import('./types').ActivityContext} context
 */
export function createActivity({ attempt, refresh }) {
  /** The sub-tab shown: it stays when the page is drawn again, and when another app is chosen. */
  let tab = 'payments'
  /** The filters of the selected app's payments and request log. */
  let payments = { q: '', state: '' }
  /** The request log tab, with its filters. */
  const requestLog = createRequestLog({ attempt, refresh })

  /**
   * The app's activity section: its sub-tabs, the one shown before open (and read).
   * @param {PortalApp} app
   */
  function section(app) {
    const panels = [
      { id: 'payments', label: 'Payments', ...paymentsPanel(app) },
      { id: 'requests', label: 'Request log', ...requestLog.panel(app) },
      { id: 'notifications', label: 'Notifications', ...notificationsPanel(app) },
      { id: 'ads', label: 'Rewarded ads', ...adsPanel(app) },
    ]
    const tabs = subTabs('The app’s activity', panels, (/** @type {string} */ id) => {
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

  /**
   * @param {PortalApp} app
   * @returns {import('./types').ActivityPanel}
   */
  function paymentsPanel(app) {
    const q = h('input', { id: 'payments-q', type: 'search', maxlength: '200', value: payments.q, placeholder: 'id, txid, uid or memo' })
    const state = h(
      'select',
      { id: 'payments-state' },
      h('option', { value: '' }, 'Any state'),
      STATES.map((s) => h('option', { value: s, selected: s === payments.state }, stateLabel(s))),
    )
    /** @param {import('./types').PortalPayment} p */
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

  /**
   * @param {PortalApp} app
   * @param {string} paymentId
   */
  const paymentButton = (app, paymentId) =>
    h('button', { type: 'button', 'aria-label': `Payment ${paymentId}`, onclick: () => showPayment(app, paymentId) }, 'Details')

  /**
   * "Why is this user blocked?": a user's open payments with the app, and which of them stop the next one.
   * @param {PortalApp} app
   */
  function blockingLookup(app) {
    const problem = alertLine('blocking-error')
    const result = h('div', { 'data-testid': 'blocking-result', 'aria-live': 'polite' })
    const uid = h('input', { id: 'blocking-uid', class: 'mono', maxlength: '64', autocomplete: 'off', spellcheck: 'false', required: true })
    /** @param {import('./types').PortalBlocking} blocking */
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

  /**
   * @param {PortalApp} app
   * @param {string} paymentId
   */
  async function showPayment(app, paymentId) {
    const path = /** @type {const} */ (`/portal/apps/${enc(app.app_id)}/payments/${enc(paymentId)}`)
    const done = await attempt(() => account(path))
    if (!done.ok) return
    const { payment, state, uid, advice } = done.value
    // Open objects in the portal's schema (types.d.ts): narrowed to what is read of them.
    const tx = /** @type {import('./types').LedgerTransactionRef | null} */ (done.value.ledger_transaction)
    const timeline = /** @type {import('./types').TimelineEvent[]} */ (done.value.timeline)
    const problem = alertLine('payment-error')
    const txid = h('input', {
      id: 'complete-txid',
      class: 'mono',
      pattern: '[0-9a-f]{64}',
      required: true,
      value: payment.transaction?.txid ?? '',
    })
    /**
     * @param {() => Promise<unknown>} work
     * @param {string} message
     */
    const after = async (work, message) => {
      const result = await attempt(work, problem)
      if (!result.ok) return
      close()
      toast(message)
      await refresh()
    }
    const actions = advice.sandbox_actions ?? []
    const close = openModal({
      label: `Payment ${shortMiddle(payment.identifier)}`,
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
              tx === null ? undefined : receiptLink(tx.hash, shortMiddle(tx.hash), { app: app.app_id, payment: payment.identifier }),
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
                onsubmit: (/** @type {SubmitEvent} */ event) => {
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

  // What the app sent: notifications, rewarded ads (the newest 50 of each)

  /**
   * A tab of the newest entries `path` answers (its `key` array), as a table.
   * @template T
   * @param {{ label: string, path: string, key: string, headers: string[], row: (item: T) => Node, empty: string, note: string }} options
   * @returns {import('./types').ActivityPanel}
   */
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

  /** @param {PortalApp} app */
  const notificationsPanel = (app) =>
    newestPanel({
      label: 'Sent notifications',
      path: `/portal/apps/${enc(app.app_id)}/notifications`,
      key: 'notifications',
      headers: ['Sent', 'To (uid)', 'Notification', 'Opens', 'Seen'],
      empty: 'The app sent no notification yet.',
      note: 'The newest 50 notifications the app sent, and whether each user saw or dismissed it.',
      row: (/** @type {import('./types').PortalNotification} */ n) =>
        h(
          'tr',
          { 'data-notification-id': n.id },
          h('td', {}, when(n.created_at)),
          h('td', { class: 'mono small', title: n.uid }, shortMiddle(n.uid)),
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

  /** @param {PortalApp} app */
  const adsPanel = (app) =>
    newestPanel({
      label: 'Rewarded ads',
      path: `/portal/apps/${enc(app.app_id)}/ads`,
      key: 'ads',
      headers: ['Shown', 'Ad id', 'To (uid)', 'Mediator’s verdict', 'Granted', 'Revoked'],
      empty: 'The app showed no rewarded ad yet.',
      note: 'The newest 50 rewarded ads the app showed, with the verdicts GET /v2/ads_network/status/{adId} answers.',
      row: (/** @type {import('./types').PortalAd} */ ad) =>
        h(
          'tr',
          { 'data-ad-id': ad.identifier },
          h('td', {}, when(ad.created_at)),
          h('td', { class: 'mono small', title: ad.identifier }, shortMiddle(ad.identifier)),
          h('td', { class: 'mono small', title: ad.uid ?? '' }, ad.uid === null ? '—' : shortMiddle(ad.uid)),
          h('td', {}, ad.mediator_ack_status ?? h('span', { class: 'muted' }, 'not decided yet')),
          h('td', {}, when(ad.mediator_granted_at)),
          h('td', {}, when(ad.mediator_revoked_at)),
        ),
    })

  /** Another app is shown: the filters go. */
  const forget = () => {
    payments = { q: '', state: '' }
    requestLog.forget()
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
