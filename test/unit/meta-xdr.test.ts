import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Keypair, StrKey, xdr } from '@stellar/stellar-base'
import fc from 'fast-check'
import { type AccountBefore, stampLedger, transactionMetaTemplate } from '../../src/ledger/stellar/meta-xdr.js'
import { fcParams, fuzzRuns } from '../helpers/fuzz.js'

/** An account's LedgerEntry as stellar-base builds it, with Plinth's accounts' fields (no subentries, signers or flags). */
function accountEntry(address: string, balance: bigint, sequence: bigint, lastModified: number): xdr.LedgerEntry {
  const account = new xdr.AccountEntry({
    accountId: xdr.PublicKey.publicKeyTypeEd25519(StrKey.decodeEd25519PublicKey(address)),
    balance: xdr.Int64.fromString(balance.toString()),
    seqNum: xdr.Int64.fromString(sequence.toString()),
    numSubEntries: 0,
    inflationDest: null,
    flags: 0,
    homeDomain: '',
    thresholds: Buffer.from([1, 0, 0, 0]),
    signers: [],
    ext: new xdr.AccountEntryExt(0),
  })
  return new xdr.LedgerEntry({
    lastModifiedLedgerSeq: lastModified,
    data: xdr.LedgerEntryData.account(account),
    ext: new xdr.LedgerEntryExt(0),
  })
}

/** The meta as stellar-base encodes it whole, the ledger known up front: what the template must equal once stamped. */
function reference(input: Parameters<typeof transactionMetaTemplate>[0], ledger: number): { fee: string; result: string } {
  const state = new Map([...input.before].map(([address, a]) => [address, { ...a }]))
  const entry = (address: string, s: AccountBefore) => accountEntry(address, s.balance, s.sequence, s.lastModifiedLedger)
  const move = (address: string, change: (s: AccountBefore) => void) => {
    const s = state.get(address)
    if (s === undefined) throw new Error(address)
    const before = xdr.LedgerEntryChange.ledgerEntryState(entry(address, s))
    change(s)
    s.lastModifiedLedger = ledger
    return [before, xdr.LedgerEntryChange.ledgerEntryUpdated(entry(address, s))]
  }
  const fee = move(input.source, (s) => {
    s.balance -= input.fee
  })
  const txChangesBefore = move(input.source, (s) => {
    s.sequence = input.sequence
  })
  const operations = input.payments.map(
    (p) =>
      new xdr.OperationMeta({
        changes: [
          ...move(p.from, (s) => {
            s.balance -= p.amount
          }),
          ...move(p.to, (s) => {
            s.balance += p.amount
          }),
        ],
      }),
  )
  const count = Buffer.alloc(4)
  count.writeUInt32BE(fee.length)
  return {
    fee: Buffer.concat([count, ...fee.map((c) => c.toXDR())]).toString('base64'),
    result: new xdr.TransactionMeta(2, new xdr.TransactionMetaV2({ txChangesBefore, operations, txChangesAfter: [] })).toXDR('base64'),
  }
}

describe('meta XDR written before its ledger is known', () => {
  const [a, b, c] = [Keypair.random(), Keypair.random(), Keypair.random()].map((k) => k.publicKey())
  if (a === undefined || b === undefined || c === undefined) throw new Error('keys')
  const input = {
    source: a,
    sequence: 8n,
    fee: 300n,
    payments: [
      { from: a, to: b, amount: 15_000_000n },
      { from: a, to: c, amount: 1n },
      { from: a, to: b, amount: 7n },
    ],
    before: new Map<string, AccountBefore>([
      [a, { balance: 10_000_000_000n, sequence: 7n, lastModifiedLedger: 41 }],
      [b, { balance: 0n, sequence: 0n, lastModifiedLedger: 0 }],
      [c, { balance: 5n, sequence: 3n, lastModifiedLedger: 4_294_967_295 }],
    ]),
  }

  it('equals stellar-base’s own encoding once stamped, at every ledger number a uint32 holds', () => {
    const template = transactionMetaTemplate(input)
    for (const ledger of [1, 42, 255, 256, 65_536, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1]) {
      const want = reference(input, ledger)
      assert.equal(stampLedger(template.fee, template.feeLedgerAt, ledger), want.fee, `fee meta at ${ledger}`)
      assert.equal(stampLedger(template.result, template.resultLedgerAt, ledger), want.result, `result meta at ${ledger}`)
    }
  })

  it('marks exactly the entries the transaction changed: 1 in the fee meta, 2 + 4 per payment − 1 in the result meta', () => {
    const template = transactionMetaTemplate(input)
    assert.equal(template.feeLedgerAt.length, 1)
    // txChangesBefore: the state (after the fee) and the update; per payment four entries, of which
    // only a receiver's first state (b in the first, c in the second) keeps its earlier number.
    assert.equal(template.resultLedgerAt.length, 2 + 3 * 4 - 2)
  })

  it('equals stellar-base’s encoding for generated balances, sequences, earlier ledgers and payments', () => {
    const keys = Array.from({ length: 4 }, () => Keypair.random().publicKey())
    // Within int64 after the fee and payments (at most 2^42 stroops move): the bounds of what an account can hold.
    const balance = fc.oneof(fc.constantFrom(0n, 2n ** 42n, 2n ** 63n - 2n ** 43n), fc.bigInt(0n, 2n ** 62n))
    const sequence = fc.oneof(fc.constantFrom(0n, 2n ** 32n, 2n ** 63n - 2n), fc.bigInt(0n, 2n ** 63n - 2n))
    const account = fc.record({ balance, sequence, lastModifiedLedger: fc.oneof(fc.constantFrom(0, 2 ** 32 - 1), fc.nat()) })
    const payment = fc.record({ from: fc.constantFrom(...keys), to: fc.constantFrom(...keys), amount: fc.bigInt(1n, 2n ** 40n) })
    fc.assert(
      fc.property(
        fc.tuple(account, account, account, account),
        fc.array(payment, { maxLength: 4 }),
        fc.bigInt(0n, 10_000n),
        fc.integer({ min: 1, max: 2 ** 32 - 1 }),
        (accounts, payments, fee, ledger) => {
          const generated = {
            source: keys[0] as string,
            sequence: accounts[0].sequence + 1n,
            fee,
            payments,
            before: new Map(keys.map((key, i) => [key, accounts[i] as AccountBefore])),
          }
          const template = transactionMetaTemplate(generated)
          const want = reference(generated, ledger)
          assert.equal(stampLedger(template.fee, template.feeLedgerAt, ledger), want.fee)
          assert.equal(stampLedger(template.result, template.resultLedgerAt, ledger), want.result)
        },
      ),
      fcParams(fuzzRuns(200)),
    )
  })

  it('is empty past a uint32 ledger number, as Horizon has no encoding for it', () => {
    const template = transactionMetaTemplate(input)
    assert.equal(stampLedger(template.result, template.resultLedgerAt, 2 ** 32), '')
  })
})
