/**
 * What of a request's or response's body the request log keeps: secrets redacted, then cut to
 * a bound. Pure; the buffer applies it when it flushes, off the request's path.
 *
 * - A JSON member or form field whose name says secret (token, secret, seed, password, api key,
 *   authorization, private key) keeps its name, never its value.
 * - Anything shaped like a secret, wherever it stands: a run of 40 or more base64/base64url
 *   characters (keys and tokens are 43; a wallet seed is 56), except a 64-hex-digit ledger hash
 *   and a G… account address (public, and what one debugs with).
 */
export const MAX_BODY_CHARS = 8 * 1024
/** What the hot path keeps of a body before redaction (the rest is never looked at). */
export const CAPTURE_CHARS = 2 * MAX_BODY_CHARS
export const REDACTED = '[redacted]'

const SECRET_NAME = '[A-Za-z0-9_-]*(?:token|secret|seed|password|passphrase|api_?key|apikey|authorization|private_?key)[A-Za-z0-9_-]*'
const JSON_MEMBER = new RegExp(`("${SECRET_NAME}"\\s*:\\s*)("(?:[^"\\\\]|\\\\.)*"|[^,}\\]\\s]+)`, 'gi')
const FORM_FIELD = new RegExp(`((?:^|&)${SECRET_NAME}=)[^&]*`, 'gi')
// From the start of a run only (the lookbehind): retrying at every position inside shorter runs made
// this the costliest step of writing the log (28 µs for a payment's JSON; 5 µs this way).
const SECRET_SHAPED = /(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{40,}={0,2}/g
const SECRET_WORD = /token|secret|seed|passw|passphrase|api_?key|apikey|authorization|private_?key/i
/** Public and wanted when debugging: ledger hashes (txids) and account addresses (G…, never a seed's S…). */
const PUBLIC_SHAPE = /^(?:[0-9a-f]{64}|G[A-Z2-7]{55})$/

export function redactText(text: string): string {
  const named = SECRET_WORD.test(text) ? text.replace(JSON_MEMBER, `$1"${REDACTED}"`).replace(FORM_FIELD, `$1${REDACTED}`) : text
  return named.replace(SECRET_SHAPED, (run) => (PUBLIC_SHAPE.test(run) ? run : REDACTED))
}

/**
 * The stored form of a body: redacted, then at most MAX_BODY_CHARS characters. `cut` says the
 * capture already dropped the body's end: its last 64 characters are dropped too, so that no
 * secret cut in two (too short to look like one) survives at the edge.
 */
export function storedBody(text: string | undefined, cut = false): string | null {
  if (text === undefined || text === '') return null
  const whole = cut ? `${text.slice(0, -64)}…` : text
  const redacted = redactText(whole)
  return redacted.length <= MAX_BODY_CHARS ? redacted : `${redacted.slice(0, MAX_BODY_CHARS)}…[truncated]`
}

/** The body as the hot path keeps it: a string, at most CAPTURE_CHARS. */
export function captureBody(body: unknown): { text: string | undefined; cut: boolean } {
  if (body === undefined || body === null) return { text: undefined, cut: false }
  let text: string
  if (typeof body === 'string') text = body
  else if (Buffer.isBuffer(body)) text = body.subarray(0, CAPTURE_CHARS).toString('utf8')
  else {
    try {
      text = JSON.stringify(body) ?? ''
    } catch {
      return { text: undefined, cut: false }
    }
  }
  return text.length > CAPTURE_CHARS ? { text: text.slice(0, CAPTURE_CHARS), cut: true } : { text, cut: false }
}

/** The platform error code of an error answer's body (`{"error": "…"}`), if any. */
export function errorCodeOf(status: number, body: string | undefined): string | null {
  if (status < 400 || body === undefined) return null
  const match = /"error"\s*:\s*"([a-z_]{1,64})"/.exec(body)
  return match?.[1] ?? null
}
