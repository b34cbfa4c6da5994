// The sandbox API client: one place that sends the admin token and turns error answers into
// ApiFailure with a message a person can act on.

const TOKEN_KEY = 'plinth.console.adminToken'

export class ApiFailure extends Error {
  constructor(status, body) {
    const code = body && typeof body.error === 'string' ? body.error : undefined
    const text = body && typeof body.error_message === 'string' ? body.error_message : undefined
    super(humanMessage(status, code, text))
    this.status = status
    this.code = code
  }
}

/**
 * A message for a person: no schema paths ("body/advance_seconds must be <= 316224000"), no bare
 * status numbers. The platform's own sentence is kept when it is one.
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
let onTokenRefused = () => {}

export function setAdminToken(token) {
  adminToken = token
  sessionStorage.setItem(TOKEN_KEY, token)
}

export function whenTokenRefused(handler) {
  onTokenRefused = handler
}

export async function api(method, path, body) {
  // The console names itself: a body-less POST without it is refused (docs/security.md, "Requests from other sites").
  const headers = { accept: 'application/json', 'x-plinth-client': 'console' }
  if (body !== undefined) headers['content-type'] = 'application/json'
  if (adminToken !== '') headers['x-admin-token'] = adminToken
  let response
  try {
    response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  } catch {
    throw new ApiFailure(0, null)
  }
  const data = await response.json().catch(() => null)
  if (!response.ok) {
    const failure = new ApiFailure(response.status, data)
    if (failure.code === 'invalid_admin_token') onTokenRefused(adminToken === '' ? '' : 'That token was refused.')
    throw failure
  }
  return data
}

export const get = (path) => api('GET', path)
export const post = (path, body) => api('POST', path, body ?? {})
export const put = (path, body) => api('PUT', path, body)
export const patch = (path, body) => api('PATCH', path, body)
export const del = (path) => api('DELETE', path)
export const seg = (value) => encodeURIComponent(value)

/** A query string from the values that are set (empty strings and undefined are left out). */
export function query(params) {
  const search = new URLSearchParams()
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== '') search.set(name, String(value))
  }
  const text = search.toString()
  return text === '' ? '' : `?${text}`
}

/** A ledger (Horizon) read: public, no token. Null when the record does not exist. */
export async function ledgerGet(path) {
  const response = await fetch(`/ledger${path}`, { headers: { accept: 'application/json' } })
  if (response.status === 404) return null
  const data = await response.json().catch(() => null)
  if (!response.ok) throw new ApiFailure(response.status, { error_message: data?.detail ?? data?.title })
  return data
}

let documented
/** Whether this Plinth serves a route (its OpenAPI document lists it), asked once per page load. */
export async function hasRoute(path, method = 'get') {
  documented ??= fetch('/docs/json')
    .then((response) => (response.ok ? response.json() : { paths: {} }))
    .catch(() => ({ paths: {} }))
  const doc = await documented
  return doc.paths?.[path]?.[method] !== undefined
}
