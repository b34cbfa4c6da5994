/** The payments API's guards: object-level authorization, concurrent moves and authentication. */
import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import { type AuthFixture, authCases } from '../../helpers/auth-cases.js'
import { ledgerAccount, pay } from '../../helpers/ledger.js'
import { A2U_SCOPES, assertError, type ErrorBody, order, paymentClients } from '../../helpers/payments-client.js'
import { sandbox, usePlatform } from '../../helpers/platform.js'

describe('payments', () => {
  const platform = usePlatform()
  const { asUser, scene } = paymentClients(platform)
  let sb: ReturnType<typeof sandbox>
  before(() => {
    sb = sandbox(platform.app)
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

  describe('production mode: only the user pays', () => {
    // Over the same database: the sandbox-mode platform makes the app, the user and the token.
    const production = usePlatform(() => ({ mode: 'production', sharing: platform }))

    it('refuses a payment submit by access token with 403 user_confirmation_required, and nothing moves; in sandbox mode the same token pays it', async () => {
      const { server, token, user } = await scene()
      const inProduction = asUser(token, production)
      // The app's frontend may still start a payment, and its backend approve it, in production.
      const created = await inProduction.create({ amount: 3, memo: 'only the user pays', metadata: {} })
      assert.equal(created.status, 201, JSON.stringify(created.body))
      const id = created.body.identifier
      assert.equal((await server.approve(id)).status, 200)
      const approved = (await server.get(id)).body
      const balance = (await ledgerAccount(platform.app, user.wallet.address))?.balance

      const refused = assertError(await inProduction.submit(id), 403, 'user_confirmation_required')
      assert.match(refused.error_message, /only the signed-in user confirms a payment/)
      assert.deepEqual((await server.get(id)).body, approved)
      assert.equal((await ledgerAccount(platform.app, user.wallet.address))?.balance, balance)
      // Not a 404 first: the refusal does not depend on the payment, so it tells nothing about it.
      assertError(await inProduction.submit('no-such-payment'), 403, 'user_confirmation_required')

      const paid = await asUser(token).submit(id)
      assert.equal(paid.status, 200, JSON.stringify(paid.body))
      assert.equal(paid.body.status.transaction_verified, true)
    })
  })
})
