// @ts-check
/**
 * The platform page's HTTP client, same origin only: in sandbox mode the sandbox API (with the
 * admin token when the platform has one), in production the account API (the session cookie,
 * JSON only); in both the client endpoints (with a user's access token).
 */

import { requestJson } from '../../web/api/client.js'

const ADMIN_TOKEN_KEY = 'plinth.adminToken'

export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {ErrorBody} body
   */
  constructor(status, body) {
    super(body?.error_message ?? body?.error ?? `The platform answered HTTP ${status}.`)
    this.name = 'ApiError'
    this.status = status
    this.code = typeof body?.error === 'string' ? body.error : 'unknown_error'
    this.body = body
  }
}

export const adminToken = () => sessionStorage.getItem(ADMIN_TOKEN_KEY) ?? undefined

/** @param {string | undefined} token */
export function setAdminToken(token) {
  if (token) sessionStorage.setItem(ADMIN_TOKEN_KEY, token)
  else sessionStorage.removeItem(ADMIN_TOKEN_KEY)
}

/** Told when a session call is refused because the session is over (`ApiError`, its `body.reason` saying why). */
/** @type {(error: ApiError) => void} */
let sessionEnded = () => {}
/** @param {(error: ApiError) => void} listener */
export function onSessionEnded(listener) {
  sessionEnded = listener
}

/**
 * @typedef {import('../api/routes').Method} Method
 * @typedef {{ error?: string, error_message?: string, reason?: string } | undefined} ErrorBody
 */
/**
 * @template {string} P
 * @template {Method} M
 * @typedef {{ method?: M, body?: import('../api/routes').Body<P, M>, token?: string, admin?: boolean, session?: boolean, background?: boolean }} CallOptions
 */

/**
 * One call; answers the parsed JSON (typed by the route `path` names) or throws ApiError with the
 * platform's code and message. `background`: no person asked for it (a poll, a refresh): the server
 * does not count it as the session's activity, so an open page never keeps an idle session alive
 * (docs/accounts.md, "Sessions").
 * @template {string} P
 * @template {Method} [M='GET']
 * @param {P} path
 * @param {CallOptions<P, M>} [options]
 * @returns {Promise<import('../api/routes').Answer<P, M>>}
 */
export async function call(path, options = {}) {
  const { method = 'GET', token, admin = false, session = false, background = false } = options
  /** @type {unknown} */
  let body = options.body
  // The page names itself: a body-less POST without it is refused (docs/security.md, "Requests from other sites").
  /** @type {Record<string, string>} */
  const headers = { 'x-plinth-client': 'platform-page' }
  if (background) headers['x-plinth-background'] = '1'
  // The account API takes JSON only, a body-less call included.
  if (session && method !== 'GET' && body === undefined) body = {}
  if (token !== undefined) headers.authorization = `Bearer ${token}`
  const admins = admin ? adminToken() : undefined
  if (admins !== undefined) headers['x-admin-token'] = admins
  // Only the account API needs the session cookie; nothing else is sent with it.
  const reply = await requestJson(path, { method, headers, body, cache: 'no-store', credentials: session ? 'same-origin' : 'omit' })
  if (reply.status === 0) throw new ApiError(0, { error: 'network_error', error_message: 'Plinth did not answer: is it still running?' })
  if (!reply.ok) {
    const error = new ApiError(reply.status, /** @type {ErrorBody} */ (reply.data))
    if (session && error.code === 'session_required') sessionEnded(error)
    throw error
  }
  return /** @type {import('../api/routes').Answer<P, M>} */ (reply.data)
}

/**
 * The sandbox API: acting as the platform.
 * @template {string} P
 * @template {Method} [M='GET']
 * @param {P} path
 * @param {CallOptions<P, M>} [options]
 */
export const sandbox = (path, options = {}) => call(path, { ...options, admin: true })

/**
 * The account API (production): the signed-in person, by the session cookie.
 * @template {string} P
 * @template {Method} [M='GET']
 * @param {P} path
 * @param {CallOptions<P, M>} [options]
 */
export const account = (path, options = {}) => call(path, { ...options, session: true })
