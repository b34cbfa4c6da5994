/** The payments API, A2U and U2A: each lifecycle, its refusals and its replays. */
import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import { ApiError } from '../../../src/core/errors.js'
import { refused } from '../../../src/ledger/ledger-errors.js'
import { ledgerServiceFactory } from '../../../src/ledger/ledger-service.js'
import type { PaymentDTO } from '../../../src/payments/payment-dto.js'
import { linkPayments, paymentsLedger } from '../../../src/payments/payments-ledger.js'
import { paymentsServiceFactory } from '../../../src/payments/payments-service.js'
import { ledgerAccount, pay } from '../../helpers/ledger.js'
import { A2U_SCOPES, assertError, order, type PaymentScene, paymentClients } from '../../helpers/payments-client.js'
import { sandbox, usePlatform } from '../../helpers/platform.js'

describe('payments', () => {
  const platform = usePlatform()
  const { call, scene } = paymentClients(platform)
  let sb: ReturnType<typeof sandbox>
  before(() => {
    sb = sandbox(platform.app)
  })
  /** The payments service as app.ts wires it, over the given ledger (signing with the scene's user's seed). */
  /** The scene's app is on Pi Testnet: its payments use that ledger. */
  const paymentsOver = (s: PaymentScene, ledger: Parameters<typeof paymentsLedger>[0]['Pi Testnet']) =>
    paymentsServiceFactory({
      db: platform.db,
      clock: platform.clock,
      publicUrl: 'http://plinth.test',
      approvalWindowMs: 60_000,
      ledger: paymentsLedger({ 'Pi Testnet': ledger, 'Pi Network': ledger }),
      userSeed: async () => s.user.wallet.seed,
    })
  /** The access token principal of a scene's user, for calling the payments service directly. */
  const principalOf = (s: PaymentScene) => ({
    kind: 'token' as const,
    tokenId: 'test',
    appId: s.app.app_id,
    userId: s.user.user_id,
    uid: s.uid,
    username: s.user.username,
    scopes: A2U_SCOPES,
    expiresAt: new Date(Date.now() + 3_600_000),
  })

  describe('app-to-user (A2U)', () => {
    it('runs the whole lifecycle: create, pay on the ledger, complete; retries are replays', async () => {
      const s = await scene()
      const created = await s.server.create({ amount: 1.5, ...order, uid: s.uid })
      assert.equal(created.status, 200)
      const p = created.body
      assert.match(p.identifier, /^[A-Za-z0-9_-]{24}$/)
      assert.equal(p.user_uid, s.uid)
      assert.equal(p.amount, 1.5)
      assert.equal(p.memo, 'A reward')
      assert.deepEqual(p.metadata, { order: 42 })
      assert.equal(p.from_address, s.app.wallet.address)
      assert.equal(p.to_address, s.user.wallet.address)
      assert.equal(p.direction, 'app_to_user')
      assert.equal(p.network, 'Pi Testnet')
      assert.match(p.created_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/)
      assert.deepEqual(p.status, {
        developer_approved: false,
        transaction_verified: false,
        developer_completed: false,
        cancelled: false,
        user_cancelled: false,
      })
      assert.equal(p.transaction, null)
      assert.deepEqual(
        (await s.server.incomplete()).body.incomplete_server_payments.map((x) => x.identifier),
        [p.identifier],
      )

      const before = await ledgerAccount(platform.app, s.user.wallet.address)
      const txid = await pay(platform.app, { seed: s.app.wallet.seed, to: p.to_address, amount: '1.5', memo: p.identifier })
      const linked = (await s.server.get(p.identifier)).body
      assert.deepEqual(linked.transaction, { txid, verified: true, _link: `http://plinth.test/ledger/transactions/${txid}` })
      assert.equal(linked.status.transaction_verified, true)
      assert.equal(linked.status.developer_completed, false)
      // Paid but not completed: still incomplete, still blocking a second payment, and not cancellable.
      assert.deepEqual(
        (await s.server.incomplete()).body.incomplete_server_payments.map((x) => x.transaction?.txid),
        [txid],
      )
      assertError(await s.server.create({ amount: 1, ...order, uid: s.uid }), 409, 'ongoing_payment_found')
      assertError(await s.server.cancel(p.identifier), 409, 'payment_tx_present')

      // The link resolves to a ledger transaction whose memo is the payment id (what the official demo checks).
      const onLedger = await platform.app.inject({ method: 'GET', url: new URL(linked.transaction?._link ?? '').pathname })
      assert.equal(onLedger.statusCode, 200)
      assert.equal(onLedger.json().memo, p.identifier)
      const after = await ledgerAccount(platform.app, s.user.wallet.address)
      assert.equal(Number(after?.balance) - Number(before?.balance), 1.5)

      const done = await s.server.complete(p.identifier, txid)
      assert.equal(done.status, 200)
      assert.equal(done.body.status.developer_completed, true)
      const again = await s.server.complete(p.identifier, txid)
      assert.equal(again.status, 200)
      assert.deepEqual(again.body, done.body)
      assertError(await s.server.complete(p.identifier, 'c'.repeat(64)), 409, 'already_completed')
      assertError(await s.server.cancel(p.identifier), 409, 'already_completed')
      assert.deepEqual((await s.server.incomplete()).body.incomplete_server_payments, [])
      // The slot is free again.
      assert.equal((await s.server.create({ amount: 2, ...order, uid: s.uid })).status, 200)
    })

    it('allows one open A2U payment per user: ongoing_payment_found carries the blocking payment', async () => {
      const s = await scene()
      const first = (await s.server.create({ amount: 1, ...order, uid: s.uid })).body
      const second = assertError(await s.server.create({ amount: 2, ...order, uid: s.uid }), 409, 'ongoing_payment_found')
      assert.equal(second.payment?.identifier, first.identifier)
      const cancelled = await s.server.cancel(first.identifier)
      assert.equal(cancelled.status, 200)
      assert.equal(cancelled.body.status.cancelled, true)
      assert.deepEqual((await s.server.cancel(first.identifier)).body, cancelled.body, 'cancel again is a replay')
      assert.deepEqual((await s.server.incomplete()).body.incomplete_server_payments, [])
      assert.equal((await s.server.create({ amount: 2, ...order, uid: s.uid })).status, 200)
    })

    it('says who cannot be paid: user_not_found, missing_scope', async () => {
      const s = await scene(['username', 'payments'])
      assertError(await s.server.create({ amount: 1, ...order, uid: s.uid }), 401, 'missing_scope')
      assertError(await s.server.create({ amount: 1, ...order, uid: '00000000-0000-4000-8000-000000000000' }), 404, 'user_not_found')
      // A uid of another app's user is no user of this app.
      const other = await scene()
      assertError(await s.server.create({ amount: 1, ...order, uid: other.uid }), 404, 'user_not_found')
    })

    for (const [what, fields, code] of [
      ['a zero amount', { amount: 0, memo: 'x', metadata: {} }, 'invalid_amount'],
      ['a negative amount', { amount: -3, memo: 'x', metadata: {} }, 'invalid_amount'],
      ['8 decimals', { amount: 0.123456789, memo: 'x', metadata: {} }, 'invalid_amount'],
      ['a string amount that is not a decimal numeral', { amount: '1e3', memo: 'x', metadata: {} }, 'invalid_amount'],
      ['a string amount with 8 decimals', { amount: '1.00000001', memo: 'x', metadata: {} }, 'invalid_amount'],
      ['a huge amount', { amount: 1e300, memo: 'x', metadata: {} }, 'invalid_amount'],
      ['array metadata', { amount: 1, memo: 'x', metadata: [1] }, 'invalid_metadata'],
      ['oversized metadata', { amount: 1, memo: 'x', metadata: { x: 'y'.repeat(5000) } }, 'invalid_metadata'],
      ['a long memo', { amount: 1, memo: 'm'.repeat(1001), metadata: {} }, 'invalid_arguments'],
      ['no uid', { amount: 1, memo: 'x', metadata: {} }, 'invalid_arguments'],
    ] as const) {
      it(`refuses ${what} with 400 ${code} and creates nothing`, async () => {
        const s = await scene()
        const payment: Record<string, unknown> = what === 'no uid' ? { ...fields } : { ...fields, uid: s.uid }
        assertError(await s.server.create(payment), 400, code)
        assert.deepEqual((await s.server.incomplete()).body.incomplete_server_payments, [])
      })
    }

    it('refuses a body without payment with 400 invalid_arguments', async () => {
      const s = await scene()
      assertError(
        await call({ method: 'POST', url: '/v2/payments', headers: { authorization: `Key ${s.app.api_key}` }, payload: {} }),
        400,
        'invalid_arguments',
      )
    })

    it('explains a complete that cannot be: missing_txid, verification_failed with the reason', async () => {
      const s = await scene()
      const p = (await s.server.create({ amount: 1, ...order, uid: s.uid })).body
      assertError(await s.server.complete(p.identifier), 400, 'missing_txid')
      assertError(await s.server.complete(p.identifier, 'not-hex'), 400, 'invalid_arguments')
      const unknown = assertError(await s.server.complete(p.identifier, 'd'.repeat(64)), 409, 'verification_failed')
      assert.equal(unknown.verification_error, 'tx_not_found')
      // A real transaction with another memo is not this payment's.
      const stray = await pay(platform.app, { seed: s.app.wallet.seed, to: s.user.wallet.address, amount: '1', memo: 'something else' })
      const mismatch = assertError(await s.server.complete(p.identifier, stray), 409, 'verification_failed')
      assert.equal(mismatch.verification_error, 'tx_memo_payment_identifier_mismatch')
      assert.equal((await s.server.get(p.identifier)).body.transaction, null)
    })

    it('links a wrong-amount transaction unverified: complete says not_verified and cancel is still possible', async () => {
      const s = await scene()
      const p = (await s.server.create({ amount: 2, ...order, uid: s.uid })).body
      const txid = await pay(platform.app, { seed: s.app.wallet.seed, to: p.to_address, amount: '1', memo: p.identifier })
      const linked = (await s.server.get(p.identifier)).body
      assert.deepEqual(linked.transaction, { txid, verified: false, _link: `http://plinth.test/ledger/transactions/${txid}` })
      assert.equal(linked.status.transaction_verified, false)
      assertError(await s.server.complete(p.identifier, txid), 409, 'not_verified')
      const cancelled = await s.server.cancel(p.identifier)
      assert.equal(cancelled.status, 200)
      assert.equal(cancelled.body.status.cancelled, true)
    })

    it('never links a transaction from someone other than the payer, and links a payment once', async () => {
      const s = await scene()
      const p = (await s.server.create({ amount: 1, ...order, uid: s.uid })).body
      // The user sends the app something with this payment's memo: not the payer, no link.
      await pay(platform.app, { seed: s.user.wallet.seed, to: s.app.wallet.address, amount: '1', memo: p.identifier })
      assert.equal((await s.server.get(p.identifier)).body.transaction, null)
      const first = await pay(platform.app, { seed: s.app.wallet.seed, to: p.to_address, amount: '1', memo: p.identifier })
      await pay(platform.app, { seed: s.app.wallet.seed, to: p.to_address, amount: '1', memo: p.identifier })
      assert.equal((await s.server.get(p.identifier)).body.transaction?.txid, first)
    })

    it('does not approve app-to-user payments', async () => {
      const s = await scene()
      const p = (await s.server.create({ amount: 1, ...order, uid: s.uid })).body
      assertError(await s.server.approve(p.identifier), 409, 'wrong_direction')
    })

    it("is not the user's to cancel or pay: wrong_direction, and it stays listed and completable", async () => {
      const s = await scene()
      const p = (await s.server.create({ amount: 1, ...order, uid: s.uid })).body
      assertError(await s.client.cancel(p.identifier), 409, 'wrong_direction')
      assertError(await s.client.submit(p.identifier), 409, 'wrong_direction')
      const listed = (await s.server.incomplete()).body.incomplete_server_payments.map((x) => x.identifier)
      assert.deepEqual(listed, [p.identifier])
      const txid = await pay(platform.app, { seed: s.app.wallet.seed, to: p.to_address, amount: '1', memo: p.identifier })
      assert.equal((await s.server.complete(p.identifier, txid)).status, 200)
      assert.deepEqual((await s.server.incomplete()).body.incomplete_server_payments, [])
    })

    it('refuses to complete with another txid (txid_mismatch) and a cancelled payment (cancelled_payment)', async () => {
      const s = await scene()
      const p = (await s.server.create({ amount: 1, ...order, uid: s.uid })).body
      const txid = await pay(platform.app, { seed: s.app.wallet.seed, to: p.to_address, amount: '1', memo: p.identifier })
      const stray = await pay(platform.app, { seed: s.app.wallet.seed, to: p.to_address, amount: '1', memo: 'not it' })
      const mismatch = assertError(await s.server.complete(p.identifier, stray), 409, 'txid_mismatch')
      assert.equal(mismatch.payment?.transaction?.txid, txid)
      assert.equal((await s.server.get(p.identifier)).body.status.developer_completed, false)

      assertError(await s.server.create({ amount: 1, ...order, uid: s.uid }), 409, 'ongoing_payment_found')

      const c = await scene()
      const cancelled = (await c.server.create({ amount: 1, ...order, uid: c.uid })).body
      assert.equal((await c.server.cancel(cancelled.identifier)).status, 200)
      assertError(await c.server.complete(cancelled.identifier, 'e'.repeat(64)), 409, 'cancelled_payment')
    })
  })

  describe('user-to-app (U2A)', () => {
    it('runs the whole lifecycle: create, approve, the user pays, complete', async () => {
      const s = await scene()
      const appBefore = await ledgerAccount(platform.app, s.app.wallet.address)
      const created = await s.client.create({ amount: 3.25, memo: 'A sword', metadata: { sku: 'sword' } })
      assert.equal(created.status, 201)
      const p = created.body
      assert.equal(p.direction, 'user_to_app')
      assert.equal(p.from_address, s.user.wallet.address)
      assert.equal(p.to_address, s.app.wallet.address)
      assert.equal(p.user_uid, s.uid)
      assertError(await s.client.submit(p.identifier), 409, 'not_approved')

      const approved = await s.server.approve(p.identifier)
      assert.equal(approved.status, 200)
      assert.equal(approved.body.status.developer_approved, true)
      assert.deepEqual((await s.server.approve(p.identifier)).body, approved.body, 'approve again is a replay')
      assert.equal((await s.client.incomplete()).body.payment, null, 'not paid yet, so not incomplete')

      const paid = await s.client.submit(p.identifier)
      assert.equal(paid.status, 200)
      const txid = paid.body.transaction?.txid ?? ''
      assert.match(txid, /^[0-9a-f]{64}$/)
      assert.equal(paid.body.transaction?.verified, true)
      assert.deepEqual((await s.client.submit(p.identifier)).body, paid.body, 'submit again is a replay')
      assert.equal((await s.client.incomplete()).body.payment?.identifier, p.identifier)
      assertError(await s.client.cancel(p.identifier), 409, 'payment_tx_present')

      const done = await s.server.complete(p.identifier, txid)
      assert.equal(done.status, 200)
      assert.equal(done.body.status.developer_completed, true)
      assert.equal((await s.client.incomplete()).body.payment, null)
      const appAfter = await ledgerAccount(platform.app, s.app.wallet.address)
      assert.equal(Math.round((Number(appAfter?.balance) - Number(appBefore?.balance)) * 1e7), 3.25e7)
    })

    it('refuses to approve a payment that was approved and then cancelled, and lists it as cancelled', async () => {
      const s = await scene()
      const p = (await s.client.create({ amount: 1, memo: 'x', metadata: {} })).body
      assert.equal((await s.server.approve(p.identifier)).status, 200)
      assert.equal((await s.server.cancel(p.identifier)).status, 200)
      const refused = assertError(await s.server.approve(p.identifier), 409, 'cancelled_payment')
      assert.equal(refused.payment?.status.cancelled, true)
      assertError(await s.client.submit(p.identifier), 409, 'cancelled_payment')
    })

    it('shows a payment past its approval window as cancelled in the sandbox listing too', async () => {
      const s = await scene()
      const p = (await s.client.create({ amount: 1, memo: 'x', metadata: {} })).body
      await sb.advanceClock(61)
      const listed = await call<{ payments: PaymentDTO[] }>({ method: 'GET', url: `/sandbox/apps/${s.app.app_id}/payments` })
      assert.equal(listed.status, 200)
      const row = listed.body.payments.find((x) => x.identifier === p.identifier)
      assert.equal(row?.status.cancelled, true)
    })

    it('moves no money when the payment is cancelled while the platform submits it: the ledger transaction rolls back', async () => {
      const s = await scene()
      const p = (await s.client.create({ amount: 1, memo: 'x', metadata: {} })).body
      await s.server.approve(p.identifier)
      const before = await ledgerAccount(platform.app, s.user.wallet.address)
      // The platform as app.ts wires it, but the app's cancel commits just before the ledger applies
      // the user's transaction (the window between the submit's read and the ledger's apply).
      const payments = paymentsOver(s, {
        getTransaction: (hash) => ledger.getTransaction(hash),
        submitSigned: async (source, sign, options) => {
          assert.equal((await s.server.cancel(p.identifier)).status, 200)
          return ledger.submitSigned(source, sign, options)
        },
      })
      const ledger = ledgerServiceFactory({
        network: 'Pi Testnet',
        db: platform.db,
        clock: platform.clock,
        hook: linkPayments(platform.clock),
      })
      await assert.rejects(payments.submit(principalOf(s), p.identifier), (error: unknown) => {
        assert.ok(error instanceof ApiError)
        assert.equal(error.code, 'cancelled_payment')
        return true
      })
      assert.deepEqual(await ledgerAccount(platform.app, s.user.wallet.address), before, 'no fee, no payment, no sequence')
      const read = (await s.server.get(p.identifier)).body
      assert.equal(read.transaction, null)
      const stored = await platform.db.selectFrom('ledger_transactions').select('hash').where('memo', '=', p.identifier).execute()
      assert.deepEqual(stored, [])
    })

    it("answers 503 wallet_busy with Retry-After, never transaction_failed, when the wallet's sequence keeps being taken; nothing moves", async () => {
      const s = await scene()
      const p = (await s.client.create({ amount: 1, memo: 'x', metadata: {} })).body
      await s.server.approve(p.identifier)
      const before = await ledgerAccount(platform.app, s.user.wallet.address)
      let attempts = 0
      // The user's own transactions take the wallet's sequence number every time the platform signs.
      const payments = paymentsOver(s, {
        getTransaction: async () => undefined,
        submitSigned: async () => {
          attempts += 1
          throw refused({ transaction: 'tx_bad_seq', detail: 'The sequence number was used meanwhile.' }, '')
        },
      })
      await assert.rejects(payments.submit(principalOf(s), p.identifier), (error: unknown) => {
        assert.ok(error instanceof ApiError)
        assert.equal(error.code, 'wallet_busy')
        assert.equal(error.statusCode, 503)
        assert.equal(error.retryAfterSeconds, 1)
        return true
      })
      assert.ok(attempts > 1, 'it tried again before answering busy')
      assert.deepEqual(await ledgerAccount(platform.app, s.user.wallet.address), before)
      assert.equal((await s.server.get(p.identifier)).body.transaction, null)
      // The same call through the platform's own ledger then pays.
      assert.equal((await s.client.submit(p.identifier)).body.transaction?.verified, true)
    })

    it("lets the user cancel before paying, after which approve is refused and the app's cancel answers it as it is", async () => {
      const s = await scene()
      const p = (await s.client.create({ amount: 1, memo: 'x', metadata: {} })).body
      const cancelled = await s.client.cancel(p.identifier)
      assert.equal(cancelled.status, 200)
      assert.equal(cancelled.body.status.user_cancelled, true)
      assert.deepEqual((await s.client.cancel(p.identifier)).body, cancelled.body)
      assertError(await s.server.approve(p.identifier), 409, 'cancelled_payment')
      // A cancel is idempotent (409 cancelled_payment before #39): cancel-idempotent.test.ts has the cases.
      const appCancel = await s.server.cancel(p.identifier)
      assert.equal(appCancel.status, 200)
      assert.deepEqual(appCancel.body, (await s.server.get(p.identifier)).body)
    })

    it('keeps one open payment per user: a new one cancels an unpaid one, a paid one blocks it', async () => {
      const s = await scene()
      const first = (await s.client.create({ amount: 1, memo: 'first', metadata: {} })).body
      const second = (await s.client.create({ amount: 2, memo: 'second', metadata: {} })).body
      assert.equal((await s.server.get(first.identifier)).body.status.cancelled, true)
      await s.server.approve(second.identifier)
      await s.client.submit(second.identifier)
      const blocked = assertError(await s.client.create({ amount: 3, memo: 'third', metadata: {} }), 409, 'ongoing_payment_found')
      assert.equal(blocked.payment?.identifier, second.identifier)
    })

    it('cancels a payment the app did not approve within the approval window (platform clock)', async () => {
      const s = await scene()
      const p = (await s.client.create({ amount: 1, memo: 'x', metadata: {} })).body
      await sb.advanceClock(61)
      const read = (await s.server.get(p.identifier)).body
      assert.equal(read.status.cancelled, true)
      assert.equal(read.status.developer_approved, false)
      assertError(await s.server.approve(p.identifier), 409, 'cancelled_payment')
      assertError(await s.client.submit(p.identifier), 409, 'cancelled_payment')
    })

    it('needs the payments scope', async () => {
      const s = await scene(['username'])
      assertError(await s.client.create({ amount: 1, memo: 'x', metadata: {} }), 401, 'missing_scope')
    })

    it('refuses a payment the wallet cannot cover with transaction_failed, and nothing moves', async () => {
      const s = await scene()
      const balance = (await ledgerAccount(platform.app, s.user.wallet.address))?.balance
      const p = (await s.client.create({ amount: 5000, memo: 'too much', metadata: {} })).body
      await s.server.approve(p.identifier)
      assertError(await s.client.submit(p.identifier), 400, 'transaction_failed')
      assert.equal((await ledgerAccount(platform.app, s.user.wallet.address))?.balance, balance)
      assert.equal((await s.server.get(p.identifier)).body.transaction, null)
    })
  })
})
