/**
 * Validation of what a developer or a user asks a payment to be. Pure functions: each answers
 * the clean value or the refusal (code and message) the API returns.
 */

import { unstorableText } from '../lib/text.js'

/** Largest amount one payment may carry. Also keeps amount × 10^7 exact in a double. */
export const MAX_AMOUNT = 100_000_000
export const MAX_MEMO_LENGTH = 1000
export const MAX_METADATA_BYTES = 4096

export type InputRefusal = { ok: false; code: 'invalid_amount' | 'invalid_metadata' | 'invalid_arguments'; message: string }
export type Checked<T> = { ok: true; value: T } | InputRefusal

/** A plain decimal numeral: digits, optionally a point and more digits (no sign, exponent or spaces). */
const DECIMAL_STRING = /^\d{1,20}(?:\.\d{1,20})?$/

/**
 * A positive JSON number with at most 7 decimal places, as the exact decimal string stored in the
 * database. A decimal numeral in a string ("1.5", what form-driven and PHP backends send) is read
 * as that number, under the same bounds and precision; any other string is refused.
 */
export function checkAmount(given: unknown): Checked<string> {
  const value = typeof given === 'string' && DECIMAL_STRING.test(given) ? Number(given) : given
  if (typeof value === 'string')
    return { ok: false, code: 'invalid_amount', message: 'amount must be a number, or a decimal numeral in a string such as "1.5".' }
  if (typeof value !== 'number' || !Number.isFinite(value))
    return { ok: false, code: 'invalid_amount', message: 'amount must be a number.' }
  if (value <= 0) return { ok: false, code: 'invalid_amount', message: 'amount must be more than 0.' }
  if (value > MAX_AMOUNT) return { ok: false, code: 'invalid_amount', message: `amount must be at most ${MAX_AMOUNT}.` }
  const stroops = Math.round(value * 1e7)
  if (stroops === 0 || stroops / 1e7 !== value) {
    return { ok: false, code: 'invalid_amount', message: 'amount must have at most 7 decimal places.' }
  }
  const whole = Math.floor(stroops / 1e7)
  const fraction = String(stroops % 1e7).padStart(7, '0')
  return { ok: true, value: `${whole}.${fraction}` }
}

export function checkMemo(value: unknown): Checked<string> {
  if (typeof value !== 'string') return { ok: false, code: 'invalid_arguments', message: 'memo must be a string.' }
  if (value.length > MAX_MEMO_LENGTH)
    return { ok: false, code: 'invalid_arguments', message: `memo must be at most ${MAX_MEMO_LENGTH} characters.` }
  const unstorable = unstorableText(value)
  if (unstorable !== undefined) return { ok: false, code: 'invalid_arguments', message: `memo ${unstorable.message}.` }
  return { ok: true, value }
}

const UNPAIRED_SURROGATE_ESCAPE = /(?<!\\)(?:\\\\)*\\u[dD][89a-fA-F][0-9a-fA-F]{2}/

/** A JSON object of at most MAX_METADATA_BYTES when serialised (absent means `{}`). */
export function checkMetadata(value: unknown): Checked<Record<string, unknown>> {
  if (value === undefined) return { ok: true, value: {} }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, code: 'invalid_metadata', message: 'metadata must be a JSON object.' }
  }
  let serialised: string
  try {
    serialised = JSON.stringify(value)
  } catch {
    // Parsed JSON has no cycles: only nesting deeper than the stack can make this throw.
    return { ok: false, code: 'invalid_metadata', message: 'metadata is nested too deeply.' }
  }
  if (Buffer.byteLength(serialised, 'utf8') > MAX_METADATA_BYTES) {
    return { ok: false, code: 'invalid_metadata', message: `metadata must be at most ${MAX_METADATA_BYTES} bytes as JSON.` }
  }
  // PostgreSQL's jsonb refuses NUL characters; refuse them here with a clear answer instead.
  if (serialised.includes('\\u0000')) return { ok: false, code: 'invalid_metadata', message: 'metadata must not contain NUL characters.' }
  // Nor an unpaired surrogate, which JSON.stringify writes as a \ud800-style escape (one not preceded by an escaped backslash).
  if (UNPAIRED_SURROGATE_ESCAPE.test(serialised)) {
    return { ok: false, code: 'invalid_metadata', message: 'metadata must be valid Unicode (no unpaired surrogates).' }
  }
  return { ok: true, value: value as Record<string, unknown> }
}
