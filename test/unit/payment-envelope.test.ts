import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Account, Asset, Keypair, Memo, Networks, Operation, Transaction, TransactionBuilder, xdr } from '@stellar/stellar-base'
import fc from 'fast-check'
import { decodeAnyEnvelope, decodeEnvelope } from '../../src/ledger/ledger-rules.js'
import { envelopeSignaturesAndBounds, readPaymentEnvelope } from '../../src/ledger/stellar/payment-envelope.js'
import { fcParams, fuzzRuns } from '../helpers/fuzz.js'

/**
 * The shortcut for payment envelopes (src/ledger/stellar/payment-envelope.ts) against the general
 * decode through stellar-base: for any bytes, decodeEnvelope gives what decodeAnyEnvelope gives,
 * and the shortcut is taken for every envelope of its shape.
 */

const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n
const UINT64_MAX = 2n ** 64n - 1n
const USD = new Asset('USD', Keypair.random().publicKey()).toXDRObject()

const key = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((bytes) => Buffer.from(bytes))
const int64 = fc.oneof(fc.constantFrom(INT64_MIN, -1n, 0n, 1n, INT64_MAX), fc.bigInt(INT64_MIN, INT64_MAX))
const uint64 = fc.oneof(fc.constantFrom(0n, 1n, 2n ** 63n, UINT64_MAX), fc.bigInt(0n, UINT64_MAX))

/** An account: mostly a plain key, sometimes muxed (not the shortcut's shape). */
const account = fc.oneof(
  { weight: 9, arbitrary: key.map((raw) => ({ plain: true, xdr: xdr.MuxedAccount.keyTypeEd25519(raw) })) },
  {
    weight: 1,
    arbitrary: fc.tuple(key, uint64).map(([raw, id]) => ({
      plain: false,
      xdr: xdr.MuxedAccount.keyTypeMuxedEd25519(new xdr.MuxedAccountMed25519({ id: xdr.Uint64.fromString(String(id)), ed25519: raw })),
    })),
  },
)

const memo = fc.oneof(
  fc.constant(xdr.Memo.memoNone()),
  // Any bytes up to the bound: invalid UTF-8 and NUL included (refused by both).
  fc.uint8Array({ maxLength: 28 }).map((bytes) => xdr.Memo.memoText(Buffer.from(bytes) as unknown as string)),
  fc.string({ maxLength: 7 }).map((text) => xdr.Memo.memoText(text)),
  uint64.map((id) => xdr.Memo.memoId(xdr.Uint64.fromString(String(id)))),
  key.map((hash) => xdr.Memo.memoHash(hash)),
  key.map((hash) => xdr.Memo.memoReturn(hash)),
)

const operation = fc
  .record({
    source: fc.option(account, { nil: undefined }),
    destination: account,
    amount: int64,
    native: fc.integer({ min: 0, max: 9 }).map((n) => n !== 0),
    payment: fc.integer({ min: 0, max: 19 }).map((n) => n !== 0),
  })
  .map(({ source, destination, amount, native, payment }) => ({
    plain: (source?.plain ?? true) && destination.plain && native && payment,
    xdr: new xdr.Operation({
      sourceAccount: source?.xdr ?? null,
      body: payment
        ? xdr.OperationBody.payment(
            new xdr.PaymentOp({
              destination: destination.xdr,
              asset: native ? xdr.Asset.assetTypeNative() : USD,
              amount: xdr.Int64.fromString(String(amount)),
            }),
          )
        : xdr.OperationBody.bumpSequence(new xdr.BumpSequenceOp({ bumpTo: xdr.Int64.fromString(String(amount)) })),
    }),
  }))

const signature = fc
  .record({ hint: fc.uint8Array({ minLength: 4, maxLength: 4 }), signature: fc.uint8Array({ maxLength: 64 }) })
  .map((s) => new xdr.DecoratedSignature({ hint: Buffer.from(s.hint), signature: Buffer.from(s.signature) }))

const timeBounds = fc.option(fc.tuple(uint64, uint64), { nil: undefined })

/** A v1 envelope, its bytes, and whether it is of the shortcut's shape. */
const envelope = fc
  .record({
    source: account,
    fee: fc.oneof(fc.constantFrom(0, 100, 2 ** 32 - 1), fc.nat()),
    sequence: int64,
    timeBounds,
    memo,
    operations: fc.array(operation, { maxLength: 3 }),
    signatures: fc.array(signature, { maxLength: 3 }),
  })
  .map((e) => {
    const tx = new xdr.Transaction({
      sourceAccount: e.source.xdr,
      fee: e.fee,
      seqNum: xdr.Int64.fromString(String(e.sequence)),
      cond:
        e.timeBounds === undefined
          ? xdr.Preconditions.precondNone()
          : xdr.Preconditions.precondTime(
              new xdr.TimeBounds({
                minTime: xdr.Uint64.fromString(String(e.timeBounds[0])),
                maxTime: xdr.Uint64.fromString(String(e.timeBounds[1])),
              }),
            ),
      memo: e.memo,
      operations: e.operations.map((op) => op.xdr),
      ext: new xdr.TransactionExt(0),
    })
    const bytes = xdr.TransactionEnvelope.envelopeTypeTx(new xdr.TransactionV1Envelope({ tx, signatures: e.signatures })).toXDR()
    return { bytes, plain: e.source.plain && e.operations.every((op) => op.plain) }
  })

/** The same answer from both ways, for these bytes; for an envelope that decodes, the same signatures and bounds for its Horizon record. */
function assertSame(bytes: Buffer, why: string): void {
  const decoded = decodeEnvelope(bytes.toString('base64'))
  assert.deepStrictEqual(decoded, decodeAnyEnvelope(bytes), why)
  if (!decoded.ok) return
  const stored = decoded.tx.envelopeXdr
  const general = new Transaction(stored, Networks.TESTNET)
  assert.deepStrictEqual(
    envelopeSignaturesAndBounds(stored, Networks.TESTNET),
    { signatures: general.signatures.map((signature) => signature.signature()), timeBounds: general.timeBounds },
    `${why}: the record's signatures and bounds`,
  )
}

/** Each byte set to a few values, every truncation and a trailing word: what a corrupted or forged envelope looks like. */
function* mutations(bytes: Buffer): Generator<[Buffer, string]> {
  for (let at = 0; at < bytes.length; at++) {
    for (const value of new Set([0x00, 0x01, 0x7f, 0x80, 0xff, (bytes[at] ?? 0) ^ 0x01])) {
      if (value === bytes[at]) continue
      const changed = Buffer.from(bytes)
      changed[at] = value
      yield [changed, `byte ${at} set to ${value}`]
    }
    if (at > 0) yield [bytes.subarray(0, at), `cut to ${at} bytes`]
  }
  yield [Buffer.concat([bytes, Buffer.alloc(4)]), 'a trailing word']
}

/**
 * A signed envelope as pi-backend's submitPayment builds one: a native payment, a text memo, time
 * bounds. The memo's 13 bytes and a second, 61-byte signature leave padding for the changes to hit.
 */
function piBackendEnvelope(memo = 'a2u-6f1c2d3e4'): Buffer {
  const app = Keypair.random()
  const tx = new TransactionBuilder(new Account(app.publicKey(), '4294967296'), { fee: '100', networkPassphrase: Networks.TESTNET })
    .addOperation(Operation.payment({ destination: Keypair.random().publicKey(), asset: Asset.native(), amount: '3.1415926' }))
    .addMemo(Memo.text(memo))
    .setTimeout(180)
    .build()
  tx.sign(app)
  tx.signatures.push(new xdr.DecoratedSignature({ hint: Buffer.from('hint'), signature: Buffer.alloc(61, 7) }))
  return tx.toEnvelope().toXDR()
}

/** Where the memo's length is in piBackendEnvelope's bytes: type, source, fee, sequence, time bounds, memo type. */
const MEMO_LENGTH_AT = 4 + 36 + 4 + 8 + 4 + 16 + 4

/** `bytes` with the variable-length field at `lengthAt` four bytes longer than it is (the extra bytes inserted after it). */
function longer(bytes: Buffer, lengthAt: number): Buffer {
  const length = bytes.readUInt32BE(lengthAt)
  const end = lengthAt + 4 + Math.ceil(length / 4) * 4
  const changed = Buffer.concat([bytes.subarray(0, end), Buffer.from('abcd'), bytes.subarray(end)])
  changed.writeUInt32BE(length + 4, lengthAt)
  return changed
}

describe('the payment envelope shortcut', () => {
  it('reads what pi-backend sends, as the general decode does', () => {
    const bytes = piBackendEnvelope()
    const read = readPaymentEnvelope(bytes)
    assert.ok(read !== undefined, 'the shortcut takes a plain payment')
    assert.equal(read.operations[0]?.amount, 31_415_926n)
    assertSame(bytes, 'as built')
  })

  it('gives what the general decode gives for every single-byte change, cut and extension of it', () => {
    const bytes = piBackendEnvelope()
    let taken = 0
    let count = 0
    for (const [changed, why] of mutations(bytes)) {
      assertSame(changed, why)
      if (readPaymentEnvelope(changed) !== undefined) taken++
      count++
    }
    // Changes to the key, amount, memo text, hint and signature bytes keep the shape: the shortcut must have answered for those.
    assert.ok(taken > count / 4, `the shortcut answered ${taken} of ${count}`)
  })

  it('refuses, as the general decode does, a memo or a signature over its bound', () => {
    const full = piBackendEnvelope('a2u-0123456789abcdef01234567')
    assert.equal(full.readUInt32BE(MEMO_LENGTH_AT), 28)
    assert.ok(readPaymentEnvelope(full) !== undefined)
    const memo = longer(full, MEMO_LENGTH_AT)
    assert.equal(decodeAnyEnvelope(memo).ok, false, 'a memo of 32 bytes')
    assertSame(memo, 'a memo of 32 bytes')
    // The first signature is 64 bytes; its length is after the signature count and its hint.
    const signaturesAt = full.length - (4 + 4 + 4 + 64) - (4 + 4 + 64)
    assert.equal(full.readUInt32BE(signaturesAt), 2)
    const signature = longer(full, signaturesAt + 4 + 4)
    assert.equal(decodeAnyEnvelope(signature).ok, false, 'a signature of 68 bytes')
    assertSame(signature, 'a signature of 68 bytes')
  })

  it('gives what the general decode gives for generated envelopes, and takes every one of its shape', () => {
    fc.assert(
      fc.property(envelope, ({ bytes, plain }) => {
        assertSame(bytes, 'as generated')
        assert.equal(readPaymentEnvelope(bytes) !== undefined, plain, 'the shortcut is taken exactly for its shape')
      }),
      fcParams(fuzzRuns(300)),
    )
  })

  it('leaves every other kind of envelope to the general decode', () => {
    const app = Keypair.random()
    const builder = () => new TransactionBuilder(new Account(app.publicKey(), '1'), { fee: '100', networkPassphrase: Networks.TESTNET })
    const others: Array<[string, Buffer]> = [
      [
        'create account',
        builder()
          .addOperation(Operation.createAccount({ destination: Keypair.random().publicKey(), startingBalance: '1' }))
          .setTimeout(0)
          .build()
          .toEnvelope()
          .toXDR(),
      ],
      [
        'ledger bounds',
        builder()
          .addOperation(Operation.bumpSequence({ bumpTo: '2' }))
          .setLedgerbounds(1, 2)
          .setTimeout(0)
          .build()
          .toEnvelope()
          .toXDR(),
      ],
      [
        'a v0 envelope',
        xdr.TransactionEnvelope.envelopeTypeTxV0(
          new xdr.TransactionV0Envelope({
            tx: new xdr.TransactionV0({
              sourceAccountEd25519: app.rawPublicKey(),
              fee: 100,
              seqNum: xdr.Int64.fromString('1'),
              timeBounds: null,
              memo: xdr.Memo.memoNone(),
              operations: [],
              ext: new xdr.TransactionV0Ext(0),
            }),
            signatures: [],
          }),
        ).toXDR(),
      ],
    ]
    for (const [what, bytes] of others) {
      assert.equal(readPaymentEnvelope(bytes), undefined, what)
      assertSame(bytes, what)
    }
  })
})
