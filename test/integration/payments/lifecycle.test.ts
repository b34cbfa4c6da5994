import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { InjectOptions } from 'fastify'
import { ApiError } from '../../src/http/errors.js'
import { refused } from '../../src/ledger/ledger-errors.js'
import { ledgerServiceFactory } from '../../src/ledger/ledger-service.js'
import { linkPayments, paymentsLedger } from '../../src/payments/payments-ledger.js'
import { paymentsServiceFactory } from '../../src/payments/payments-service.js'
import { type AuthFixture, authCases } from '../helpers/auth-cases.js'
import { buildPayment, ledgerAccount, pay, submitEnvelope } from '../helpers/ledger.js'
import { type SandboxApp, type SandboxUser, sandbox, startPlatform, type TestPlatform } from '../helpers/platform.js'

interface PaymentDTO {
  identifier: string
  user_uid: string
  amount: number
  memo: string
  metadata: Record<string, unknown>
  from_address: string
  to_address: string
  direction: string
  created_at: string
  network: string
  status: {
    developer_approved: boolean
    transaction_verified: boolean
    developer_completed: boolean
    cancelled: boolean
    user_cancelled: boolean
  }
  transaction: null | { txid: string; verified: boolean; _link: string }
}
interface ErrorBody {
  error: string
  error_message: string
  payment?: PaymentDTO
  verification_error?: string
}

const A2U_SCOPES = ['username', 'payments', 'wallet_address']

describe('payments', () => {
  let platform: TestPlatform
  let sb: ReturnType<typeof sandbox>

  before(async () => {
    platform = await startPlatform()
    sb = sandbox(platform.app)
  })
  after(() => platform.close())

  async function call<T = PaymentDTO>(options: InjectOptions, on: TestPlatform = platform): Promise<{ status: number; body: T }> {
    const response = await on.app.inject(options)
    return { status: response.statusCode, body: response.json() as T }
  }
  const callOn = <T = PaymentDTO>(on: TestPlatform, options: InjectOptions) => call<T>(options, on)
  const asApp = (app: SandboxApp, on: TestPlatform = platform) => ({
    create: (payment: Record<string, unknown>) =>
      callOn(on, { method: 'POST', url: '/v2/payments', headers: { authorization: `Key ${app.api_key}` }, payload: { payment } }),
    get: (id: string) => callOn(on, { method: 'GET', url: `/v2/payments/${id}`, headers: { authorization: `Key ${app.api_key}` } }),
    approve: (id: string) =>
      callOn(on, { method: 'POST', url: `/v2/payments/${id}/approve`, headers: { authorization: `Key ${app.api_key}` } }),
    complete: (id: string, txid?: string) =>
      callOn(on, {
        method: 'POST',
        url: `/v2/payments/${id}/complete`,
        headers: { authorization: `Key ${app.api_key}` },
        ...(txid === undefined ? {} : { payload: { txid } }),
      }),
    cancel: (id: string) =>
      callOn(on, { method: 'POST', url: `/v2/payments/${id}/cancel`, headers: { authorization: `Key ${app.api_key}` } }),
    incomplete: () =>
      callOn<{ incomplete_server_payments: PaymentDTO[] }>(on, {
        method: 'GET',
        url: '/v2/payments/incomplete_server_payments',
        headers: { authorization: `Key ${app.api_key}` },
      }),
  })
  const asUser = (token: string, on: TestPlatform = platform) => ({
    create: (payment: Record<string, unknown>) =>
      callOn(on, { method: 'POST', url: '/v2/client/payments', headers: { authorization: `Bearer ${token}` }, payload: payment }),
    get: (id: string) => callOn(on, { method: 'GET', url: `/v2/client/payments/${id}`, headers: { authorization: `Bearer ${token}` } }),
    submit: (id: string) =>
      callOn(on, { method: 'POST', url: `/v2/client/payments/${id}/submit`, headers: { authorization: `Bearer ${token}` } }),
    cancel: (id: string) =>
      callOn(on, { method: 'POST', url: `/v2/client/payments/${id}/cancel`, headers: { authorization: `Bearer ${token}` } }),
    incomplete: () =>
      callOn<{ payment: PaymentDTO | null }>(on, {
        method: 'GET',
        url: '/v2/client/payments/incomplete',
        headers: { authorization: `Bearer ${token}` },
      }),
  })

  interface Scene {
    app: SandboxApp
    user: SandboxUser
    token: string
    uid: string
    server: ReturnType<typeof asApp>
    client: ReturnType<typeof asUser>
  }
  async function scene(scopes = A2U_SCOPES, on: TestPlatform = platform): Promise<Scene> {
    const onSb = on === platform ? sb : sandbox(on.app)
    const app = await onSb.createApp()
    const user = await onSb.createUser()
    const auth = await onSb.authenticate(app.app_id, user.user_id, scopes)
    return { app, user, token: auth.accessToken, uid: auth.user.uid, server: asApp(app, on), client: asUser(auth.accessToken, on) }
  }
  const order = { memo: 'A reward', metadata: { order: 42 } }
  /** The payments service as app.ts wires it, over the given ledger (signing with the scene's user's seed). */
  const paymentsOver = (s: Scene, ledger: Parameters<typeof paymentsLedger>[0]) =>
    paymentsServiceFactory({
      db: platform.db,
      clock: platform.clock,
      publicUrl: 'http://plinth.test',
      approvalWindowMs: 60_000,
      ledger: paymentsLedger(ledger),
      userSeed: async () => s.user.wallet.seed,
    })
  /** The access token principal of a scene's user, for calling the payments service directly. */
  const principalOf = (s: Scene) => ({
    kind: 'token' as const,
    tokenId: 'test',
    appId: s.app.app_id,
    userId: s.user.user_id,
    uid: s.uid,
    username: s.user.username,
    scopes: A2U_SCOPES,
    expiresAt: new Date(Date.now() + 3_600_000),
  })

  function assertError(result: { status: number; body: unknown }, status: number, code: string): ErrorBody {
    const body = result.body as ErrorBody
    assert.equal(result.status, status, `expected ${status} ${code}, got ${result.status} ${JSON.stringify(body)}`)
    assert.equal(body.error, code)
    assert.equal(typeof body.error_message, 'string')
    return body
  }

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
        db: platform.db,
        clock: platform.clock,
        onTransactionApplied: linkPayments(() => payments),
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

    it('lets the user cancel before paying, after which approve is refused', async () => {
      const s = await scene()
      const p = (await s.client.create({ amount: 1, memo: 'x', metadata: {} })).body
      const cancelled = await s.client.cancel(p.identifier)
      assert.equal(cancelled.status, 200)
      assert.equal(cancelled.body.status.user_cancelled, true)
      assert.deepEqual((await s.client.cancel(p.identifier)).body, cancelled.body)
      assertError(await s.server.approve(p.identifier), 409, 'cancelled_payment')
      assertError(await s.server.cancel(p.identifier), 409, 'cancelled_payment')
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

  describe('the approval window and the ledger (a platform of their own: they move its clock)', () => {
    let own: TestPlatform
    let ownSb: ReturnType<typeof sandbox>
    before(async () => {
      own = await startPlatform()
      ownSb = sandbox(own.app)
    })
    after(() => own.close())

    it('refuses the transaction of a user who pays with their own seed before the app approved: nothing moves, and the window cancels', async () => {
      // Issue 12, item 3: the ledger linked such a transaction, then the approval window cancelled the
      // payment it had paid (cancelled with transaction_verified), and complete answered cancelled_payment.
      const s = await scene(A2U_SCOPES, own)
      const p = (await s.client.create({ amount: 1, memo: 'x', metadata: {} })).body
      const before = await ledgerAccount(own.app, s.user.wallet.address)
      const envelope = await buildPayment(own.app, {
        seed: s.user.wallet.seed,
        to: p.to_address,
        amount: '1',
        memo: p.identifier,
        timeoutSeconds: 0,
      })
      const early = await submitEnvelope(own.app, envelope)
      assert.equal(early.status, 400, JSON.stringify(early.body))
      assert.deepEqual((early.body.extras as { result_codes?: unknown } | undefined)?.result_codes, {
        transaction: 'tx_payment_not_approved',
      })
      assert.deepEqual(await ledgerAccount(own.app, s.user.wallet.address), before, 'no payment, no fee, no sequence')
      assert.equal((await s.server.get(p.identifier)).body.transaction, null)
      await ownSb.advanceClock(61)
      const read = (await s.server.get(p.identifier)).body
      assert.equal(read.status.cancelled, true)
      assert.equal(read.transaction, null)
      assert.deepEqual(await ledgerAccount(own.app, s.user.wallet.address), before)
    })

    it("links the user's own transaction once the app approved; the approval window then changes nothing and complete works", async () => {
      const s = await scene(A2U_SCOPES, own)
      const p = (await s.client.create({ amount: 1, memo: 'x', metadata: {} })).body
      await s.server.approve(p.identifier)
      const txid = await pay(own.app, { seed: s.user.wallet.seed, to: p.to_address, amount: '1', memo: p.identifier, timeoutSeconds: 0 })
      await ownSb.advanceClock(61)
      const read = (await s.server.get(p.identifier)).body
      assert.equal(read.status.cancelled, false)
      assert.equal(read.transaction?.txid, txid)
      assert.equal(read.transaction?.verified, true)
      const done = await s.server.complete(p.identifier, txid)
      assert.equal(done.status, 200, JSON.stringify(done.body))
      assert.equal(done.body.status.developer_completed, true)
    })

    it('never cancels by the approval window an unapproved payment a transaction was linked to before the ledger refused those', async () => {
      // A database from before that rule can hold such a payment: the user's money moved for it.
      const s = await scene(A2U_SCOPES, own)
      const p = (await s.client.create({ amount: 1, memo: 'x', metadata: {} })).body
      const txid = 'c'.repeat(64)
      await own.db
        .updateTable('payments')
        .set({ txid, tx_verified: true, tx_linked_at: own.clock.now() })
        .where('identifier', '=', p.identifier)
        .execute()
      await ownSb.advanceClock(61)
      const read = (await s.server.get(p.identifier)).body
      assert.equal(read.status.cancelled, false, 'the window left the paid payment alone')
      assert.equal(read.status.transaction_verified, true)
      // The sandbox listing persists the window for every payment of the app at once: it leaves this one too.
      const listed = await call<{ payments: PaymentDTO[] }>({ method: 'GET', url: `/sandbox/apps/${s.app.app_id}/payments` }, own)
      assert.equal(listed.body.payments.find((x) => x.identifier === p.identifier)?.status.cancelled, false)
      const [row] = await own.db.selectFrom('payments').select('cancelled').where('identifier', '=', p.identifier).execute()
      assert.equal(row?.cancelled, false)
      const done = await s.server.complete(p.identifier, txid)
      assert.equal(done.status, 200, JSON.stringify(done.body))
    })
  })

  describe('object-level authorization', () => {
    it("answers another app's payment with 404 payment_not_found and changes nothing", async () => {
      const owner = await scene()
      const intruder = await scene()
      const a2u = (await owner.server.create({ amount: 1, ...order, uid: owner.uid })).body
      const u2a = (await owner.client.create({ amount: 1, memo: 'x', metadata: {} })).body
      for (const id of [a2u.identifier, u2a.identifier]) {
        assertError(await intruder.server.get(id), 404, 'payment_not_found')
        assertError(await intruder.server.approve(id), 404, 'payment_not_found')
        assertError(await intruder.server.complete(id, 'e'.repeat(64)), 404, 'payment_not_found')
        assertError(await intruder.server.cancel(id), 404, 'payment_not_found')
        assertError(await intruder.client.get(id), 404, 'payment_not_found')
        assertError(await intruder.client.submit(id), 404, 'payment_not_found')
        assertError(await intruder.client.cancel(id), 404, 'payment_not_found')
      }
      assert.deepEqual((await owner.server.get(a2u.identifier)).body, a2u)
      assert.deepEqual((await owner.server.get(u2a.identifier)).body, u2a)
      assert.deepEqual((await intruder.server.incomplete()).body.incomplete_server_payments, [])
    })

    it('answers concurrent reads batched into one query each with its own app’s view, and sees a cancel made just before', async () => {
      const owner = await scene()
      const intruder = await scene()
      const first = (await owner.server.create({ amount: 1, ...order, uid: owner.uid })).body
      const second = (await intruder.server.create({ amount: 2, ...order, uid: intruder.uid })).body
      // Sent together, these share one `= any($1)` query: the same identifier asked by its app and by another.
      const answers = await Promise.all([
        ...Array.from({ length: 10 }, () => owner.server.get(first.identifier)),
        ...Array.from({ length: 10 }, () => intruder.server.get(first.identifier)),
        ...Array.from({ length: 10 }, () => intruder.server.get(second.identifier)),
        ...Array.from({ length: 10 }, () => owner.server.get(second.identifier)),
        owner.server.get('no-such-payment'),
      ])
      for (const answer of answers.slice(0, 10)) assert.deepEqual(answer, { status: 200, body: first })
      for (const answer of answers.slice(10, 20)) assertError(answer, 404, 'payment_not_found')
      for (const answer of answers.slice(20, 30)) assert.deepEqual(answer, { status: 200, body: second })
      for (const answer of answers.slice(30, 40)) assertError(answer, 404, 'payment_not_found')
      assertError(answers[40] as { status: number; body: unknown }, 404, 'payment_not_found')
      // Batching is not caching: a read made after a write sees it, even with reads of the same payment in flight.
      const inFlight = Array.from({ length: 5 }, () => owner.server.get(first.identifier))
      assert.equal((await owner.server.cancel(first.identifier)).status, 200)
      assert.equal((await owner.server.get(first.identifier)).body.status.cancelled, true)
      await Promise.all(inFlight)
    })

    it("answers another user's payment in the same app with 404", async () => {
      const s = await scene()
      const other = await sb.createUser()
      const otherToken = (await sb.authenticate(s.app.app_id, other.user_id, A2U_SCOPES)).accessToken
      const p = (await s.client.create({ amount: 1, memo: 'x', metadata: {} })).body
      const intruder = asUser(otherToken)
      assertError(await intruder.get(p.identifier), 404, 'payment_not_found')
      assertError(await intruder.cancel(p.identifier), 404, 'payment_not_found')
      assert.equal((await s.client.get(p.identifier)).body.status.user_cancelled, false)
    })

    it('answers an unknown payment with 404', async () => {
      const s = await scene()
      assertError(await s.server.get('nope'), 404, 'payment_not_found')
    })
  })

  describe('concurrency', () => {
    it('concurrent completes of one payment: one completion, the rest replays', async () => {
      const s = await scene()
      const p = (await s.server.create({ amount: 1, ...order, uid: s.uid })).body
      const txid = await pay(platform.app, { seed: s.app.wallet.seed, to: p.to_address, amount: '1', memo: p.identifier })
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) => (i % 3 === 2 ? s.server.cancel(p.identifier) : s.server.complete(p.identifier, txid))),
      )
      for (const [i, r] of results.entries()) {
        // A cancel lands before the completion (a verified transaction is linked) or after it.
        if (i % 3 === 2) assert.ok(['payment_tx_present', 'already_completed'].includes((r.body as unknown as ErrorBody).error))
        else assert.equal(r.status, 200)
      }
      // One completion: every 200 answers the same completed payment, replays included.
      const completions = results.filter((_r, i) => i % 3 !== 2).map((r) => r.body)
      for (const body of completions) assert.deepEqual(body, completions[0])
      assert.equal(completions[0]?.status.developer_completed, true)
      const completedAt = await platform.db
        .selectFrom('payments')
        .select('completed_at')
        .where('identifier', '=', p.identifier)
        .executeTakeFirstOrThrow()
      assert.ok(completedAt.completed_at)
    })

    it('concurrent approves and cancels of one payment end in one consistent state, never a 5xx', async () => {
      const s = await scene()
      const p = (await s.client.create({ amount: 1, memo: 'x', metadata: {} })).body
      const results = await Promise.all(
        Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? s.server.approve(p.identifier) : s.server.cancel(p.identifier))),
      )
      for (const r of results) assert.ok(r.status === 200 || r.status === 409, `status ${r.status}`)
      const final = (await s.server.get(p.identifier)).body
      assert.equal(final.status.cancelled, true, 'a cancel is allowed after an approve, so the last word is cancelled')
      for (const r of results) {
        if (r.status === 409) assert.equal((r.body as unknown as ErrorBody).error, 'cancelled_payment')
      }
    })

    it('concurrent A2U creates for one user: exactly one payment', async () => {
      const s = await scene()
      const results = await Promise.all(Array.from({ length: 10 }, () => s.server.create({ amount: 1, ...order, uid: s.uid })))
      assert.equal(results.filter((r) => r.status === 200).length, 1)
      for (const r of results.filter((x) => x.status !== 200)) assertError(r, 409, 'ongoing_payment_found')
      assert.equal((await s.server.incomplete()).body.incomplete_server_payments.length, 1)
    })

    it('concurrent U2A creates for one user: the newest stays open, every other one is cancelled', async () => {
      const s = await scene()
      const results = await Promise.all(Array.from({ length: 6 }, (_, i) => s.client.create({ amount: 1, memo: `m${i}`, metadata: {} })))
      for (const r of results) assert.ok(r.status === 201 || r.status === 409, `status ${r.status}`)
      const created = results.filter((r) => r.status === 201).map((r) => r.body.identifier)
      assert.ok(created.length >= 1)
      const states = await Promise.all(created.map(async (id) => (await s.server.get(id)).body.status))
      assert.equal(states.filter((st) => !st.cancelled).length, 1, 'exactly one open payment')
      const open = await platform.db
        .selectFrom('payments')
        .select('identifier')
        .where('user_id', '=', s.user.user_id)
        .where('cancelled', '=', false)
        .execute()
      assert.equal(open.length, 1)
    })

    it('concurrent submits of one approved payment: paid once', async () => {
      const s = await scene()
      const before = await ledgerAccount(platform.app, s.user.wallet.address)
      const p = (await s.client.create({ amount: 1, memo: 'x', metadata: {} })).body
      await s.server.approve(p.identifier)
      const results = await Promise.all(Array.from({ length: 6 }, () => s.client.submit(p.identifier)))
      for (const r of results) assert.equal(r.status, 200, JSON.stringify(r.body))
      const txids = new Set(results.map((r) => r.body.transaction?.txid))
      assert.equal(txids.size, 1)
      const after = await ledgerAccount(platform.app, s.user.wallet.address)
      assert.equal(Math.round((Number(before?.balance) - Number(after?.balance)) * 1e7), 1e7 + 100, 'one payment and one fee')
    })
  })

  describe('authentication', () => {
    let fixture: AuthFixture
    before(async () => {
      const s = await scene()
      const revokedKey = await sb.createKey(s.app.app_id)
      await sb.revokeKey(s.app.app_id, revokedKey.key_id)
      const revoked = await sb.authenticate(s.app.app_id, s.user.user_id, A2U_SCOPES)
      await sb.revokeToken(revoked.accessToken)
      fixture = {
        app: platform.app,
        apiKey: s.app.api_key,
        accessToken: s.token,
        revokedKey: revokedKey.api_key,
        revokedToken: revoked.accessToken,
      }
    })
    authCases('key', { method: 'GET', url: '/v2/payments/incomplete_server_payments' }, () => fixture)
    authCases('key', { method: 'POST', url: '/v2/payments/some-id/cancel' }, () => fixture)
    authCases('token', { method: 'GET', url: '/v2/client/payments/incomplete' }, () => fixture)
  })
})
