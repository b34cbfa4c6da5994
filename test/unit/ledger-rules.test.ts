import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Account, Asset, Keypair, Memo, Operation, TransactionBuilder, xdr } from '@stellar/stellar-base'
import {
  type AccountState,
  applyToAccounts,
  authorize,
  checkStateless,
  type DecodedTransaction,
  decodeEnvelope,
  involvedAccounts,
  isRefusal,
  type Refusal,
} from '../../src/ledger/ledger-rules.js'
import { transactionResultXdr } from '../../src/ledger/stellar/result-xdr.js'

const alice = Keypair.random()
const bob = Keypair.random()
const carol = Keypair.random()
const NOW = 1_800_000_000n

interface Build {
  source?: Keypair
  sequence?: string
  fee?: string
  network?: string
  ops?: xdr.Operation[]
  memo?: Memo
  timebounds?: { minTime: number; maxTime: number }
  signers?: Keypair[]
  ledgerbounds?: { minLedger: number; maxLedger: number }
}

const pay = (to: string, amount = '1', source?: string) =>
  Operation.payment({ destination: to, asset: Asset.native(), amount, ...(source === undefined ? {} : { source }) })

/** A signed envelope built the way any client builds one. */
function envelope(options: Build = {}): string {
  const source = options.source ?? alice
  const builder = new TransactionBuilder(new Account(source.publicKey(), options.sequence ?? '0'), {
    fee: options.fee ?? '100',
    networkPassphrase: options.network ?? 'Pi Testnet',
    timebounds: options.timebounds ?? { minTime: 0, maxTime: 0 },
    ...(options.ledgerbounds === undefined ? {} : { ledgerbounds: options.ledgerbounds }),
  })
  for (const op of options.ops ?? [pay(bob.publicKey())]) builder.addOperation(op)
  if (options.memo !== undefined) builder.addMemo(options.memo)
  const tx = builder.build()
  tx.sign(...(options.signers ?? [source]))
  return tx.toEnvelope().toXDR('base64')
}

/** Rewrites the XDR of an envelope: for what no builder will produce (no operations, a zero amount). */
function rewrite(base64: string, change: (tx: xdr.Transaction) => void): string {
  const env = xdr.TransactionEnvelope.fromXDR(base64, 'base64')
  change(env.v1().tx())
  return env.toXDR('base64')
}

function decoded(base64: string): DecodedTransaction {
  const result = decodeEnvelope(base64)
  if (!result.ok) throw new Error(`did not decode: ${result.detail}`)
  return result.tx
}

function codes(refusal: Refusal | object | undefined): { transaction: string; operations?: string[] } | undefined {
  if (refusal === undefined || !isRefusal(refusal)) return undefined
  return refusal.operations === undefined
    ? { transaction: refusal.transaction }
    : { transaction: refusal.transaction, operations: refusal.operations }
}

const accounts = (entries: Array<[Keypair, bigint, bigint?]>): Map<string, AccountState> =>
  new Map(entries.map(([key, balance, sequence]) => [key.publicKey(), { balance, sequence: sequence ?? 0n }]))

describe('ledger rules: decoding (transaction_malformed)', () => {
  it('refuses a body that is not base64', () => {
    assert.equal(decodeEnvelope('not base64!').ok, false)
    assert.equal(decodeEnvelope('').ok, false)
  })

  it('refuses base64 that is not a TransactionEnvelope', () => {
    assert.equal(decodeEnvelope(Buffer.from('hello world, not xdr').toString('base64')).ok, false)
    assert.equal(decodeEnvelope(`${envelope()}AAAA`).ok, false, 'trailing bytes')
  })

  it('keeps the envelope as its own bytes, in canonical base64, as stellar-base encodes it', () => {
    for (const memo of ['a', 'ab', 'abc']) {
      const base64 = envelope({ memo: Memo.text(memo) })
      assert.equal(decoded(base64).envelopeXdr, xdr.TransactionEnvelope.fromXDR(base64, 'base64').toXDR('base64'))
      // The bits after the last byte set: other base64 text for the same bytes.
      const padding = base64.length - base64.replace(/=+$/, '').length
      if (padding === 0) continue
      const last = base64.length - padding - 1
      const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
      const spare = padding === 1 ? 0b11 : 0b1111
      const other = `${base64.slice(0, last)}${alphabet[alphabet.indexOf(base64[last] as string) | spare]}${base64.slice(last + 1)}`
      assert.notEqual(other, base64)
      assert.equal(decoded(other).envelopeXdr, base64, `memo ${memo}`)
    }
  })

  it('refuses padding that is not zero (so that the bytes kept are the envelope decoded)', () => {
    const bytes = Buffer.from(envelope({ memo: Memo.text('abc') }), 'base64')
    const at = bytes.indexOf(Buffer.from('abc')) + 3
    assert.equal(bytes[at], 0)
    bytes[at] = 1
    const result = decodeEnvelope(bytes.toString('base64'))
    assert.equal(result.ok, false)
    assert.match(result.ok ? '' : result.detail, /not a valid XDR/)
  })

  it('refuses a fee-bump envelope', () => {
    const inner = TransactionBuilder.fromXDR(envelope(), 'Pi Testnet')
    if (!('memo' in inner)) throw new Error('expected a plain transaction')
    const bump = TransactionBuilder.buildFeeBumpTransaction(bob, '200', inner, 'Pi Testnet')
    bump.sign(bob)
    const result = decodeEnvelope(bump.toEnvelope().toXDR('base64'))
    assert.equal(result.ok, false)
    assert.match(result.ok ? '' : result.detail, /fee-bump/i)
  })

  it('refuses a text memo that is not UTF-8 or holds NUL', () => {
    assert.equal(decodeEnvelope(envelope({ memo: Memo.text(Buffer.from([0xff, 0xfe]) as unknown as string) })).ok, false)
    assert.equal(decodeEnvelope(envelope({ memo: Memo.text('a\u0000b') })).ok, false)
  })

  it('reads source, sequence, fee, time bounds, memo and payments', () => {
    const tx = decoded(
      envelope({
        sequence: '41',
        fee: '150',
        memo: Memo.text('pay-1'),
        timebounds: { minTime: 10, maxTime: 20 },
        ops: [pay(bob.publicKey(), '1.5')],
      }),
    )
    assert.equal(tx.source, alice.publicKey())
    assert.equal(tx.sequence, 42n)
    assert.equal(tx.maxFee, 150n)
    assert.deepEqual([tx.minTime, tx.maxTime], [10n, 20n])
    assert.deepEqual(tx.memo, { type: 'text', value: 'pay-1' })
    assert.deepEqual(tx.operations, [
      { type: 'payment', source: alice.publicKey(), hasOwnSource: false, destination: bob.publicKey(), native: true, amount: 15_000_000n },
    ])
  })

  it('shows id memos as decimal strings and hash memos in base64, as Horizon does', () => {
    assert.deepEqual(decoded(envelope({ memo: Memo.id('18446744073709551615') })).memo, { type: 'id', value: '18446744073709551615' })
    const hash = Buffer.alloc(32, 7)
    assert.deepEqual(decoded(envelope({ memo: Memo.hash(hash) })).memo, { type: 'hash', value: hash.toString('base64') })
    assert.deepEqual(decoded(envelope()).memo, { type: 'none', value: null })
  })
})

describe('ledger rules: checks without state', () => {
  it('tx_not_supported: preconditions beyond time bounds', () => {
    assert.equal(
      codes(checkStateless(decoded(envelope({ ledgerbounds: { minLedger: 1, maxLedger: 9 } })), NOW))?.transaction,
      'tx_not_supported',
    )
  })

  it('tx_missing_operation: no operation', () => {
    const tx = decoded(rewrite(envelope(), (t) => t.operations([])))
    assert.deepEqual(codes(checkStateless(tx, NOW)), { transaction: 'tx_missing_operation' })
  })

  it('tx_too_early: the platform clock is before min time', () => {
    const tx = decoded(envelope({ timebounds: { minTime: Number(NOW) + 1, maxTime: 0 } }))
    assert.deepEqual(codes(checkStateless(tx, NOW)), { transaction: 'tx_too_early' })
    assert.equal(checkStateless(tx, NOW + 1n), undefined)
  })

  it('tx_too_late: the platform clock is past max time', () => {
    const tx = decoded(envelope({ timebounds: { minTime: 0, maxTime: Number(NOW) - 1 } }))
    assert.deepEqual(codes(checkStateless(tx, NOW)), { transaction: 'tx_too_late' })
    assert.equal(checkStateless(tx, NOW - 1n), undefined, 'max time itself is still valid')
  })

  it('time bounds hold if they hold at the platform time or at the wall time', () => {
    const wall = NOW - 86_400n
    const clientTimed = decoded(envelope({ timebounds: { minTime: 0, maxTime: Number(wall) + 180 } }))
    assert.equal(checkStateless(clientTimed, NOW, wall), undefined, 'timed from the wall clock')
    const serverTimed = decoded(envelope({ timebounds: { minTime: 0, maxTime: Number(NOW) + 180 } }))
    assert.equal(checkStateless(serverTimed, NOW, wall), undefined, 'timed from the platform clock')
    const stale = decoded(envelope({ timebounds: { minTime: 0, maxTime: Number(wall) - 1 } }))
    assert.deepEqual(codes(checkStateless(stale, NOW, wall)), { transaction: 'tx_too_late' })
    const between = decoded(envelope({ timebounds: { minTime: Number(wall) + 1, maxTime: Number(NOW) - 1 } }))
    assert.deepEqual(codes(checkStateless(between, NOW, wall)), { transaction: 'tx_too_late' }, 'at neither clock')
  })

  it('tx_insufficient_fee: less than 100 stroops per operation', () => {
    const two = [pay(bob.publicKey()), pay(carol.publicKey())]
    assert.deepEqual(codes(checkStateless(decoded(envelope({ fee: '99' })), NOW)), { transaction: 'tx_insufficient_fee' })
    // The builder's fee is per operation; 99 × 2 = 198 < 200.
    assert.deepEqual(codes(checkStateless(decoded(envelope({ fee: '99', ops: two })), NOW)), { transaction: 'tx_insufficient_fee' })
    assert.equal(checkStateless(decoded(envelope({ fee: '100', ops: two })), NOW), undefined)
  })

  it('op_not_supported: an operation other than a payment', () => {
    const tx = decoded(envelope({ ops: [pay(bob.publicKey()), Operation.bumpSequence({ bumpTo: '99' })] }))
    assert.deepEqual(codes(checkStateless(tx, NOW)), { transaction: 'tx_failed', operations: ['op_success', 'op_not_supported'] })
  })

  it('op_not_supported: a payment of another asset than the native one', () => {
    const usd = new Asset('USD', carol.publicKey())
    const tx = decoded(envelope({ ops: [Operation.payment({ destination: bob.publicKey(), asset: usd, amount: '1' })] }))
    assert.deepEqual(codes(checkStateless(tx, NOW)), { transaction: 'tx_failed', operations: ['op_not_supported'] })
  })

  it('op_not_supported: a muxed (M…) destination', () => {
    const muxed = 'MA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVAAAAAAAAAAAAAJLK'
    const tx = decoded(envelope({ ops: [pay(muxed)] }))
    assert.deepEqual(codes(checkStateless(tx, NOW)), { transaction: 'tx_failed', operations: ['op_not_supported'] })
  })

  it('op_malformed: a payment of zero or less', () => {
    for (const amount of ['0', '-10000000']) {
      const tx = decoded(
        rewrite(envelope(), (t) => {
          const op = t.operations()[0]
          if (op === undefined) throw new Error('no op')
          op.body().paymentOp().amount(xdr.Int64.fromString(amount))
        }),
      )
      assert.deepEqual(codes(checkStateless(tx, NOW)), { transaction: 'tx_failed', operations: ['op_malformed'] }, amount)
    }
  })

  it('passes a well-formed payment', () => {
    assert.equal(checkStateless(decoded(envelope()), NOW), undefined)
  })
})

describe('ledger rules: signatures', () => {
  it('finds the network the source signed under and the hash for it', () => {
    for (const network of ['Pi Testnet', 'Pi Network']) {
      const base64 = envelope({ network })
      const auth = authorize(decoded(base64))
      assert.ok(!isRefusal(auth))
      assert.equal(auth.network, network)
      assert.equal(auth.hash.toString('hex'), TransactionBuilder.fromXDR(base64, network).hash().toString('hex'))
    }
  })

  it('hashes the transaction under every network as stellar-base does, for v1 and v0 envelopes, one signature or two', () => {
    const v1 = envelope({ memo: Memo.text('both networks'), ops: [pay(bob.publicKey()), pay(carol.publicKey(), '2')] })
    // A v0 envelope (what old clients sent): the same transaction with the source as a raw key.
    const parsed = xdr.TransactionEnvelope.fromXDR(v1, 'base64').v1()
    const tx = parsed.tx()
    const v0 = xdr.TransactionEnvelope.envelopeTypeTxV0(
      new xdr.TransactionV0Envelope({
        tx: new xdr.TransactionV0({
          sourceAccountEd25519: tx.sourceAccount().ed25519(),
          fee: tx.fee(),
          seqNum: tx.seqNum(),
          timeBounds: tx.cond().timeBounds(),
          memo: tx.memo(),
          operations: tx.operations(),
          ext: new xdr.TransactionV0Ext(0),
        }),
        signatures: parsed.signatures(),
      }),
    ).toXDR('base64')
    const twoSignatures = envelope({ memo: Memo.text('two'), signers: [alice, bob] })
    for (const base64 of [v1, v0, twoSignatures]) {
      const { hashes } = decoded(base64)
      for (const network of ['Pi Testnet', 'Pi Network'] as const) {
        assert.equal(hashes[network].toString('hex'), TransactionBuilder.fromXDR(base64, network).hash().toString('hex'), network)
      }
      assert.notEqual(hashes['Pi Testnet'].toString('hex'), hashes['Pi Network'].toString('hex'))
    }
  })

  it('tx_bad_auth: signed under another passphrase', () => {
    const tx = decoded(envelope({ network: 'Test SDF Network ; September 2015' }))
    assert.deepEqual(codes(authorize(tx)), { transaction: 'tx_bad_auth' })
  })

  it('tx_bad_auth: signed by another key, or not signed', () => {
    assert.deepEqual(codes(authorize(decoded(envelope({ signers: [bob] })))), { transaction: 'tx_bad_auth' })
    assert.deepEqual(codes(authorize(decoded(envelope({ signers: [] })))), { transaction: 'tx_bad_auth' })
  })

  it('op_bad_auth: an operation with its own source that did not sign', () => {
    const tx = decoded(envelope({ ops: [pay(carol.publicKey(), '1', bob.publicKey())] }))
    assert.deepEqual(codes(authorize(tx)), { transaction: 'tx_failed', operations: ['op_bad_auth'] })
    const signed = decoded(envelope({ ops: [pay(carol.publicKey(), '1', bob.publicKey())], signers: [alice, bob] }))
    assert.equal(isRefusal(authorize(signed)), false)
  })

  it('tx_bad_auth_extra: a signature no required signer made, or the same one twice', () => {
    assert.deepEqual(codes(authorize(decoded(envelope({ signers: [alice, bob] })))), { transaction: 'tx_bad_auth_extra' })
    assert.deepEqual(codes(authorize(decoded(envelope({ signers: [alice, alice] })))), { transaction: 'tx_bad_auth_extra' })
  })
})

describe('ledger rules: applying to the accounts', () => {
  const ONE = 10_000_000n

  it('tx_no_source_account: the source account does not exist', () => {
    assert.deepEqual(codes(applyToAccounts(decoded(envelope()), accounts([[bob, ONE]]))), { transaction: 'tx_no_source_account' })
  })

  it('tx_bad_seq: the sequence is not the account sequence + 1', () => {
    const state = accounts([
      [alice, 100n * ONE, 5n],
      [bob, 0n],
    ])
    for (const sequence of ['4', '6', '0']) {
      // The builder adds 1 to the account's sequence.
      assert.deepEqual(codes(applyToAccounts(decoded(envelope({ sequence })), state)), { transaction: 'tx_bad_seq' }, sequence)
    }
    assert.equal(isRefusal(applyToAccounts(decoded(envelope({ sequence: '5' })), state)), false)
  })

  it('tx_insufficient_balance: the source cannot pay the fee', () => {
    const state = accounts([
      [alice, 99n],
      [bob, 0n],
    ])
    assert.deepEqual(codes(applyToAccounts(decoded(envelope()), state)), { transaction: 'tx_insufficient_balance' })
  })

  it('op_no_destination: the destination account does not exist', () => {
    assert.deepEqual(codes(applyToAccounts(decoded(envelope()), accounts([[alice, ONE]]))), {
      transaction: 'tx_failed',
      operations: ['op_no_destination'],
    })
  })

  it('op_no_source_account: an operation source that does not exist', () => {
    const tx = decoded(envelope({ ops: [pay(carol.publicKey(), '1', bob.publicKey())], signers: [alice, bob] }))
    assert.deepEqual(
      codes(
        applyToAccounts(
          tx,
          accounts([
            [alice, ONE],
            [carol, 0n],
          ]),
        ),
      ),
      { transaction: 'tx_failed', operations: ['op_no_source_account'] },
    )
  })

  it('op_underfunded: the amount is more than what is left after the fee', () => {
    const state = accounts([
      [alice, ONE + 99n],
      [bob, 0n],
    ])
    assert.deepEqual(codes(applyToAccounts(decoded(envelope()), state)), { transaction: 'tx_failed', operations: ['op_underfunded'] })
    const exact = accounts([
      [alice, ONE + 100n],
      [bob, 0n],
    ])
    assert.equal(isRefusal(applyToAccounts(decoded(envelope()), exact)), false, 'amount + fee exactly is enough')
  })

  it('op_underfunded counts earlier operations: every operation gets its code', () => {
    const state = accounts([
      [alice, 3n * ONE],
      [bob, 0n],
      [carol, 0n],
    ])
    const tx = decoded(envelope({ ops: [pay(bob.publicKey(), '2'), pay(carol.publicKey(), '2'), pay(carol.publicKey(), '0.5')] }))
    assert.deepEqual(codes(applyToAccounts(tx, state)), {
      transaction: 'tx_failed',
      operations: ['op_success', 'op_underfunded', 'op_success'],
    })
  })

  it('applies: fee of 100 stroops per operation burned, sequence advanced, amounts moved', () => {
    const state = accounts([
      [alice, 10n * ONE, 7n],
      [bob, ONE],
      [carol, 0n],
    ])
    const tx = decoded(envelope({ sequence: '7', ops: [pay(bob.publicKey(), '2'), pay(carol.publicKey(), '0.5')] }))
    const effects = applyToAccounts(tx, state)
    assert.ok(!isRefusal(effects))
    assert.equal(effects.feeCharged, 200n)
    assert.equal(effects.sequence, 8n)
    assert.deepEqual(
      effects.balances,
      new Map([
        [alice.publicKey(), 10n * ONE - 200n - 25_000_000n],
        [bob.publicKey(), 3n * ONE],
        [carol.publicKey(), 5_000_000n],
      ]),
    )
    assert.deepEqual(effects.payments, [
      { from: alice.publicKey(), to: bob.publicKey(), amount: 2n * ONE },
      { from: alice.publicKey(), to: carol.publicKey(), amount: 5_000_000n },
    ])
  })

  it('a payment to oneself only costs the fee', () => {
    const state = accounts([[alice, ONE]])
    const effects = applyToAccounts(decoded(envelope({ ops: [pay(alice.publicKey(), '0.5')] })), state)
    assert.ok(!isRefusal(effects))
    assert.deepEqual(effects.balances, new Map([[alice.publicKey(), ONE - 100n]]))
  })

  it('locks every account involved, sorted', () => {
    const tx = decoded(envelope({ ops: [pay(carol.publicKey(), '1', bob.publicKey()), pay(alice.publicKey())], signers: [alice, bob] }))
    const expected = [alice, bob, carol].map((k) => k.publicKey()).sort()
    assert.deepEqual(involvedAccounts(tx), expected)
  })
})

describe('ledger results and paging tokens', () => {
  it('writes result XDR that decodes to the codes given', () => {
    const success = xdr.TransactionResult.fromXDR(transactionResultXdr(200n, 'tx_success', ['op_success', 'op_success']), 'base64')
    assert.equal(success.feeCharged().toString(), '200')
    assert.equal(success.result().switch().name, 'txSuccess')
    assert.deepEqual(
      success
        .result()
        .results()
        .map((r) => r.tr().paymentResult().switch().name),
      ['paymentSuccess', 'paymentSuccess'],
    )
    const failed = xdr.TransactionResult.fromXDR(transactionResultXdr(0n, 'tx_failed', ['op_success', 'op_underfunded']), 'base64')
    assert.equal(failed.result().switch().name, 'txFailed')
    assert.equal(failed.result().results()[1]?.tr().paymentResult().switch().name, 'paymentUnderfunded')
    assert.equal(xdr.TransactionResult.fromXDR(transactionResultXdr(0n, 'tx_bad_seq'), 'base64').result().switch().name, 'txBadSeq')
  })
})
