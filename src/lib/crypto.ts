import * as crypto from 'node:crypto'
import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto'

/**
 * The one source of randomness and hashing for ids, keys and tokens.
 *
 * Keys and tokens carry 256 bits from the CSPRNG. They are looked up by their SHA-256
 * digest: a fast hash is the right tool for secrets with that much entropy (there is
 * nothing to brute-force), and it keeps verification cheap on every request.
 */

/** A prefixed opaque id such as `app_4f0c…` (128 random bits, hex). */
export function newId(prefix: string): string {
  return `${prefix}_${randomBytes(16).toString('hex')}`
}

/** An app-scoped user id: a random UUID, as the live platform's uids look. */
export function newUid(): string {
  return randomUUID()
}

/** `bytes` random bytes, base64url (4 characters per 3 bytes). */
export function randomToken(bytes: number): string {
  return randomBytes(bytes).toString('base64url')
}

/** A secret credential: 32 random bytes, base64url (43 characters). */
export function newSecret(): string {
  return randomToken(32)
}

/**
 * Node's one-shot `crypto.hash` (20.12 and later; the engines field allows 20.10): about a third
 * of createHash's cost for a short input, and every authenticated request hashes its credential.
 */
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'hex' | 'buffer') => string | Buffer }).hash

function sha256(value: string): Buffer {
  return oneShot === undefined ? createHash('sha256').update(value, 'utf8').digest() : (oneShot('sha256', value, 'buffer') as Buffer)
}

export function sha256Hex(value: string): string {
  return oneShot === undefined ? createHash('sha256').update(value, 'utf8').digest('hex') : (oneShot('sha256', value, 'hex') as string)
}

/**
 * A key of its own for one purpose, derived from the platform's secret key (PLINTH_SECRET_KEY):
 * HMAC-SHA-256(secret, purpose). A subkey leaked or misused in one place says nothing of the
 * secret or of another purpose's subkey.
 */
export function subkey(secretKey: Buffer, purpose: string): Buffer {
  return createHmac('sha256', secretKey).update(purpose, 'utf8').digest()
}

/** HMAC-SHA-256 of a text under `key`, hex. */
export function hmacSha256Hex(key: Buffer, value: string): string {
  return createHmac('sha256', key).update(value, 'utf8').digest('hex')
}

/** Compares two strings without leaking where they differ. */
export function constantTimeEqual(a: string, b: string): boolean {
  return timingSafeEqual(sha256(a), sha256(b))
}

const IV_BYTES = 12
const TAG_BYTES = 16

/** AES-256-GCM, output `v1.<iv>.<tag>.<ciphertext>` in base64url; `context` is bound as associated data. */
export function encryptSecret(key: Buffer, plaintext: string, context: string): string {
  const iv = randomBytes(IV_BYTES)
  const cipher = createCipheriv('aes-256-gcm', key, iv)
  cipher.setAAD(Buffer.from(context, 'utf8'))
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
  return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join('.')
}

export function decryptSecret(key: Buffer, sealed: string, context: string): string {
  const [version, iv, tag, body] = sealed.split('.')
  if (version !== 'v1' || iv === undefined || tag === undefined || body === undefined) {
    throw new Error('unknown sealed secret format')
  }
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'), { authTagLength: TAG_BYTES })
  decipher.setAAD(Buffer.from(context, 'utf8'))
  decipher.setAuthTag(Buffer.from(tag, 'base64url'))
  return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8')
}
