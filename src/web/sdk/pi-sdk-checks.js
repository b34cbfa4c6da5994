// @ts-check
/**
 * The client SDK's error and its checks of what an app passes: served before pi-sdk-core.js in
 * the same wrapper (src/web/sdk-routes.ts), never on its own; createPi calls createPiChecks once.
 */

// biome-ignore lint/correctness/noUnusedVariables: pi-sdk-core.js calls it, in the same served script (src/web/sdk-routes.ts)
function createPiChecks() {
  class PiSdkError extends Error {
    /**
     * @param {string} code
     * @param {string} message
     * @param {{ payment?: unknown }} [details]
     */
    constructor(code, message, details) {
      super(message)
      this.name = 'PiSdkError'
      this.code = code
      if (details !== undefined) this.details = details
      /** Set on a payment's onError only (a failed Pay the user may try again): never an own property otherwise. @type {boolean | undefined} */
      this.retryable
    }
  }

  /**
   * @param {unknown} value
   * @returns {value is Record<string, unknown>}
   */
  const isObject = (value) => typeof value === 'object' && value !== null && !Array.isArray(value)
  /** @param {unknown} url */
  const httpOrigin = (url) => {
    try {
      const parsed = new URL(/** @type {string} */ (url))
      return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.origin : undefined
    } catch {
      return undefined
    }
  }
  /** @param {number} bytes */
  const randomHex = (bytes) => Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, '0')).join('')

  /** @param {unknown} value */
  const describe = (value) => {
    if (typeof value === 'string') return JSON.stringify(value.slice(0, 40))
    if (Array.isArray(value)) return 'an array'
    if (typeof value === 'number' || typeof value === 'boolean') return `${typeof value} ${String(value)}`
    return value === null ? 'null' : typeof value
  }

  return { PiSdkError, isObject, httpOrigin, randomHex, describe }
}
