import { unstorableText } from '../lib/text.js'

/**
 * The one rule for an app's name and frontend URL, applied by the sandbox API when an app is
 * created or edited (the console and the sandbox page send what it accepts). Pure.
 */
export const MAX_APP_NAME = 60
export const MAX_APP_URL = 500
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]'])

/** The name, stored exactly as given (lib/text.ts), or why not. */
export function checkAppName(name: string): { ok: true; value: string } | { ok: false; message: string } {
  const value = name
  // Spaces only read as no name; other text (a BOM included) is stored exactly as sent.
  if (/^ *$/.test(value)) return { ok: false, message: 'name must not be empty or blank.' }
  if ([...value].length > MAX_APP_NAME) return { ok: false, message: `name must be at most ${MAX_APP_NAME} characters.` }
  if (/\p{Cc}/u.test(value)) return { ok: false, message: 'name must not contain control characters (line breaks, tabs).' }
  const unstorable = unstorableText(value)
  if (unstorable !== undefined) return { ok: false, message: `name ${unstorable.message}.` }
  return { ok: true, value }
}

const originOf = (url: URL) => {
  const host = LOOPBACK.has(url.hostname) || url.hostname.startsWith('127.') ? 'loopback' : url.hostname
  const port = url.port === '' ? (url.protocol === 'https:' ? '443' : '80') : url.port
  return `${url.protocol}//${host}:${port}`
}

/**
 * The URL as given, or why not: an absolute http(s) URL, not on Plinth's own origin (the sandbox
 * page does not frame itself; localhost, 127.0.0.1 and [::1] count as one host).
 */
export function checkAppUrl(url: string, publicUrl: string): { ok: true; value: string } | { ok: false; message: string } {
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return { ok: false, message: 'url must be an absolute http:// or https:// URL, such as http://127.0.0.1:3000/.' }
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    return { ok: false, message: 'url must start with http:// or https://.' }
  }
  if (url.length > MAX_APP_URL) return { ok: false, message: `url must be at most ${MAX_APP_URL} characters.` }
  if (originOf(parsed) === originOf(new URL(publicUrl))) {
    return {
      ok: false,
      message: `url must be on another origin than Plinth's own (${new URL(publicUrl).origin}): serve the app from another port.`,
    }
  }
  return { ok: true, value: url }
}
