// @ts-check
/**
 * The operator console's Support section (docs/operators.md, "Support lookup"): one search box
 * for what a person who writes in can tell (a payment's id, a transaction hash, their username,
 * the uid an app showed them, a wallet address, an app), answered with the payments, users and
 * apps it names across the platform; **Open** shows a payment's timeline, each step with the
 * app's request that made it. "I paid but got nothing" is two clicks: Search, then Open. Every
 * lookup is recorded in the audit log by the server; the page keeps nothing.
 */

import { h } from '../../../web/ui/dom.js'
import { formatLocalTime, formatPi, shortMiddle } from '../../../web/ui/format.js'
import { inlineForm } from '../../../web/ui/forms.js'
import { emptyRow, grid, pagedRows } from '../../../web/ui/tables.js'
import { account } from '../api.js'
import { receiptLink } from '../receipt.js'

/** @typedef {import('../../api/routes').Answer<'/operator/support/payments?', 'GET'>['payments'][number]} SupportPayment */
/** @typedef {import('../../api/routes').Answer<'/operator/support/users?', 'GET'>['users'][number]} SupportUser */
/** @typedef {import('../../api/routes').Answer<'/operator/support/apps?', 'GET'>['apps'][number]} SupportApp */
/** @typedef {import('../../api/routes').Answer<`/operator/support/payments/${string}`, 'GET'>} PaymentCase */
/** @typedef {PaymentCase['timeline'][number]} TimelineStep */
/**
 * @template T
 * @typedef {{ ok: true, value: T } | { ok: false, error: unknown }} Attempted
 */

/**
 * @typedef {object} SupportContext
 * @property {() => void} signedOut The session is over: back to sign-in.
 * @property {(id: string, title: string, ...children: import('../../ui/types').Child[]) => HTMLElement} section A titled section of the console.
 */

const STATES = {
  created: 'Created: the app has not approved it',
  approved: 'Approved: the user has not paid',
  transaction_linked: 'Paid: the transaction is not verified yet',
  verified: 'Paid: the app has not completed it',
  completed: 'Completed',
  cancelled: 'Cancelled',
}

/**
 * An error's message, for the alert line.
 * @param {unknown} error
 */
const messageOf = (error) => (error instanceof Error ? error.message : String(error))

/**
 * A query string of the filters that have a value.
 * @param {Record<string, string | undefined>} filters
 */
function queryOf(filters) {
  const params = new URLSearchParams()
  for (const [name, value] of Object.entries(filters)) if (value !== undefined && value !== '') params.set(name, value)
  return params.toString()
}

/**
 * The Support section: `{ element, shown }` for the console's sub-tabs.
 * @param {SupportContext} ctx
 */
export function supportSection(ctx) {
  const problem = h('p', { class: 'error', role: 'alert', 'data-testid': 'support-error', hidden: true })
  /**
   * Runs one call; a failure goes to the section's alert line, next to the search box.
   * @template T
   * @param {() => Promise<T>} work
   * @returns {Promise<Attempted<T>>}
   */
  const attempt = async (work) => {
    problem.hidden = true
    problem.textContent = ''
    try {
      return { ok: true, value: await work() }
    } catch (error) {
      if (error instanceof Error && 'code' in error && error.code === 'session_required') ctx.signedOut()
      else {
        problem.textContent = messageOf(error)
        problem.hidden = false
      }
      return { ok: false, error }
    }
  }

  /** What the lists show: the search text, and the app the payments are kept to. */
  let q = ''
  /** @type {string | undefined} */
  let appId
  const input = h('input', { id: 'support-q', type: 'search', maxlength: '200', autocomplete: 'off', spellcheck: 'false' })
  const scope = h('p', { class: 'muted', 'aria-live': 'polite', 'data-testid': 'support-scope' })
  const timeline = h('div', { 'data-testid': 'support-timeline', hidden: true })

  /** @param {string} label @param {() => void} onclick */
  const rowButton = (label, onclick) => h('button', { type: 'button', 'aria-label': label, onclick }, label.split(' ')[0])

  const payments = pagedRows({
    container: h('tbody'),
    key: 'payments',
    load: (cursor) => account(`/operator/support/payments?${queryOf({ q: q || undefined, app_id: appId, before: cursor })}`),
    /** @param {SupportPayment} payment */
    row: (payment) =>
      h(
        'tr',
        { 'data-payment-id': payment.payment_id },
        h('td', {}, formatLocalTime(payment.created_at)),
        h('td', {}, h('strong', {}, payment.username), h('span', { class: 'mono muted small block' }, shortMiddle(payment.uid, 10))),
        h('td', {}, payment.app_name),
        h('td', {}, formatPi(payment.amount), payment.direction === 'app_to_user' ? ' (to the user)' : ''),
        h('td', {}, STATES[payment.state]),
        h(
          'td',
          {},
          rowButton(`Open the payment ${payment.payment_id}`, () => openPayment(payment.payment_id)),
        ),
      ),
    empty: () => emptyRow(6, 'No payment matches.'),
    attempt,
  })
  const users = pagedRows({
    container: h('tbody'),
    key: 'users',
    load: (cursor) => account(`/operator/support/users?${queryOf({ q: q || undefined, after: cursor })}`),
    /** @param {SupportUser} user */
    row: (user) =>
      h(
        'tr',
        {},
        h('td', {}, h('strong', {}, user.username), user.suspended ? h('span', { class: 'tag bad' }, 'Suspended') : ''),
        h('td', {}, user.roles.join(', ') || '—'),
        h('td', { class: 'mono', title: user.wallet_address }, shortMiddle(user.wallet_address, 8)),
        h(
          'td',
          {},
          rowButton(`Payments of ${user.username}`, () => search(user.username, undefined)),
        ),
      ),
    empty: () => emptyRow(4, 'No user matches.'),
    attempt,
  })
  const apps = pagedRows({
    container: h('tbody'),
    key: 'apps',
    load: (cursor) => account(`/operator/support/apps?${queryOf({ q: q || undefined, before: cursor })}`),
    /** @param {SupportApp} app */
    row: (app) =>
      h(
        'tr',
        {},
        h('td', {}, h('strong', {}, app.name), app.suspended ? h('span', { class: 'tag bad' }, 'Suspended') : ''),
        h('td', {}, app.owner ?? '—'),
        h('td', { class: 'mono' }, app.app_id),
        h(
          'td',
          {},
          rowButton(`Payments of the app ${app.name}`, () => search('', app.app_id)),
        ),
      ),
    empty: () => emptyRow(4, 'No app matches.'),
    attempt,
  })

  /**
   * Reads the three lists again for `text`; with `app`, only the payments, kept to that app (the
   * users and apps shown stay: nobody else's data is read for it).
   * @param {string} text
   * @param {string | undefined} app
   */
  async function search(text, app) {
    q = text
    appId = app
    input.value = text
    timeline.hidden = true
    timeline.replaceChildren()
    scope.textContent = app === undefined ? '' : `Payments of the app ${app} only. Search again to look everywhere.`
    await payments.reload()
    if (app !== undefined) return
    await users.reload()
    await apps.reload()
  }

  /**
   * A request of the app's log as the step shows it: method, path, status, and its bodies on demand.
   * @param {TimelineStep['request']} request
   */
  function requestOf(request) {
    if (request === null) return h('span', { class: 'muted' }, 'No request in the app’s log')
    const bodies = h(
      'details',
      {},
      h('summary', {}, 'Request and answer'),
      h('pre', { class: 'mono' }, request.request_body ?? '(no body)'),
      h('pre', { class: 'mono' }, request.response_body ?? '(no body)'),
    )
    return h(
      'div',
      {},
      h('code', {}, `${request.method} ${request.path}`),
      h(
        'span',
        { class: request.status >= 400 ? 'tag bad' : 'tag ok' },
        `${request.status}${request.error_code === null ? '' : ` ${request.error_code}`}`,
      ),
      h('span', { class: 'muted' }, ` ${Math.round(request.latency_ms)} ms`),
      bodies,
    )
  }

  /** @param {string} paymentId */
  async function openPayment(paymentId) {
    const done = await attempt(() => account(`/operator/support/payments/${encodeURIComponent(paymentId)}`))
    if (!done.ok) return
    const found = done.value
    const title = h('h3', { id: 'support-payment-title', tabindex: '-1' }, `Payment ${found.payment.identifier}`)
    const facts = [
      ['State', STATES[found.state]],
      ['Waiting for', found.advice.waiting_for],
      ['Next call', found.advice.next_call],
      ['Amount', formatPi(found.payment.amount)],
      ['Memo', found.payment.memo],
      ['User', `${found.user.username} (uid ${found.user.uid})${found.user.suspended ? ', suspended' : ''}`],
      ['App', `${found.app.name} (${found.app.app_id})${found.app.suspended ? ', suspended' : ''}`],
      [
        'Transaction',
        found.ledger_transaction === null
          ? 'none yet'
          : h(
              'span',
              {},
              receiptLink(found.ledger_transaction.hash, found.ledger_transaction.hash),
              ` (ledger ${found.ledger_transaction.ledger})`,
            ),
      ],
    ]
    timeline.replaceChildren(
      title,
      h(
        'dl',
        { class: 'facts', 'aria-label': 'The payment' },
        facts.map(([term, value]) => [h('dt', {}, term), h('dd', {}, value)]),
      ),
      h('h4', {}, 'Timeline'),
      grid(
        'The payment’s timeline, oldest first',
        ['When', 'Step', 'By', 'Request'],
        h(
          'tbody',
          {},
          found.timeline.map((step) =>
            h(
              'tr',
              { 'data-step': step.kind },
              h('td', {}, formatLocalTime(step.at)),
              h('td', {}, step.kind, step.detail === null ? '' : h('span', { class: 'muted small block' }, step.detail)),
              h(
                'td',
                {},
                step.actor,
                step.actor_id === null ? '' : h('span', { class: 'mono muted small block' }, shortMiddle(step.actor_id, 10)),
              ),
              h('td', {}, requestOf(step.request)),
            ),
          ),
        ),
      ),
    )
    timeline.hidden = false
    // The person asked for it: the keyboard and the screen reader go there.
    title.focus()
  }

  const form = inlineForm({
    label: 'Payment id, transaction hash, username, uid, wallet address or app',
    input,
    action: 'Search',
    search: true,
    onSubmit: () => {
      search(input.value.trim(), undefined)
    },
  })

  return {
    element: ctx.section(
      'support',
      'Support',
      h('p', { class: 'muted' }, 'Each search and each payment opened is recorded in the audit log, with the people and apps it showed.'),
      form,
      problem,
      scope,
      timeline,
      h('h3', {}, 'Payments'),
      grid('Payments, newest first', ['When', 'User', 'App', 'Amount', 'State', ''], payments.container),
      payments.more,
      h('h3', {}, 'Users'),
      grid('Users', ['Username', 'Roles', 'Wallet', ''], users.container),
      users.more,
      h('h3', {}, 'Apps'),
      grid('Apps, newest first', ['Name', 'Owner', 'Id', ''], apps.container),
      apps.more,
    ),
    /** Nothing is read before a search: each lookup is an audited act. */
    shown: () => input.focus(),
  }
}
