// @ts-check
// An app at a glance: its payments by state (how many, how much), the error rate of its last hour
// of calls, how long each of its lists is, and the exports of its data.

import { h } from '../../../../web/ui/dom.js'
import { action } from '../../../../web/ui/forms.js'
import { table } from '../../../../web/ui/tables.js'
import { get, seg } from '../api.js'
import { exportButtons } from '../export.js'
import { card, facts, pageTitle } from '../parts.js'
import { render } from '../router.js'

/** @type {Record<import('../types').PaymentState, string>} */
const STATE_LABELS = {
  created: 'created',
  approved: 'approved',
  transaction_linked: 'paid, unverified',
  verified: 'paid',
  completed: 'completed',
  cancelled: 'cancelled',
}

/**
 * A share as a percentage a person reads: 0.2857 → 28.6 %.
 * @param {number | null} rate
 */
const percent = (rate) => (rate === null ? '—' : `${(Math.round(rate * 1000) / 10).toLocaleString('en')} %`)

/** @param {{ appId: string }} params */
export async function overviewPage({ appId }) {
  const base = /** @type {const} */ (`/sandbox/apps/${seg(appId)}`)
  const overview = await get(`${base}/overview`)
  const { payments, last_hour: hour, totals } = overview
  /**
   * @param {string} href
   * @param {string} text
   * @param {string} [testid]
   */
  const link = (href, text, testid) => h('a', { href, 'data-testid': testid }, text)
  const stateRows = payments.by_state.map((s) =>
    h(
      'tr',
      { 'data-testid': 'state-row', 'data-state': s.state },
      h('td', {}, STATE_LABELS[s.state] ?? s.state),
      h('td', { class: 'num' }, String(s.count)),
      h('td', { class: 'num' }, s.volume),
    ),
  )
  stateRows.push(
    h(
      'tr',
      { class: 'total-row', 'data-testid': 'state-total' },
      h('th', { scope: 'row' }, 'All'),
      h('td', { class: 'num' }, h('strong', {}, String(payments.count))),
      h('td', { class: 'num' }, h('strong', {}, payments.volume)),
    ),
  )
  return [
    pageTitle(`${overview.name}: overview`, 'Payments, errors and lists at a glance.', [`#/apps/${seg(appId)}`, overview.name]),
    card(
      'Payments by state',
      action('Refresh', render, { kind: 'small' }),
      table(['State', 'Payments', 'Volume (test Pi)'], stateRows, 'No payments.', { 'data-testid': 'payments-by-state' }),
    ),
    card(
      'Errors in the last hour',
      null,
      overview.request_log_enabled ? null : h('p', { class: 'muted' }, 'The request log is off in this process (PLINTH_REQUEST_LOG).'),
      facts([
        ['Calls', String(hour.requests), 'hour-requests'],
        ['4xx answers', String(hour.client_errors), 'hour-4xx'],
        ['5xx answers', String(hour.server_errors), 'hour-5xx'],
        ['Error rate', percent(hour.error_rate), 'error-rate'],
      ]),
      hour.client_errors + hour.server_errors > 0
        ? h('p', {}, link(`#/apps/${seg(appId)}/requests?status=4xx`, 'See the 4xx answers', 'see-errors'))
        : null,
    ),
    card(
      'Lists',
      null,
      facts([
        ['Payments', link(`#/apps/${seg(appId)}/payments`, String(totals.payments), 'total-payments')],
        ['Users signed in', h('span', { 'data-testid': 'total-users' }, String(totals.users))],
        ['Request log entries', link(`#/apps/${seg(appId)}/requests`, String(totals.requests), 'total-requests')],
        ['Rewarded ads', String(totals.ads)],
        ['Notifications sent', String(totals.notifications)],
        ['Active server API keys', link(`#/apps/${seg(appId)}`, String(totals.active_keys))],
      ]),
    ),
    card(
      'Export',
      null,
      h('p', { class: 'muted' }, 'CSV (every cell quoted, formulas defused) or JSON; the newest 10,000 rows.'),
      facts([
        ['Payments', exportButtons(`${base}/payments/export`, 'export-payments')],
        ['Request log', exportButtons(`${base}/requests/export`, 'export-requests')],
        ['All users', exportButtons('/sandbox/users/export', 'export-users')],
      ]),
    ),
  ]
}
