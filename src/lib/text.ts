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

/**
 * What shows nothing on a page: white space of any script (U+00A0, U+3000, …), control and format
 * characters (the zero-width space, joiners, U+FEFF), the other default-ignorable code points
 * (U+3164 Hangul filler, variation selectors, …) and the Braille blank U+2800.
 */
const BLANK = /^[\s\p{Z}\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}\u2800]*$/u

/**
 * The one rule for a required free-text reason (a suspension, a restore, an issue): at least one
 * character that shows. A reason made of blanks alone (BLANK) records nothing a later reader can use.
 */
export const isBlankText = (text: string): boolean => BLANK.test(text)
