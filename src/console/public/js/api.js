// @ts-check
// The sandbox API client: one place that sends the admin token and turns error answers into
// ApiFailure with a message a person can act on.

import { requestJson } from '../../../web/api/client.js'

const TOKEN_KEY = 'plinth.console.adminToken'

export class ApiFailure extends Error {
  /**
   * @param {number} status
   * @param {unknown} body the error answer, `{error, error_message}`
   */
  constructor(status, body) {
    const answer = /** @type {{ error?: unknown, error_message?: unknown } | null | undefined} */ (body)
    const code = answer && typeof answer.error === 'string' ? answer.error : undefined
    const text = answer && typeof answer.error_message === 'string' ? answer.error_message : undefined
    super(humanMessage(status, code, text))
    this.status = status
    this.code = code
  }
}

/**
 * A message for a person: no schema paths ("body/advance_seconds must be <= 316224000"), no bare
 * status numbers. The platform's own sentence is kept when it is one.
 * @param {number} status
 * @param {string | undefined} code
 * @param {string | undefined} text
 */
export function humanMessage(status, code, text) {
  if (status === 0) return 'Plinth did not answer: is it still running?'
  if (text !== undefined) {
    const raw = /^(body|querystring|params)\/(\S+) (.*)$/.exec(text)
    if (raw !== null) return `${raw[2].replaceAll('_', ' ')} ${raw[3]}`.replace(/^./, (c) => c.toUpperCase())
    return text
  }
  if (code !== undefined) return code.replaceAll('_', ' ').replace(/^./, (c) => c.toUpperCase())
  if (status >= 500) return 'Plinth failed to answer this request (a server error): see its log.'
  return `The request was refused (HTTP ${status}).`
}

let adminToken = sessionStorage.getItem(TOKEN_KEY) ?? ''
/** @type {(message: string) => void} */
let onTokenRefused = () => {}

/** @param {string} token */
export function setAdminToken(token) {
  adminToken = token
  sessionStorage.setItem(TOKEN_KEY, token)
}

/** @param {(message: string) => void} handler */
export function whenTokenRefused(handler) {
  onTokenRefused = handler
}

/** @typedef {import('../../../web/api/routes').Method} Method */
/**
 * @template {string} P
 * @template {Method} M
 * @typedef {import('../../../web/api/routes').Answer<P, M>} Answer
 */
/**
 * @template {string} P
 * @template {Method} M
 * @typedef {import('../../../web/api/routes').Body<P, M>} Body
 */

/**
 * One call with the admin token; answers the JSON (typed by the route `path` names) or throws ApiFailure.
 * @template {Method} M
 * @template {string} P
 * @param {M} method
 * @param {P} path
 * @param {Body<P, M>} [body]
 * @returns {Promise<Answer<P, M>>}
 */
export async function api(method, path, body) {
  // The console names itself: a body-less POST without it is refused (docs/security.md, "Requests from other sites").
  /** @type {Record<string, string>} */
  const headers = { 'x-plinth-client': 'console' }
  if (adminToken !== '') headers['x-admin-token'] = adminToken
  const reply = await requestJson(path, { method, headers, body })
  if (reply.status === 0) throw new ApiFailure(0, null)
  const data = reply.data ?? null
  if (!reply.ok) {
    const failure = new ApiFailure(reply.status, data)
    if (failure.code === 'invalid_admin_token') onTokenRefused(adminToken === '' ? '' : 'That token was refused.')
    throw failure
  }
  return /** @type {Answer<P, M>} */ (data)
}

/**
 * @template {string} P
 * @param {P} path
 */
export const get = (path) => api('GET', path)
/**
 * @template {string} P
 * @param {P} path
 * @param {Body<P, 'POST'>} [body]
 */
export const post = (path, body) => api('POST', path, body ?? /** @type {Body<P, 'POST'>} */ ({}))
/**
 * @template {string} P
 * @param {P} path
 * @param {Body<P, 'PUT'>} body
 */
export const put = (path, body) => api('PUT', path, body)
/**
 * @template {string} P
 * @param {P} path
 * @param {Body<P, 'PATCH'>} body
 */
export const patch = (path, body) => api('PATCH', path, body)
/**
 * @template {string} P
 * @param {P} path
 */
export const del = (path) => api('DELETE', path)
/** @param {string} value */
export const seg = (value) => encodeURIComponent(value)

/**
 * A query string from the values that are set (empty strings and undefined are left out).
 * @param {Record<string, unknown>} params
 * @returns {'' | `?${string}`}
 */
export function query(params) {
  const search = new URLSearchParams()
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== '') search.set(name, String(value))
  }
  const text = search.toString()
  return text === '' ? '' : `?${text}`
}

/**
 * A ledger (Horizon) read: public, no token. Null when the record does not exist.
 * @template {string} P
 * @param {P} path
 * @returns {Promise<Answer<`/ledger${P}`, 'GET'> | null>}
 */
export async function ledgerGet(path) {
  const response = await fetch(`/ledger${path}`, { headers: { accept: 'application/json' } })
  if (response.status === 404) return null
  const data = await response.json().catch(() => null)
  if (!response.ok) throw new ApiFailure(response.status, { error_message: data?.detail ?? data?.title })
  return data
}

/** @typedef {{ paths?: Record<string, Record<string, { operationId?: string }>> }} ServedDocument */
/** @type {Promise<ServedDocument> | undefined} */
let documented

/**
 * The OpenAPI document this Plinth serves (its routes, each method's operationId), read once per
 * page load; no routes when it cannot be read.
 * @returns {Promise<ServedDocument>}
 */
export function servedDocument() {
  documented ??= fetch('/docs/json')
    .then((response) => (response.ok ? response.json() : { paths: {} }))
    .catch(() => ({ paths: {} }))
  return documented
}

/**
 * Whether this Plinth serves a route (its OpenAPI document lists it).
 * @param {string} path
 */
export async function hasRoute(path, method = 'get') {
  const doc = await servedDocument()
  return doc.paths?.[path]?.[method] !== undefined
}
