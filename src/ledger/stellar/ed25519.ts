import { createPrivateKey, createPublicKey, type KeyObject, sign, verify } from 'node:crypto'
import { StrKey, xdr } from '@stellar/stellar-base'

/**
 * ed25519 through node:crypto (OpenSSL) instead of stellar-base's pure-JavaScript curve:
 * about twenty times faster to verify, which is most of what applying a ledger transaction
 * costs. Keys are decoded once per address and kept (bounded).
 */

const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex')
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex')
const MAX_KEYS = 50_000

const publicKeys = new Map<string, { raw: Buffer; key: KeyObject } | null>()

function publicKey(address: string): { raw: Buffer; key: KeyObject } | null {
  const known = publicKeys.get(address)
  if (known !== undefined) return known
  let entry: { raw: Buffer; key: KeyObject } | null = null
  if (StrKey.isValidEd25519PublicKey(address)) {
    const raw = Buffer.from(StrKey.decodeEd25519PublicKey(address))
    entry = { raw, key: createPublicKey({ key: Buffer.concat([SPKI_PREFIX, raw]), format: 'der', type: 'spki' }) }
  }
  if (publicKeys.size >= MAX_KEYS) publicKeys.clear()
  publicKeys.set(address, entry)
  return entry
}

/** The 32 bytes of a G… address's key, or null for anything else (remembered, since addresses repeat). */
export function rawPublicKey(address: string): Buffer | null {
  return publicKey(address)?.raw ?? null
}

/** A G… address that decodes to an ed25519 public key (remembered, since addresses repeat). */
export function isAccountId(address: string): boolean {
  return publicKey(address) !== null
}

/** Whether `signature` (with its 4-byte hint) is `address`'s signature of `data`. */
export function verifySignature(address: string, data: Buffer, signature: { hint: Buffer; signature: Buffer }): boolean {
  const found = publicKey(address)
  if (found === null || signature.signature.length !== 64) return false
  if (!found.raw.subarray(28).equals(signature.hint)) return false
  return verify(null, data, found.key, signature.signature)
}

/**
 * Signs `data` with an S… seed: the decorated signature a transaction envelope carries. Given the
 * seed's G… address, the hint (its key's last 4 bytes) comes from the decoded keys kept above
 * instead of deriving the public key from the private one (a third of the cost of signing).
 */
export function signWithSeed(seed: string, data: Buffer, address?: string): xdr.DecoratedSignature {
  const raw = Buffer.from(StrKey.decodeEd25519SecretSeed(seed))
  const key = createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, raw]), format: 'der', type: 'pkcs8' })
  const publicRaw =
    (address === undefined ? undefined : rawPublicKey(address)) ??
    createPublicKey(key).export({ format: 'der', type: 'spki' }).subarray(SPKI_PREFIX.length)
  return new xdr.DecoratedSignature({ hint: publicRaw.subarray(28), signature: sign(null, data, key) })
}
