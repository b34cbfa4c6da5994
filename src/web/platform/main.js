// @ts-check
/**
 * The platform page: open an app in an iframe with the platform's chrome around it, and play the
 * platform for the SDK inside it. One page in two modes (platform.js): the sandbox browser at
 * `/sandbox/`, where the developer signs in as any test user (docs/sandbox-browser.md), and in
 * production the platform itself at `/`, where people sign in to their own accounts
 * (docs/accounts.md).
 *
 * The URL keeps the state, so a reload or a link lands in the same place:
 * `/sandbox/?user=<user_id>&app=<app_id>[&url=<app URL>][&path=<subroute>]`; for tests it also
 * tunes the page's timers (page-url.js). In production `view=portal` or `view=operator` (with
 * `portal_app=<app_id>`) opens the developer portal or the operator's console, `view=receipt&tx=<hash>`
 * a transaction's receipt (receipt.js), and `#/reset/<token>` is a password reset link an operator issued.
 */
import { createAccountPanel } from './account/account-panel.js'
import { createDeveloperSignup } from './account/developer-signup.js'
import { ApiError, adminToken, call, onSessionEnded, sandbox, setAdminToken } from './api.js'
import { createBridge } from './bridge.js'
import { createDrawer } from './drawer.js'
import { createFlows } from './flows.js'
import { createNotificationCentre } from './notifications.js'
import { createOperatorConsole } from './operator/operator-panel.js'
import { params, setUrl, tuning } from './page-url.js'
import { createPicker } from './picker.js'
import { createPlatform } from './platform.js'
import { showReceipt } from './receipt.js'
import './page-focus.js'
import { byId, show, showError } from '../../web/ui/dom.js'
import { createPortal } from './portal/portal-panel.js'
import { createSignIn } from './sign-in.js'
import { createWallet, networkInUse } from './wallet/wallet-panel.js'

/**
 * @typedef {import('./types').PageUser} PageUser
 * @typedef {import('./types').OpenedApp} OpenedApp
 */

const enc = encodeURIComponent

/**
 * @type {{ platform: import('./types').PlatformInfo, user: PageUser | undefined, app: OpenedApp | undefined,
 *   frameUrl: string | undefined, frameAuth: import('./flows.js').FrameAuth | undefined, connected?: boolean, tokens: Map<string, Promise<string>> }}
 */
const state = {
  platform: { mode: 'sandbox', approval_window_seconds: 60, admin_token_required: false },
  user: undefined,
  app: undefined,
  /** What the app's iframe was pointed at. */
  frameUrl: undefined,
  /** The token the app's current page load received from Pi.authenticate. */
  frameAuth: undefined,
  /** app_id → promise of the platform's own token for that app (the notification centre). */
  tokens: new Map(),
}

/** The platform's side of the page, by mode (platform.js); set once platform.json is read. */
let api = createPlatform('sandbox')
const production = () => api.mode === 'production'

const frame = byId('app-frame', HTMLIFrameElement)
// The page's views: the sections of <main> (index.html), one shown at a time.
const views = [...document.querySelectorAll('main > section')].map((section) => section.id)
const showView = (/** @type {string} */ id) => {
  for (const view of views) show(byId(view), view === id)
}
/**
 * @param {string} text
 * @param {'' | 'bad'} [tone]
 */
const setStatus = (text, tone = '') => {
  const line = byId('sdk-status')
  line.textContent = text
  line.classList.toggle('bad', tone === 'bad')
}

/**
 * Shows an error where it belongs, or asks for the admin token when that was the problem.
 * @type {import('./types').FailIn}
 */
const failIn = (element) => (error) => {
  if (error instanceof ApiError && error.code === 'invalid_admin_token') {
    setAdminToken(undefined)
    showAdmin(error.message)
  } else {
    showError(element, error)
  }
}

/** @param {string} [message] */
function showAdmin(message) {
  showView('admin-view')
  showError(byId('admin-error'), message)
  byId('admin-token').focus()
}

byId('admin-form').addEventListener('submit', (event) => {
  event.preventDefault()
  setAdminToken(byId('admin-token', HTMLInputElement).value.trim())
  byId('admin-token', HTMLInputElement).value = ''
  start().catch(failIn(byId('admin-error')))
})

/** @param {string} userId */
async function signIn(userId) {
  const user = await sandbox(`/sandbox/users/${enc(userId)}`)
  await enter({ user_id: user.user_id, username: user.username, wallet_address: user.wallet_address })
}

/**
 * `user` is now the one the page acts for: its chrome, wallet and notifications.
 * @param {PageUser} user
 */
async function enter(user) {
  closeApp({ quiet: true })
  state.user = user
  state.tokens.clear()
  centre.reset()
  const chip = byId('user-chip')
  chip.textContent = user.username
  chip.title = production()
    ? `Signed in as ${user.username}; click for your account`
    : `Signed in as ${user.username} (${user.user_id}); click to switch user`
  for (const id of ['user-chip', 'wallet-button', 'bell']) show(byId(id), true)
  showTabs(user.roles ?? [])
  developerSignup.show(production() ? user : undefined, state.platform.developer_signup)
  // Production keeps who is signed in in the session, not the URL.
  if (!production()) setUrl({ user: user.user_id })
  wallet.refresh()
  centre.refresh()
  await showPicker()
}

/**
 * Nobody is signed in any more: back to the sign-in view of the mode, with `message` (why the
 * session ended) when the platform ended it. Nothing of the person stays in the page.
 * @param {string} [message]
 */
function leave(message) {
  closeApp({ quiet: true })
  drawer.close()
  state.user = undefined
  state.tokens.clear()
  // Stops following the wallet's ledger stream, and forgets the balance and the unread count.
  wallet.refresh()
  centre.reset()
  byId('app-list').replaceChildren()
  byId('user-chip').textContent = ''
  for (const id of ['user-chip', 'wallet-button', 'bell']) show(byId(id), false)
  // Nothing of the portal or the console stays in the page (a key shown once included).
  showTabs([])
  developerSignup.show(undefined)
  portal.reset()
  operatorConsole.reset()
  setUrl({ user: undefined, view: undefined, portal_app: undefined })
  if (production()) showAccountSignIn(message)
  else showSignIn()
}

/** A panel saw the session over: leave once (the first to see it says why; the others find nobody signed in). */
const signedOut = () => {
  if (state.user !== undefined) leave()
}

// Production: any account call refused for an ended session (a poll within one interval) signs the
// page out and says why: idle, expired, signed out elsewhere, suspended (the 401's message).
onSessionEnded((error) => {
  if (production() && state.user !== undefined) leave(error.message)
})

byId('user-chip').addEventListener('click', () => {
  if (production()) accountPanel.toggle()
  else leave()
})

const TABS = { apps: 'apps-tab', portal: 'portal-tab', operator: 'operator-tab' }

/**
 * The Portal and Operator tabs, by the person's roles; the Apps tab with them, to go back.
 * @param {string[]} roles
 */
function showTabs(roles) {
  const portalShown = production() && roles.includes('developer')
  const operatorShown = production() && roles.includes('operator')
  show(byId('portal-tab'), portalShown)
  show(byId('operator-tab'), operatorShown)
  show(byId('tabs'), portalShown || operatorShown)
}

/** @param {string | undefined} current */
function markTab(current) {
  for (const [name, id] of Object.entries(TABS)) {
    if (name === current) byId(id).setAttribute('aria-current', 'page')
    else byId(id).removeAttribute('aria-current')
  }
}

/** @param {string} [appId] */
async function showPortal(appId) {
  closeApp({ quiet: true })
  drawer.close()
  showView('portal-view')
  markTab('portal')
  setUrl({ view: 'portal', portal_app: appId })
  await portal.show(appId)
}

function showOperator() {
  closeApp({ quiet: true })
  drawer.close()
  showView('operator-view')
  markTab('operator')
  setUrl({ view: 'operator', portal_app: undefined })
  operatorConsole.show()
}

byId('apps-tab').addEventListener('click', () => {
  closeApp({ quiet: true })
  showPicker()
})
byId('portal-tab').addEventListener('click', () => showPortal())
byId('operator-tab').addEventListener('click', () => showOperator())

const enterAccount = async () => {
  const user = await api.currentUser()
  if (user === undefined) return showAccountSignIn()
  await enter(user)
}

// Opening an app

/**
 * @param {string} appId
 * @param {string} [url]
 * @param {string} [subroute]
 */
async function openAppById(appId, url, subroute) {
  const app = await api.getApp(appId)
  // In production an app opens only at its registered URL: its origin is the only one the access token goes to.
  const target = (production() ? undefined : url) || app.url
  if (!target) throw new Error(`${app.name} has no URL: enter the URL its frontend is served at.`)
  openApp({ app_id: app.app_id, name: app.name, url: target, network: app.network }, subroute, url ? { url } : {})
}

/**
 * @param {{ app_id: string, name: string, url: string | null, network: string }} app
 * @param {string} [subroute]
 * @param {{ url?: string }} [extraUrlState]
 */
function openApp(app, subroute, extraUrlState = {}) {
  let url
  try {
    url = new URL(String(app.url))
  } catch {
    url = undefined
  }
  if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    return showError(byId('picker-error'), `Not an http(s) URL: ${app.url}`)
  }
  // A frame of the sandbox page's own origin could reach into the page (tokens, Pay button).
  if (url.origin === location.origin) {
    return showError(
      byId('picker-error'),
      `Serve the app from another origin than Plinth (${location.origin}): the sandbox page will not frame itself.`,
    )
  }
  let target = url
  if (typeof subroute === 'string' && subroute.startsWith('/')) {
    const routed = new URL(subroute, url)
    if (routed.origin === url.origin) target = routed
  }
  bridge.reset()
  state.frameAuth = undefined
  state.app = { app_id: app.app_id, name: app.name, url: url.href, origin: url.origin, network: app.network }
  byId('app-name').textContent = app.name
  byId('app-origin').textContent = url.origin
  setStatus('Loading the app…')
  state.frameUrl = target.href
  frame.src = state.frameUrl
  watchConnection()
  setUrl({ app: app.app_id, url: extraUrlState.url, path: undefined, view: undefined, portal_app: undefined })
  showView('browser-view')
  markTab(undefined)
  // The keyboard goes on in the app (Tab walks into its page), not back at the top of this one.
  frame.focus()
  // The wallet shows the open app's network's balance.
  wallet.refresh()
}

function closeApp({ quiet = false } = {}) {
  bridge.reset()
  state.app = undefined
  state.frameAuth = undefined
  frame.removeAttribute('src')
  setUrl({ app: undefined, url: undefined, path: undefined })
  if (!quiet) showPicker()
  if (state.user !== undefined) wallet.refresh()
}

byId('back-button').addEventListener('click', () => closeApp())
byId('reload-button').addEventListener('click', () => {
  if (state.app === undefined) return
  bridge.reset()
  state.frameAuth = undefined
  setStatus('Reloading the app…')
  // Set whenever an app is open.
  frame.src = /** @type {string} */ (state.frameUrl)
  watchConnection()
})

/**
 * "Loading the app…" does not last forever: when no SDK speaks within connect_ms, say what to
 * check. An SDK loaded from another origin than this page's says so at once (origin_probe).
 */
/** @type {ReturnType<typeof setTimeout> | undefined} */
let connectTimer
function watchConnection() {
  clearTimeout(connectTimer)
  state.connected = false
  const app = state.app
  connectTimer = setTimeout(() => {
    if (state.connected || state.app !== app || app === undefined) return
    setStatus(
      `The app at ${app.origin} did not connect within ${Math.round(tuning.connectMs / 1000)} s. Check that its server is running and listening there ` +
        `(nothing answering shows as an error page above), and that it loads the SDK from ${location.origin}/sdk/pi-sdk.js and calls Pi.init.`,
      'bad',
    )
  }, tuning.connectMs)
}

// The platform's side of the SDK

/**
 * The platform's own short-lived token for one of the user's apps, for the notification centre:
 * it carries in_app_notifications, which the centre's routes need, and is asked for only for
 * apps the user already granted it (the centre lists no other), so it widens no consent.
 * @param {string} appId
 * @returns {Promise<string>}
 */
function tokenFor(appId, { background = false } = {}) {
  const cached = state.tokens.get(appId)
  if (cached !== undefined) return cached
  // The notification centre asks only while someone is signed in.
  const user = /** @type {PageUser} */ (state.user)
  const minted = api.authenticate(appId, user, ['in_app_notifications'], 3600, { background }).then((auth) => auth.accessToken)
  state.tokens.set(appId, minted)
  minted.catch(() => state.tokens.delete(appId))
  setTimeout(() => state.tokens.delete(appId), 3000 * 1000)
  return minted
}

const drawer = createDrawer()
const wallet = createWallet({
  user: () => state.user,
  drawer,
  payments: (/** @type {PageUser} */ user, /** @type {{ background?: boolean }} */ options) => api.payments(user, options),
  ledgerUrl: (/** @type {string} */ kind, /** @type {string} */ id) => api.ledgerUrl(kind, id),
  production,
  // The open app's network, or the mode's with none open (wallet/wallet-panel.js).
  network: () => networkInUse(state.app, production()),
})
const centre = createNotificationCentre({
  user: () => state.user,
  userApps: (/** @type {PageUser} */ user, /** @type {{ background?: boolean }} */ options) => api.userApps(user, options),
  drawer,
  tokenFor,
  openApp: (/** @type {string} */ appId, /** @type {string | undefined} */ subroute) => {
    drawer.close()
    openAppById(appId, state.app?.app_id === appId && state.app.url ? state.app.url : undefined, subroute).catch((error) =>
      showError(byId('picker-error'), error),
    )
  },
})

const accountPanel = createAccountPanel({ drawer, signedOut, refresh: () => centre.refresh() })
// The app directory is read again each time it is shown: what the portal or the console changed shows there.
const portal = createPortal({
  user: () => state.user,
  signedOut,
  selected: (appId) => {
    if (!byId('portal-view').hidden) setUrl({ portal_app: appId })
  },
})
const operatorConsole = createOperatorConsole({ user: () => state.user, signedOut })
// A signed-in person who is not a developer: the Become a developer button, or whom to ask (on the home view).
const developerSignup = createDeveloperSignup({
  signedOut,
  becameDeveloper: () => {
    // The button is shown only to a signed-in person.
    const user = /** @type {PageUser} */ (state.user)
    user.roles = [...(user.roles ?? []), 'developer']
    showTabs(user.roles)
    return showPortal()
  },
})
byId('picker-view').append(developerSignup.element)
const { showSignIn, showAccountSignIn, showReset, resetToken } = createSignIn({
  production,
  showView,
  failIn,
  signIn,
  enterAccount: () => enterAccount(),
  leaveApp: () => {
    closeApp({ quiet: true })
    drawer.close()
  },
})
const { showPicker } = createPicker({ production, showView, markTab, setUrl, failIn, listApps: () => api.listApps(), openApp, openAppById })

const flows = createFlows({
  platform: () => api,
  // The flows run only for an open app's requests, so an app and a user are set whenever they ask.
  app: () => /** @type {OpenedApp} */ (state.app),
  user: () => /** @type {PageUser} */ (state.user),
  frameAuth: () => state.frameAuth,
  setFrameAuth: (auth) => {
    state.frameAuth = auth
  },
  tuning,
  get approvalWindowSeconds() {
    return state.platform.approval_window_seconds
  },
  /** Production: above this amount of Pi the payment dialog asks for the password (undefined in the sandbox). */
  get stepUpAmount() {
    return state.platform.payment_step_up_amount
  },
  // Asked only in a payment dialog, which only a signed-in person opens.
  // The open app's network's balance: the one its payments are paid from.
  balance: () => wallet.balance(),
  refreshWallet: () => wallet.refresh(),
  refreshNotifications: () => centre.refresh(),
  setStatus,
})

const bridge = createBridge({
  frame,
  currentApp: () => state.app,
  handlers: flows,
  features: ['inline_media', 'ad_network'],
  onOriginMismatch: (/** @type {string} */ hostOrigin) => {
    state.connected = true
    clearTimeout(connectTimer)
    setStatus(
      `The app's SDK talks to ${hostOrigin}, but this page is ${location.origin}: their messages never meet. ` +
        `Open the sandbox at ${hostOrigin}/sandbox/ (or load the SDK from ${location.origin}).`,
      'bad',
    )
  },
  onSession: () => {
    // A new page load of the app: it has to authenticate again.
    state.connected = true
    clearTimeout(connectTimer)
    state.frameAuth = undefined
    setStatus('SDK connected (2.0)')
  },
})

// The page's polls are background requests: they never keep an idle session alive. In production
// the centre's read of /account is also how an ended session is noticed within one interval.
setInterval(async () => {
  if (state.user === undefined || document.visibilityState !== 'visible') return
  await centre.refresh({ background: true })
  // The centre's refusal ended the session: the wallet asks nothing more (it reads /account too).
  if (state.user === undefined) return
  // A fallback: the wallet follows the ledger's stream of the user's transactions (wallet/wallet-panel.js).
  wallet.refresh({ background: true })
}, tuning.refreshMs)

async function start() {
  // platform.json is the page's own file, not an API route: its shape is declared by hand (types.d.ts).
  state.platform = /** @type {import('./types').PlatformInfo} */ (await call(new URL('platform.json', import.meta.url).pathname))
  api = createPlatform(state.platform.mode)
  if (params.get('view') === 'receipt') return showReceipt(showView, production())
  if (production()) {
    document.title = 'Plinth'
    byId('brand-mode').textContent = ''
    show(byId('open-form'), false)
    if (resetToken() !== undefined) return showReset()
    await enterAccount()
    if (state.user === undefined) return
    const roles = state.user.roles ?? []
    const view = params.get('view')
    if (view === 'portal' && roles.includes('developer')) return showPortal(params.get('portal_app') ?? undefined)
    if (view === 'operator' && roles.includes('operator')) return showOperator()
    const appId = params.get('app')
    if (appId !== null) await openAppById(appId, undefined, params.get('path') ?? undefined)
    return
  }
  if (state.platform.admin_token_required && adminToken() === undefined) return showAdmin()
  const userId = params.get('user')
  if (userId === null) return showSignIn()
  await signIn(userId)
  const appId = params.get('app')
  if (appId !== null) await openAppById(appId, params.get('url') ?? undefined, params.get('path') ?? undefined)
}

start().catch((error) => {
  if (production()) return showAccountSignIn(error)
  if (error instanceof ApiError && error.code === 'invalid_admin_token') return failIn(byId('admin-error'))(error)
  showSignIn().then(() => showError(byId('signin-error'), error))
})
