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

export const MAX_APP_DESCRIPTION = 500
/** An icon's data: URL, at most this many characters (about 36 KB of image). */
export const MAX_APP_ICON = 49_152
const ICON_TYPES: Record<string, (bytes: Buffer) => boolean> = {
  'image/png': (b) => b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
  'image/jpeg': (b) => b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff,
  'image/webp': (b) => b.subarray(0, 4).toString('latin1') === 'RIFF' && b.subarray(8, 12).toString('latin1') === 'WEBP',
}

/** A description: up to 500 characters of storable text; line breaks allowed, other control characters not. */
export function checkAppDescription(text: string): { ok: true; value: string } | { ok: false; message: string } {
  if ([...text].length > MAX_APP_DESCRIPTION)
    return { ok: false, message: `description must be at most ${MAX_APP_DESCRIPTION} characters.` }
  if (/[^\P{Cc}\n]/u.test(text)) return { ok: false, message: 'description must not contain control characters other than line breaks.' }
  const unstorable = unstorableText(text)
  if (unstorable !== undefined) return { ok: false, message: `description ${unstorable.message}.` }
  return { ok: true, value: text }
}

/**
 * An icon: a `data:` URL of a PNG, JPEG or WebP image whose bytes are what its type says (no SVG:
 * it can carry script), at most MAX_APP_ICON characters.
 */
export function checkAppIcon(dataUrl: string): { ok: true; value: string } | { ok: false; message: string } {
  const match = /^data:(image\/(?:png|jpeg|webp));base64,([A-Za-z0-9+/]+={0,2})$/.exec(dataUrl)
  const type = match?.[1]
  const check = type === undefined ? undefined : ICON_TYPES[type]
  if (match === null || check === undefined) {
    return { ok: false, message: 'icon must be a data:image/png, image/jpeg or image/webp URL, base64-encoded.' }
  }
  if (dataUrl.length > MAX_APP_ICON) return { ok: false, message: `icon must be at most ${MAX_APP_ICON} characters as a data: URL.` }
  if (!check(Buffer.from(match[2] ?? '', 'base64'))) return { ok: false, message: `icon's bytes are not a ${type} image.` }
  return { ok: true, value: dataUrl }
}
