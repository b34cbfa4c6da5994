/** With the u flag, a surrogate code point matches only when it is not half of a pair. */
const LONE_SURROGATE = /\p{Cs}/u

/**
 * The one rule for text the platform stores: it must come back exactly as it was sent. PostgreSQL
 * text cannot hold a NUL character, and an unpaired surrogate has no UTF-8 form (the drivers
 * would store U+FFFD in its place). Answers why `text` cannot be stored, or undefined.
 */
export function unstorableText(text: string): { keyword: 'nul' | 'surrogate'; message: string } | undefined {
  if (text.includes('\u0000')) return { keyword: 'nul', message: 'must not contain NUL characters' }
  if (LONE_SURROGATE.test(text)) return { keyword: 'surrogate', message: 'must be valid Unicode (no unpaired surrogates)' }
  return undefined
}
