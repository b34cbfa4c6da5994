import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Account, Keypair, Memo, MemoReturn, MemoText, TransactionBuilder } from '@stellar/stellar-base'
import fc from 'fast-check'
import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import { paymentOp } from '../helpers/closer-model.js'
import {
  assertNoPollution,
  assertProblem,
  assertProperty,
  FUZZ_SEED,
  fcParams,
  fuzzInject,
  fuzzRuns,
  hostileString,
  parseJsonBody,
  StateWatch,
  triedSince,
} from '../helpers/fuzz.js'
import { startPlatform, type TestPlatform } from '../helpers/platform.js'

/**
 * The ledger's submission endpoint under hostile envelopes: malformed XDR (random bytes, bit
 * flips, truncation, other encodings), signatures under other passphrases, replays, expired
 * and not-yet-valid transactions, and one fault at a time in an otherwise valid payment. Every
 * answer is a Horizon problem (or the applied transaction); a refused transaction changes
 * nothing, and the books always balance.
 */

interface Problem {
  type: string
  status: number
  extras?: { result_codes?: { transaction: string; operations?: string[] } }
}

/** Runs of the base property; the others run fixed multiples of it. PLINTH_FUZZ_RUNS scales them all. */
const RUNS = fuzzRuns(50)
const PI = 10_000_000n

describe('the ledger under hostile transactions (property)', () => {
  let platform: TestPlatform
  let watch: StateWatch
  const funded: Keypair[] = []
  const unfunded = Keypair.random()
  const report = triedSince()

  const nowSeconds = () => Math.floor(platform.clock.now().getTime() / 1000)

  async function sequenceOf(address: string): Promise<bigint> {
    const response = await platform.app.inject({ method: 'GET', url: `/ledger/accounts/${address}` })
    assert.equal(response.statusCode, 200, response.body)
    return BigInt((response.json() as { sequence: string }).sequence)
  }

  interface TxSpec {
    from: Keypair
    to: string
    stroops: bigint[]
    sequence: bigint
    fee: number
    network: string
    timebounds: { minTime: number; maxTime: number }
    memo: Memo | undefined
    signers: Keypair[]
  }

  function build(spec: TxSpec): string {
    const builder = new TransactionBuilder(new Account(spec.from.publicKey(), spec.sequence.toString()), {
      fee: String(spec.fee),
      networkPassphrase: spec.network,
      timebounds: spec.timebounds,
    })
    for (const stroops of spec.stroops) builder.addOperation(paymentOp(spec.to, stroops))
    if (spec.memo !== undefined) builder.addMemo(spec.memo)
    const tx = builder.build()
    tx.sign(...spec.signers)
    return tx.toEnvelope().toXDR('base64')
  }

  async function validSpec(from: Keypair, to: string): Promise<TxSpec> {
    return {
      from,
      to,
      stroops: [PI],
      sequence: await sequenceOf(from.publicKey()),
      fee: 100,
      network: 'Pi Testnet',
      timebounds: { minTime: 0, maxTime: nowSeconds() + 300 },
      memo: undefined,
      signers: [from],
    }
  }

  /** Submits as stellar-sdk does (a form) or as JSON, and checks what every answer must be. */
  async function submit(tx: string, asJson: boolean, extra = ''): Promise<{ response: LightMyRequestResponse; body: unknown }> {
    const options: InjectOptions = asJson
      ? { method: 'POST', url: '/ledger/transactions', headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ tx }) }
      : {
          method: 'POST',
          url: '/ledger/transactions',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          payload: `${new URLSearchParams({ tx }).toString()}${extra}`,
        }
    const response = await fuzzInject(platform.app, options)
    assert.ok(response !== undefined)
    const context = `POST /ledger/transactions (${tx.slice(0, 60)}…) → ${response.statusCode}`
    assert.ok(
      response.statusCode === 200 || (response.statusCode >= 400 && response.statusCode < 500),
      `${context}: ${response.body.slice(0, 300)}`,
    )
    const body = parseJsonBody(response, context)
    assertNoPollution(context)
    if (response.statusCode >= 400) {
      assertProblem(response.statusCode, body, String(response.headers['content-type'] ?? ''), context)
      await watch.assertUnchanged(context)
    } else {
      await watch.accepted()
    }
    return { response, body }
  }

  const resultCode = (body: unknown) => (body as Problem).extras?.result_codes

  async function assertBooksBalance(): Promise<void> {
    const check = await platform.app.inject({ method: 'GET', url: '/sandbox/ledger/check' })
    assert.equal(check.json().ok, true, `ledger invariants: ${check.body}`)
  }

  before(async () => {
    platform = await startPlatform()
    for (let i = 0; i < 4; i++) {
      const key = Keypair.random()
      // An account on each network: a transaction is signed under either passphrase (docs/ledger.md, "Two networks").
      for (const network of ['Pi Testnet', 'Pi Network']) {
        const response = await platform.app.inject({
          method: 'POST',
          url: '/sandbox/ledger/fund',
          payload: { address: key.publicKey(), amount: '1000000', network },
        })
        assert.equal(response.statusCode, 200, response.body)
      }
      funded.push(key)
    }
    watch = new StateWatch(platform.db)
    await watch.accepted()
  })
  after(async () => {
    console.log(`# ledger fuzz: ${report()} (base runs ${RUNS}, seed ${FUZZ_SEED})`)
    await platform.close()
  })

  const account = () => fc.integer({ min: 0, max: 3 })

  it('answers malformed XDR (random bytes, flipped bits, truncation, other encodings) with a Horizon problem, changing nothing', async () => {
    const from = funded[0] as Keypair
    const valid = build(await validSpec(from, (funded[1] as Keypair).publicKey()))
    const bytes = Buffer.from(valid, 'base64')
    const mutation = fc.oneof(
      fc.record({ kind: fc.constant('flip' as const), at: fc.nat({ max: bytes.length - 1 }), bit: fc.integer({ min: 0, max: 7 }) }),
      fc.record({ kind: fc.constant('truncate' as const), at: fc.nat({ max: bytes.length - 1 }) }),
      fc.record({ kind: fc.constant('append' as const), extra: fc.uint8Array({ minLength: 1, maxLength: 64 }) }),
      fc.record({ kind: fc.constant('bytes' as const), extra: fc.uint8Array({ maxLength: 600 }) }),
      fc.record({ kind: fc.constant('text' as const), text: hostileString }),
      fc.record({
        kind: fc.constant('encoding' as const),
        how: fc.constantFrom('urlsafe', 'spaces', 'newlines', 'unpadded', 'hex', 'doubled', 'huge'),
      }),
    )
    await assertProperty(
      fc.asyncProperty(mutation, fc.boolean(), async (m, asJson) => {
        let tx: string
        switch (m.kind) {
          case 'flip': {
            const copy = Buffer.from(bytes)
            copy[m.at] = (copy[m.at] ?? 0) ^ (1 << m.bit)
            tx = copy.toString('base64')
            break
          }
          case 'truncate':
            tx = bytes.subarray(0, m.at).toString('base64')
            break
          case 'append':
            tx = Buffer.concat([bytes, Buffer.from(m.extra)]).toString('base64')
            break
          case 'bytes':
            tx = Buffer.from(m.extra).toString('base64')
            break
          case 'text':
            tx = m.text
            break
          case 'encoding':
            tx = {
              urlsafe: valid.replaceAll('+', '-').replaceAll('/', '_'),
              spaces: valid.replace(/(.{10})/g, '$1 '),
              newlines: valid.replace(/(.{64})/g, '$1\n'),
              unpadded: valid.replace(/=+$/, ''),
              hex: bytes.toString('hex'),
              doubled: `${valid}${valid}`,
              huge: 'A'.repeat(200_001),
            }[m.how]
            break
        }
        const { response, body } = await submit(tx, asJson)
        if (response.statusCode === 400 && (body as Problem).type.endsWith('transaction_failed')) {
          // It decoded: a byte flipped in a signature or an amount; it is refused by its rules.
          assert.ok(resultCode(body)?.transaction, 'a refused transaction carries its result code')
        }
      }),
      fcParams(RUNS * 4),
    )
    await assertBooksBalance()
  })

  it('refuses a transaction signed under any other network passphrase with tx_bad_auth', async () => {
    await assertProperty(
      fc.asyncProperty(
        fc.oneof(hostileString, fc.constantFrom('Pi Mainnet', 'pi testnet', 'Pi Testnet ', 'Test SDF Network ; September 2015', '')),
        account(),
        account(),
        fc.boolean(),
        async (passphrase, a, b, asJson) => {
          fc.pre(passphrase !== 'Pi Testnet' && passphrase !== 'Pi Network')
          const from = funded[a] as Keypair
          const spec = { ...(await validSpec(from, (funded[b] as Keypair).publicKey())), network: passphrase }
          let tx: string
          try {
            tx = build(spec)
          } catch {
            return // stellar-base refuses to build it (an empty passphrase): nothing to submit.
          }
          const { response, body } = await submit(tx, asJson)
          assert.equal(response.statusCode, 400, response.body)
          assert.equal(resultCode(body)?.transaction, 'tx_bad_auth', response.body)
        },
      ),
      fcParams(RUNS),
    )
    await assertBooksBalance()
  })

  const FAULTS = [
    'none',
    'late',
    'early',
    'fee',
    'seq_low',
    'seq_high',
    'signer',
    'extra_signature',
    'amount_zero',
    'amount_negative',
    'underfunded',
    'no_destination',
    'no_source',
  ] as const
  type Fault = (typeof FAULTS)[number]
  const EXPECTED: Record<Exclude<Fault, 'none'>, { transaction: string; operation?: string }> = {
    late: { transaction: 'tx_too_late' },
    early: { transaction: 'tx_too_early' },
    fee: { transaction: 'tx_insufficient_fee' },
    seq_low: { transaction: 'tx_bad_seq' },
    seq_high: { transaction: 'tx_bad_seq' },
    signer: { transaction: 'tx_bad_auth' },
    extra_signature: { transaction: 'tx_bad_auth_extra' },
    amount_zero: { transaction: 'tx_failed', operation: 'op_malformed' },
    amount_negative: { transaction: 'tx_failed', operation: 'op_malformed' },
    underfunded: { transaction: 'tx_failed', operation: 'op_underfunded' },
    no_destination: { transaction: 'tx_failed', operation: 'op_no_destination' },
    no_source: { transaction: 'tx_no_source_account' },
  }

  const memoArb = fc.oneof(
    fc.constant(undefined),
    // Raw bytes: not UTF-8, or holding NUL, as a hostile client may send.
    fc.uint8Array({ maxLength: 28 }).map((b) => new Memo(MemoText, Buffer.from(b) as unknown as string)),
    fc
      .string({ unit: 'grapheme', maxLength: 7 })
      .filter((s) => Buffer.byteLength(s) <= 28)
      .map((s) => Memo.text(s)),
    fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }).map((n) => Memo.id(n.toString())),
    fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => Memo.hash(Buffer.from(b))),
    fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => new Memo(MemoReturn, Buffer.from(b))),
  )

  /** A text memo the ledger cannot store (not UTF-8, or holding NUL): the envelope is malformed, whatever else it holds. */
  function unstorableMemo(memo: Memo | undefined): boolean {
    if (memo?.type !== 'text') return false
    const value = memo.value as string | Buffer
    const bytes = typeof value === 'string' ? Buffer.from(value) : value
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(bytes).includes('\u0000')
    } catch {
      return true
    }
  }

  it('applies a valid payment once (a replay is tx_bad_seq) and refuses one fault at a time with its result code, changing nothing', async () => {
    await assertProperty(
      fc.asyncProperty(
        // A valid payment one time in four, else one fault.
        fc.oneof({ weight: 4, arbitrary: fc.constant<Fault>('none') }, { weight: 12, arbitrary: fc.constantFrom(...FAULTS) }),
        account(),
        account(),
        fc.array(fc.bigInt({ min: 1n, max: 1000n * PI }), { minLength: 1, maxLength: 3 }),
        fc.constantFrom('Pi Testnet', 'Pi Network'),
        memoArb,
        fc.boolean(),
        async (fault, a, b, stroops, network, memo, asJson) => {
          const from = fault === 'no_source' ? unfunded : (funded[a] as Keypair)
          const to = fault === 'no_destination' ? Keypair.random().publicKey() : (funded[b] as Keypair).publicKey()
          const sequence = fault === 'no_source' ? 0n : await sequenceOf(from.publicKey())
          const now = nowSeconds()
          const spec: TxSpec = {
            from,
            to,
            stroops,
            sequence,
            fee: 100,
            network,
            timebounds: { minTime: 0, maxTime: now + 300 },
            memo,
            signers: [from],
          }
          switch (fault) {
            case 'late':
              spec.timebounds = { minTime: 0, maxTime: now - 120 }
              break
            case 'early':
              spec.timebounds = { minTime: now + 3600, maxTime: 0 }
              break
            case 'fee':
              // TransactionBuilder's fee is per operation: one stroop short of the base fee.
              spec.fee = 99
              break
            case 'seq_low':
              spec.sequence = sequence - 1n
              break
            case 'seq_high':
              spec.sequence = sequence + 1n
              break
            case 'signer':
              spec.signers = [Keypair.random()]
              break
            case 'extra_signature':
              spec.signers = [from, Keypair.random()]
              break
            case 'amount_zero':
              spec.stroops = [0n, ...stroops.slice(1)]
              break
            case 'amount_negative':
              spec.stroops = [-(stroops[0] ?? 1n), ...stroops.slice(1)]
              break
            case 'underfunded':
              spec.stroops = [10_000_000n * PI, ...stroops.slice(1)]
              break
          }
          const tx = build(spec)
          const { response, body } = await submit(tx, asJson)
          if (unstorableMemo(memo)) {
            assert.equal(response.statusCode, 400, response.body)
            assert.equal((body as Problem).type, 'https://stellar.org/horizon-errors/transaction_malformed')
            return
          }
          if (fault === 'none') {
            assert.equal(response.statusCode, 200, response.body)
            const hash = (body as { hash: string }).hash
            const read = await platform.app.inject({ method: 'GET', url: `/ledger/transactions/${hash}` })
            assert.equal(read.statusCode, 200)
            // The same envelope again, by the other encoding: applied once only, answered with its earlier result.
            const replay = await submit(tx, !asJson)
            assert.equal(replay.response.statusCode, 200, replay.response.body)
            assert.equal((replay.body as { hash: string }).hash, hash)
            assert.equal((replay.body as { ledger: number }).ledger, (body as { ledger: number }).ledger)
            return
          }
          const expected = EXPECTED[fault]
          assert.equal(response.statusCode, 400, `${fault}: ${response.body}`)
          const codes = resultCode(body)
          assert.equal(codes?.transaction, expected.transaction, `${fault}: ${response.body}`)
          if (expected.operation !== undefined) assert.equal(codes?.operations?.[0], expected.operation, `${fault}: ${response.body}`)
        },
      ),
      fcParams(RUNS * 4),
    )
    await assertBooksBalance()
  })

  // Time bounds hold if they hold at platform time or at wall time (docs/ledger.md), and the platform
  // clock is never behind the wall clock: a maxTime passed on the wall clock is passed on both.
  it('refuses a transaction whose time bound passed on the wall clock, and so on the platform clock, with tx_too_late', async () => {
    await assertProperty(
      fc.asyncProperty(account(), account(), fc.integer({ min: 1, max: 600 }), fc.boolean(), async (a, b, margin, asJson) => {
        const from = funded[a] as Keypair
        const spec = await validSpec(from, (funded[b] as Keypair).publicKey())
        spec.timebounds = { minTime: 0, maxTime: Math.floor(Date.now() / 1000) - margin }
        const tx = build(spec)
        const advance = await platform.app.inject({ method: 'POST', url: '/sandbox/clock', payload: { advance_seconds: margin + 2 } })
        assert.equal(advance.statusCode, 200)
        await watch.accepted()
        const { response, body } = await submit(tx, asJson)
        assert.equal(response.statusCode, 400, response.body)
        assert.equal(resultCode(body)?.transaction, 'tx_too_late')
      }),
      fcParams(Math.max(3, Math.ceil(RUNS / 10))),
    )
  })

  it('answers hostile submission bodies (missing, repeated or non-string tx, other encodings) with a Horizon problem', async () => {
    const valid = build(await validSpec(funded[2] as Keypair, (funded[3] as Keypair).publicKey()))
    const bodies = fc.oneof(
      fc.record({
        type: fc.constant('application/x-www-form-urlencoded'),
        text: fc.constantFrom(
          '',
          'tx=',
          'tx',
          `tx=${valid}&tx=AAAA`,
          'tx=%',
          'tx=%ZZ',
          `__proto__[tx]=${valid}`,
          `tx[]=${valid}`,
          `constructor[prototype][polluted]=1&tx=${valid}`,
        ),
      }),
      fc.record({ type: fc.constant('application/x-www-form-urlencoded'), text: fc.string({ unit: 'binary', maxLength: 300 }) }),
      fc.record({
        type: fc.constant('application/json'),
        text: fc.constantFrom(
          '{}',
          '{"tx":1}',
          '{"tx":null}',
          '{"tx":["AAAA"]}',
          '{"tx":{"__proto__":{"polluted":true}}}',
          `{"tx":"${valid}","tx":1}`,
          `{"tx":1,"tx":"${valid}"}`,
          '[]',
          'null',
          '"tx"',
        ),
      }),
      fc.record({
        type: fc.constantFrom('text/plain', 'multipart/form-data; boundary=x', 'application/xml', ''),
        text: fc.constant(`tx=${valid}`),
      }),
      fc.record({ type: fc.constant('application/x-www-form-urlencoded'), text: fc.constant(`tx=${'A'.repeat(256 * 1024)}`) }),
    )
    await assertProperty(
      fc.asyncProperty(bodies, async ({ type, text }) => {
        const response = await fuzzInject(platform.app, {
          method: 'POST',
          url: '/ledger/transactions',
          headers: type === '' ? {} : { 'content-type': type },
          payload: text,
        })
        if (response === undefined) return
        const context = `POST /ledger/transactions [${type}] ${text.slice(0, 60)} → ${response.statusCode}`
        assert.ok(response.statusCode === 200 || (response.statusCode >= 400 && response.statusCode < 500), `${context}: ${response.body}`)
        const body = parseJsonBody(response, context)
        assertNoPollution(context)
        if (response.statusCode >= 400) {
          assertProblem(response.statusCode, body, String(response.headers['content-type'] ?? ''), context)
          await watch.assertUnchanged(context)
        } else await watch.accepted()
      }),
      fcParams(RUNS),
    )
    await assertBooksBalance()
  })
})
