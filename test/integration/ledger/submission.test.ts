import assert from 'node:assert/strict'
import { after, afterEach, before, describe, it } from 'node:test'
import { Account, Asset, Keypair, Memo, Operation, TransactionBuilder, xdr } from '@stellar/stellar-base'
import { sql } from 'kysely'
import { LedgerError } from '../../src/ledger/ledger-errors.js'
import { type AppliedTransaction, ledgerServiceFactory } from '../../src/ledger/ledger-service.js'
import { stampLedger, transactionMetaTemplate } from '../../src/ledger/meta-xdr.js'
import { json, type SandboxApp, type SandboxUser, sandbox, startPlatform, TEST_DB, type TestPlatform } from '../helpers/platform.js'

/** The address with its last character changed: the last character carries checksum bits, so any other one breaks it. */
function withBadChecksum(address: string): string {
  return `${address.slice(0, 55)}${address.endsWith('A') ? 'B' : 'A'}`
}

interface AccountBody {
  id: string
  account_id: string
  sequence: string
  balances: Array<{ balance: string; asset_type: string }>
  signers: Array<{ key: string; weight: number; type: string }>
  _links: Record<string, { href: string }>
}

interface TransactionBody {
  id: string
  hash: string
  ledger: number
  paging_token: string
  created_at: string
  source_account: string
  source_account_sequence: string
  fee_charged: string
  max_fee: string
  operation_count: number
  envelope_xdr: string
  result_xdr: string
  memo?: string
  memo_type: string
  successful: boolean
  _links: Record<string, { href: string }>
}

interface Problem {
  type: string
  title: string
  status: number
  detail: string
  extras?: { envelope_xdr?: string; result_xdr?: string; result_codes?: { transaction: string; operations?: string[] } }
}

interface PaymentOptions {
  from: Keypair
  to: string
  amount?: string
  sequence?: string
  fee?: string
  network?: string
  memo?: string
  timebounds?: { minTime: number; maxTime: number }
  signers?: Keypair[]
  ops?: xdr.Operation[]
}

describe('embedded ledger', () => {
  let platform: TestPlatform
  let sb: ReturnType<typeof sandbox>

  before(async () => {
    platform = await startPlatform()
    sb = sandbox(platform.app)
  })
  after(() => platform.close())

  // Test Pi is only created by funding and destroyed by fees, whatever a test did.
  afterEach(async () => {
    const check = await platform.app.inject({ method: 'GET', url: '/sandbox/ledger/check' })
    assert.equal(check.statusCode, 200)
    assert.equal(json(check).ok, true, `ledger invariants broken: ${check.body}`)
  })

  const get = (url: string) => platform.app.inject({ method: 'GET', url })

  async function account(address: string): Promise<{ balance: string; sequence: string }> {
    const response = await get(`/ledger/accounts/${address}`)
    assert.equal(response.statusCode, 200, response.body)
    const body = json<AccountBody>(response)
    return { balance: body.balances[0]?.balance ?? '', sequence: body.sequence }
  }

  const nowSeconds = () => Math.floor(platform.clock.now().getTime() / 1000)

  async function build(options: PaymentOptions): Promise<string> {
    const sequence = options.sequence ?? (await account(options.from.publicKey())).sequence
    const builder = new TransactionBuilder(new Account(options.from.publicKey(), sequence), {
      fee: options.fee ?? '100',
      networkPassphrase: options.network ?? 'Pi Testnet',
      timebounds: options.timebounds ?? { minTime: 0, maxTime: nowSeconds() + 180 },
    })
    for (const op of options.ops ?? [
      Operation.payment({ destination: options.to, asset: Asset.native(), amount: options.amount ?? '1' }),
    ]) {
      builder.addOperation(op)
    }
    if (options.memo !== undefined) builder.addMemo(Memo.text(options.memo))
    const tx = builder.build()
    tx.sign(...(options.signers ?? [options.from]))
    return tx.toEnvelope().toXDR('base64')
  }

  /** Submits as stellar-sdk does: a form with the field `tx`. */
  async function submit(envelope: string) {
    const response = await platform.app.inject({
      method: 'POST',
      url: '/ledger/transactions',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ tx: envelope }).toString(),
    })
    return response
  }

  const hashOf = (envelope: string, network = 'Pi Testnet') => TransactionBuilder.fromXDR(envelope, network).hash().toString('hex')

  async function fund(address: string, amount: string | number) {
    return platform.app.inject({ method: 'POST', url: '/sandbox/ledger/fund', payload: { address, amount } })
  }

  /** A fresh funded keypair: its own account, so tests never share a sequence. */
  async function funded(amount = '100'): Promise<Keypair> {
    const key = Keypair.random()
    const response = await fund(key.publicKey(), amount)
    assert.equal(response.statusCode, 200, response.body)
    return key
  }

  describe('wallets of the sandbox', () => {
    it('funds every new user with 1,000 test Pi and every new app with 10,000', async () => {
      const user = await sb.createUser()
      const app = await sb.createApp()
      assert.deepEqual(await account(user.wallet.address), { balance: '1000.0000000', sequence: '0' })
      assert.deepEqual(await account(app.wallet.address), { balance: '10000.0000000', sequence: '0' })
    })

    it('answers an account as Horizon does', async () => {
      const user = await sb.createUser()
      const response = await get(`/ledger/accounts/${user.wallet.address}`)
      const body = json<AccountBody & Record<string, unknown>>(response)
      assert.equal(body.id, user.wallet.address)
      assert.equal(body.account_id, user.wallet.address)
      assert.equal(body.subentry_count, 0)
      assert.deepEqual(body.thresholds, { low_threshold: 0, med_threshold: 0, high_threshold: 0 })
      assert.deepEqual(body.flags, { auth_required: false, auth_revocable: false, auth_immutable: false, auth_clawback_enabled: false })
      assert.deepEqual(body.balances, [
        { balance: '1000.0000000', buying_liabilities: '0.0000000', selling_liabilities: '0.0000000', asset_type: 'native' },
      ])
      assert.deepEqual(body.signers, [{ weight: 1, key: user.wallet.address, type: 'ed25519_public_key' }])
      assert.deepEqual(body.data, {})
      assert.equal(body.num_sponsoring, 0)
      assert.equal(body._links.self?.href, `http://plinth.test/ledger/accounts/${user.wallet.address}`)
      assert.ok(body._links.data, 'stellar-sdk reads data_attr only when a data link exists')
    })

    it('a user whose username is taken gets no ledger account', async () => {
      const user = await sb.createUser()
      const before = await platform.db.selectFrom('ledger_accounts').select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow()
      const again = await platform.app.inject({ method: 'POST', url: '/sandbox/users', payload: { username: user.username } })
      assert.equal(again.statusCode, 409)
      const after = await platform.db.selectFrom('ledger_accounts').select(sql<number>`count(*)::int`.as('n')).executeTakeFirstOrThrow()
      assert.equal(after.n, before.n)
    })

    it('answers an unknown or malformed account with a 404 problem', async () => {
      for (const id of [Keypair.random().publicKey(), 'not-an-account', 'G'.repeat(56)]) {
        const response = await get(`/ledger/accounts/${id}`)
        assert.equal(response.statusCode, 404, id)
        assert.match(String(response.headers['content-type']), /^application\/problem\+json/)
        const body = json<Problem>(response)
        assert.equal(body.type, 'https://stellar.org/horizon-errors/not_found')
        assert.equal(body.title, 'Resource Missing')
        assert.equal(body.status, 404)
      }
    })
  })

  describe('a payment from a user to an app', () => {
    let user: SandboxUser
    let app: SandboxApp
    let envelope: string
    let body: TransactionBody

    before(async () => {
      user = await sb.createUser()
      app = await sb.createApp()
      envelope = await build({ from: Keypair.fromSecret(user.wallet.seed), to: app.wallet.address, amount: '12.5', memo: 'payment-id-1' })
      const response = await submit(envelope)
      assert.equal(response.statusCode, 200, response.body)
      body = json<TransactionBody>(response)
    })

    it('applies: the amount moves, the fee of 100 stroops is burned, the sequence advances', async () => {
      assert.deepEqual(await account(user.wallet.address), { balance: '987.4999900', sequence: '1' })
      assert.deepEqual(await account(app.wallet.address), { balance: '10012.5000000', sequence: '0' })
    })

    it('answers the submission as Horizon does; the id is the hash (pi-backend reads it as the txid)', () => {
      const hash = hashOf(envelope)
      assert.equal(body.hash, hash)
      assert.equal(body.id, hash)
      assert.equal(body.successful, true)
      assert.equal(body.envelope_xdr, envelope)
      assert.equal(typeof body.ledger, 'number')
      assert.equal(body.paging_token, ((BigInt(body.ledger) << 32n) | 4096n).toString())
    })

    it('answers result_xdr that stellar-sdk can decode: txSuccess, one paymentSuccess, fee 100', () => {
      const result = xdr.TransactionResult.fromXDR(body.result_xdr, 'base64')
      assert.equal(result.feeCharged().toString(), '100')
      assert.equal(result.result().switch().name, 'txSuccess')
      const ops = result.result().results()
      assert.equal(ops.length, 1)
      assert.equal(ops[0]?.tr().paymentResult().switch().name, 'paymentSuccess')
    })

    it('GET /ledger/transactions/:hash answers the transaction with its memo and links', async () => {
      const response = await get(`/ledger/transactions/${body.hash}`)
      assert.equal(response.statusCode, 200)
      const tx = json<TransactionBody & Record<string, unknown>>(response)
      assert.equal(tx.id, body.hash)
      assert.equal(tx.memo, 'payment-id-1')
      assert.equal(tx.memo_type, 'text')
      assert.equal(tx.source_account, user.wallet.address)
      assert.equal(tx.source_account_sequence, '1')
      assert.equal(tx.fee_account, user.wallet.address)
      assert.equal(tx.fee_charged, '100')
      assert.equal(tx.max_fee, '100')
      assert.equal(tx.operation_count, 1)
      assert.equal(tx.ledger, body.ledger)
      assert.match(tx.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/)
      assert.ok(Math.abs(Date.parse(tx.created_at) - platform.clock.now().getTime()) < 60_000)
      assert.equal(tx._links.self?.href, `http://plinth.test/ledger/transactions/${body.hash}`)
      // Upper-case hex finds it too; an unknown or malformed hash is a 404 problem.
      assert.equal((await get(`/ledger/transactions/${body.hash.toUpperCase()}`)).statusCode, 200)
      for (const hash of ['0'.repeat(64), 'xyz']) {
        const missing = await get(`/ledger/transactions/${hash}`)
        assert.equal(missing.statusCode, 404)
        assert.equal(json<Problem>(missing).type, 'https://stellar.org/horizon-errors/not_found')
      }
    })

    it('GET /ledger/transactions/:hash/operations answers the payment', async () => {
      const response = await get(`/ledger/transactions/${body.hash}/operations`)
      assert.equal(response.statusCode, 200)
      const records = json<{ _embedded: { records: Array<Record<string, unknown>> } }>(response)._embedded.records
      assert.equal(records.length, 1)
      const op = records[0] ?? {}
      assert.equal(op.type, 'payment')
      assert.equal(op.type_i, 1)
      assert.equal(op.transaction_hash, body.hash)
      assert.equal(op.transaction_successful, true)
      assert.equal(op.source_account, user.wallet.address)
      assert.equal(op.from, user.wallet.address)
      assert.equal(op.to, app.wallet.address)
      assert.equal(op.amount, '12.5000000')
      assert.equal(op.asset_type, 'native')
      assert.equal(op.paging_token, (BigInt(body.paging_token) + 1n).toString())
    })

    it("lists the transaction among the sender's and the recipient's transactions", async () => {
      for (const address of [user.wallet.address, app.wallet.address]) {
        const response = await get(`/ledger/accounts/${address}/transactions`)
        assert.equal(response.statusCode, 200)
        const records = json<{ _embedded: { records: TransactionBody[] } }>(response)._embedded.records
        assert.deepEqual(
          records.map((r) => r.hash),
          [body.hash],
          address,
        )
      }
      const other = await sb.createUser()
      const none = json<{ _embedded: { records: unknown[] } }>(await get(`/ledger/accounts/${other.wallet.address}/transactions`))
      assert.deepEqual(none._embedded.records, [])
    })

    it('the ledgers list and the root show the ledger the transaction closed', async () => {
      const latest = json<{
        _embedded: { records: Array<{ sequence: number; successful_transaction_count: number; base_fee_in_stroops: number }> }
      }>(await get('/ledger/ledgers?order=desc&limit=1'))._embedded.records
      assert.equal(latest.length, 1)
      assert.ok((latest[0]?.sequence ?? 0) >= body.ledger)
      assert.equal(latest[0]?.base_fee_in_stroops, 100)
      const one = json<{ sequence: number; successful_transaction_count: number }>(await get(`/ledger/ledgers/${body.ledger}`))
      assert.equal(one.sequence, body.ledger)
      assert.equal(one.successful_transaction_count, 1)
      assert.equal((await get('/ledger/ledgers/999999999')).statusCode, 404)
      const root = json<Record<string, unknown>>(await get('/ledger/'))
      assert.equal(root.network_passphrase, 'Pi Testnet')
      assert.ok(Number(root.history_latest_ledger) >= body.ledger)
      assert.equal(root.core_latest_ledger, root.history_latest_ledger)
      assert.equal((await get('/ledger')).statusCode, 200, 'stellar-sdk calls the root without a trailing slash')
    })

    it('fee_stats says 100 stroops (stellar-sdk fetchBaseFee reads last_ledger_base_fee)', async () => {
      const stats = json<{ last_ledger_base_fee: string; fee_charged: Record<string, string>; max_fee: Record<string, string> }>(
        await get('/ledger/fee_stats'),
      )
      assert.equal(stats.last_ledger_base_fee, '100')
      assert.equal(stats.fee_charged.p50, '100')
      assert.equal(stats.max_fee.mode, '100')
    })

    it('answers a replay of the same envelope with its earlier result (as Horizon answers a duplicate), changing nothing', async () => {
      const hash = hashOf(envelope)
      const first = json<{ hash: string; ledger: number }>(await get(`/ledger/transactions/${hash}`))
      const response = await submit(envelope)
      assert.equal(response.statusCode, 200, response.body)
      const replay = json<{ hash: string; ledger: number }>(response)
      assert.equal(replay.hash, hash)
      assert.equal(replay.ledger, first.ledger)
      assert.deepEqual(await account(user.wallet.address), { balance: '987.4999900', sequence: '1' })
      assert.deepEqual(await account(app.wallet.address), { balance: '10012.5000000', sequence: '0' })
    })
  })

  describe('refusals change nothing', () => {
    /** Submits and asserts a transaction_failed problem with these codes, and that no account or transaction changed. */
    async function refused(
      envelope: string,
      expected: { transaction: string; operations?: string[] },
      watch: string[],
      network = 'Pi Testnet',
    ): Promise<Problem> {
      const before = await Promise.all(watch.map((address) => get(`/ledger/accounts/${address}`).then((r) => r.body)))
      const response = await submit(envelope)
      assert.equal(response.statusCode, 400, response.body)
      assert.match(String(response.headers['content-type']), /^application\/problem\+json/)
      const problem = json<Problem>(response)
      assert.equal(problem.type, 'https://stellar.org/horizon-errors/transaction_failed')
      assert.equal(problem.title, 'Transaction Failed')
      assert.equal(problem.status, 400)
      assert.deepEqual(problem.extras?.result_codes, expected)
      assert.equal(problem.extras?.envelope_xdr, envelope)
      const result = xdr.TransactionResult.fromXDR(problem.extras?.result_xdr ?? '', 'base64')
      assert.equal(result.feeCharged().toString(), '0', 'nothing was charged')
      const after = await Promise.all(watch.map((address) => get(`/ledger/accounts/${address}`).then((r) => r.body)))
      assert.deepEqual(after, before, 'no balance or sequence changed')
      assert.equal((await get(`/ledger/transactions/${hashOf(envelope, network)}`)).statusCode, 404, 'no transaction was recorded')
      return problem
    }

    it('tx_bad_seq: a sequence number that is not the next one', async () => {
      const from = await funded()
      const to = await funded()
      for (const sequence of ['1', '5']) {
        await refused(await build({ from, to: to.publicKey(), sequence }), { transaction: 'tx_bad_seq' }, [
          from.publicKey(),
          to.publicKey(),
        ])
      }
    })

    it('tx_bad_auth: signed by another key than the source', async () => {
      const from = await funded()
      const to = await funded()
      await refused(await build({ from, to: to.publicKey(), signers: [to] }), { transaction: 'tx_bad_auth' }, [
        from.publicKey(),
        to.publicKey(),
      ])
    })

    it('tx_bad_auth: signed under another passphrase than Pi Testnet or Pi Network', async () => {
      const from = await funded()
      const to = await funded()
      const network = 'Test SDF Network ; September 2015'
      await refused(
        await build({ from, to: to.publicKey(), network }),
        { transaction: 'tx_bad_auth' },
        [from.publicKey(), to.publicKey()],
        network,
      )
    })

    it('tx_bad_auth_extra: a signature beyond the required ones', async () => {
      const from = await funded()
      const to = await funded()
      await refused(await build({ from, to: to.publicKey(), signers: [from, Keypair.random()] }), { transaction: 'tx_bad_auth_extra' }, [
        from.publicKey(),
        to.publicKey(),
      ])
    })

    it('tx_insufficient_fee: less than 100 stroops per operation', async () => {
      const from = await funded()
      const to = await funded()
      await refused(await build({ from, to: to.publicKey(), fee: '99' }), { transaction: 'tx_insufficient_fee' }, [
        from.publicKey(),
        to.publicKey(),
      ])
    })

    it('tx_insufficient_balance: the source cannot pay the fee', async () => {
      const from = await funded('0.0000099')
      const to = await funded()
      await refused(await build({ from, to: to.publicKey(), amount: '0.0000001' }), { transaction: 'tx_insufficient_balance' }, [
        from.publicKey(),
        to.publicKey(),
      ])
    })

    it('tx_no_source_account: the source account does not exist', async () => {
      const from = Keypair.random()
      const to = await funded()
      await refused(await build({ from, to: to.publicKey(), sequence: '0' }), { transaction: 'tx_no_source_account' }, [to.publicKey()])
    })

    it('op_underfunded: the amount is more than the balance after the fee', async () => {
      const from = await funded('10')
      const to = await funded()
      await refused(await build({ from, to: to.publicKey(), amount: '10' }), { transaction: 'tx_failed', operations: ['op_underfunded'] }, [
        from.publicKey(),
        to.publicKey(),
      ])
    })

    it('op_no_destination: the destination account does not exist', async () => {
      const from = await funded()
      const to = Keypair.random()
      await refused(await build({ from, to: to.publicKey() }), { transaction: 'tx_failed', operations: ['op_no_destination'] }, [
        from.publicKey(),
      ])
      assert.equal((await get(`/ledger/accounts/${to.publicKey()}`)).statusCode, 404, 'a payment never creates an account')
    })

    it('op_not_supported: an operation other than a native payment', async () => {
      const from = await funded()
      const to = await funded()
      const ops = [
        Operation.payment({ destination: to.publicKey(), asset: Asset.native(), amount: '1' }),
        Operation.createAccount({ destination: Keypair.random().publicKey(), startingBalance: '1' }),
        Operation.payment({ destination: to.publicKey(), asset: new Asset('USD', to.publicKey()), amount: '1' }),
      ]
      await refused(
        await build({ from, to: to.publicKey(), ops, fee: '100' }),
        { transaction: 'tx_failed', operations: ['op_success', 'op_not_supported', 'op_not_supported'] },
        [from.publicKey(), to.publicKey()],
      )
    })

    it('tx_too_early follows the platform clock, moved by POST /sandbox/clock; tx_too_late needs max time past on the wall clock too', async () => {
      const from = await funded()
      const to = await funded()
      const watch = [from.publicKey(), to.publicKey()]
      const now = nowSeconds()
      const wall = Math.floor(Date.now() / 1000)
      const expired = await build({ from, to: to.publicKey(), timebounds: { minTime: 0, maxTime: wall - 1 } })
      const later = await build({ from, to: to.publicKey(), timebounds: { minTime: now + 3600, maxTime: 0 } })
      await refused(later, { transaction: 'tx_too_early' }, watch)
      await refused(expired, { transaction: 'tx_too_late' }, watch)

      // Past its max time on the platform clock, not on the wall clock: the bounds hold at wall time (docs/ledger.md).
      const other = await funded()
      const platformTimed = await build({ from: other, to: to.publicKey(), timebounds: { minTime: 0, maxTime: Math.max(now, wall) + 60 } })
      await sb.advanceClock(120)
      await refused(expired, { transaction: 'tx_too_late' }, watch)
      assert.equal((await submit(platformTimed)).statusCode, 200, 'valid at wall time')

      await sb.advanceClock(3600)
      const response = await submit(later)
      assert.equal(response.statusCode, 200, 'valid once the platform clock reached its min time')
      const tx = json<TransactionBody>(await get(`/ledger/transactions/${json<TransactionBody>(response).hash}`))
      assert.ok(Math.abs(Date.parse(tx.created_at) - platform.clock.now().getTime()) < 60_000, 'recorded at platform time')
    })

    it('transaction_malformed: an envelope that is not base64 XDR, or a fee bump', async () => {
      const from = await funded()
      const to = await funded()
      const inner = TransactionBuilder.fromXDR(await build({ from, to: to.publicKey() }), 'Pi Testnet')
      if (!('memo' in inner)) throw new Error('expected a plain transaction')
      const bump = TransactionBuilder.buildFeeBumpTransaction(from, '200', inner, 'Pi Testnet')
      bump.sign(from)
      for (const tx of ['not-xdr!', 'AAAA', Buffer.from('{"json": true}').toString('base64'), bump.toEnvelope().toXDR('base64')]) {
        const response = await submit(tx)
        assert.equal(response.statusCode, 400, tx)
        const problem = json<Problem>(response)
        assert.equal(problem.type, 'https://stellar.org/horizon-errors/transaction_malformed')
        assert.equal(problem.title, 'Transaction Malformed')
      }
      assert.deepEqual(await account(from.publicKey()), { balance: '100.0000000', sequence: '0' })
    })
  })

  describe('submission', () => {
    it('accepts JSON {tx} as well as a form', async () => {
      const from = await funded()
      const to = await funded()
      const response = await platform.app.inject({
        method: 'POST',
        url: '/ledger/transactions',
        payload: { tx: await build({ from, to: to.publicKey(), amount: '2' }) },
      })
      assert.equal(response.statusCode, 200, response.body)
      assert.deepEqual(await account(to.publicKey()), { balance: '102.0000000', sequence: '0' })
    })

    it('a transaction signed under Pi Network applies and records that network', async () => {
      const from = await funded()
      const to = await funded()
      const envelope = await build({ from, to: to.publicKey(), network: 'Pi Network' })
      const response = await submit(envelope)
      assert.equal(response.statusCode, 200, response.body)
      assert.equal(json<TransactionBody>(response).hash, hashOf(envelope, 'Pi Network'))
      const row = await platform.db
        .selectFrom('ledger_transactions')
        .select('network')
        .where('hash', '=', hashOf(envelope, 'Pi Network'))
        .executeTakeFirstOrThrow()
      assert.equal(row.network, 'Pi Network')
    })

    it('a payment with several operations and operation sources signed by each', async () => {
      const a = await funded('50')
      const b = await funded('50')
      const c = await funded('50')
      const ops = [
        Operation.payment({ destination: c.publicKey(), asset: Asset.native(), amount: '5' }),
        Operation.payment({ destination: c.publicKey(), asset: Asset.native(), amount: '7', source: b.publicKey() }),
      ]
      const response = await submit(await build({ from: a, to: c.publicKey(), ops, signers: [a, b] }))
      assert.equal(response.statusCode, 200, response.body)
      assert.deepEqual(await account(a.publicKey()), { balance: '44.9999800', sequence: '1' })
      assert.deepEqual(await account(b.publicKey()), { balance: '43.0000000', sequence: '0' })
      assert.deepEqual(await account(c.publicKey()), { balance: '62.0000000', sequence: '0' })
      assert.equal(json<TransactionBody>(response).fee_charged, '200')
    })

    it('answers a body without tx, of another type, or unknown routes with Horizon problems', async () => {
      const missing = await platform.app.inject({ method: 'POST', url: '/ledger/transactions', payload: {} })
      assert.equal(missing.statusCode, 400)
      assert.equal(json<Problem>(missing).type, 'https://stellar.org/horizon-errors/bad_request')
      const text = await platform.app.inject({
        method: 'POST',
        url: '/ledger/transactions',
        headers: { 'content-type': 'text/plain' },
        payload: 'tx=AAAA',
      })
      assert.equal(text.statusCode, 415)
      assert.match(String(text.headers['content-type']), /^application\/problem\+json/)
      const huge = await platform.app.inject({
        method: 'POST',
        url: '/ledger/transactions',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: `tx=${'A'.repeat(300 * 1024)}`,
      })
      assert.equal(huge.statusCode, 413)
      assert.equal(json<Problem>(huge).status, 413)
      const badQuery = await get('/ledger/ledgers?limit=201')
      assert.equal(badQuery.statusCode, 400)
      assert.equal(json<Problem>(badQuery).type, 'https://stellar.org/horizon-errors/bad_request')
      const nowhere = await get('/ledger/offers')
      assert.equal(nowhere.statusCode, 404)
      assert.equal(json<Problem>(nowhere).title, 'Resource Missing')
      // Outside /ledger the platform's own error shape still holds.
      assert.equal(json(await get('/v2/nowhere')).error, 'not_found')
    })

    it("pages an account's transactions with order, limit and cursor", async () => {
      const from = await funded()
      const to = await funded()
      const hashes: string[] = []
      for (let i = 0; i < 3; i++) {
        const response = await submit(await build({ from, to: to.publicKey() }))
        hashes.push(json<TransactionBody>(response).hash)
      }
      const page = async (query: string) =>
        json<{ _embedded: { records: TransactionBody[] }; _links: { next: { href: string } } }>(
          await get(`/ledger/accounts/${from.publicKey()}/transactions?${query}`),
        )
      const first = await page('limit=2')
      assert.deepEqual(
        first._embedded.records.map((r) => r.hash),
        hashes.slice(0, 2),
      )
      const next = new URL(first._links.next.href)
      const second = await page(next.searchParams.toString())
      assert.deepEqual(
        second._embedded.records.map((r) => r.hash),
        hashes.slice(2),
      )
      const desc = await page('order=desc&limit=200')
      assert.deepEqual(
        desc._embedded.records.map((r) => r.hash),
        [...hashes].reverse(),
      )
    })
  })

  describe('concurrency', () => {
    it('two transactions on one sequence number submitted at once: exactly one applies', async () => {
      for (let round = 0; round < 5; round++) {
        const from = await funded()
        const to = await funded()
        const one = await build({ from, to: to.publicKey(), amount: '1', sequence: '0' })
        const two = await build({ from, to: to.publicKey(), amount: '2', sequence: '0' })
        const responses = await Promise.all([submit(one), submit(two)])
        const statuses = responses.map((r) => r.statusCode).sort()
        assert.deepEqual(statuses, [200, 400], `round ${round} on ${TEST_DB}`)
        const refusal = responses.find((r) => r.statusCode === 400)
        assert.ok(refusal)
        assert.equal(json<Problem>(refusal).extras?.result_codes?.transaction, 'tx_bad_seq')
        const after = await account(from.publicKey())
        assert.equal(after.sequence, '1')
        const paid = responses[0]?.statusCode === 200 ? '1' : '2'
        assert.equal(after.balance, paid === '1' ? '98.9999900' : '97.9999900')
      }
    })

    it('payments in opposite directions at once all apply, without deadlock', async () => {
      const a = await funded('100')
      const b = await funded('100')
      const envelopes: string[] = []
      for (let i = 0; i < 4; i++) {
        envelopes.push(await build({ from: a, to: b.publicKey(), amount: '1', sequence: String(i) }))
        envelopes.push(await build({ from: b, to: a.publicKey(), amount: '2', sequence: String(i) }))
      }
      // Sequence numbers must arrive in order per account; pair them so each wave is one per account.
      for (let i = 0; i < envelopes.length; i += 2) {
        const responses = await Promise.all([submit(envelopes[i] ?? ''), submit(envelopes[i + 1] ?? '')])
        assert.deepEqual(
          responses.map((r) => r.statusCode),
          [200, 200],
          responses.map((r) => r.body).join('\n'),
        )
      }
      assert.deepEqual(await account(a.publicKey()), { balance: '103.9999600', sequence: '4' })
      assert.deepEqual(await account(b.publicKey()), { balance: '95.9999600', sequence: '4' })
    })
  })

  describe('the Date header is the platform clock', () => {
    it('on every /ledger response, including problems, after the clock moved', async () => {
      await sb.advanceClock(86_400)
      const expected = platform.clock.now().getTime()
      for (const [method, url] of [
        ['GET', '/ledger/'],
        ['GET', '/ledger/fee_stats'],
        ['GET', '/ledger/accounts/nobody'],
        ['GET', '/ledger/no-such-route'],
        ['POST', '/ledger/transactions'],
      ] as const) {
        const response = await platform.app.inject({ method, url, ...(method === 'POST' ? { payload: { tx: 'AAAA' } } : {}) })
        const date = Date.parse(String(response.headers.date))
        assert.ok(Math.abs(date - expected) < 5_000, `${url}: Date ${response.headers.date} is not the platform time`)
        assert.ok(date - Date.now() > 86_000_000, `${url}: Date is the wall clock`)
      }
    })
  })

  describe('POST /sandbox/ledger/fund', () => {
    it('tops up an account, or creates it, and answers the balance', async () => {
      const key = Keypair.random()
      const created = await fund(key.publicKey(), '12.5')
      assert.equal(created.statusCode, 200)
      assert.deepEqual(json(created), { address: key.publicKey(), balance: '12.5000000' })
      const topped = await fund(key.publicKey(), 0.1)
      assert.deepEqual(json(topped), { address: key.publicKey(), balance: '12.6000000' })
      assert.deepEqual(await account(key.publicKey()), { balance: '12.6000000', sequence: '0' })
    })

    for (const [what, body] of [
      ['an address that is not an account id', { address: 'GABC', amount: '1' }],
      ['an address with a bad checksum', { address: withBadChecksum(Keypair.random().publicKey()), amount: '1' }],
      ['a secret seed as address', { address: Keypair.random().secret(), amount: '1' }],
      ['a zero amount', { address: Keypair.random().publicKey(), amount: '0' }],
      ['a negative amount', { address: Keypair.random().publicKey(), amount: -1 }],
      ['8 decimal places', { address: Keypair.random().publicKey(), amount: '1.00000001' }],
      ['8 decimal places as a number', { address: Keypair.random().publicKey(), amount: 0.12345678 }],
      ['more than 1,000,000', { address: Keypair.random().publicKey(), amount: '1000000.0000001' }],
      ['words', { address: Keypair.random().publicKey(), amount: 'ten' }],
      ['no amount', { address: Keypair.random().publicKey() }],
    ] as const) {
      it(`refuses ${what} with 400 invalid_arguments`, async () => {
        const response = await platform.app.inject({ method: 'POST', url: '/sandbox/ledger/fund', payload: body })
        assert.equal(response.statusCode, 400, response.body)
        assert.equal(json(response).error, 'invalid_arguments')
        if ('address' in body && body.address.startsWith('G') && body.address.length === 56) {
          assert.equal((await get(`/ledger/accounts/${body.address}`)).statusCode, 404)
        }
      })
    }

    it('GET /sandbox/ledger/check answers the books', async () => {
      const check = json<Record<string, unknown>>(await get('/sandbox/ledger/check'))
      assert.equal(check.ok, true)
      assert.equal(check.negative_balances, 0)
      assert.equal(check.mismatched_accounts, 0)
      const total = (name: string) => BigInt(String(check[name]).replace('.', ''))
      assert.equal(total('total_balances'), total('total_funded') - total('total_fees'))
      assert.ok(total('total_fees') > 0n, 'the earlier tests burned fees')
    })

    it('GET /sandbox/ledger/check catches a balance that moved outside a transaction; a negative one cannot be stored', async () => {
      const key = await funded()
      const address = key.publicKey()
      const tamper = (delta: string) =>
        sql`update ledger_accounts set balance = balance + cast(${delta} as numeric) where address = ${address}`.execute(platform.db)
      await tamper('0.0000001')
      try {
        const check = json<Record<string, unknown>>(await get('/sandbox/ledger/check'))
        assert.equal(check.ok, false)
        assert.equal(check.mismatched_accounts, 1)
      } finally {
        await tamper('-0.0000001')
      }
      // A negative balance cannot even be written: the column's check constraint refuses it.
      await assert.rejects(tamper('-1000'))
      assert.equal(json(await get('/sandbox/ledger/check')).ok, true)
    })
  })

  describe('ledger numbers drawn at COMMIT (migration 0014)', () => {
    it('the database writes the number into the meta XDR exactly as the JavaScript stamp does, up to 2^32 − 1', async () => {
      const [a, b] = [Keypair.random().publicKey(), Keypair.random().publicKey()]
      const template = transactionMetaTemplate({
        source: a,
        sequence: 2n,
        fee: 100n,
        payments: [{ from: a, to: b, amount: 5n }],
        before: new Map([
          [a, { balance: 1_000n, sequence: 1n, lastModifiedLedger: 3 }],
          [b, { balance: 0n, sequence: 0n, lastModifiedLedger: 0 }],
        ]),
      })
      for (const ledger of [1, 256, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 53]) {
        const { rows } = await sql<{ meta: string }>`
          select ledger_stamp_meta(${template.result}::bytea, ${template.resultLedgerAt}::integer[], ${ledger.toString()}::bigint) as meta`.execute(
          platform.db,
        )
        assert.equal(rows[0]?.meta, stampLedger(template.result, template.resultLedgerAt, ledger), `ledger ${ledger}`)
      }
    })

    it('a transaction that rolls back draws no number: the next ledger follows the last one', async () => {
      const from = await funded()
      const to = await funded()
      const refusing = ledgerServiceFactory({
        db: platform.db,
        clock: platform.clock,
        onTransactionApplied: async () => {
          throw new Error('rolled back')
        },
      })
      const plain = ledgerServiceFactory({ db: platform.db, clock: platform.clock })
      const first = await plain.submit(await build({ from, to: to.publicKey(), amount: '1' }))
      await assert.rejects(refusing.submit(await build({ from, to: to.publicKey(), amount: '1' })), /rolled back/)
      const next = await plain.submit(await build({ from, to: to.publicKey(), amount: '1' }))
      assert.equal(BigInt(next.ledger), BigInt(first.ledger) + 1n)
    })
  })

  describe('the onTransactionApplied hook', () => {
    it('runs inside the applying transaction, with the applied transaction; its number is drawn at COMMIT', async () => {
      const from = await funded()
      const to = await funded()
      const seen: Array<{ tx: AppliedTransaction; queued: boolean; closed: boolean; balance: string | undefined }> = []
      const closed: string[] = []
      const ledger = ledgerServiceFactory({
        db: platform.db,
        clock: platform.clock,
        onTransactionApplied: async (trx, tx) => {
          assert.ok(trx.isTransaction)
          const queued = await trx.selectFrom('ledger_pending').select('hash').where('hash', '=', tx.hash).executeTakeFirst()
          const row = await trx.selectFrom('ledger_transactions').select('hash').where('hash', '=', tx.hash).executeTakeFirst()
          const moved = await trx
            .selectFrom('ledger_accounts')
            .select(sql<string>`balance::text`.as('balance'))
            .where('address', '=', tx.sourceAccount)
            .executeTakeFirst()
          seen.push({ tx, queued: queued !== undefined, closed: row !== undefined, balance: moved?.balance })
        },
        onLedgerClosed: (number) => closed.push(number),
      })
      const submitted = await ledger.submit(await build({ from, to: to.publicKey(), amount: '3', memo: 'memo-of-hook' }))
      assert.equal(seen.length, 1)
      const [call] = seen
      assert.equal(call?.balance, '96.9999900', 'the hook sees the balances the ledger moved')
      assert.equal(call?.queued, true, 'and the transaction queued to close a ledger')
      assert.equal(call?.closed, false, 'which gets its number only at COMMIT')
      assert.deepEqual(closed, [submitted.ledger], 'onLedgerClosed has the number, after the commit')
      const stored = await platform.db
        .selectFrom('ledger_transactions')
        .select(sql<string>`ledger::text`.as('ledger'))
        .where('hash', '=', submitted.hash)
        .executeTakeFirst()
      assert.equal(stored?.ledger, submitted.ledger)
      assert.equal(
        (await platform.db.selectFrom('ledger_pending').select('hash').execute()).length,
        0,
        'the queue is empty after the commit',
      )
      assert.deepEqual(call?.tx, {
        hash: submitted.hash,
        network: 'Pi Testnet',
        sourceAccount: from.publicKey(),
        memo: 'memo-of-hook',
        memoType: 'text',
        // No time: the ledger's close time is taken at COMMIT, after the hook (docs/ledger.md, "Close times never go back").
        operations: [{ type: 'payment', from: from.publicKey(), to: to.publicKey(), amount: '3.0000000' }],
        feeCharged: '100',
      })
    })

    it('a hook that throws rolls the whole ledger transaction back', async () => {
      const from = await funded()
      const to = await funded()
      const ledger = ledgerServiceFactory({
        db: platform.db,
        clock: platform.clock,
        onTransactionApplied: async () => {
          throw new Error('payments said no')
        },
      })
      const envelope = await build({ from, to: to.publicKey(), amount: '3' })
      await assert.rejects(ledger.submit(envelope), /payments said no/)
      assert.deepEqual(await account(from.publicKey()), { balance: '100.0000000', sequence: '0' })
      assert.deepEqual(await account(to.publicKey()), { balance: '100.0000000', sequence: '0' })
      assert.equal(await ledger.getTransaction(hashOf(envelope)), undefined)
      assert.deepEqual(await ledger.getOperations(hashOf(envelope)), [])
      // The same envelope applies once the hook lets it.
      const plain = ledgerServiceFactory({ db: platform.db, clock: platform.clock })
      assert.equal((await plain.submit(envelope)).hash, hashOf(envelope))
    })

    it('a LedgerError from the hook reaches the submitter as is', async () => {
      const from = await funded()
      const to = await funded()
      const ledger = ledgerServiceFactory({
        db: platform.db,
        clock: platform.clock,
        onTransactionApplied: async () => {
          throw new LedgerError({ type: 'https://stellar.org/horizon-errors/bad_request', title: 'Bad Request', status: 400, detail: 'no' })
        },
      })
      await assert.rejects(ledger.submit(await build({ from, to: to.publicKey() })), (error: unknown) => {
        assert.ok(error instanceof LedgerError)
        assert.equal(error.problem.detail, 'no')
        return true
      })
      assert.deepEqual(await account(from.publicKey()), { balance: '100.0000000', sequence: '0' })
    })
  })

  describe('OpenAPI', () => {
    it('documents every /ledger route under the Ledger tag', async () => {
      const doc = json<{ paths: Record<string, Record<string, { tags?: string[]; operationId?: string }>> }>(await get('/v2/openapi.json'))
      for (const [path, method] of [
        ['/ledger/', 'get'],
        ['/ledger/accounts/{account_id}', 'get'],
        ['/ledger/accounts/{account_id}/transactions', 'get'],
        ['/ledger/fee_stats', 'get'],
        ['/ledger/ledgers', 'get'],
        ['/ledger/transactions', 'post'],
        ['/ledger/transactions/{hash}', 'get'],
        ['/ledger/transactions/{hash}/operations', 'get'],
      ] as const) {
        const operation = doc.paths[path]?.[method]
        assert.ok(operation, `${method} ${path}`)
        assert.deepEqual(operation.tags, ['Ledger'])
        assert.ok(operation.operationId)
      }
      assert.ok(doc.paths['/sandbox/ledger/fund']?.post)
    })
  })
})

describe('embedded ledger in production mode', () => {
  let platform: TestPlatform
  before(async () => {
    platform = await startPlatform({ mode: 'production' })
  })
  after(() => platform.close())

  it('serves /ledger but not the sandbox ledger routes', async () => {
    assert.equal((await platform.app.inject({ method: 'GET', url: '/ledger/' })).statusCode, 200)
    const fund = await platform.app.inject({
      method: 'POST',
      url: '/sandbox/ledger/fund',
      payload: { address: Keypair.random().publicKey(), amount: '1' },
    })
    assert.equal(fund.statusCode, 404)
    assert.equal((await platform.app.inject({ method: 'GET', url: '/sandbox/ledger/check' })).statusCode, 404)
  })
})
