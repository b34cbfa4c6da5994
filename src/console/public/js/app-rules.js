// @ts-check
// The sandbox's rules for an app's name and URL (src/apps/app-rules.ts), checked before sending
// so the console accepts only what the sandbox will.

export const MAX_APP_NAME = 60
export const MAX_APP_URL = 500
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]'])

/** @param {string} name */
export function appNameProblem(name) {
  if (/^ *$/.test(name)) return 'The name must not be empty.'
  if ([...name].length > MAX_APP_NAME) return `The name must be at most ${MAX_APP_NAME} characters (it has ${[...name].length}).`
  if (/\p{Cc}/u.test(name)) return 'The name must not contain line breaks or tabs.'
  return null
}

/** @param {URL} url */
const originOf = (url) => {
  const host = LOOPBACK.has(url.hostname) || url.hostname.startsWith('127.') ? 'loopback' : url.hostname
  const port = url.port === '' ? (url.protocol === 'https:' ? '443' : '80') : url.port
  return `${url.protocol}//${host}:${port}`
}

/** @param {string} url */
export function appUrlProblem(url) {
  let parsed
  try {
    parsed = new URL(url)
  } catch {
    return 'The URL must be absolute, such as http://127.0.0.1:3000/.'
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return 'The URL must start with http:// or https://.'
  if (url.length > MAX_APP_URL) return `The URL must be at most ${MAX_APP_URL} characters.`
  if (originOf(parsed) === originOf(new URL(location.href))) {
    return `The app cannot be served from Plinth's own origin (${location.origin}): serve it from another port.`
  }
  return null
}
