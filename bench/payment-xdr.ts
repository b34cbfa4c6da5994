/**
 * `node --import tsx bench/payment-xdr.ts [--calls 20000] [--rounds 5]`: the CPU of the XDR work one
 * A2U submit does, a call at a time, in this process: decoding the signed envelope
 * (`decodeEnvelope`), reading it again for the Horizon record the submit answers
 * (`envelopeSignaturesAndBounds`), the result XDR of a successful payment
 * (`transactionResultXdr`) and its fee and result meta (`transactionMetaTemplate`). The envelope is what pi-backend's
 * `submitPayment` signs: one native payment with a text memo and time bounds, one signature.
 * Prints µs a call, the best round of each (the machine is shared: compare within a run).
 */
import { parseArgs } from 'node:util'
import { Account, Asset, Keypair, Memo, Networks, Operation, TransactionBuilder } from '@stellar/stellar-base'
import { decodeEnvelope } from '../src/ledger/ledger-rules.js'
import { transactionMetaTemplate } from '../src/ledger/stellar/meta-xdr.js'
import { envelopeSignaturesAndBounds } from '../src/ledger/stellar/payment-envelope.js'
import { transactionResultXdr } from '../src/ledger/stellar/result-xdr.js'

const { values: args } = parseArgs({ options: { calls: { type: 'string', default: '20000' }, rounds: { type: 'string', default: '5' } } })
const CALLS = Number(args.calls)
const ROUNDS = Number(args.rounds)

const app = Keypair.random()
const user = Keypair.random()
const built = new TransactionBuilder(new Account(app.publicKey(), '1234567'), { fee: '100', networkPassphrase: Networks.TESTNET })
  .addOperation(Operation.payment({ destination: user.publicKey(), asset: Asset.native(), amount: '3.1415926' }))
  .addMemo(Memo.text('a2u-6f1c2d3e4b5a69788'))
  .setTimeout(180)
  .build()
built.sign(app)
const envelope = built.toEnvelope().toXDR('base64')
const before = new Map([
  [app.publicKey(), { balance: 10_000_000_000n, sequence: 1234567n, lastModifiedLedger: 41 }],
  [user.publicKey(), { balance: 5_000_000n, sequence: 99n << 32n, lastModifiedLedger: 12 }],
])

const cases: Record<string, () => unknown> = {
  decodeEnvelope: () => decodeEnvelope(envelope),
  envelopeSignaturesAndBounds: () => envelopeSignaturesAndBounds(envelope, Networks.TESTNET),
  transactionResultXdr: () => transactionResultXdr(100n, 'tx_success', ['op_success']),
  transactionMetaTemplate: () =>
    transactionMetaTemplate({
      source: app.publicKey(),
      sequence: 1234568n,
      fee: 100n,
      payments: [{ from: app.publicKey(), to: user.publicKey(), amount: 31_415_926n }],
      before,
    }),
}

const best = new Map<string, number>()
for (let round = 0; round < ROUNDS; round++) {
  for (const [name, call] of Object.entries(cases)) {
    const start = process.cpuUsage()
    for (let i = 0; i < CALLS; i++) call()
    const used = process.cpuUsage(start)
    const micros = (used.user + used.system) / CALLS
    best.set(name, Math.min(best.get(name) ?? Number.POSITIVE_INFINITY, micros))
  }
}
for (const [name, micros] of best)
  process.stdout.write(`${name.padEnd(28)} ${micros.toFixed(2)} µs a call (best of ${ROUNDS} rounds of ${CALLS})\n`)
