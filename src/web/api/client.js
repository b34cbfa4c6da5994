// @ts-check
/**
 * The HTTP client under both pages' API modules (src/web/platform/api.js, src/console/public/js/api.js):
 * one same-origin JSON call. What a call answers is typed by the route its URL names (routes.d.ts,
 * from the OpenAPI document Plinth serves); each page adds its own headers (its name, the admin
 * token, the session cookie) and turns a refusal into its own error.
 */

/**
 * @typedef {import('./routes').Method} Method
 * @typedef {{ status: number, ok: boolean, data: unknown }} Reply
 */

/**
 * One call: `status` 0 when Plinth did not answer; `data` the parsed JSON body, if any.
 * @param {string} path
 * @param {{ method: Method, headers: Record<string, string>, body?: unknown, credentials?: RequestCredentials, cache?: RequestCache }} init
 * @returns {Promise<Reply>}
 */
export async function requestJson(path, { method, headers, body, credentials, cache }) {
  /** @type {Record<string, string>} */
  const sent = { accept: 'application/json', ...headers }
  if (body !== undefined) sent['content-type'] = 'application/json'
  /** @type {RequestInit} */
  const init = { method, headers: sent }
  if (body !== undefined) init.body = JSON.stringify(body)
  if (credentials !== undefined) init.credentials = credentials
  if (cache !== undefined) init.cache = cache
  let response
  try {
    response = await fetch(path, init)
  } catch {
    return { status: 0, ok: false, data: undefined }
  }
  const text = await response.text()
  let data
  try {
    data = text === '' ? undefined : JSON.parse(text)
  } catch {
    data = undefined
  }
  return { status: response.status, ok: response.ok, data }
}
