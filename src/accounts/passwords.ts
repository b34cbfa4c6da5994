import { createHmac, randomUUID } from 'node:crypto'
import { hash, verify } from '@node-rs/argon2'
import type { ZxcvbnFactory } from '@zxcvbn-ts/core'
import { ApiError } from '../core/errors.js'
import { unstorableText } from '../lib/text.js'

/**
 * Passwords (docs/accounts.md, "Passwords"), after NIST SP 800-63B and OWASP's Password Storage
 * Cheat Sheet:
 *
 * - 8 to 128 characters (code points, after NFKC normalisation), any of them but control
 *   characters and unpaired surrogates; no composition rules, no expiry.
 * - Refused when guessable: zxcvbn-ts with its common-password and diceware dictionaries, and the
 *   username and the platform's name as user inputs, must score at least 3 (about 10^8 guesses).
 * - Stored as argon2id with OWASP's minimum parameters (19 MiB, 2 iterations, 1 lane) and a
 *   random 16-byte salt, as a PHC string: the parameters travel with the hash, so raising them
 *   later leaves older hashes verifiable.
 * - Peppered (ASVS 2.4.5): argon2's secret input is a key derived from PLINTH_SECRET_KEY, which
 *   is never in the database, so a copy of the database alone cannot be used to guess passwords.
 *   Changing PLINTH_SECRET_KEY therefore makes every password unverifiable (as it makes every
 *   sealed wallet seed unreadable).
 */
export const PASSWORD_MIN = 8
export const PASSWORD_MAX = 128
/** zxcvbn's score (0 to 4) a password needs. */
export const MIN_SCORE = 3

/** `algorithm: 2` is the library's Algorithm.Argon2id (a const enum, which isolated modules cannot read). */
const ARGON2 = { algorithm: 2, memoryCost: 19_456, timeCost: 2, parallelism: 1 } as const

let estimator: Promise<ZxcvbnFactory> | undefined
/**
 * Loaded and built at first use: the dictionaries are 2 MB of code (a third of a second to load),
 * which a sandbox process, and a production process until its first new password, never needs.
 */
const zxcvbn = (): Promise<ZxcvbnFactory> => {
  estimator ??= Promise.all([import('@zxcvbn-ts/core'), import('@zxcvbn-ts/language-common')]).then(
    ([core, common]) => new core.ZxcvbnFactory({ dictionary: common.dictionary, graphs: common.adjacencyGraphs }),
  )
  return estimator
}

/** Control characters (Unicode category Cc). */
const CONTROL = /\p{Cc}/u

/** The password as it is hashed: NFKC-normalised (so the same password typed on two keyboards matches). */
export function normalizePassword(password: string): string {
  return password.normalize('NFKC')
}

/** Refuses a password that breaks the rules above (400 invalid_arguments or weak_password); answers it normalised. */
export async function checkNewPassword(password: string, username: string): Promise<string> {
  const unstorable = unstorableText(password)
  if (unstorable !== undefined) throw new ApiError('invalid_arguments', `The password ${unstorable.message}.`)
  const normalized = normalizePassword(password)
  if (CONTROL.test(normalized)) throw new ApiError('invalid_arguments', 'The password may not hold control characters.')
  const length = [...normalized].length
  if (length < PASSWORD_MIN || length > PASSWORD_MAX) {
    throw new ApiError('invalid_arguments', `A password has ${PASSWORD_MIN} to ${PASSWORD_MAX} characters; this one has ${length}.`)
  }
  const result = (await zxcvbn()).check(normalized, [username, 'plinth'])
  if (result.score < MIN_SCORE) {
    const why = result.feedback.warning === null ? '' : ` (${result.feedback.warning})`
    throw new ApiError(
      'weak_password',
      `This password is too easy to guess${why}: use a longer one, for example a few unrelated words, not a common password or your username.`,
      { score: result.score },
    )
  }
  return normalized
}

/** The pepper: a key of its own, derived from the platform's secret key. */
export function passwordPepper(secretKey: Buffer): Buffer {
  return createHmac('sha256', secretKey).update('plinth:password-pepper:v1').digest()
}

export function hashPassword(normalized: string, pepper: Buffer): Promise<string> {
  return hash(normalized, { ...ARGON2, secret: pepper })
}

/** A hash of a random password, verified against when there is no user, so that time does not tell. */
let decoy: Promise<string> | undefined

/**
 * Whether `password` matches `stored`; with no stored hash (no such user, or a user without a
 * password) it verifies against a decoy and answers false, in about the same time.
 */
export async function verifyPassword(stored: string | null | undefined, password: string, pepper: Buffer): Promise<boolean> {
  decoy ??= hashPassword(randomUUID(), pepper)
  const target = stored ?? (await decoy)
  let matches = false
  try {
    matches = await verify(target, normalizePassword(password), { secret: pepper })
  } catch {
    matches = false
  }
  return stored !== null && stored !== undefined && matches
}
