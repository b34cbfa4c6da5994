// @ts-check
// The apps list and one app's page: its facts and setup checklist, edit, wallet, keys, recent
// payments, ads and notifications.

import { byId, h } from '../../../../web/ui/dom.js'
import { formatUtcTime, shortId } from '../../../../web/ui/format.js'
import { action, form } from '../../../../web/ui/forms.js'
import { pagedTable, table } from '../../../../web/ui/tables.js'
import { toast } from '../../../../web/ui/toast.js'
import { del, get, patch, post, put, query, seg } from '../api.js'
import { appNameProblem, appUrlProblem, MAX_APP_NAME } from '../app-rules.js'
import { badge, card, code, external, facts, field, pageTitle, select } from '../parts.js'
import { currentRoute, render } from '../router.js'
import { accountLink, asNetwork, balancesLine, fundForm, reveal, revealPanel, stateBadge, walletBalances } from '../shared.js'

/**
 * @template {string} P
 * @template {import('../../../../web/api/routes').Method} M
 * @typedef {import('../../../../web/api/routes').Body<P, M>} Body
 */
/** @typedef {import('../types').App} App */
/** @typedef {Body<'/sandbox/apps/{app_id}/ads/script', 'PUT'>} AdScriptBody */

/** @type {AdScriptBody['result'][]} */
const AD_RESULTS = ['AD_REWARDED', 'AD_CLOSED', 'AD_DISPLAY_ERROR', 'AD_NETWORK_ERROR', 'AD_NOT_AVAILABLE', 'ADS_NOT_SUPPORTED']
/** @type {NonNullable<AdScriptBody['mediator_ack_status']>[]} */
const VERDICTS = ['granted', 'failed', 'pending']

/**
 * The name and URL typed, checked as the sandbox will.
 * @param {{ name: string, url?: string }} values
 */
function checkedApp(values) {
  const name = values.name
  const url = (values.url ?? '').trim()
  const problem = appNameProblem(name) ?? (url === '' ? null : appUrlProblem(url))
  if (problem !== null) throw new Error(problem)
  return { name, url }
}

export async function appsPage() {
  const create = form(
    { class: 'inline-form', 'data-testid': 'create-app' },
    [
      field('Name', h('input', { name: 'name', required: true, maxlength: MAX_APP_NAME, placeholder: 'My Shop' })),
      field('Network', select('network', ['Pi Testnet', 'Pi Network'], 'Pi Testnet')),
      field('Frontend URL (optional)', h('input', { name: 'url', type: 'url', maxlength: 500, placeholder: 'http://127.0.0.1:3000/' })),
      h('button', { type: 'submit', class: 'primary' }, 'Create app'),
    ],
    /** @param {{ name: string, url: string, network: NonNullable<Body<'/sandbox/apps', 'POST'>['network']> }} values */
    async (values) => {
      const { name, url } = checkedApp(values)
      /** @type {Body<'/sandbox/apps', 'POST'>} */
      const body = { name, network: values.network }
      if (url !== '') body.url = url
      const created = await post('/sandbox/apps', body)
      reveal.current = {
        owner: `apps/${seg(created.app_id)}`,
        title: `${created.name} is created`,
        items: [
          { label: `Server API key (${created.key_id})`, value: created.api_key, testid: 'revealed-api-key' },
          { label: `App wallet seed (${created.wallet.address})`, value: created.wallet.seed, testid: 'revealed-seed' },
        ],
      }
      location.hash = `#/apps/${seg(created.app_id)}`
    },
  )
  const list = pagedTable({
    headers: ['Name', 'App id', 'Network', 'Frontend URL', 'Created'],
    emptyText: 'No apps yet.',
    testid: 'apps',
    load: async (before) => {
      const { apps, next_cursor, total } = await get(`/sandbox/apps${query({ limit: 50, before })}`)
      const rows = apps.map((app) =>
        h(
          'tr',
          { 'data-testid': 'app-row' },
          h('td', { class: 'clip' }, h('a', { href: `#/apps/${seg(app.app_id)}` }, app.name)),
          h('td', {}, code(app.app_id)),
          h('td', {}, app.network),
          h('td', { class: 'clip' }, app.url ? external(app.url, app.url) : '—'),
          h('td', {}, formatUtcTime(app.created_at)),
        ),
      )
      return { rows, next: next_cursor, total, size: 50 }
    },
  })
  return [
    pageTitle('Apps', 'Apps on this platform, newest first. Create one to get its server API key and wallet.'),
    card('Create an app', null, create),
    card('Apps', action('Refresh', list.reload, { kind: 'small' }), list.el),
  ]
}

/** @type {[key: keyof import('../types').Checklist, label: string][]} */
const CHECKLIST = [
  ['key_made', 'Server API key made'],
  ['url_set', 'Frontend URL set'],
  ['first_me', 'First GET /v2/me'],
  ['first_approve', 'First approve'],
  ['first_complete', 'First complete'],
]

/** @param {{ appId: string }} params */
export async function appPage({ appId }) {
  const base = /** @type {const} */ (`/sandbox/apps/${seg(appId)}`)
  const [app, { payments }, { ads }, { notifications }, checklist, adScript] = await Promise.all([
    get(base),
    get(`${base}/payments?limit=10`),
    get(`${base}/ads?limit=100`),
    get(`${base}/notifications?limit=100`),
    get(`${base}/checklist`),
    get(`${base}/ads/script`),
  ])
  const balances = await walletBalances(app.wallet_address)
  return [
    pageTitle(app.name, null, ['#/apps', 'Apps']),
    revealPanel(currentRoute(), render),
    h(
      'nav',
      { class: 'subnav', 'aria-label': 'This app' },
      h('a', { href: `#/apps/${seg(appId)}/overview`, 'data-testid': 'link-overview' }, 'Overview'),
      h('a', { href: `#/apps/${seg(appId)}/payments`, 'data-testid': 'link-payments' }, 'Payments'),
      h('a', { href: `#/apps/${seg(appId)}/requests`, 'data-testid': 'link-requests' }, 'Request log'),
    ),
    card(
      'App',
      action('Refresh', render, { kind: 'small' }),
      facts([
        ['App id', code(app.app_id)],
        ['Network', app.network],
        ['Frontend URL', app.url ? external(app.url, app.url) : 'none: set one below to open the app in the sandbox browser'],
        // The app's own network's balance first: its payments move money there.
        ['Wallet', [accountLink(app.wallet_address), balancesLine(balances, asNetwork(app.network))], 'app-balance'],
        ['Created', formatUtcTime(app.created_at)],
      ]),
      app.url ? h('p', {}, h('a', { href: `${location.origin}/sandbox/?app=${seg(app.app_id)}` }, 'Open in the sandbox browser')) : null,
    ),
    checklistCard(checklist),
    editCard(app),
    card(
      'Fund the app wallet',
      null,
      h('p', { class: 'muted' }, `App-to-user payments are paid from this wallet, on ${app.network}: the funding goes there.`),
      fundForm(app.wallet_address, render, { testid: 'fund-app', label: 'Fund wallet', network: asNetwork(app.network) }),
    ),
    keysCard(app),
    recentPayments(appId, payments),
    adsCard(app, ads, adScript),
    notificationsCard(notifications),
  ]
}

/** @param {import('../types').Checklist} checklist */
function checklistCard(checklist) {
  const steps = CHECKLIST.map(([key, label]) => {
    const step = checklist[key]
    return h(
      'li',
      { class: step.done ? 'done' : 'todo', 'data-testid': `check-${key}` },
      h('span', { class: 'tick', 'aria-hidden': 'true' }, step.done ? '✓' : '○'),
      ` ${label} `,
      h('span', { class: 'muted small' }, step.done ? formatUtcTime(step.at) : 'not yet'),
    )
  })
  const done = CHECKLIST.filter(([key]) => checklist[key].done).length
  return card(`Setup checklist (${done} of ${CHECKLIST.length})`, null, h('ul', { class: 'checklist' }, steps))
}

/** @param {App} app */
function editCard(app) {
  const edit = form(
    { class: 'inline-form', 'data-testid': 'edit-app' },
    [
      field('Name', h('input', { name: 'name', required: true, maxlength: MAX_APP_NAME, value: app.name })),
      field(
        'Frontend URL',
        h('input', {
          name: 'url',
          type: 'url',
          maxlength: 500,
          value: app.url ?? '',
          placeholder: 'http://127.0.0.1:3000/',
          class: 'wide',
        }),
      ),
      h('button', { type: 'submit', class: 'primary' }, 'Save'),
    ],
    /** @param {{ name: string, url: string }} values */
    async (values) => {
      const { name, url } = checkedApp(values)
      /** @type {Body<'/sandbox/apps/{app_id}', 'PATCH'>} */
      const body = {}
      if (name !== app.name) body.name = name
      if (url !== (app.url ?? '')) body.url = url === '' ? null : url
      if (Object.keys(body).length === 0) return toast('Nothing changed')
      await patch(`/sandbox/apps/${seg(app.app_id)}`, body)
      toast('App saved')
      await render()
    },
  )
  return card('Edit the app', null, edit)
}

/** @param {App} app */
function keysCard(app) {
  const rows = app.keys.map((key) =>
    h(
      'tr',
      { 'data-testid': 'key-row', 'data-key-id': key.key_id },
      h('td', {}, code(key.key_id)),
      h('td', {}, code(`${key.prefix}…`)),
      h('td', {}, formatUtcTime(key.created_at)),
      h('td', {}, key.revoked_at === null ? badge('active', 'ok') : badge(`revoked ${formatUtcTime(key.revoked_at)}`, 'off')),
      h(
        'td',
        {},
        key.revoked_at === null
          ? action(
              'Revoke',
              async () => {
                await del(`/sandbox/apps/${seg(app.app_id)}/keys/${seg(key.key_id)}`)
                toast(`Key ${key.key_id} revoked`)
                await render()
              },
              { kind: 'small danger', confirm: 'Click again to revoke', testid: 'revoke-key' },
            )
          : null,
      ),
    ),
  )
  const rotate = action(
    'Issue a new key',
    async () => {
      const created = await post(`/sandbox/apps/${seg(app.app_id)}/keys`)
      reveal.current = {
        owner: currentRoute(),
        title: 'New server API key',
        items: [{ label: `Server API key (${created.key_id})`, value: created.api_key, testid: 'revealed-api-key' }],
      }
      toast('New key issued: switch your backend to it, then revoke the old one')
      await render()
      byId('main').focus()
    },
    { kind: 'small', testid: 'rotate-key' },
  )
  return card(
    'Server API keys',
    rotate,
    h(
      'p',
      { class: 'muted' },
      'Only the first characters of each key are kept in clear. Rotate: issue a new key, deploy it, revoke the old one.',
    ),
    table(['Key id', 'Starts with', 'Created', 'Status', ''], rows, 'No keys.'),
  )
}

/**
 * One payment as a table row (the app page and the payments search share it).
 * @param {string} appId
 * @param {import('../types').PaymentItem} payment
 */
export function paymentRow(appId, payment) {
  const tx = payment.transaction
  return h(
    'tr',
    { 'data-testid': 'payment-row' },
    h(
      'td',
      { class: 'clip' },
      h(
        'a',
        { href: `#/apps/${seg(appId)}/payments/${seg(payment.identifier)}` },
        code(shortId(payment.identifier, 12), payment.identifier),
      ),
      h('div', { class: 'muted small memo', title: payment.memo }, payment.memo),
    ),
    h('td', {}, stateBadge(payment)),
    h('td', { class: 'num' }, String(payment.amount)),
    h('td', {}, payment.direction === 'user_to_app' ? 'U2A' : 'A2U'),
    h(
      'td',
      { class: 'clip' },
      payment.username ?? code(shortId(payment.user_id), payment.user_id),
      h('div', { class: 'muted small' }, `uid ${shortId(payment.user_uid, 8)}`),
    ),
    h('td', {}, formatUtcTime(payment.created_at)),
    h(
      'td',
      {},
      tx === null
        ? '—'
        : [
            h('a', { href: tx._link, target: '_blank', rel: 'noopener noreferrer', title: tx.txid }, shortId(tx.txid, 12)),
            h('div', { class: 'muted small' }, tx.verified ? 'verified' : 'not verified'),
          ],
    ),
  )
}

// The state comes second: on a phone it shows without scrolling the table.
export const PAYMENT_HEADERS = ['Payment', 'State', 'Amount', 'Type', 'User', 'Created', 'Ledger transaction']

/**
 * @param {string} appId
 * @param {import('../types').PaymentItem[]} payments
 */
function recentPayments(appId, payments) {
  return card(
    'Latest payments',
    h('a', { href: `#/apps/${seg(appId)}/payments`, class: 'small' }, 'Search all payments →'),
    table(
      PAYMENT_HEADERS,
      payments.map((payment) => paymentRow(appId, payment)),
      'No payments yet.',
      { class: 'payments' },
    ),
  )
}

/**
 * @param {App} app
 * @param {import('../types').Ad[]} ads
 * @param {import('../types').AdScript} active
 */
function adsCard(app, ads, active) {
  /**
   * A button that settles `ad` as `status`.
   * @param {import('../types').Ad} ad
   * @param {Body<'/sandbox/ads/{adId}/status', 'POST'>['mediator_ack_status']} status
   * @param {string} label
   * @param {string} kind
   */
  const move = (ad, status, label, kind) =>
    action(
      label,
      async () => {
        await post(`/sandbox/ads/${seg(ad.identifier)}/status`, { mediator_ack_status: status })
        toast(`Ad ${shortId(ad.identifier)} is ${status}`)
        await render()
      },
      { kind: `small ${kind}`, testid: `ad-${status}` },
    )
  const rows = ads.map((ad) => {
    const status = ad.mediator_ack_status
    const label =
      status ?? (ad.settles_at === null ? 'pending (held)' : `pending, settles ${formatUtcTime(ad.settles_at).replace(/^\S+ /, '')}`)
    const kind = status === 'granted' ? 'ok' : status === null ? 'info' : 'off'
    return h(
      'tr',
      { 'data-testid': 'ad-row' },
      h('td', {}, code(shortId(ad.identifier, 12), ad.identifier)),
      h('td', {}, code(shortId(ad.user_id), ad.user_id)),
      h('td', {}, badge(label, kind)),
      h('td', {}, formatUtcTime(ad.mediator_granted_at)),
      h('td', {}, formatUtcTime(ad.mediator_revoked_at)),
      h('td', {}, formatUtcTime(ad.created_at)),
      h(
        'td',
        { class: 'buttons' },
        status === null ? [move(ad, 'granted', 'Grant', ''), move(ad, 'failed', 'Fail', 'danger')] : null,
        status === 'granted' ? move(ad, 'revoked', 'Revoke', 'danger') : null,
      ),
    )
  })
  const script = form(
    { class: 'inline-form', 'data-testid': 'ad-script' },
    [
      field('Next ads yield', select('result', AD_RESULTS, 'AD_REWARDED')),
      field('Watched rewarded ads settle', select('mediator_ack_status', VERDICTS, 'granted')),
      field('For how many ads', h('input', { name: 'count', type: 'number', min: 1, max: 10000, placeholder: 'until changed' })),
      field('Only for user id (optional)', h('input', { name: 'user_id', maxlength: 64, placeholder: 'every user' })),
      h('button', { type: 'submit', class: 'primary', value: 'set' }, 'Set script'),
    ],
    /** @param {{ result: AdScriptBody['result'], mediator_ack_status: NonNullable<AdScriptBody['mediator_ack_status']>, count: string, user_id: string }} values */
    async (values) => {
      const path = scriptPath(app.app_id, values.user_id)
      /** @type {AdScriptBody} */
      const body = { result: values.result, mediator_ack_status: values.mediator_ack_status }
      if (values.count !== '') body.count = Number(values.count)
      const applied = await put(path, body)
      const span = applied.remaining === null ? 'until changed' : `${applied.remaining} ads`
      toast(`Ad script set: ${applied.result}, settles ${applied.mediator_ack_status}, ${span}`)
      await render()
    },
  )
  const clear = action(
    'Back to default',
    async () => {
      const userId = /** @type {HTMLInputElement} */ (script.elements.namedItem('user_id')).value
      await del(scriptPath(app.app_id, userId))
      toast('Ad script cleared: ads are available, the user decides, the mediator grants')
      await render()
    },
    { kind: 'small' },
  )
  const current = active.script
  return card(
    `Rewarded ads (${ads.length})`,
    null,
    table(['Ad id', 'User', 'Mediator status', 'Granted', 'Revoked', 'Shown', ''], rows, 'No ads shown yet.'),
    h('h3', {}, 'Ad script'),
    h(
      'p',
      { 'data-testid': 'active-ad-script' },
      current === null
        ? 'Active script: none (ads are available, the user decides, the mediator grants).'
        : `Active script: ${current.result}, settles ${current.mediator_ack_status}, ${current.remaining === null ? 'until changed' : `${current.remaining} ads left`}.`,
    ),
    h('p', { class: 'muted' }, 'Choose what the next ads of this app (or of one user in it) yield, to test every branch.'),
    script,
    h('div', { class: 'actions' }, clear),
  )
}

/**
 * The ad script of the app, or of one user in it (`userId` not blank).
 * @param {string} appId
 * @param {string} userId
 * @returns {`/sandbox/apps/${string}/ads/script` | `/sandbox/apps/${string}/users/${string}/ads/script`}
 */
function scriptPath(appId, userId) {
  const user = (userId ?? '').trim()
  return user === '' ? `/sandbox/apps/${seg(appId)}/ads/script` : `/sandbox/apps/${seg(appId)}/users/${seg(user)}/ads/script`
}

/** @param {import('../types').SentNotification[]} notifications */
function notificationsCard(notifications) {
  const rows = notifications.map((n) =>
    h(
      'tr',
      { 'data-testid': 'notification-row' },
      h('td', { class: 'clip' }, h('strong', {}, n.title), h('div', { class: 'muted small' }, n.body)),
      h('td', {}, code(shortId(n.user_id), n.user_id)),
      h('td', {}, code(n.subroute)),
      h('td', {}, formatUtcTime(n.created_at)),
      h('td', {}, n.dismissed_at ? badge('dismissed', 'off') : n.seen_at ? badge('seen', 'ok') : badge('unseen', 'info')),
    ),
  )
  return card(
    `Notifications sent (${notifications.length})`,
    null,
    table(['Notification', 'To user', 'Subroute', 'Sent', 'State'], rows, 'None sent yet.'),
  )
}
