import { ApiError } from '../core/errors.js'
import { isBlankText, unstorableText } from '../lib/text.js'

/** A passkey's name is at most this many characters (code points), once normalised. */
export const PASSKEY_NAME_MAX = 60
/** The name a passkey registered without one gets. */
const DEFAULT_PASSKEY_NAME = 'Passkey'

/** What no name may hold: control and format characters (bidi overrides, zero-width ones), private-use and unassigned code points, line and paragraph separators. */
const REFUSED = /[\p{Cc}\p{Cf}\p{Co}\p{Cn}\p{Zl}\p{Zp}]/u
/** Any run of spaces of any script, and tabs (line breaks are refused). */
const SPACES = /[\t\p{Zs}]+/gu
/** More combining marks on one character than any script needs: text drawn over its neighbours. */
const STACKED_MARKS = /\p{M}{5,}/u

const refuse = (why: string) =>
  new ApiError('invalid_arguments', `A passkey’s name ${why}: 1 to ${PASSKEY_NAME_MAX} characters that show, such as “Work laptop”.`)

/**
 * A passkey's name as it is stored and shown (docs/accounts.md, "Passkeys"), from what the person
 * typed: in Unicode's composed form (NFC), every run of spaces and tabs one space, trimmed. Refused (400
 * invalid_arguments, nothing stored) when it holds a character that does not show or that draws
 * text out of its place (REFUSED, STACKED_MARKS), a NUL or an unpaired surrogate, when nothing of it
 * shows, or when it is longer than PASSKEY_NAME_MAX. Undefined (left out) is the default name.
 */
export function passkeyName(requested: string | undefined): string {
  if (requested === undefined) return DEFAULT_PASSKEY_NAME
  const unstorable = unstorableText(requested)
  if (unstorable !== undefined) throw refuse(unstorable.message)
  const name = requested.normalize('NFC').replace(SPACES, ' ').trim()
  if (REFUSED.test(name)) throw refuse('must not hold control, format or invisible characters, nor line breaks')
  if (name === '' || isBlankText(name)) throw refuse('must not be blank')
  if (STACKED_MARKS.test(name)) throw refuse('must not stack five or more combining marks on one character')
  if ([...name].length > PASSKEY_NAME_MAX) throw refuse(`is too long (${[...name].length} characters)`)
  return name
}
