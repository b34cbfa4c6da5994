// @ts-check
/**
 * The sandbox page's end of the SDK protocol (docs/sandbox-browser.md). A message counts only
 * when it comes from the app's iframe window and from the app's origin; every answer is posted
 * to that origin only, so an app frame that navigated elsewhere receives nothing.
 */

/**
 * A request's way back to the app (its page load's session and its id).
 * @typedef {{
 *   active(): boolean,
 *   result(value: unknown, keepOpen?: boolean): void,
 *   error(code: string, message: string, payment?: unknown): void,
 *   event(name: string, args: unknown[], final?: boolean): void,
 *   end(): void,
 *   onAbort(abort: () => void): void,
 * }} Channel
 * @typedef {(params: Record<string, unknown>, reply: Channel) => unknown} Handler what the page does for one SDK method
 */

export const PROTOCOL = 'plinth-pi-sdk/1'
const SESSION = /^[0-9a-f]{32}$/
/**
 * @param {unknown} value
 * @returns {value is Record<string, unknown>}
 */
const isObject = (value) => typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * `frame` is the app's iframe, `currentApp()` the open app (`{ origin, … }`) or undefined,
 * `handlers` maps SDK methods to `(params, channel) => …`, `features` answers nativeFeaturesList.
 * `onSession(id)` runs when a new page load of the app speaks: what the old one started is aborted.
 * @param {{
 *   frame: HTMLIFrameElement,
 *   currentApp: () => { origin: string } | undefined,
 *   handlers: Record<string, Handler>,
 *   features: string[],
 *   onSession: (session: string) => void,
 *   onOriginMismatch?: (hostOrigin: string) => void,
 * }} options
 */
export function createBridge({ frame, currentApp, handlers, features, onSession, onOriginMismatch }) {
  /** @type {string | undefined} */
  let session
  /** @type {Set<() => void>} */
  let aborts = new Set()

  /**
   * @param {string | undefined} forSession
   * @param {Record<string, unknown>} message
   */
  const post = (forSession, message) => {
    const app = currentApp()
    if (app === undefined || forSession !== session || frame.contentWindow === null) return false
    frame.contentWindow.postMessage({ protocol: PROTOCOL, session: forSession, ...message }, app.origin)
    return true
  }

  const reset = () => {
    for (const abort of aborts) abort()
    aborts = new Set()
    session = undefined
  }

  /**
   * @param {string} forSession
   * @param {number} id
   * @returns {Channel}
   */
  const channel = (forSession, id) => {
    let done = false
    /** @type {Set<() => void>} */
    const own = new Set()
    const finish = () => {
      done = true
      for (const abort of own) aborts.delete(abort)
    }
    return {
      /** Whether this request's page load is still the app's current one. */
      active: () => forSession === session,
      /** Answers the request; a `keepOpen` one (a payment) goes on with events until a final one. */
      result(value, keepOpen = false) {
        if (done) return
        post(forSession, { type: 'result', id, result: value })
        if (!keepOpen) finish()
      },
      /** Ends the request with an error; `payment` rides along when one is concerned. */
      error(code, message, payment) {
        if (done) return
        post(forSession, { type: 'error', id, error: payment ? { code, message, payment } : { code, message } })
        finish()
      },
      event(name, args, final = false) {
        if (done) return
        post(forSession, { type: 'event', id, name, args, final })
        if (final) finish()
      },
      end: finish,
      /** Runs `abort` if the app reloads or closes before the request ended. */
      onAbort(abort) {
        own.add(abort)
        aborts.add(abort)
      },
    }
  }

  window.addEventListener('message', (event) => {
    const app = currentApp()
    if (app === undefined || event.source !== frame.contentWindow || event.origin !== app.origin) return
    /** @type {unknown} */
    const message = event.data
    if (isObject(message) && message.protocol === PROTOCOL && message.type === 'origin_probe') {
      if (typeof message.host_origin === 'string' && message.host_origin !== location.origin)
        onOriginMismatch?.(message.host_origin.slice(0, 200))
      return
    }
    if (!isObject(message) || message.protocol !== PROTOCOL || typeof message.session !== 'string' || !SESSION.test(message.session)) return
    if (message.session !== session) {
      reset()
      session = message.session
      onSession(session)
    }
    if (message.type === 'hello') {
      post(session, { type: 'welcome', features })
      return
    }
    const id = message.id
    if (message.type !== 'request' || typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1) return
    const reply = channel(session, id)
    const method = message.method
    const params = message.params
    const handler = typeof method === 'string' && Object.hasOwn(handlers, method) ? handlers[method] : undefined
    if (handler === undefined || !isObject(params)) {
      reply.error('invalid_arguments', `The sandbox page does not know the request ${String(message.method).slice(0, 40)}.`)
      return
    }
    Promise.resolve()
      .then(() => handler(params, reply))
      .catch((/** @type {{ code?: unknown, message?: string } | null | undefined} */ error) => {
        console.error(`sandbox: ${method} failed`, error)
        reply.error(typeof error?.code === 'string' ? error.code : 'unknown_error', error?.message ?? 'The sandbox page failed.')
      })
  })

  return { reset, currentSession: () => session }
}
