/**
 * What of a request the request log keeps: its path, query, headers and bodies, secrets redacted,
 * then cut to a bound. Pure; the buffer applies it when it flushes, off the request's path.
 *
 * Two rules, wherever the text stands (the path, a request id, a JSON body at any depth and in
 * member names, a form body, raw text; percent-encoded, JSON-escaped or base64-wrapped):
 *
 * - By name: a JSON member or form/query field whose name says secret (token, secret, seed,
 *   password, api key, authorization, private key) keeps its name, never its value, whatever the
 *   value is (a string, a number, a whole array or object).
 * - By shape: a run of 40 or more base64, base64url or base32 characters that is random (keys
 *   and access tokens are 43 base64url characters, a wallet seed `S…` 56 base32, a key's bytes
 *   in standard base64 44). Not what one debugs with: a 64-hex-digit hash (txids), an account
 *   address (G… or M…), platform ids, uids and payment ids (under 40 characters), a run of one
 *   case of letters (words, hex, snake_case), and a base64 run that decodes to plain text (paging
 *   cursors), whose text is searched in turn. The hex of a secret's bytes is a 64-hex-digit run
 *   like any txid and cannot be told from one.
 */
export const MAX_BODY_CHARS = 8 * 1024
/** What the hot path keeps of a body before redaction (the rest is never looked at). */
export const CAPTURE_CHARS = 2 * MAX_BODY_CHARS
export const MAX_PATH_CHARS = 1000
export const REDACTED = '[redacted]'

/** A member or field name that says secret. */
const SECRET_NAME = /token|secret|seed|passw|passphrase|api[-_]?key|authorization|private[-_]?key/i
/** Runs of base64 / base64url characters (with `/`, split again when the run is a path), padding included. */
const RUN = /(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{40,}={0,2}/g
/**
 * Runs of URL characters and percent-escapes, from their start only (linear, however long), and
 * without `/`, so that a path's segments are judged one by one.
 */
const URL_RUN = /(?<![A-Za-z0-9+_.~-]|%[0-9A-Fa-f]{2})(?:[A-Za-z0-9+_.~-]|%[0-9A-Fa-f]{2})+/g
/** `name=value` in a form body or a query string. */
const FIELD = /(^|[?&])([^=&#?\s"]{1,200})=([^&#\s"]*)/g
/** A JSON string literal (one reading of each character: linear). */
const STRING_LITERAL = /"(?:[^"\\\n]|\\.)*"/g
/** Public and wanted when debugging: a hash (txids, in either case) and account addresses (G…, M…; never a seed's S…). */
const PUBLIC_SHAPE = /^(?:[0-9a-fA-F]{64}|G[A-Z2-7]{55}|M[A-Z2-7]{68})$/
const WORD = /^(?:[A-Z]?[a-z]+|[0-9]+)$/
/** A wrapped text is searched this many levels deep (base64 of percent-encoding of base64…). */
const MAX_UNWRAP = 3
/** A parsed JSON body is walked this deep; below, what is there is searched as text. */
const MAX_DEPTH = 64

/** Whether `run` (a run of RUN) is a secret as a whole. */
function secretRun(run: string, level: number): boolean {
  const body = run.replace(/=+$/, '')
  if (body.length < 40 || PUBLIC_SHAPE.test(body)) return false
  if (/^[0-9a-fA-F]+$/.test(body)) return body.length % 2 === 0 && wrapsSecret(Buffer.from(body, 'hex'), level)
  // A seed, whole or in part (base32, one case): S… and any other such run but an address.
  if (/^[A-Z2-7]+$/.test(body)) return true
  const standard = /[+/]/.test(body)
  // Both alphabets at once is no single encoding: a path (`/v2/payments/<key>`), split by the caller.
  if (standard && /[_-]/.test(body)) return false
  if (body.startsWith('/') && !body.includes('+') && body.length === run.length) return false
  const bytes = Buffer.from(body, standard ? 'base64' : 'base64url')
  if (printable(bytes)) return wrapsSecret(bytes, level)
  // Words joined by `+`, `_` or `-` (a form-encoded sentence, an identifier): no key reads so (1 in 10^15).
  const pieces = body.split(/[+_-]/)
  if (pieces.length >= 3 && pieces.every((piece) => WORD.test(piece))) return false
  // Random bytes: a key, a token or a seed's bytes in base64 have both cases (all but 1 in 10^9).
  return /[a-z]/.test(body) && /[A-Z]/.test(body)
}

function printable(bytes: Buffer): boolean {
  for (const byte of bytes) if ((byte < 0x20 || byte > 0x7e) && byte !== 0x09 && byte !== 0x0a && byte !== 0x0d) return false
  return bytes.length > 0
}

/** Whether a wrapped text (the bytes a run decodes to, a percent-decoded run) holds a secret. */
function wrapsSecret(bytes: Buffer | string, level: number): boolean {
  if (level >= MAX_UNWRAP) return false
  const text = typeof bytes === 'string' ? bytes : bytes.toString('latin1')
  return redactString(text, level + 1) !== text
}

function percentDecoded(run: string): string {
  try {
    return decodeURIComponent(run)
  } catch {
    // Not UTF-8 once decoded: byte by byte (the secrets' alphabets are ASCII).
    return run.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)))
  }
}

/** A string with every secret in it replaced (both rules; the text is not JSON, or is one JSON string's value). */
function redactString(text: string, level = 0): string {
  let out = text
  if (out.includes('=') && SECRET_NAME.test(out)) {
    out = out.replace(FIELD, (field, lead: string, name: string) => (SECRET_NAME.test(name) ? `${lead}${name}=${REDACTED}` : field))
  }
  if (!out.includes('%')) return redactRuns(out, level)
  // A percent-encoded run is judged as it reads decoded, and only so (its escapes' hex digits are no run).
  let result = ''
  let from = 0
  for (const match of out.matchAll(URL_RUN)) {
    if (!match[0].includes('%')) continue
    result += redactRuns(out.slice(from, match.index), level)
    result += wrapsSecret(percentDecoded(match[0]), level) ? REDACTED : match[0]
    from = match.index + match[0].length
  }
  return result + redactRuns(out.slice(from), level)
}

function redactRuns(text: string, level: number): string {
  if (text.length < 40) return text
  return text.replace(RUN, (run) => {
    if (secretRun(run, level)) return REDACTED
    if (!run.includes('/')) return run
    // A path or a path-like run: each segment on its own.
    return run
      .split('/')
      .map((segment) => (secretRun(segment, level) ? REDACTED : segment))
      .join('/')
  })
}

/** Whether a short value (a path segment, a request id) holds a secret: then all of it goes. */
function holdsSecret(value: string): boolean {
  return redactString(value) !== value
}

/**
 * The stored path: without the query (stored apart: storedQuery), each segment that holds a secret replaced
 * whole (`/v2/payments/[redacted]/approve`), a standard-base64 secret's own `/` notwithstanding,
 * then at most MAX_PATH_CHARS.
 */
export function storedPath(url: string): string {
  const path = url.split('?')[0] ?? ''
  let out = path
    .split('/')
    .map((segment) => (holdsSecret(segment) ? REDACTED : segment))
    .join('/')
  // A secret across segments (standard base64 holds `/`): the run that holds it goes.
  out = redactString(out)
  return wellFormed(out).slice(0, MAX_PATH_CHARS)
}

/** The stored request id (a client may choose it): a secret-shaped one is not kept. */
export function storedRequestId(id: string): string {
  return holdsSecret(id) ? REDACTED : id
}

/** Text that may be JSON but does not parse (a body cut at capture): redacted without parsing. */
export function redactText(text: string): string {
  let out = SECRET_NAME.test(text) ? redactNamedMembers(text) : text
  // JSON escapes (`\u0041`, `\/`) would hide a secret's characters from the shape rule.
  if (out.includes('\\')) {
    out = out.replace(STRING_LITERAL, (literal) => {
      if (!literal.includes('\\')) return literal
      let value: string
      try {
        value = JSON.parse(literal) as string
      } catch {
        return literal
      }
      const redacted = redactString(value)
      return redacted === value ? literal : JSON.stringify(redacted)
    })
  }
  return redactString(out)
}

/** `"<secret name>": <value>` in JSON text: the whole value goes, a string, a number, or brackets and all. */
function redactNamedMembers(text: string): string {
  const member = /"((?:[^"\\]|\\.){0,200})"\s*:\s*/g
  let out = ''
  let from = 0
  for (let match = member.exec(text); match !== null; match = member.exec(text)) {
    if (!SECRET_NAME.test(match[1] ?? '')) continue
    const start = match.index + match[0].length
    const end = valueEnd(text, start)
    out += `${text.slice(from, start)}"${REDACTED}"`
    from = end
    member.lastIndex = Math.max(end, start + 1)
  }
  return out + text.slice(from)
}

/** Where the JSON value starting at `start` ends (the text's end when it was cut). */
function valueEnd(text: string, start: number): number {
  const first = text[start]
  if (first === '"') {
    for (let i = start + 1; i < text.length; i++) {
      if (text[i] === '\\') i++
      else if (text[i] === '"') return i + 1
    }
    return text.length
  }
  if (first === '[' || first === '{') {
    let depth = 0
    let inString = false
    for (let i = start; i < text.length; i++) {
      const c = text[i]
      if (inString) {
        if (c === '\\') i++
        else if (c === '"') inString = false
      } else if (c === '"') inString = true
      else if (c === '[' || c === '{') depth++
      else if (c === ']' || c === '}') {
        depth--
        if (depth === 0) return i + 1
      }
    }
    return text.length
  }
  const rest = /^[^,}\]\s]*/.exec(text.slice(start, start + 400))
  return start + (rest?.[0].length ?? 0)
}

/** A JSON body, parsed: redacted member by member and written back (still JSON). */
function redactJson(value: unknown, depth: number): string {
  if (typeof value === 'string') return JSON.stringify(redactString(value))
  if (value === null || typeof value !== 'object') return JSON.stringify(value)
  if (depth >= MAX_DEPTH) return JSON.stringify(redactText(JSON.stringify(value)))
  if (Array.isArray(value)) return `[${value.map((item) => redactJson(item, depth + 1)).join(',')}]`
  const members = Object.entries(value).map(([name, item]) => {
    const shown = JSON.stringify(redactString(name))
    return `${shown}:${SECRET_NAME.test(name) ? JSON.stringify(REDACTED) : redactJson(item, depth + 1)}`
  })
  return `{${members.join(',')}}`
}

function parsedJson(text: string): { value: unknown } | undefined {
  const first = text.trimStart()[0]
  if (first !== '{' && first !== '[' && first !== '"') return undefined
  try {
    return { value: JSON.parse(text) }
  } catch {
    return undefined
  }
}

const SURROGATE = /[\uD800-\uDFFF]/
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g

/** Lone surrogates become U+FFFD, NUL (which PostgreSQL refuses in text) too. */
function wellFormed(text: string): string {
  const out = text.includes('\u0000') ? text.replaceAll('\u0000', '\uFFFD') : text
  return SURROGATE.test(out) ? out.replace(LONE_SURROGATE, '\uFFFD') : out
}

/**
 * The stored form of a body: redacted (member by member when it is JSON), then at most
 * MAX_BODY_CHARS characters. `cut` says the capture already dropped the body's end: its last 64
 * characters are dropped too, so that no secret cut in two (too short to look like one) survives
 * at the edge. A text longer than the capture's bound is cut here the same way.
 */
export function storedBody(text: string | undefined, cut = false): string | null {
  if (text === undefined || text === '') return null
  const isCut = cut || text.length > CAPTURE_CHARS
  const bounded = text.length > CAPTURE_CHARS ? text.slice(0, CAPTURE_CHARS) : text
  const whole = isCut ? `${bounded.slice(0, -64)}…` : bounded.replace(/^\uFEFF/, '')
  // Parsed only when a member may be secret-named: the shape rule's runs never hold `"` or `\`, so
  // as text it replaces within one string (or name) and JSON stays JSON (a payment's answer: 9 µs
  // as text, 25 µs parsed, walked and written back).
  const json = isCut || !SECRET_NAME.test(whole) ? undefined : parsedJson(whole)
  const redacted = wellFormed(json === undefined ? redactText(whole) : redactJson(json.value, 0))
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

/** At most this many headers of a request or an answer are kept, each value at most MAX_HEADER_CHARS. */
export const MAX_HEADERS = 60
export const MAX_HEADER_CHARS = 1000
/** Headers whose whole value is a credential or a session, whatever its name says. */
const CREDENTIAL_HEADERS = new Set(['authorization', 'proxy-authorization', 'cookie', 'set-cookie', 'x-admin-token'])

/**
 * The stored query string (without `?`): redacted as a form body is (a secret-named field loses
 * its value, a secret-shaped run goes wherever it stands), then at most MAX_PATH_CHARS. Null
 * when the URL has none.
 */
export function storedQuery(url: string): string | null {
  const at = url.indexOf('?')
  if (at < 0 || at === url.length - 1) return null
  const query = url.slice(at + 1)
  return wellFormed(redactString(query)).slice(0, MAX_PATH_CHARS)
}

/**
 * The stored headers, names lower-cased, in the order given: the Authorization header keeps its
 * scheme only (`Key [redacted]`), a cookie, the admin token and any secret-named header lose
 * their whole value, every other value is redacted by shape; then at most MAX_HEADERS headers of
 * at most MAX_HEADER_CHARS characters. A repeated header's values are joined with `, `.
 */
export function storedHeaders(headers: Record<string, unknown>): Record<string, string> {
  // Entries, then fromEntries: a header named `__proto__` is an own member, not the object's prototype.
  const out = new Map<string, string>()
  for (const [rawName, rawValue] of Object.entries(headers)) {
    if (out.size >= MAX_HEADERS) break
    if (rawValue === undefined || rawValue === null) continue
    const name = wellFormed(rawName.toLowerCase()).slice(0, 200)
    const value = Array.isArray(rawValue) ? rawValue.map(String).join(', ') : String(rawValue)
    out.set(name, wellFormed(storedHeaderValue(name, value)).slice(0, MAX_HEADER_CHARS))
  }
  return Object.fromEntries(out)
}

function storedHeaderValue(name: string, value: string): string {
  if (name === 'authorization' || name === 'proxy-authorization') {
    const scheme = /^([A-Za-z]{1,20}) /.exec(value)?.[1]
    return scheme === undefined ? REDACTED : `${scheme} ${REDACTED}`
  }
  if (CREDENTIAL_HEADERS.has(name) || SECRET_NAME.test(name)) return REDACTED
  return redactString(value)
}

/**
 * The headers of a header block as written (`HTTP/1.1 200 OK\r\nname: value\r\n…\r\n\r\n`), in
 * order; a repeated header (set-cookie) keeps its values as a list.
 */
export function headersOfHead(head: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = Object.create(null)
  const lines = head.split('\r\n')
  for (let i = 1; i < lines.length; i++) {
    const line = lines[i] as string
    const colon = line.indexOf(':')
    if (colon <= 0) continue
    const name = line.slice(0, colon).toLowerCase()
    const value = line.slice(colon + 1).trim()
    const known = out[name]
    out[name] = known === undefined ? value : Array.isArray(known) ? [...known, value] : [known, value]
  }
  return out
}
