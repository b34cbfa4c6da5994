import { StrKey, Transaction } from '@stellar/stellar-base'

/**
 * A reader for the one envelope shape nearly every submit has: a v1 envelope of a plain
 * transaction (an ed25519 source, no preconditions or time bounds only, no Soroban data) whose
 * operations are all native payments between ed25519 accounts. It reads the XDR once into the
 * values the rules need, where js-xdr and stellar-base's `Transaction` build objects, big numbers
 * and strkeys that the rules then parse again (issue 40: about four fifths of a decode's CPU).
 *
 * It is a shortcut, not a second decoder: anything else, and anything it is not sure of (a muxed
 * account, an asset, another operation, an unknown union arm, non-zero padding, a bound exceeded,
 * a byte left over), is `undefined`, and the caller decodes with stellar-base as before. What it
 * returns is what that decode returns for the same bytes; test/unit/payment-envelope.test.ts
 * compares the two on generated envelopes and on every single-byte change of them.
 */

/** The XDR of the shape read here, in XDR's own numbers (Stellar-transaction.x). */
const ENVELOPE_TYPE_TX = 2
const KEY_TYPE_ED25519 = 0
const PRECOND_NONE = 0
const PRECOND_TIME = 1
const MEMO_NONE = 0
const MEMO_TEXT = 1
const MEMO_ID = 2
const MEMO_HASH = 3
const MEMO_RETURN = 4
const MEMO_TEXT_MAX = 28
const MAX_OPS_PER_TX = 100
const PAYMENT = 1
const ASSET_TYPE_NATIVE = 0
const MAX_SIGNATURES = 20
const SIGNATURE_MAX = 64

export interface PaymentEnvelope {
  source: string
  sequence: bigint
  maxFee: bigint
  /** PRECOND_TIME's bounds (Unix seconds, 0 for none), or undefined for PRECOND_NONE. */
  timeBounds: { minTime: bigint; maxTime: bigint } | undefined
  /** The memo's XDR arm and its bytes (text) or value: decodeEnvelope turns it into the rules' memo. */
  memo: { type: 'none' } | { type: 'text'; bytes: Buffer } | { type: 'id'; value: bigint } | { type: 'hash' | 'return'; bytes: Buffer }
  operations: Array<{ source: string; hasOwnSource: boolean; destination: string; amount: bigint }>
  signatures: Array<{ hint: Buffer; signature: Buffer }>
  /** Where the signatures start: the bytes before it are the tagged transaction that is signed. */
  signaturesAt: number
}

class NotThisShape extends Error {}
const notThisShape = new NotThisShape()

class Reader {
  private at = 0
  constructor(private readonly bytes: Buffer) {}

  get offset(): number {
    return this.at
  }

  private need(count: number): number {
    const at = this.at
    if (at + count > this.bytes.length) throw notThisShape
    this.at = at + count
    return at
  }

  int32(): number {
    return this.bytes.readInt32BE(this.need(4))
  }

  uint32(): number {
    return this.bytes.readUInt32BE(this.need(4))
  }

  int64(): bigint {
    return this.bytes.readBigInt64BE(this.need(8))
  }

  uint64(): bigint {
    return this.bytes.readBigUInt64BE(this.need(8))
  }

  /** `count` bytes, a view of the envelope's own. */
  fixed(count: number): Buffer {
    const at = this.need(count)
    return this.bytes.subarray(at, at + count)
  }

  /** A variable-length opaque or string of at most `max` bytes, its padding zero as js-xdr requires. */
  variable(max: number): Buffer {
    const length = this.uint32()
    if (length > max) throw notThisShape
    const value = this.fixed(length)
    const padding = (4 - (length % 4)) % 4
    const at = this.need(padding)
    for (let i = 0; i < padding; i++) if (this.bytes[at + i] !== 0) throw notThisShape
    return value
  }

  /** An XDR bool, or an optional's presence: 0 or 1, nothing else. */
  flag(): boolean {
    const value = this.uint32()
    if (value > 1) throw notThisShape
    return value === 1
  }

  /** A MuxedAccount that is a plain ed25519 key, as its G… address. */
  account(): string {
    if (this.int32() !== KEY_TYPE_ED25519) throw notThisShape
    return address(this.fixed(32))
  }

  get done(): boolean {
    return this.at === this.bytes.length
  }
}

/** G… addresses by their raw key: accounts repeat from one submit to the next (bounded as ed25519.ts's keys are). */
const MAX_ADDRESSES = 50_000
const addresses = new Map<string, string>()

function address(raw: Buffer): string {
  const key = raw.toString('latin1')
  const known = addresses.get(key)
  if (known !== undefined) return known
  const encoded = StrKey.encodeEd25519PublicKey(raw)
  if (addresses.size >= MAX_ADDRESSES) addresses.clear()
  addresses.set(key, encoded)
  return encoded
}

/** The envelope read as the shape above, or undefined for anything else (decode it the general way). */
export function readPaymentEnvelope(bytes: Buffer): PaymentEnvelope | undefined {
  try {
    return read(new Reader(bytes))
  } catch (error) {
    // A bound, a short read or another shape; anything else is a defect here, not the envelope's.
    if (error === notThisShape || error instanceof RangeError) return undefined
    throw error
  }
}

function read(r: Reader): PaymentEnvelope | undefined {
  if (r.int32() !== ENVELOPE_TYPE_TX) return undefined
  const source = r.account()
  const maxFee = BigInt(r.uint32())
  const sequence = r.int64()
  let timeBounds: PaymentEnvelope['timeBounds']
  const cond = r.int32()
  if (cond === PRECOND_TIME) timeBounds = { minTime: r.uint64(), maxTime: r.uint64() }
  else if (cond !== PRECOND_NONE) return undefined
  const memo = readMemo(r)
  if (memo === undefined) return undefined
  const count = r.uint32()
  if (count > MAX_OPS_PER_TX) return undefined
  const operations: PaymentEnvelope['operations'] = []
  for (let i = 0; i < count; i++) {
    const hasOwnSource = r.flag()
    const opSource = hasOwnSource ? r.account() : source
    if (r.int32() !== PAYMENT) return undefined
    const destination = r.account()
    if (r.int32() !== ASSET_TYPE_NATIVE) return undefined
    operations.push({ source: opSource, hasOwnSource, destination, amount: r.int64() })
  }
  // Transaction.ext: only arm 0 (no Soroban data).
  if (r.int32() !== 0) return undefined
  const signaturesAt = r.offset
  const signatureCount = r.uint32()
  if (signatureCount > MAX_SIGNATURES) return undefined
  const signatures: PaymentEnvelope['signatures'] = []
  for (let i = 0; i < signatureCount; i++) signatures.push({ hint: r.fixed(4), signature: r.variable(SIGNATURE_MAX) })
  if (!r.done) return undefined
  return { source, sequence, maxFee, timeBounds, memo, operations, signatures, signaturesAt }
}

function readMemo(r: Reader): PaymentEnvelope['memo'] | undefined {
  switch (r.int32()) {
    case MEMO_NONE:
      return { type: 'none' }
    case MEMO_TEXT:
      return { type: 'text', bytes: r.variable(MEMO_TEXT_MAX) }
    case MEMO_ID:
      return { type: 'id', value: r.uint64() }
    case MEMO_HASH:
      return { type: 'hash', bytes: r.fixed(32) }
    case MEMO_RETURN:
      return { type: 'return', bytes: r.fixed(32) }
    default:
      return undefined
  }
}

/**
 * What a Horizon transaction record shows of a stored envelope: its signatures and its time bounds
 * as stellar-base's `Transaction` gives them (decimal strings; undefined when the envelope has
 * none), read the short way when the envelope is of the shape above.
 */
export function envelopeSignaturesAndBounds(
  envelopeXdr: string,
  networkPassphrase: string,
): { signatures: Buffer[]; timeBounds: { minTime: string; maxTime: string } | undefined } {
  const read = readPaymentEnvelope(Buffer.from(envelopeXdr, 'base64'))
  if (read === undefined) {
    const decoded = new Transaction(envelopeXdr, networkPassphrase)
    return { signatures: decoded.signatures.map((signature) => signature.signature()), timeBounds: decoded.timeBounds }
  }
  const bounds = read.timeBounds
  return {
    signatures: read.signatures.map((signature) => signature.signature),
    timeBounds: bounds === undefined ? undefined : { minTime: String(bounds.minTime), maxTime: String(bounds.maxTime) },
  }
}
