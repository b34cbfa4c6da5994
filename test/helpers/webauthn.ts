import { createHash, generateKeyPairSync, randomBytes, sign } from 'node:crypto'

/**
 * A software passkey (a WebAuthn authenticator with one discoverable ES256 credential), enough to
 * drive the platform's passkey routes without a browser: it answers registration options with a
 * `none` attestation and authentication options with a signed assertion, as
 * @simplewebauthn/browser would send them. Tests bend what it sends (origin, challenge, counter).
 */

/** Minimal CBOR: unsigned and negative integers, byte strings, text strings, maps. */
function cbor(value: unknown): Buffer {
  const head = (major: number, n: number): Buffer => {
    if (n < 24) return Buffer.from([(major << 5) | n])
    if (n < 256) return Buffer.from([(major << 5) | 24, n])
    if (n < 65536) return Buffer.from([(major << 5) | 25, n >> 8, n & 255])
    throw new Error('cbor: too long')
  }
  if (typeof value === 'number') return value >= 0 ? head(0, value) : head(1, -1 - value)
  if (Buffer.isBuffer(value)) return Buffer.concat([head(2, value.length), value])
  if (typeof value === 'string') return Buffer.concat([head(3, Buffer.byteLength(value)), Buffer.from(value)])
  if (value instanceof Map) {
    const parts = [head(5, value.size)]
    for (const [k, v] of value) parts.push(cbor(k), cbor(v))
    return Buffer.concat(parts)
  }
  throw new Error(`cbor: cannot encode ${typeof value}`)
}

const b64url = (bytes: Buffer) => bytes.toString('base64url')
const sha256 = (data: Buffer | string) => createHash('sha256').update(data).digest()

export function softPasskey(options: { rpID: string; origin: string }) {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const jwk = publicKey.export({ format: 'jwk' }) as { x: string; y: string }
  const credentialId = randomBytes(16)
  let counter = 0

  const authData = (flags: number, attested?: Buffer) => {
    const count = Buffer.alloc(4)
    count.writeUInt32BE(counter)
    return Buffer.concat([sha256(options.rpID), Buffer.from([flags]), count, ...(attested === undefined ? [] : [attested])])
  }
  const clientData = (type: string, challenge: string, origin: string) =>
    Buffer.from(JSON.stringify({ type, challenge, origin, crossOrigin: false }))

  return {
    id: b64url(credentialId),
    /** The response to registration options (`navigator.credentials.create`). */
    register(challenge: string, origin = options.origin) {
      const cose = new Map<number, unknown>([
        [1, 2],
        [3, -7],
        [-1, 1],
        [-2, Buffer.from(jwk.x, 'base64url')],
        [-3, Buffer.from(jwk.y, 'base64url')],
      ])
      const idLength = Buffer.alloc(2)
      idLength.writeUInt16BE(credentialId.length)
      const attested = Buffer.concat([Buffer.alloc(16), idLength, credentialId, cbor(cose)])
      // Flags: user present (0x01), user verified (0x04), attested credential data (0x40).
      const attestationObject = cbor(
        new Map<string, unknown>([
          ['fmt', 'none'],
          ['attStmt', new Map()],
          ['authData', authData(0x45, attested)],
        ]),
      )
      return {
        id: b64url(credentialId),
        rawId: b64url(credentialId),
        type: 'public-key',
        response: {
          clientDataJSON: b64url(clientData('webauthn.create', challenge, origin)),
          attestationObject: b64url(attestationObject),
          transports: ['internal'],
        },
        clientExtensionResults: {},
      }
    },
    /** The response to authentication options (`navigator.credentials.get`); each one counts up. */
    assert(challenge: string, origin = options.origin) {
      counter += 1
      const data = authData(0x05)
      const client = clientData('webauthn.get', challenge, origin)
      const signature = sign('sha256', Buffer.concat([data, sha256(client)]), privateKey)
      return {
        id: b64url(credentialId),
        rawId: b64url(credentialId),
        type: 'public-key',
        response: {
          clientDataJSON: b64url(client),
          authenticatorData: b64url(data),
          signature: b64url(signature),
        },
        clientExtensionResults: {},
      }
    },
    /** Sets the signature counter the next assertion counts up from (a cloned key replays an old one). */
    setCounter(value: number) {
      counter = value
    },
  }
}
