/**
 * Plinth's client SDK: the interface of the live platform's browser SDK (`window.Pi`), for
 * apps opened in Plinth's sandbox browser (`/sandbox/`). It runs in the app's iframe and
 * talks to the sandbox page, its parent, only through `postMessage`, checking both the
 * sending window and its origin; docs/sandbox-browser.md describes the protocol.
 *
 * This file is served wrapped, never on its own (src/web/sdk-routes.ts): `/sdk/pi-sdk.js`
 * (a classic script that sets `window.Pi`) and `/sdk/pi-sdk.mjs` (an ES module exporting `Pi`).
 * Its types are `pi-sdk.d.ts` beside it.
 */

// biome-ignore lint/correctness/noUnusedVariables: the served pi-sdk.js and pi-sdk.mjs call it (src/web/sdk-routes.ts)
function createPi(env) {
  const PROTOCOL = 'plinth-pi-sdk/1'
  const SDK_VERSION = '2.0'
  const MAX_SCOPES = 16
  const AD_TYPES = ['rewarded', 'interstitial']
  const HELLO_TIMEOUT_MS = 3000

  class PiSdkError extends Error {
    constructor(code, message, details) {
      super(message)
      this.name = 'PiSdkError'
      this.code = code
      if (details !== undefined) this.details = details
    }
  }

  const isObject = (value) => typeof value === 'object' && value !== null && !Array.isArray(value)
  const httpOrigin = (url) => {
    try {
      const parsed = new URL(url)
      return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.origin : undefined
    } catch {
      return undefined
    }
  }
  const randomHex = (bytes) => Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, '0')).join('')

  // One id per page load: the sandbox page drops what belongs to an earlier load of the app.
  const session = randomHex(16)
  const pending = new Map()
  let nextId = 1
  let settings // { version, sandbox, hostOrigin } once init ran
  let authenticated // { user, scopes } once authenticate resolved
  let onIncompletePaymentFound
  let connection // Promise of the host's welcome
  let welcomed // resolves connection
  // The authenticate request in flight, shared by calls in the same tick (React's StrictMode): { key, result, notified }
  let authInFlight

  /** Calls an app callback; a callback that throws or rejects is reported, never breaks the SDK. */
  const invoke = (name, callback, ...args) => {
    if (typeof callback !== 'function') return
    try {
      const result = callback(...args)
      if (result && typeof result.catch === 'function') result.catch((error) => console.error(`Pi: ${name} rejected`, error))
    } catch (error) {
      console.error(`Pi: ${name} threw`, error)
    }
  }

  const requireInit = (method) => {
    if (settings === undefined) {
      throw new PiSdkError('not_initialized', `Pi.${method}: call Pi.init({ version: "2.0" }) first.`)
    }
  }

  const checkAdType = (method, type) => {
    if (!AD_TYPES.includes(type)) {
      throw new PiSdkError(
        'invalid_arguments',
        `Pi.Ads.${method}: the ad type must be "rewarded" or "interstitial", got ${describe(type)}.`,
      )
    }
  }

  const describe = (value) => {
    if (typeof value === 'string') return JSON.stringify(value.slice(0, 40))
    if (Array.isArray(value)) return 'an array'
    if (typeof value === 'number' || typeof value === 'boolean') return `${typeof value} ${String(value)}`
    return value === null ? 'null' : typeof value
  }

  /** The sandbox page's origin: init's, or before init (getPiHostAppInfo) the origin the SDK was loaded from. */
  const currentHostOrigin = () => (settings === undefined ? httpOrigin(env.scriptUrl) : settings.hostOrigin)

  const post = (message) => {
    window.parent.postMessage({ protocol: PROTOCOL, session, ...message }, currentHostOrigin())
  }

  window.addEventListener('message', (event) => {
    // Only the parent window, from the sandbox page's origin, speaks for the platform.
    const origin = currentHostOrigin()
    if (origin === undefined || event.source !== window.parent || event.origin !== origin) return
    const message = event.data
    if (!isObject(message) || message.protocol !== PROTOCOL || message.session !== session) return
    if (message.type === 'welcome') {
      welcomed?.(message)
      welcomed = undefined
      return
    }
    const entry = typeof message.id === 'number' ? pending.get(message.id) : undefined
    if (entry === undefined) return
    if (message.type === 'result') {
      if (!entry.keepOpen) pending.delete(message.id)
      entry.resolve(message.result)
    } else if (message.type === 'error') {
      pending.delete(message.id)
      const error = isObject(message.error) ? message.error : {}
      const details = isObject(error.payment) ? { payment: error.payment } : undefined
      entry.reject(new PiSdkError(String(error.code ?? 'unknown_error'), String(error.message ?? 'The sandbox page refused.'), details))
    } else if (message.type === 'event' && typeof message.name === 'string') {
      if (message.final === true) pending.delete(message.id)
      entry.onEvent?.(message.name, Array.isArray(message.args) ? message.args : [])
    }
  })

  // The sandbox page's dialogs take the focus from the app's frame and give it back on close; Chrome
  // then lands on the app's <body>. The element that had it when the app asked (its Buy button) gets it back.
  let focusAtRequest
  if (window.parent !== window) {
    window.addEventListener('focus', () => {
      const element = focusAtRequest
      focusAtRequest = undefined
      const lost = document.activeElement === null || document.activeElement === document.body
      if (lost && element instanceof HTMLElement && element !== document.body && element.isConnected) element.focus()
    })
  }

  /** Says hello to the sandbox page once; every request waits for its welcome. */
  const connect = () => {
    if (connection !== undefined) return connection
    const origin = currentHostOrigin()
    if (origin === undefined) {
      return Promise.reject(new PiSdkError('not_initialized', 'Pi: call Pi.init({ version: "2.0" }) first.'))
    }
    if (window.parent === window) {
      return Promise.reject(
        new PiSdkError('not_in_sandbox', `Pi: this page is not inside the sandbox browser; open it from ${origin}/sandbox/.`),
      )
    }
    // The only message to any origin, with nothing secret in it: the origin this SDK talks to, so
    // that a sandbox page on another origin (localhost against 127.0.0.1) can say why it hears nothing.
    window.parent.postMessage({ protocol: PROTOCOL, type: 'origin_probe', host_origin: origin }, '*')
    connection = new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        connection = undefined
        welcomed = undefined
        reject(
          new PiSdkError(
            'host_unreachable',
            `Pi: no answer from the sandbox page at ${origin}; open the app from ${origin}/sandbox/ (the page and the SDK must come from the same Plinth origin).`,
          ),
        )
      }, HELLO_TIMEOUT_MS)
      welcomed = (welcome) => {
        clearTimeout(timer)
        resolve(welcome)
      }
      post({ type: 'hello', version: settings?.version ?? SDK_VERSION, sandbox: settings?.sandbox ?? true })
    })
    return connection
  }

  /** One request to the sandbox page; `keepOpen` requests also receive events until a final one. */
  const request = async (method, params, handlers = {}) => {
    await connect()
    const active = globalThis.document?.activeElement
    if (active && active !== document.body) focusAtRequest = active
    const id = nextId++
    return new Promise((resolve, reject) => {
      pending.set(id, { resolve, reject, onEvent: handlers.onEvent, keepOpen: handlers.keepOpen === true })
      post({ type: 'request', id, method, params })
    })
  }

  function init(config) {
    if (!isObject(config)) throw new PiSdkError('invalid_arguments', 'Pi.init: pass an object, { version: "2.0", sandbox: true }.')
    if (typeof config.version !== 'string') {
      throw new PiSdkError('invalid_arguments', `Pi.init: version must be a string ("2.0"), got ${describe(config.version)}.`)
    }
    if (config.version !== SDK_VERSION) {
      throw new PiSdkError('invalid_arguments', `Pi.init: unsupported version ${describe(config.version)}; this SDK is version "2.0".`)
    }
    if (config.sandbox !== undefined && typeof config.sandbox !== 'boolean') {
      throw new PiSdkError('invalid_arguments', `Pi.init: sandbox must be a boolean, got ${describe(config.sandbox)}.`)
    }
    const hostOrigin = config.hostOrigin === undefined ? httpOrigin(env.scriptUrl) : httpOrigin(config.hostOrigin)
    if (hostOrigin === undefined || (config.hostOrigin !== undefined && hostOrigin !== config.hostOrigin)) {
      throw new PiSdkError(
        'invalid_arguments',
        config.hostOrigin === undefined
          ? 'Pi.init: cannot tell where the sandbox page is; pass hostOrigin, the origin of Plinth (for example "http://127.0.0.1:8080").'
          : `Pi.init: hostOrigin must be an origin such as "http://127.0.0.1:8080", got ${describe(config.hostOrigin)}.`,
      )
    }
    // getPiHostAppInfo may have greeted another origin before init.
    if (connection !== undefined && currentHostOrigin() !== hostOrigin) connection = undefined
    settings = { version: config.version, sandbox: config.sandbox === true, hostOrigin }
    // Greet the page now so that the first call is quick; a failure surfaces on that call.
    connect().catch(() => {})
  }

  async function authenticate(scopes, onIncomplete) {
    requireInit('authenticate')
    if (
      !Array.isArray(scopes) ||
      scopes.length > MAX_SCOPES ||
      !scopes.every((s) => typeof s === 'string' && s.length > 0 && s.length <= 64)
    ) {
      throw new PiSdkError(
        'invalid_arguments',
        `Pi.authenticate: scopes must be an array of at most ${MAX_SCOPES} scope names, such as ["username", "payments"].`,
      )
    }
    if (onIncomplete !== undefined && typeof onIncomplete !== 'function') {
      throw new PiSdkError('invalid_arguments', 'Pi.authenticate: onIncompletePaymentFound must be a function when given.')
    }
    const unique = [...new Set(scopes)]
    // Calls in the same tick (React's StrictMode runs effects twice) share one request and one
    // consent dialog, and both resolve with its result; a call for other scopes waits its turn.
    const key = [...unique].sort().join(' ')
    let flight = authInFlight
    if (flight === undefined || flight.key !== key) {
      const before = flight === undefined ? Promise.resolve() : flight.result.catch(() => {})
      const current = { key, result: before.then(() => request('authenticate', { scopes: unique })), notified: new Set() }
      const done = () => {
        if (authInFlight === current) authInFlight = undefined
      }
      current.result.then(done, done)
      authInFlight = current
      flight = current
    }
    const result = await flight.result
    authenticated = { user: result.user, scopes: unique }
    onIncompletePaymentFound = onIncomplete
    // Each callback hears of the incomplete payment once, however many calls shared the request.
    if (isObject(result.incompletePayment) && !flight.notified.has(onIncomplete)) {
      flight.notified.add(onIncomplete)
      invoke('onIncompletePaymentFound', onIncomplete, result.incompletePayment)
    }
    return { accessToken: result.accessToken, user: result.user }
  }

  const CALLBACKS = ['onReadyForServerApproval', 'onReadyForServerCompletion', 'onCancel', 'onError']

  function createPayment(paymentData, callbacks) {
    requireInit('createPayment')
    if (authenticated === undefined) {
      throw new PiSdkError('not_authenticated', 'Pi.createPayment: call Pi.authenticate(["payments", …]) first.')
    }
    if (!authenticated.scopes.includes('payments')) {
      throw new PiSdkError(
        'missing_scope',
        'Pi.createPayment: the user was not asked for the "payments" scope; include it in Pi.authenticate.',
      )
    }
    if (!isObject(paymentData))
      throw new PiSdkError('invalid_arguments', 'Pi.createPayment: paymentData must be { amount, memo, metadata }.')
    const { amount, memo, metadata } = paymentData
    if (typeof amount !== 'number' || !Number.isFinite(amount) || amount <= 0) {
      throw new PiSdkError('invalid_arguments', `Pi.createPayment: amount must be a number above 0, got ${describe(amount)}.`)
    }
    // Caught here, before the dialog: the ledger holds at most 7 decimals (0.0000001 π).
    if (!/^\d+(\.\d{1,7})?$/.test(String(amount))) {
      // The platform's code for the same refusal (docs/errors.md), now before any dialog opens.
      throw new PiSdkError('invalid_amount', `Pi.createPayment: amount has at most 7 decimals, got ${String(amount)}.`)
    }
    if (typeof memo !== 'string')
      throw new PiSdkError('invalid_arguments', `Pi.createPayment: memo must be a string, got ${describe(memo)}.`)
    if (metadata !== undefined && !isObject(metadata)) {
      throw new PiSdkError('invalid_arguments', `Pi.createPayment: metadata must be an object, got ${describe(metadata)}.`)
    }
    if (!isObject(callbacks)) throw new PiSdkError('invalid_arguments', `Pi.createPayment: pass the callbacks ${CALLBACKS.join(', ')}.`)
    const missing = CALLBACKS.filter((name) => typeof callbacks[name] !== 'function')
    if (missing.length > 0) throw new PiSdkError('invalid_arguments', `Pi.createPayment: missing callbacks: ${missing.join(', ')}.`)

    const onEvent = (name, args) => {
      if (name === 'readyForServerApproval') invoke('onReadyForServerApproval', callbacks.onReadyForServerApproval, args[0])
      else if (name === 'readyForServerCompletion')
        invoke('onReadyForServerCompletion', callbacks.onReadyForServerCompletion, args[0], args[1])
      else if (name === 'cancel') invoke('onCancel', callbacks.onCancel, args[0])
      else if (name === 'error') {
        const error = isObject(args[0]) ? args[0] : {}
        const payment = isObject(args[1]) ? args[1] : undefined
        const sdkError = new PiSdkError(
          String(error.code ?? 'unknown_error'),
          String(error.message ?? 'The payment failed.'),
          payment && { payment },
        )
        // A failed Pay the dialog offers to try again: the payment is still open, the user decides.
        sdkError.retryable = error.retryable === true
        invoke('onError', callbacks.onError, sdkError, payment)
      }
    }
    const created = request('createPayment', { amount, memo, metadata: metadata ?? {} }, { onEvent, keepOpen: true })
    created.catch((error) => {
      const payment = error.details?.payment
      // The live platform hands a paid but uncompleted payment that blocks this one to onIncompletePaymentFound.
      if (error.code === 'ongoing_payment_found' && payment) invoke('onIncompletePaymentFound', onIncompletePaymentFound, payment)
      invoke('onError', callbacks.onError, error, payment)
    })
    return created
  }

  // The platform's ad routes need this scope of the access token (src/ads/ad-rules.ts, ADS_SCOPE).
  const ADS_SCOPE = 'payments'
  function requireAdsScope(name) {
    if (!authenticated.scopes.includes(ADS_SCOPE)) {
      throw new PiSdkError(
        'missing_scope',
        `Pi.Ads.${name}: ads need the "${ADS_SCOPE}" scope; include it in Pi.authenticate (["username", "${ADS_SCOPE}"] is the minimum).`,
      )
    }
  }

  async function showAd(type) {
    requireInit('Ads.showAd')
    checkAdType('showAd', type)
    if (authenticated === undefined) return { type, result: 'USER_UNAUTHENTICATED' }
    requireAdsScope('showAd')
    return request('showAd', { type })
  }

  async function isAdReady(type) {
    requireInit('Ads.isAdReady')
    checkAdType('isAdReady', type)
    if (authenticated === undefined) return { type, ready: false }
    requireAdsScope('isAdReady')
    return request('isAdReady', { type })
  }

  async function requestAd(type) {
    requireInit('Ads.requestAd')
    checkAdType('requestAd', type)
    if (authenticated === undefined) return { type, result: 'AD_NOT_AVAILABLE' }
    requireAdsScope('requestAd')
    try {
      const { ready } = await request('isAdReady', { type })
      return { type, result: ready ? 'AD_LOADED' : 'AD_NOT_AVAILABLE' }
    } catch {
      return { type, result: 'AD_FAILED_TO_LOAD' }
    }
  }

  async function nativeFeaturesList() {
    requireInit('nativeFeaturesList')
    const welcome = await connect()
    return Array.isArray(welcome.features) ? welcome.features.filter((f) => typeof f === 'string') : []
  }

  function openShareDialog(title, message) {
    requireInit('openShareDialog')
    if (typeof title !== 'string' || typeof message !== 'string') {
      throw new PiSdkError('invalid_arguments', 'Pi.openShareDialog: title and message must be strings.')
    }
    request('openShareDialog', { title, message }).catch((error) => console.warn('Pi.openShareDialog:', error.message))
  }

  async function openUrlInSystemBrowser(url) {
    requireInit('openUrlInSystemBrowser')
    if (typeof url !== 'string' || httpOrigin(url) === undefined) {
      throw new PiSdkError('invalid_arguments', `Pi.openUrlInSystemBrowser: url must be an http or https URL, got ${describe(url)}.`)
    }
    await request('openUrl', { url })
  }

  /**
   * Where the app runs, as the platform's browser answers it: inside the sandbox page (its welcome
   * came) `pi-browser`; anywhere else (not in a frame, or no sandbox page answered) `web`. Never rejects:
   * apps use it to choose between the Pi flow and a plain web one. Works before init too.
   */
  async function getPiHostAppInfo() {
    try {
      await connect()
      return { hostApp: 'pi-browser' }
    } catch {
      return { hostApp: 'web' }
    }
  }

  /** Inside the sandbox page the user is in the platform's browser, on a phone with the mining app. */
  async function checkUserHasPiBrowser() {
    return { userHasPiBrowser: (await getPiHostAppInfo()).hostApp === 'pi-browser' }
  }

  async function checkUserHasMiningApp() {
    return { userHasMiningApp: (await getPiHostAppInfo()).hostApp === 'pi-browser' }
  }

  const Ads = Object.freeze({ showAd, isAdReady, requestAd })
  const Pi = Object.freeze({
    init,
    authenticate,
    createPayment,
    Ads,
    // The specification's name for showing an ad.
    displayAd: showAd,
    nativeFeaturesList,
    openShareDialog,
    openUrlInSystemBrowser,
    getPiHostAppInfo,
    checkUserHasPiBrowser,
    checkUserHasMiningApp,
  })
  return { Pi, PiSdkError }
}
