import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Account, Asset, Keypair, Memo, Operation, type Transaction, TransactionBuilder, xdr } from '@stellar/stellar-base'
import { submitEnvelope } from '../helpers/ledger.js'
import { startPlatform, type TestPlatform } from '../helpers/platform.js'

/**
 * docs/ledger.md documents the order in which the ledger's rules refuse a transaction: "the
 * first rule it breaks decides the answer". Each test here builds envelopes that break two
 * rules at once, for every pair of rules, and submits them: the answer must be the refusal of
 * the earlier rule, and nothing may change.
 */

const NETWORK = 'Pi Testnet'
const alice = Keypair.random() // funded: the source
const bob = Keypair.random() // funded: the destination
const poor = Keypair.random() // funded with 50 stroops: less than the fee
const carol = Keypair.random() // funded: an operation's source
const ghost = Keypair.random() // never funded: a source that does not exist
const phantom = Keypair.random() // never funded: an operation's source that does not exist
const mallory = Keypair.random() // signs what it should not
const issuer = Keypair.random()

/** The documented rules, by number, and how each refusal is recognised. */
const RULES: Record<number, { name: string; matches: (problem: Problem) => boolean }> = {
  1: {
    name: 'base64 XDR, no trailing bytes',
    matches: (p) => p.type === 'transaction_malformed' && /not a valid XDR|not base64/.test(p.detail),
  },
  2: { name: 'not a fee bump', matches: (p) => p.type === 'transaction_malformed' && /Fee-bump/.test(p.detail) },
  3: { name: 'text memo UTF-8', matches: (p) => p.type === 'transaction_malformed' && /memo/.test(p.detail) },
  4: { name: 'no unsupported preconditions', matches: (p) => p.tx === 'tx_not_supported' },
  5: { name: 'an operation', matches: (p) => p.tx === 'tx_missing_operation' },
  6: { name: 'not too early', matches: (p) => p.tx === 'tx_too_early' },
  7: { name: 'not too late', matches: (p) => p.tx === 'tx_too_late' },
  8: { name: 'fee', matches: (p) => p.tx === 'tx_insufficient_fee' },
  9: { name: 'native payments', matches: (p) => p.tx === 'tx_failed' && p.ops?.[0] === 'op_not_supported' },
  10: { name: 'positive amount', matches: (p) => p.tx === 'tx_failed' && p.ops?.[0] === 'op_malformed' },
  11: { name: "source's signature", matches: (p) => p.tx === 'tx_bad_auth' },
  12: { name: "operation source's signature", matches: (p) => p.tx === 'tx_failed' && p.ops?.[0] === 'op_bad_auth' },
  13: { name: 'no extra signature', matches: (p) => p.tx === 'tx_bad_auth_extra' },
  14: { name: 'source exists', matches: (p) => p.tx === 'tx_no_source_account' },
  15: { name: 'sequence', matches: (p) => p.tx === 'tx_bad_seq' },
  16: { name: 'fee covered', matches: (p) => p.tx === 'tx_insufficient_balance' },
  17: { name: 'operation source exists', matches: (p) => p.tx === 'tx_failed' && p.ops?.[0] === 'op_no_source_account' },
  18: { name: 'destination exists', matches: (p) => p.tx === 'tx_failed' && p.ops?.[0] === 'op_no_destination' },
  19: { name: 'amount covered', matches: (p) => p.tx === 'tx_failed' && p.ops?.[0] === 'op_underfunded' },
}
const RULE_NUMBERS = Object.keys(RULES).map(Number)

interface Problem {
  type: string
  detail: string
  tx: string | undefined
  ops: string[] | undefined
}

/**
 * An envelope that breaks every rule in `faults`. All operation faults sit on the one operation,
 * so that the per-operation order (source, then destination, then funds) is what is tested.
 */
function envelope(faults: Set<number>, now: number): string {
  const has = (rule: number) => faults.has(rule)
  const source = has(14) ? ghost : has(16) ? poor : alice
  const opSource = has(17) ? phantom : has(12) ? carol : undefined
  const builder = new TransactionBuilder(new Account(source.publicKey(), has(15) ? '5' : '0'), {
    fee: has(8) ? '50' : '100',
    networkPassphrase: NETWORK,
    timebounds: { minTime: has(6) ? now + 100_000 : 0, maxTime: has(7) ? now - 100_000 : 0 },
    ...(has(4) ? { ledgerbounds: { minLedger: 0, maxLedger: 5 } } : {}),
  })
  builder.addOperation(
    Operation.payment({
      destination: has(18) ? Keypair.random().publicKey() : bob.publicKey(),
      asset: has(9) ? new Asset('USD', issuer.publicKey()) : Asset.native(),
      amount: has(19) ? '900000' : '1',
      ...(opSource === undefined ? {} : { source: opSource.publicKey() }),
    }),
  )
  if (has(3)) builder.addMemo(new Memo('text', Buffer.from([0x61, 0xff, 0xfe])))
  const built = builder.build()
  let tx: Transaction = built
  if (has(5) || has(10)) {
    const env = tx.toEnvelope()
    const body = env.v1().tx()
    if (has(10)) body.operations()[0]?.body().paymentOp().amount(xdr.Int64.fromString('0'))
    if (has(5)) body.operations([])
    tx = TransactionBuilder.fromXDR(env.toXDR('base64'), NETWORK) as Transaction
  }
  // The source signs (unless rule 11 is broken: another key signs instead), the operation's own
  // source signs unless rule 12 is broken, and rule 13 adds a signature no one needs.
  const signers = [has(11) ? mallory : source]
  if (opSource === phantom && !has(12)) signers.push(phantom)
  if (has(13)) signers.push(Keypair.random())
  tx.sign(...signers)
  let out = tx.toEnvelope().toXDR('base64')
  if (has(2)) {
    // Built around the envelope before any rewrite (the builder refuses to bump one without operations), then given the faulty one.
    const bump = TransactionBuilder.buildFeeBumpTransaction(alice, '200', built, NETWORK).toEnvelope()
    bump.feeBump().tx().innerTx(xdr.FeeBumpTransactionInnerTx.envelopeTypeTx(tx.toEnvelope().v1()))
    out = bump.toXDR('base64')
  }
  if (has(1)) out = Buffer.concat([Buffer.from(out, 'base64'), Buffer.from([0, 0, 0, 0])]).toString('base64')
  return out
}

describe('the ledger refuses by the earliest broken rule, in the documented order', () => {
  let platform: TestPlatform
  let now: number
  const fund = async (address: string, amount: string) => {
    const response = await platform.app.inject({ method: 'POST', url: '/sandbox/ledger/fund', payload: { address, amount } })
    assert.equal(response.statusCode, 200, response.body)
  }
  const submit = async (faults: Set<number>) => {
    const { status, body } = await submitEnvelope(platform.app, envelope(faults, now))
    const extras = body.extras as { result_codes?: { transaction?: string; operations?: string[] } } | undefined
    const problem: Problem = {
      type: String(body.type ?? '').replace('https://stellar.org/horizon-errors/', ''),
      detail: String(body.detail ?? ''),
      tx: extras?.result_codes?.transaction,
      ops: extras?.result_codes?.operations,
    }
    return { status, problem, body }
  }

  before(async () => {
    platform = await startPlatform()
    await fund(alice.publicKey(), '100')
    await fund(bob.publicKey(), '100')
    await fund(carol.publicKey(), '100')
    await fund(poor.publicKey(), '0.0000050')
    const clock = await platform.app.inject({ method: 'GET', url: '/sandbox/clock' })
    now = Math.floor(clock.json().timestamp as number)
  })
  after(() => platform.close())

  it('each rule alone is refused as documented (the faults the pairs combine are the right ones)', async () => {
    for (const rule of RULE_NUMBERS) {
      const { status, problem, body } = await submit(new Set([rule]))
      assert.equal(status, 400, `rule ${rule}: ${JSON.stringify(body)}`)
      assert.ok(RULES[rule]?.matches(problem), `rule ${rule} (${RULES[rule]?.name}): ${JSON.stringify(problem)}`)
    }
  })

  it('every pair of broken rules is refused by the earlier one, and changes nothing', async () => {
    const before = (await platform.app.inject({ method: 'GET', url: '/sandbox/ledger/check' })).json()
    let pairs = 0
    for (const first of RULE_NUMBERS) {
      for (const second of RULE_NUMBERS) {
        if (second <= first) continue
        const faults = new Set([first, second])
        const { status, problem, body } = await submit(faults)
        assert.equal(status, 400, `rules ${first} + ${second}: ${JSON.stringify(body)}`)
        assert.ok(
          RULES[first]?.matches(problem),
          `rules ${first} (${RULES[first]?.name}) + ${second} (${RULES[second]?.name}): expected rule ${first}, got ${JSON.stringify(problem)}`,
        )
        pairs += 1
      }
    }
    assert.equal(pairs, (RULE_NUMBERS.length * (RULE_NUMBERS.length - 1)) / 2)
    const afterwards = (await platform.app.inject({ method: 'GET', url: '/sandbox/ledger/check' })).json()
    assert.deepEqual(afterwards, before, 'a refused transaction changes nothing')
    // And the same envelope without a fault applies: the faults alone made the refusals.
    const { status, body } = await submit(new Set())
    assert.equal(status, 200, JSON.stringify(body))
  })
})
