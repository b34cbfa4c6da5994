import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Keypair, xdr } from '@stellar/stellar-base'
import { type AccountBefore, entry as accountEntry, stampLedger, transactionMetaTemplate } from '../../src/ledger/stellar/meta-xdr.js'

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

  it('is empty past a uint32 ledger number, as Horizon has no encoding for it', () => {
    const template = transactionMetaTemplate(input)
    assert.equal(stampLedger(template.result, template.resultLedgerAt, 2 ** 32), '')
  })
})
