// @ts-check
/**
 * Plinth's client SDK: the interface of the live platform's browser SDK (`window.Pi`), for
 * apps opened in Plinth's sandbox browser (`/sandbox/`). It runs in the app's iframe and
 * talks to the sandbox page, its parent, only through `postMessage`, checking both the
 * sending window and its origin; docs/sandbox-browser.md describes the protocol.
 *
 * This file is served wrapped, never on its own (src/web/sdk-routes.ts), after pi-sdk-checks.js: `/sdk/pi-sdk.js`
 * (a classic script that sets `window.Pi`) and `/sdk/pi-sdk.mjs` (an ES module exporting `Pi`).
 * Its types are `pi-sdk.d.ts` beside it: the interface as the live platform documents it.
 */

/**
 * @typedef {import('./pi-sdk').PiSdk} PiSdk
 * @typedef {import('./pi-sdk').InitConfig} InitConfig
 * @typedef {import('./pi-sdk').Scope} Scope
 * @typedef {import('./pi-sdk').AuthUser} AuthUser
 * @typedef {import('./pi-sdk').AuthResult} AuthResult
 * @typedef {import('./pi-sdk').PaymentDTO} PaymentDTO
 * @typedef {import('./pi-sdk').PaymentData} PaymentData
 * @typedef {import('./pi-sdk').PaymentCallbacks} PaymentCallbacks
 * @typedef {import('./pi-sdk').AdType} AdType
 * @typedef {import('./pi-sdk').ShowAdResponse} ShowAdResponse
 * @typedef {import('./pi-sdk').IsAdReadyResponse} IsAdReadyResponse
 * @typedef {import('./pi-sdk').RequestAdResponse} RequestAdResponse
 * @typedef {import('./pi-sdk').NativeFeature} NativeFeature
 * @typedef {import('./pi-sdk').HostAppInfo} HostAppInfo
 * @typedef {Record<string, unknown>} Message a message of the protocol, once checked to be an object
 * @typedef {{ accessToken: string, user: AuthUser, incompletePayment: PaymentDTO | null }} AuthAnswer what the sandbox page answers to authenticate
 * @typedef {{ resolve: (value: unknown) => void, reject: (error: unknown) => void, onEvent?: (name: string, args: unknown[]) => void, keepOpen: boolean }} Pending
 * @typedef {{ onEvent?: (name: string, args: unknown[]) => void, keepOpen?: boolean }} Handlers
 */

/**
 * Creates the SDK; `env.scriptUrl` is where it was loaded from (the sandbox page's origin by default).
 * @param {{ scriptUrl: string | undefined }} env
 */
// biome-ignore lint/correctness/noUnusedVariables: the served pi-sdk.js and pi-sdk.mjs call it (src/web/sdk-routes.ts)
function createPi(env) {
  const PROTOCOL = 'plinth-pi-sdk/1'
  const SDK_VERSION = '2.0'
  const MAX_SCOPES = 16
  const AD_TYPES = ['rewarded', 'interstitial']
  const HELLO_TIMEOUT_MS = 3000

  const { PiSdkError, isObject, httpOrigin, randomHex, describe } = createPiChecks()

  // One id per page load: the sandbox page drops what belongs to an earlier load of the app.
  const session = randomHex(16)
  /** @type {Map<number, Pending>} */
  const pending = new Map()
  let nextId = 1
  /** Once init ran. @type {{ version: string, sandbox: boolean, hostOrigin: string } | undefined} */
  let settings
  /** Once authenticate resolved. @type {{ user: AuthUser, scopes: string[] } | undefined} */
  let authenticated
  /** @type {unknown} */
  let onIncompletePaymentFound
  /** The host's welcome. @type {Promise<Message> | undefined} */
  let connection
  /** Resolves connection. @type {((welcome: Message) => void) | undefined} */
  let welcomed
  /** The authenticate request in flight, shared by calls in the same tick (React's StrictMode). @type {{ key: string, result: Promise<AuthAnswer>, notified: Set<unknown> } | undefined} */
  let authInFlight

  /**
   * Calls an app callback; a callback that throws or rejects is reported, never breaks the SDK.
   * @param {string} name
   * @param {unknown} callback what the app gave (anything)
   * @param {...unknown} args
   */
  const invoke = (name, callback, ...args) => {
    if (typeof callback !== 'function') return
    try {
      const result = /** @type {(...args: unknown[]) => unknown} */ (callback)(...args)
      // A promise, or anything with a catch method (a thenable of the app's).
      const thenable = /** @type {{ catch?: unknown } | null | undefined} */ (result)
      if (thenable && typeof thenable.catch === 'function')
        /** @type {Promise<unknown>} */ (thenable).catch((error) => console.error(`Pi: ${name} rejected`, error))
    } catch (error) {
      console.error(`Pi: ${name} threw`, error)
    }
  }

  /** @param {string} method */
  const requireInit = (method) => {
    if (settings === undefined) {
      throw new PiSdkError('not_initialized', `Pi.${method}: call Pi.init({ version: "2.0" }) first.`)
    }
  }

  /**
   * @param {string} method
   * @param {unknown} type what the app passed
   */
  const checkAdType = (method, type) => {
    if (!AD_TYPES.includes(/** @type {string} */ (type))) {
      throw new PiSdkError(
        'invalid_arguments',
        `Pi.Ads.${method}: the ad type must be "rewarded" or "interstitial", got ${describe(type)}.`,
      )
    }
  }

  /** The sandbox page's origin: init's, or before init (getPiHostAppInfo) the origin the SDK was loaded from. */
  const currentHostOrigin = () => (settings === undefined ? httpOrigin(env.scriptUrl) : settings.hostOrigin)

  /**
   * Posts to the sandbox page; only after connect() found its origin (hence the string).
   * @param {Message} message
   */
  const post = (message) => {
    window.parent.postMessage({ protocol: PROTOCOL, session, ...message }, /** @type {string} */ (currentHostOrigin()))
  }

  window.addEventListener('message', (event) => {
    // Only the parent window, from the sandbox page's origin, speaks for the platform.
    const origin = currentHostOrigin()
    if (origin === undefined || event.source !== window.parent || event.origin !== origin) return
    /** @type {unknown} */
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
      if (!entry.keepOpen) pending.delete(/** @type {number} */ (message.id))
      entry.resolve(message.result)
    } else if (message.type === 'error') {
      pending.delete(/** @type {number} */ (message.id))
      const error = isObject(message.error) ? message.error : {}
      const details = isObject(error.payment) ? { payment: error.payment } : undefined
      entry.reject(new PiSdkError(String(error.code ?? 'unknown_error'), String(error.message ?? 'The sandbox page refused.'), details))
    } else if (message.type === 'event' && typeof message.name === 'string') {
      if (message.final === true) pending.delete(/** @type {number} */ (message.id))
      entry.onEvent?.(message.name, Array.isArray(message.args) ? message.args : [])
    }
  })

  // The sandbox page's dialogs take the focus from the app's frame and give it back on close; Chrome
  // then lands on the app's <body>. The element that had it when the app asked (its Buy button) gets it back.
  /** @type {Element | undefined} */
  let focusAtRequest
  if (window.parent !== window) {
    window.addEventListener('focus', () => {
      const element = focusAtRequest
      focusAtRequest = undefined
      const lost = document.activeElement === null || document.activeElement === document.body
      if (lost && element instanceof HTMLElement && element !== document.body && element.isConnected) element.focus()
    })
  }

  /**
   * Says hello to the sandbox page once; every request waits for its welcome.
   * @returns {Promise<Message>}
   */
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

  /**
   * One request to the sandbox page; `keepOpen` requests also receive events until a final one.
   * What it resolves with is the sandbox page's answer to `method` (docs/sandbox-browser.md), typed by the caller.
   * @template [T=unknown]
   * @param {string} method
   * @param {Message} params
   * @param {Handlers} [handlers]
   * @returns {Promise<T>}
   */
  const request = async (method, params, handlers = {}) => {
    await connect()
    const active = globalThis.document?.activeElement
    if (active && active !== document.body) focusAtRequest = active
    const id = nextId++
    return new Promise((resolve, reject) => {
      pending.set(id, {
        resolve: /** @type {(value: unknown) => void} */ (resolve),
        reject,
        onEvent: handlers.onEvent,
        keepOpen: handlers.keepOpen === true,
      })
      post({ type: 'request', id, method, params })
    })
  }

  /** @param {InitConfig} config */
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

  /**
   * @param {Scope[]} scopes
   * @param {(payment: PaymentDTO) => unknown} [onIncomplete]
   * @returns {Promise<AuthResult>}
   */
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
      const current = {
        key,
        result: before.then(() => /** @type {Promise<AuthAnswer>} */ (request('authenticate', { scopes: unique }))),
        notified: new Set(),
      }
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

  /** @type {Array<keyof PaymentCallbacks>} */
  const CALLBACKS = ['onReadyForServerApproval', 'onReadyForServerCompletion', 'onCancel', 'onError']

  /**
   * @param {PaymentData} paymentData
   * @param {PaymentCallbacks} callbacks
   * @returns {Promise<PaymentDTO>}
   */
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

    /**
     * @param {string} name
     * @param {unknown[]} args
     */
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
    /** @type {Promise<PaymentDTO>} */
    const created = request('createPayment', { amount, memo, metadata: metadata ?? {} }, { onEvent, keepOpen: true })
    // A PiSdkError, or what postMessage threw (metadata it cannot clone): code and details are read only if there.
    created.catch((/** @type {{ code?: unknown, details?: { payment?: unknown } }} */ error) => {
      const payment = error.details?.payment
      // The live platform hands a paid but uncompleted payment that blocks this one to onIncompletePaymentFound.
      if (error.code === 'ongoing_payment_found' && payment) invoke('onIncompletePaymentFound', onIncompletePaymentFound, payment)
      invoke('onError', callbacks.onError, error, payment)
    })
    return created
  }

  // The platform's ad routes need this scope of the access token (src/ads/ad-rules.ts, ADS_SCOPE).
  const ADS_SCOPE = 'payments'
  /**
   * @param {string} name
   * @param {{ scopes: string[] }} signedIn what authenticate resolved
   */
  function requireAdsScope(name, signedIn) {
    if (!signedIn.scopes.includes(ADS_SCOPE)) {
      throw new PiSdkError(
        'missing_scope',
        `Pi.Ads.${name}: ads need the "${ADS_SCOPE}" scope; include it in Pi.authenticate (["username", "${ADS_SCOPE}"] is the minimum).`,
      )
    }
  }

  /**
   * @param {AdType} type
   * @returns {Promise<ShowAdResponse>}
   */
  async function showAd(type) {
    requireInit('Ads.showAd')
    checkAdType('showAd', type)
    if (authenticated === undefined) return { type, result: 'USER_UNAUTHENTICATED' }
    requireAdsScope('showAd', authenticated)
    return request('showAd', { type })
  }

  /**
   * @param {AdType} type
   * @returns {Promise<IsAdReadyResponse>}
   */
  async function isAdReady(type) {
    requireInit('Ads.isAdReady')
    checkAdType('isAdReady', type)
    if (authenticated === undefined) return { type, ready: false }
    requireAdsScope('isAdReady', authenticated)
    return request('isAdReady', { type })
  }

  /**
   * @param {AdType} type
   * @returns {Promise<RequestAdResponse>}
   */
  async function requestAd(type) {
    requireInit('Ads.requestAd')
    checkAdType('requestAd', type)
    if (authenticated === undefined) return { type, result: 'AD_NOT_AVAILABLE' }
    requireAdsScope('requestAd', authenticated)
    try {
      const { ready } = /** @type {IsAdReadyResponse} */ (await request('isAdReady', { type }))
      return { type, result: ready ? 'AD_LOADED' : 'AD_NOT_AVAILABLE' }
    } catch {
      return { type, result: 'AD_FAILED_TO_LOAD' }
    }
  }

  /** @returns {Promise<NativeFeature[]>} */
  async function nativeFeaturesList() {
    requireInit('nativeFeaturesList')
    const welcome = await connect()
    /** @type {unknown} */
    const features = welcome.features
    // The page names the features it has (NativeFeature); any non-string is dropped.
    return Array.isArray(features) ? /** @type {NativeFeature[]} */ (features.filter((f) => typeof f === 'string')) : []
  }

  /**
   * @param {string} title
   * @param {string} message
   */
  function openShareDialog(title, message) {
    requireInit('openShareDialog')
    if (typeof title !== 'string' || typeof message !== 'string') {
      throw new PiSdkError('invalid_arguments', 'Pi.openShareDialog: title and message must be strings.')
    }
    request('openShareDialog', { title, message }).catch((/** @type {Error} */ error) => console.warn('Pi.openShareDialog:', error.message))
  }

  /** @param {string} url */
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
   * @returns {Promise<HostAppInfo>}
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
  /** @type {Readonly<PiSdk>} */
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
