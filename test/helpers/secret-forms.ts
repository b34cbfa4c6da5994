import { Keypair } from '@stellar/stellar-base'

/**
 * Every form a secret could be stored in: as handed out, its raw bytes in hex and base64, and
 * its first 20 characters (a secret kept in clear but for a few characters is usable too).
 */
export function storedForms(secret: string): string[] {
  const raw = secret.startsWith('S') && secret.length === 56 ? Keypair.fromSecret(secret).rawSecretKey() : Buffer.from(secret, 'base64url')
  return [secret, secret.slice(0, 20), raw.toString('hex'), raw.toString('base64'), raw.toString('base64url').slice(0, 20)]
}

/**
 * Every form the text of a secret could take in a log line, besides storedForms: its bytes (as
 * part of a logged request or buffer) as hex, base64 at each of the three alignments, and a
 * JSON byte array (`[75,101,121,…]`, how pino writes a Buffer), or decimals joined by ", ".
 */
export function loggedForms(secret: string): string[] {
  const text = Buffer.from(secret)
  const head = text.subarray(0, 16)
  const base64: string[] = []
  for (const shift of [0, 1, 2]) {
    const encoded = Buffer.concat([Buffer.alloc(shift, 0x20), text]).toString('base64')
    // Drop the characters that also encode the padding bytes and the end's partial group.
    const from = shift === 0 ? 0 : 4
    base64.push(encoded.slice(from, from + 16))
  }
  return [
    ...storedForms(secret),
    text.toString('hex').slice(0, 32),
    text.toString('hex').slice(0, 32).toUpperCase(),
    ...base64,
    [...head].join(','),
    [...head].join(', '),
  ]
}
