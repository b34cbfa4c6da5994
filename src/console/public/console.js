// Plinth developer console. Plain DOM: every piece of data reaches the page through
// textContent or a checked attribute, never through HTML parsing. It calls the sandbox API only
// (and reads ledger accounts from /ledger for balances).

const TOKEN_KEY = 'plinth.console.adminToken'
const AD_RESULTS = ['AD_REWARDED', 'AD_CLOSED', 'AD_DISPLAY_ERROR', 'AD_NETWORK_ERROR', 'AD_NOT_AVAILABLE', 'ADS_NOT_SUPPORTED']
const VERDICTS = ['granted', 'failed', 'pending']
const FLAGS = [
  ['developer_approved', 'approved'],
  ['transaction_verified', 'verified'],
  ['developer_completed', 'completed'],
  ['cancelled', 'cancelled'],
  ['user_cancelled', 'user cancelled'],
]
const ADVANCE_PRESETS = [
  ['+1 min', 60],
  ['+1 hour', 3600],
  ['+1 day', 86_400],
  ['+30 days', 30 * 86_400],
]
const UNITS = [
  ['seconds', 1],
  ['minutes', 60],
  ['hours', 3600],
  ['days', 86_400],
]

const main = document.getElementById('main')
const toasts = document.getElementById('toasts')

// ---------------------------------------------------------------------------------------------
// The sandbox API

class ApiFailure extends Error {
  constructor(status, body) {
    const code = body && typeof body.error === 'string' ? body.error : undefined
    const text = body && typeof body.error_message === 'string' ? body.error_message : undefined
    super(text ?? code ?? `HTTP ${status}`)
    this.status = status
    this.code = code
  }
}

let adminToken = sessionStorage.getItem(TOKEN_KEY) ?? ''

async function api(method, path, body) {
  const headers = { accept: 'application/json' }
  if (body !== undefined) headers['content-type'] = 'application/json'
  if (adminToken !== '') headers['x-admin-token'] = adminToken
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  const data = await response.json().catch(() => null)
  if (!response.ok) {
    const failure = new ApiFailure(response.status, data)
    if (failure.code === 'invalid_admin_token') askForToken(adminToken === '' ? '' : 'That token was refused.')
    throw failure
  }
  return data
}

const get = (path) => api('GET', path)
const post = (path, body) => api('POST', path, body ?? {})
const put = (path, body) => api('PUT', path, body)
const del = (path) => api('DELETE', path)
const seg = (value) => encodeURIComponent(value)

// ---------------------------------------------------------------------------------------------
// DOM helpers

/** h('td', {class: 'x', title: data}, child, …): strings become text nodes, never markup. */
function h(tag, props, ...children) {
  const el = document.createElement(tag)
  for (const [name, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) continue
    if (name === 'on') {
      for (const [event, handler] of Object.entries(value)) el.addEventListener(event, handler)
    } else if (name === 'href') {
      const href = safeHref(value)
      if (href !== null) el.setAttribute('href', href)
    } else if (name.startsWith('on')) {
      throw new Error(`h(): use the on property, not ${name}`)
    } else {
      el.setAttribute(name, value === true ? '' : String(value))
    }
  }
  append(el, children)
  return el
}

function append(el, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue
    if (Array.isArray(child)) append(el, child)
    else el.append(child instanceof Node ? child : document.createTextNode(String(child)))
  }
}

/** Only http(s) and same-page links: data never becomes a javascript: URL. */
function safeHref(value) {
  const text = String(value)
  if (text.startsWith('#')) return text
  try {
    const url = new URL(text, location.href)
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null
  } catch {
    return null
  }
}

function toast(message, kind = 'info') {
  const el = h('div', { class: `toast ${kind}` }, message)
  toasts.append(el)
  setTimeout(() => el.remove(), kind === 'error' ? 8000 : 4000)
}

function formatTime(iso) {
  if (iso === null || iso === undefined) return '—'
  const date = new Date(iso)
  return Number.isNaN(date.getTime())
    ? String(iso)
    : date
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d{3}Z$/, ' UTC')
}

function formatDuration(seconds) {
  if (seconds === 0) return 'real time'
  let rest = Math.round(Math.abs(seconds))
  const parts = []
  for (const [unit, size] of [
    ['d', 86_400],
    ['h', 3600],
    ['m', 60],
    ['s', 1],
  ]) {
    const n = Math.floor(rest / size)
    rest -= n * size
    if (n > 0) parts.push(`${n}${unit}`)
  }
  return `${seconds < 0 ? '−' : '+'}${parts.join(' ') || '0s'} ahead`
}

const short = (id, keep = 10) => (typeof id === 'string' && id.length > keep + 1 ? `${id.slice(0, keep)}…` : id)
const code = (text, title) => h('code', { title: title ?? text }, text)
const badge = (text, kind) => h('span', { class: `badge ${kind ?? ''}` }, text)
const empty = (columns, text) => h('tr', {}, h('td', { colspan: columns, class: 'empty' }, text))

function card(title, actions, ...body) {
  return h(
    'section',
    { class: 'card' },
    h('div', { class: 'card-head' }, h('h2', {}, title), h('div', { class: 'card-actions' }, actions)),
    body,
  )
}

function table(headers, rows, emptyText) {
  return h(
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
          headers.map((text) => h('th', {}, text)),
        ),
      ),
      h('tbody', {}, rows.length > 0 ? rows : empty(headers.length, emptyText)),
    ),
  )
}

function field(label, input, hint) {
  return h('label', { class: 'field' }, h('span', {}, label), input, hint ? h('small', {}, hint) : null)
}

function select(name, options, value) {
  return h(
    'select',
    { name },
    options.map((option) => {
      const [text, optionValue] = Array.isArray(option) ? option : [option, option]
      return h('option', { value: optionValue, selected: String(optionValue) === String(value) }, text)
    }),
  )
}

/** A form whose submit handler gets its values; the button is disabled while it runs. */
function form(props, children, onSubmit) {
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
function action(label, run, { kind = '', confirm, testid } = {}) {
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
    try {
      await run()
    } catch (error) {
      report(error)
    } finally {
      button.disabled = false
    }
  })
  return button
}

function report(error) {
  if (error instanceof ApiFailure && error.code === 'invalid_admin_token') return
  toast(error instanceof Error ? error.message : String(error), 'error')
}

async function copy(value) {
  try {
    await navigator.clipboard.writeText(value)
    toast('Copied')
  } catch {
    toast('Copy failed: select the text and copy it by hand', 'error')
  }
}

// ---------------------------------------------------------------------------------------------
// Admin token

const tokenDialog = document.getElementById('token-dialog')
const tokenForm = document.getElementById('token-form')
const tokenInput = document.getElementById('token-input')
const tokenError = document.getElementById('token-error')

function askForToken(message) {
  tokenError.hidden = message === ''
  tokenError.textContent = message
  if (!tokenDialog.open) tokenDialog.showModal()
}

tokenForm.addEventListener('submit', (event) => {
  event.preventDefault()
  adminToken = tokenInput.value.trim()
  sessionStorage.setItem(TOKEN_KEY, adminToken)
  tokenInput.value = ''
  tokenDialog.close()
  refreshClock()
  render()
})

// ---------------------------------------------------------------------------------------------
// Secrets shown once: kept in memory until dismissed or the page is left.

let revealed = null

function revealPanel() {
  if (revealed === null || revealed.owner !== currentRoute()) return null
  const secret = revealed
  return h(
    'section',
    { class: 'card reveal', 'data-testid': 'reveal' },
    h('div', { class: 'card-head' }, h('h2', {}, secret.title)),
    h('p', { class: 'warning' }, 'Shown once. Plinth keeps only a hash of keys and the public half of wallets: save these now.'),
    h(
      'dl',
      { class: 'secrets' },
      secret.items.map(({ label, value, testid }) => [
        h('dt', {}, label),
        h(
          'dd',
          {},
          h('code', { class: 'secret', 'data-testid': testid }, value),
          action('Copy', () => copy(value), { kind: 'small' }),
        ),
      ]),
    ),
    h(
      'div',
      { class: 'actions' },
      action(
        'I have saved them',
        () => {
          revealed = null
          render()
        },
        { kind: 'primary', testid: 'dismiss-reveal' },
      ),
    ),
  )
}

// ---------------------------------------------------------------------------------------------
// Platform clock, in the top bar on every page

let clockBase = null
const clockNow = document.getElementById('clock-now')
const clockOffset = document.getElementById('clock-offset')

async function refreshClock() {
  try {
    setClock(await get('/sandbox/clock'))
  } catch {
    clockNow.textContent = 'unavailable'
  }
}

function setClock(clock) {
  clockBase = { ms: clock.timestamp * 1000, at: performance.now(), offset: clock.offset_seconds }
  tickClock()
}

function tickClock() {
  if (clockBase === null) return
  const now = new Date(clockBase.ms + (performance.now() - clockBase.at))
  clockNow.textContent = formatTime(now.toISOString())
  clockOffset.textContent = formatDuration(clockBase.offset)
}

async function resetClock() {
  const clock = await post('/sandbox/clock/reset', {})
  setClock(clock)
  toast('Platform clock back on real time')
  return clock
}

async function advanceClock(seconds) {
  const clock = await post('/sandbox/clock', { advance_seconds: seconds })
  setClock(clock)
  toast(`Platform clock advanced by ${formatDuration(seconds).replace(' ahead', '')}`)
  return clock
}

// ---------------------------------------------------------------------------------------------
// Pages

function currentRoute() {
  return location.hash.replace(/^#\/?/, '') || 'apps'
}

let renderId = 0

async function render() {
  const route = currentRoute()
  const [section, rawId] = route.split('/')
  const id = rawId === undefined ? undefined : decodeURIComponent(rawId)
  if (revealed !== null && revealed.owner !== route) revealed = null
  for (const link of document.querySelectorAll('.sidenav a[data-section]')) {
    link.classList.toggle('active', link.dataset.section === section)
  }
  const mine = ++renderId
  const pages = { apps: id === undefined ? appsPage : appPage, users: id === undefined ? usersPage : userPage, platform: platformPage }
  const page = pages[section] ?? notFoundPage
  try {
    const content = await page(id)
    if (mine !== renderId) return
    main.replaceChildren(...content.flat().filter(Boolean))
  } catch (error) {
    if (mine !== renderId) return
    const message =
      error instanceof ApiFailure && error.code === 'invalid_admin_token' ? 'The sandbox API needs the admin token.' : error.message
    main.replaceChildren(h('section', { class: 'card' }, h('h2', {}, 'Could not load this page'), h('p', { class: 'error' }, message)))
  }
}

function notFoundPage() {
  return [h('section', { class: 'card' }, h('h2', {}, 'Nothing here'), h('p', {}, h('a', { href: '#/apps' }, 'Back to the apps')))]
}

function pageTitle(title, subtitle, back) {
  return h(
    'div',
    { class: 'page-title' },
    back ? h('a', { href: back[0], class: 'back' }, `← ${back[1]}`) : null,
    h('h1', {}, title),
    subtitle ? h('p', { class: 'muted' }, subtitle) : null,
  )
}

// Apps ----------------------------------------------------------------------------------------

async function appsPage() {
  const { apps } = await get('/sandbox/apps?limit=200')
  const create = form(
    { class: 'inline-form', 'data-testid': 'create-app' },
    [
      field('Name', h('input', { name: 'name', required: true, maxlength: 100, placeholder: 'My Shop' })),
      field('Network', select('network', ['Pi Testnet', 'Pi Network'], 'Pi Testnet')),
      field('Frontend URL (optional)', h('input', { name: 'url', type: 'url', maxlength: 500, placeholder: 'http://127.0.0.1:3000/' })),
      h('button', { type: 'submit', class: 'primary' }, 'Create app'),
    ],
    async (values) => {
      const body = { name: values.name.trim(), network: values.network }
      if (values.url.trim() !== '') body.url = values.url.trim()
      const created = await post('/sandbox/apps', body)
      revealed = {
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
  const rows = apps.map((app) =>
    h(
      'tr',
      { 'data-testid': 'app-row' },
      h('td', {}, h('a', { href: `#/apps/${seg(app.app_id)}` }, app.name)),
      h('td', {}, code(app.app_id)),
      h('td', {}, app.network),
      h('td', {}, app.url ? h('a', { href: app.url, target: '_blank', rel: 'noopener noreferrer' }, app.url) : '—'),
      h('td', {}, formatTime(app.created_at)),
    ),
  )
  return [
    pageTitle('Apps', 'Apps on this platform, newest first. Create one to get its server API key and wallet.'),
    card('Create an app', null, create),
    card(
      `Apps (${apps.length})`,
      action('Refresh', render, { kind: 'small' }),
      table(['Name', 'App id', 'Network', 'Frontend URL', 'Created'], rows, 'No apps yet.'),
    ),
  ]
}

async function appPage(appId) {
  const base = `/sandbox/apps/${seg(appId)}`
  const [app, { payments }, { ads }, { notifications }] = await Promise.all([
    get(base),
    get(`${base}/payments?limit=100`),
    get(`${base}/ads?limit=100`),
    get(`${base}/notifications?limit=100`),
  ])
  const balance = await walletBalance(app.wallet_address)
  return [
    pageTitle(app.name, null, ['#/apps', 'Apps']),
    revealPanel(),
    card(
      'App',
      action('Refresh', render, { kind: 'small' }),
      h(
        'dl',
        { class: 'facts' },
        h('dt', {}, 'App id'),
        h('dd', {}, code(app.app_id)),
        h('dt', {}, 'Network'),
        h('dd', {}, app.network),
        h('dt', {}, 'Frontend URL'),
        h('dd', {}, app.url ? h('a', { href: app.url, target: '_blank', rel: 'noopener noreferrer' }, app.url) : '—'),
        h('dt', {}, 'Wallet'),
        h('dd', {}, accountLink(app.wallet_address), balance === null ? null : h('span', { class: 'muted' }, ` ${balance} test Pi`)),
        h('dt', {}, 'Created'),
        h('dd', {}, formatTime(app.created_at)),
      ),
    ),
    keysCard(app),
    paymentsCard(payments),
    adsCard(app, ads),
    notificationsCard(notifications),
  ]
}

function keysCard(app) {
  const rows = app.keys.map((key) =>
    h(
      'tr',
      { 'data-testid': 'key-row', 'data-key-id': key.key_id },
      h('td', {}, code(key.key_id)),
      h('td', {}, code(`${key.prefix}…`)),
      h('td', {}, formatTime(key.created_at)),
      h('td', {}, key.revoked_at === null ? badge('active', 'ok') : badge(`revoked ${formatTime(key.revoked_at)}`, 'off')),
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
      revealed = {
        owner: currentRoute(),
        title: 'New server API key',
        items: [{ label: `Server API key (${created.key_id})`, value: created.api_key, testid: 'revealed-api-key' }],
      }
      toast('New key issued: switch your backend to it, then revoke the old one')
      await render()
      main.focus()
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

function paymentState(payment) {
  const s = payment.status
  if (s.developer_completed) return ['completed', 'ok']
  if (s.cancelled) return ['cancelled', 'off']
  if (s.user_cancelled) return ['user cancelled', 'off']
  if (payment.transaction !== null) return [payment.transaction.verified ? 'paid' : 'paid, unverified', 'warn']
  if (s.developer_approved) return ['approved', 'info']
  return ['created', 'info']
}

function paymentsCard(payments) {
  const rows = payments.map((payment) => {
    const [state, kind] = paymentState(payment)
    const tx = payment.transaction
    return h(
      'tr',
      { 'data-testid': 'payment-row' },
      h('td', {}, code(short(payment.identifier, 12), payment.identifier), h('div', { class: 'muted small' }, payment.memo)),
      h('td', {}, payment.direction === 'user_to_app' ? 'U2A' : 'A2U'),
      h('td', { class: 'num' }, String(payment.amount)),
      h('td', {}, code(short(payment.user_id), payment.user_id), h('div', { class: 'muted small' }, `uid ${short(payment.user_uid, 8)}`)),
      h('td', {}, formatTime(payment.created_at)),
      h(
        'td',
        {},
        badge(state, kind),
        h(
          'div',
          { class: 'flags' },
          FLAGS.map(([flag, label]) => h('span', { class: payment.status[flag] ? 'flag on' : 'flag', title: flag }, label)),
        ),
      ),
      h(
        'td',
        {},
        tx === null
          ? '—'
          : [
              h('a', { href: tx._link, target: '_blank', rel: 'noopener noreferrer', title: tx.txid }, short(tx.txid, 12)),
              h('div', { class: 'muted small' }, tx.verified ? 'verified' : 'not verified'),
            ],
      ),
    )
  })
  return card(
    `Payments (${payments.length})`,
    null,
    table(['Payment', 'Type', 'Amount', 'User', 'Created', 'State', 'Ledger transaction'], rows, 'No payments yet.'),
  )
}

function adsCard(app, ads) {
  const move = (ad, status, label, kind) =>
    action(
      label,
      async () => {
        await post(`/sandbox/ads/${seg(ad.identifier)}/status`, { mediator_ack_status: status })
        toast(`Ad ${short(ad.identifier)} is ${status}`)
        await render()
      },
      { kind: `small ${kind}`, testid: `ad-${status}` },
    )
  const rows = ads.map((ad) => {
    const status = ad.mediator_ack_status
    const label =
      status ?? (ad.settles_at === null ? 'pending (held)' : `pending, settles ${formatTime(ad.settles_at).replace(/^\S+ /, '')}`)
    const kind = status === 'granted' ? 'ok' : status === null ? 'info' : 'off'
    return h(
      'tr',
      { 'data-testid': 'ad-row' },
      h('td', {}, code(short(ad.identifier, 12), ad.identifier)),
      h('td', {}, code(short(ad.user_id), ad.user_id)),
      h('td', {}, badge(label, kind)),
      h('td', {}, formatTime(ad.mediator_granted_at)),
      h('td', {}, formatTime(ad.mediator_revoked_at)),
      h('td', {}, formatTime(ad.created_at)),
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
    async (values) => {
      const path = scriptPath(app.app_id, values.user_id)
      const body = { result: values.result, mediator_ack_status: values.mediator_ack_status }
      if (values.count !== '') body.count = Number(values.count)
      const applied = await put(path, body)
      const span = applied.remaining === null ? 'until changed' : `${applied.remaining} ads`
      toast(`Ad script set: ${applied.result}, settles ${applied.mediator_ack_status}, ${span}`)
    },
  )
  const clear = action(
    'Back to default',
    async () => {
      const userId = script.querySelector('input[name="user_id"]').value
      await del(scriptPath(app.app_id, userId))
      toast('Ad script cleared: ads are available, the user decides, the mediator grants')
    },
    { kind: 'small' },
  )
  return card(
    `Rewarded ads (${ads.length})`,
    null,
    table(['Ad id', 'User', 'Mediator status', 'Granted', 'Revoked', 'Shown', ''], rows, 'No ads shown yet.'),
    h('h3', {}, 'Ad script'),
    h('p', { class: 'muted' }, 'Choose what the next ads of this app (or of one user in it) yield, to test every branch.'),
    script,
    h('div', { class: 'actions' }, clear),
  )
}

function scriptPath(appId, userId) {
  const user = (userId ?? '').trim()
  return user === '' ? `/sandbox/apps/${seg(appId)}/ads/script` : `/sandbox/apps/${seg(appId)}/users/${seg(user)}/ads/script`
}

function notificationsCard(notifications) {
  const rows = notifications.map((n) =>
    h(
      'tr',
      { 'data-testid': 'notification-row' },
      h('td', {}, h('strong', {}, n.title), h('div', { class: 'muted small' }, n.body)),
      h('td', {}, code(short(n.user_id), n.user_id)),
      h('td', {}, code(n.subroute)),
      h('td', {}, formatTime(n.created_at)),
      h('td', {}, n.dismissed_at ? badge('dismissed', 'off') : n.seen_at ? badge('seen', 'ok') : badge('unseen', 'info')),
    ),
  )
  return card(
    `Notifications sent (${notifications.length})`,
    null,
    table(['Notification', 'To user', 'Subroute', 'Sent', 'State'], rows, 'None sent yet.'),
  )
}

// Users ---------------------------------------------------------------------------------------

async function usersPage() {
  const { users } = await get('/sandbox/users?limit=200')
  const create = form(
    { class: 'inline-form', 'data-testid': 'create-user' },
    [
      field(
        'Username (3 to 32 letters, digits, _)',
        h('input', { name: 'username', required: true, minlength: 3, maxlength: 32, pattern: '[A-Za-z0-9_]+', placeholder: 'alice_01' }),
      ),
      h('button', { type: 'submit', class: 'primary' }, 'Create user'),
    ],
    async (values) => {
      const user = await post('/sandbox/users', { username: values.username.trim() })
      revealed = {
        owner: `users/${seg(user.user_id)}`,
        title: `${user.username} is created`,
        items: [{ label: `Wallet seed (${user.wallet.address})`, value: user.wallet.seed, testid: 'revealed-seed' }],
      }
      location.hash = `#/users/${seg(user.user_id)}`
    },
  )
  const rows = users.map((user) =>
    h(
      'tr',
      { 'data-testid': 'user-row' },
      h('td', {}, h('a', { href: `#/users/${seg(user.user_id)}` }, user.username)),
      h('td', {}, code(user.user_id)),
      h('td', {}, accountLink(user.wallet_address)),
      h('td', {}, formatTime(user.created_at)),
    ),
  )
  return [
    pageTitle('Users', 'Test users of the platform. The sandbox browser signs in as one of them.'),
    card('Create a user', null, create),
    card(
      `Users (${users.length})`,
      action('Refresh', render, { kind: 'small' }),
      table(['Username', 'User id', 'Wallet', 'Created'], rows, 'No users yet.'),
    ),
  ]
}

async function userPage(userId) {
  const [user, { notifications }] = await Promise.all([
    get(`/sandbox/users/${seg(userId)}`),
    get(`/sandbox/users/${seg(userId)}/notifications?limit=50`),
  ])
  const balance = await walletBalance(user.wallet_address)
  const apps = user.apps.map((app) =>
    h(
      'tr',
      {},
      h('td', {}, h('a', { href: `#/apps/${seg(app.app_id)}` }, app.name)),
      h('td', {}, code(app.uid)),
      h(
        'td',
        {},
        app.scopes.map((scope) => badge(scope, 'info')),
      ),
      h('td', {}, app.notifications_enabled ? badge('on', 'ok') : badge('off', 'off')),
    ),
  )
  const received = notifications.map((n) =>
    h(
      'tr',
      {},
      h('td', {}, h('strong', {}, n.title), h('div', { class: 'muted small' }, n.body)),
      h('td', {}, code(short(n.app_id), n.app_id)),
      h('td', {}, formatTime(n.created_at)),
      h('td', {}, n.dismissed_at ? badge('dismissed', 'off') : n.seen_at ? badge('seen', 'ok') : badge('unseen', 'info')),
    ),
  )
  return [
    pageTitle(user.username, null, ['#/users', 'Users']),
    revealPanel(),
    card(
      'User',
      action('Refresh', render, { kind: 'small' }),
      h(
        'dl',
        { class: 'facts' },
        h('dt', {}, 'User id'),
        h('dd', {}, code(user.user_id)),
        h('dt', {}, 'Wallet'),
        h('dd', {}, accountLink(user.wallet_address), balance === null ? null : h('span', { class: 'muted' }, ` ${balance} test Pi`)),
        h('dt', {}, 'Created'),
        h('dd', {}, formatTime(user.created_at)),
      ),
      fundForm(user.wallet_address),
    ),
    card(
      'Apps and consent',
      null,
      table(['App', 'uid in the app', 'Scopes granted', 'Notifications'], apps, 'Not signed in to any app yet.'),
    ),
    card('Notification centre', null, table(['Notification', 'From app', 'Received', 'State'], received, 'No notifications.')),
  ]
}

// Clock and ledger ----------------------------------------------------------------------------

async function platformPage() {
  const [clock, check] = await Promise.all([get('/sandbox/clock'), get('/sandbox/ledger/check')])
  setClock(clock)
  const custom = form(
    { class: 'inline-form', 'data-testid': 'advance-clock' },
    [
      field('Advance by', h('input', { name: 'amount', type: 'number', min: 1, step: 'any', required: true, value: 1 })),
      field('Unit', select('unit', UNITS, 3600)),
      h('button', { type: 'submit', class: 'primary' }, 'Advance'),
    ],
    async (values) => {
      const seconds = Number(values.amount) * Number(values.unit)
      if (!(seconds > 0)) throw new Error('Advance by a positive amount')
      await advanceClock(seconds)
      await render()
    },
  )
  const presets = ADVANCE_PRESETS.map(([label, seconds]) =>
    action(
      label,
      async () => {
        await advanceClock(seconds)
        await render()
      },
      { kind: 'small' },
    ),
  )
  return [
    pageTitle(
      'Clock & ledger',
      'The platform clock drives token expiry, approval windows, ad verdicts and quotas. It moves forward, or back to real time with a reset, which keeps everything the moved time expired expired.',
    ),
    card(
      'Platform clock',
      null,
      h(
        'dl',
        { class: 'facts' },
        h('dt', {}, 'Now'),
        h('dd', { 'data-testid': 'platform-now' }, formatTime(clock.now)),
        h('dt', {}, 'Offset'),
        h('dd', { 'data-testid': 'platform-offset' }, formatDuration(clock.offset_seconds)),
      ),
      h('div', { class: 'actions' }, presets),
      custom,
      h(
        'div',
        { class: 'actions' },
        action(
          'Reset to real time',
          async () => {
            await resetClock()
            await render()
          },
          { kind: 'small danger', confirm: 'Click again to reset', testid: 'reset-clock' },
        ),
      ),
    ),
    card(
      'Ledger check',
      action('Run again', render, { kind: 'small' }),
      h('p', {}, check.ok ? badge('books balance', 'ok') : badge('MISMATCH', 'off')),
      h(
        'dl',
        { class: 'facts' },
        h('dt', {}, 'Sum of balances'),
        h('dd', {}, check.total_balances),
        h('dt', {}, 'Total funded'),
        h('dd', {}, check.total_funded),
        h('dt', {}, 'Fees burned'),
        h('dd', {}, check.total_fees),
        h('dt', {}, 'Negative balances'),
        h('dd', {}, String(check.negative_balances)),
        h('dt', {}, 'Mismatched accounts'),
        h('dd', {}, String(check.mismatched_accounts)),
      ),
    ),
    card('Fund a wallet', null, h('p', { class: 'muted' }, 'Grant test Pi to any ledger account (it is created if needed).'), fundForm('')),
  ]
}

function fundForm(address) {
  return form(
    { class: 'inline-form', 'data-testid': 'fund' },
    [
      address === ''
        ? field('Address', h('input', { name: 'address', required: true, maxlength: 100, placeholder: 'G…', class: 'wide' }))
        : h('input', { type: 'hidden', name: 'address', value: address }),
      field('Amount (test Pi)', h('input', { name: 'amount', required: true, maxlength: 40, value: '100', inputmode: 'decimal' })),
      h('button', { type: 'submit', class: 'primary' }, 'Fund'),
    ],
    async (values) => {
      const funded = await post('/sandbox/ledger/fund', { address: values.address.trim(), amount: values.amount.trim() })
      toast(`${short(funded.address, 8)} now holds ${funded.balance} test Pi`)
      await render()
    },
  )
}

function accountLink(address) {
  return h(
    'a',
    { href: `/ledger/accounts/${seg(address)}`, target: '_blank', rel: 'noopener noreferrer', title: address },
    code(short(address, 12), address),
  )
}

async function walletBalance(address) {
  try {
    const response = await fetch(`/ledger/accounts/${seg(address)}`)
    if (!response.ok) return null
    const account = await response.json()
    const native = account.balances.find((b) => b.asset_type === 'native')
    return native ? native.balance : null
  } catch {
    return null
  }
}

// ---------------------------------------------------------------------------------------------

window.addEventListener('hashchange', () => {
  render()
  main.focus()
})
refreshClock()
setInterval(tickClock, 1000)
setInterval(refreshClock, 10_000)
render()
