/** The embedded ledger: the sandbox's wallets, a user paying an app, and refusals that change nothing. */
import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import { Asset, Keypair, Operation, TransactionBuilder, xdr } from '@stellar/stellar-base'
import { sql } from 'kysely'
import { type AccountBody, checkLedgerAfterEach, ledgerClient, type Problem, type TransactionBody } from '../../helpers/ledger-client.js'
import { json, type SandboxApp, type SandboxUser, sandbox, usePlatform } from '../../helpers/platform.js'

describe('embedded ledger', () => {
  const platform = usePlatform()
  let sb: ReturnType<typeof sandbox>
  before(() => {
    sb = sandbox(platform.app)
  })
  checkLedgerAfterEach(platform)
  const { get, account, nowSeconds, build, submit, hashOf, funded } = ledgerClient(platform)

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
})
