// @ts-check
// Payments: search and paging, one payment with its timeline, and why a user is blocked (with
// the actions that unstick them).

import { h } from '../../../../web/ui/dom.js'
import { formatUtcTime, shortId } from '../../../../web/ui/format.js'
import { action, searchBox } from '../../../../web/ui/forms.js'
import { pagedTable, table } from '../../../../web/ui/tables.js'
import { toast } from '../../../../web/ui/toast.js'
import { get, post, query, seg } from '../api.js'
import { exportButtons } from '../export.js'
import { card, code, external, facts, field, pageTitle, select } from '../parts.js'
import { render } from '../router.js'
import { accountLink, flagsText, piOn, stateBadge, txLink } from '../shared.js'
import { PAYMENT_HEADERS, paymentRow } from './apps.js'

/** @type {[text: string, value: string][]} */
const STATES = [
  ['any state', ''],
  ['created', 'created'],
  ['approved', 'approved'],
  ['paid, unverified', 'transaction_linked'],
  ['paid, verified', 'verified'],
  ['completed', 'completed'],
  ['cancelled', 'cancelled'],
]
/** @type {[text: string, value: string][]} */
const DIRECTIONS = [
  ['both directions', ''],
  ['user to app (U2A)', 'user_to_app'],
  ['app to user (A2U)', 'app_to_user'],
]

/** @param {{ appId: string }} params */
export async function paymentsPage({ appId }) {
  const app = await get(`/sandbox/apps/${seg(appId)}`)
  const filters = { q: '', state: '', direction: '' }
  const list = pagedTable({
    headers: PAYMENT_HEADERS,
    emptyText: 'No payment matches.',
    testid: 'payments',
    load: async (before) => {
      const { payments, next_cursor, total } = await get(`/sandbox/apps/${seg(appId)}/payments${query({ ...filters, before, limit: 50 })}`)
      return { rows: payments.map((payment) => paymentRow(appId, payment)), next: next_cursor, total, size: 50 }
    },
  })
  list.el.querySelector('table')?.classList.add('payments')
  const search = searchBox({
    label: 'Find a payment (id, txid, user or memo)',
    placeholder: 'payment id, txid, username, memo…',
    maxlength: 200,
    testid: 'payment-search',
    onSearch: (text) => {
      filters.q = text
      list.reload()
    },
  })
  const state = select('state', STATES, '')
  const direction = select('direction', DIRECTIONS, '')
  state.setAttribute('data-testid', 'payment-state')
  direction.setAttribute('data-testid', 'payment-direction')
  state.addEventListener('change', () => {
    filters.state = state.value
    list.reload()
  })
  direction.addEventListener('change', () => {
    filters.direction = direction.value
    list.reload()
  })
  return [
    pageTitle(`Payments of ${app.name}`, `On ${app.network}, the app's network. Newest first. Open a payment for its timeline.`, [
      `#/apps/${seg(appId)}`,
      app.name,
    ]),
    card('Search', null, h('div', { class: 'inline-form' }, search, field('State', state), field('Direction', direction))),
    card(
      'Payments',
      [
        action('Refresh', list.reload, { kind: 'small' }),
        ' ',
        // The export takes the search and filters in force when it is clicked.
        exportButtons(() => `/sandbox/apps/${seg(appId)}/payments/export${query(filters)}`, 'export-payments'),
      ],
      list.el,
    ),
  ]
}

/** @type {Record<string, string>} who did what a timeline says */
const ACTORS = {
  app: 'the app',
  user: 'the user',
  approval_window: 'the approval window',
  ledger: 'the ledger',
  sandbox: 'the sandbox (console)',
}

/** @param {{ appId: string, paymentId: string }} params */
export async function paymentPage({ appId, paymentId }) {
  const detail = await get(`/sandbox/apps/${seg(appId)}/payments/${seg(paymentId)}`)
  const { payment, user, advice } = detail
  const tx = detail.ledger_transaction
  const events = detail.timeline.map((event) =>
    h(
      'li',
      { 'data-testid': 'timeline-event', 'data-kind': event.kind },
      h('strong', {}, event.kind.replaceAll('_', ' ')),
      ` by ${ACTORS[event.actor] ?? event.actor}`,
      event.actor_id === null ? null : [' (', code(event.actor_id), ')'],
      h('span', { class: 'muted' }, ` at ${formatUtcTime(event.at)}`),
      event.detail === null ? null : h('div', { class: 'small' }, event.detail),
      event.request_id === null
        ? null
        : h(
            'div',
            { class: 'small' },
            h(
              'a',
              {
                href: `#/apps/${seg(appId)}/requests/by-request-id?${query({ request_id: event.request_id, user: event.actor_id ?? undefined }).slice(1)}`,
                'data-testid': 'timeline-request',
              },
              `request ${event.request_id}`,
            ),
          ),
    ),
  )
  return [
    pageTitle(`Payment ${shortId(payment.identifier, 16)}`, payment.memo, [`#/apps/${seg(appId)}/payments`, 'Payments']),
    card(
      'Payment',
      action('Refresh', render, { kind: 'small' }),
      facts([
        ['Identifier', code(payment.identifier)],
        ['State', stateBadge({ ...payment, state: detail.state }), 'payment-state'],
        ['Status flags', h('span', { class: 'small' }, flagsText(payment.status).replaceAll('\n', ' · ')), 'payment-flags'],
        ['Network', payment.network, 'payment-network'],
        ['Amount', `${payment.amount} ${piOn(payment.network)} (${payment.direction === 'user_to_app' ? 'user to app' : 'app to user'})`],
        ['Memo', h('span', { class: 'memo-full' }, payment.memo)],
        ['Metadata', h('code', { class: 'json' }, JSON.stringify(payment.metadata))],
        ['User', [h('a', { href: `#/users/${seg(user.user_id)}` }, user.username), ' · uid ', code(user.uid)]],
        ['From', accountLink(detail.from_address)],
        ['To', accountLink(detail.to_address)],
        ['Created', formatUtcTime(payment.created_at)],
      ]),
    ),
    card(
      'What happens next',
      null,
      h('p', { 'data-testid': 'advice' }, `Waiting for ${advice.waiting_for}.`),
      advice.next_call === '' ? null : h('p', {}, 'The call that moves it on: ', code(advice.next_call)),
      advice.blocks_new_payment
        ? h(
            'p',
            { class: 'warning' },
            'This payment blocks the user’s next payments. ',
            h('a', { href: `#/apps/${seg(appId)}/users/${seg(user.user_id)}/blocking` }, 'See why and unstick'),
          )
        : null,
      sandboxActions(appId, payment, advice),
    ),
    card(
      'Ledger transaction',
      null,
      tx === null
        ? h('p', { class: 'muted' }, 'None linked yet.')
        : facts([
            ['Hash', txLink(tx.hash), 'payment-tx'],
            ['Ledger', tx.ledger],
            ['At', formatUtcTime(tx.created_at)],
            ['Source', accountLink(tx.source_account)],
            ['Fee', `${tx.fee_charged} stroops`],
            ['Memo', tx.memo ?? '—'],
            ['Raw record', external(tx._link, 'Horizon JSON')],
          ]),
    ),
    card('Timeline', null, h('ol', { class: 'timeline', 'data-testid': 'timeline' }, events)),
  ]
}

/**
 * The console's buttons that move a payment on (complete it as the app, cancel it), as its advice offers them.
 * @param {string} appId
 * @param {{ identifier: string }} payment
 * @param {import('../types').Advice} advice
 */
function sandboxActions(appId, payment, advice) {
  const base = /** @type {const} */ (`/sandbox/apps/${seg(appId)}/payments/${seg(payment.identifier)}`)
  const buttons = advice.sandbox_actions.map((name) =>
    name === 'complete'
      ? action(
          'Complete as the app',
          async () => {
            await post(`${base}/complete`, {})
            toast(`Payment ${shortId(payment.identifier)} completed`)
            await render()
          },
          { kind: 'primary small', testid: 'unstick-complete' },
        )
      : action(
          'Cancel',
          async () => {
            await post(`${base}/cancel`, {})
            toast(`Payment ${shortId(payment.identifier)} cancelled`)
            await render()
          },
          { kind: 'small danger', confirm: 'Click again to cancel', testid: 'unstick-cancel' },
        ),
  )
  return buttons.length === 0 ? null : h('div', { class: 'actions' }, buttons)
}

/** @param {{ appId: string, userId: string }} params */
export async function blockingPage({ appId, userId }) {
  const [app, view, user] = await Promise.all([
    get(`/sandbox/apps/${seg(appId)}`),
    get(`/sandbox/apps/${seg(appId)}/users/${seg(userId)}/blocking`),
    get(`/sandbox/users/${seg(userId)}`),
  ])
  const blocked = view.blocked.user_to_app || view.blocked.app_to_user
  const rows = view.open_payments.map(({ payment, advice }) =>
    h(
      'tr',
      { 'data-testid': 'blocking-row' },
      h(
        'td',
        { class: 'clip' },
        h(
          'a',
          { href: `#/apps/${seg(appId)}/payments/${seg(payment.identifier)}` },
          code(shortId(payment.identifier, 12), payment.identifier),
        ),
        h('div', { class: 'muted small memo' }, payment.memo),
      ),
      h('td', {}, stateBadge({ ...payment, state: advice.state })),
      h(
        'td',
        {},
        advice.blocks_new_payment ? h('strong', {}, 'Blocks new payments. ') : null,
        `Waiting for ${advice.waiting_for}.`,
        advice.next_call === '' ? null : h('div', { class: 'small' }, 'The app should call ', code(advice.next_call)),
      ),
      h('td', { class: 'buttons' }, sandboxActions(appId, payment, advice)),
    ),
  )
  return [
    pageTitle(`Why is ${user.username} blocked?`, `In ${app.name}`, [`#/apps/${seg(appId)}`, app.name]),
    card(
      blocked ? 'Blocked' : 'Not blocked',
      action('Refresh', render, { kind: 'small' }),
      facts([
        ['User', h('a', { href: `#/users/${seg(user.user_id)}` }, user.username), 'blocking-username'],
        ['uid in this app', view.uid === null ? 'not signed in to this app' : code(view.uid), 'blocking-uid'],
        ['User id', code(user.user_id)],
      ]),
      h(
        'p',
        { 'data-testid': 'blocking-summary' },
        blocked
          ? `An open payment blocks ${user.username}’s ${[view.blocked.user_to_app ? 'user-to-app' : null, view.blocked.app_to_user ? 'app-to-user' : null].filter(Boolean).join(' and ')} payments until it is completed or cancelled.`
          : `Nothing blocks ${user.username}’s next payment.`,
      ),
      table(['Payment', 'State', 'Why', ''], rows, 'No open payments.'),
    ),
  ]
}
