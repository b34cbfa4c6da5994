/**
 * The platform page's HTTP client, same origin only: in sandbox mode the sandbox API (with the
 * admin token when the platform has one), in production the account API (the session cookie,
 * JSON only); in both the client endpoints (with a user's access token).
 */

const ADMIN_TOKEN_KEY = 'plinth.adminToken'

export class ApiError extends Error {
  constructor(status, body) {
    super(body?.error_message ?? body?.error ?? `The platform answered HTTP ${status}.`)
    this.name = 'ApiError'
    this.status = status
    this.code = typeof body?.error === 'string' ? body.error : 'unknown_error'
    this.body = body
  }
}

export const adminToken = () => sessionStorage.getItem(ADMIN_TOKEN_KEY) ?? undefined

export function setAdminToken(token) {
  if (token) sessionStorage.setItem(ADMIN_TOKEN_KEY, token)
  else sessionStorage.removeItem(ADMIN_TOKEN_KEY)
}

/** Told when a session call is refused because the session is over (`ApiError`, its `body.reason` saying why). */
let sessionEnded = () => {}
export function onSessionEnded(listener) {
  sessionEnded = listener
}

/**
 * One call; answers the parsed JSON or throws ApiError with the platform's code and message.
 * `background`: no person asked for it (a poll, a refresh): the server does not count it as the
 * session's activity, so an open page never keeps an idle session alive (docs/accounts.md, "Sessions").
 */
export async function call(path, { method = 'GET', body, token, admin = false, session = false, background = false } = {}) {
  // The page names itself: a body-less POST without it is refused (docs/security.md, "Requests from other sites").
  const headers = { accept: 'application/json', 'x-plinth-client': 'platform-page' }
  if (background) headers['x-plinth-background'] = '1'
  // The account API takes JSON only, a body-less call included.
  if (session && method !== 'GET' && body === undefined) body = {}
  if (body !== undefined) headers['content-type'] = 'application/json'
  if (token !== undefined) headers.authorization = `Bearer ${token}`
  const admins = admin ? adminToken() : undefined
  if (admins !== undefined) headers['x-admin-token'] = admins
  let response
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
      // Only the account API needs the session cookie; nothing else is sent with it.
      credentials: session ? 'same-origin' : 'omit',
    })
  } catch {
    throw new ApiError(0, { error: 'network_error', error_message: 'Plinth did not answer: is it still running?' })
  }
  const text = await response.text()
  let data
  try {
    data = text === '' ? undefined : JSON.parse(text)
  } catch {
    data = undefined
  }
  if (!response.ok) {
    const error = new ApiError(response.status, data)
    if (session && error.code === 'session_required') sessionEnded(error)
    throw error
  }
  return data
}

/** The sandbox API: acting as the platform. */
export const sandbox = (path, options = {}) => call(path, { ...options, admin: true })

/** The account API (production): the signed-in person, by the session cookie. */
export const account = (path, options = {}) => call(path, { ...options, session: true })
