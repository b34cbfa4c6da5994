/**
 * A cancel is idempotent (docs/payments.md): cancelling a payment that is already cancelled, by
 * the user, the app or the approval window, answers 200 with the payment as it is and writes
 * nothing (pi-sdk's router cancels on the app's behalf after the user pressed Cancel). A
 * completed payment is still not cancelled. Money never moves.
 */
import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import type { PaymentDTO } from '../../../src/payments/payment-dto.js'
import { ledgerAccount, pay } from '../../helpers/ledger.js'
import { assertError, order, type PaymentScene, paymentClients } from '../../helpers/payments-client.js'
import { sandbox, usePlatform } from '../../helpers/platform.js'

describe('a cancel is idempotent', () => {
  const platform = usePlatform()
  const { scene } = paymentClients(platform)
  let sb: ReturnType<typeof sandbox>
  before(() => {
    sb = sandbox(platform.app)
  })

  /** The two wallets' balances and sequences, and the payment's recorded moves: what a replay must leave as they were. */
  async function books(s: PaymentScene, id: string) {
    const events = await platform.db
      .selectFrom('payment_events')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('payment_id', '=', id)
      .executeTakeFirstOrThrow()
    return {
      user: await ledgerAccount(platform.app, s.user.wallet.address),
      app: await ledgerAccount(platform.app, s.app.wallet.address),
      events: Number(events.n),
    }
  }

  /** Cancels as the app, twice, and checks each answer is 200 with the payment exactly as GET shows it, nothing changed. */
  async function cancelsAsItIs(s: PaymentScene, p: PaymentDTO, who: 'app' | 'user' = 'app') {
    const before = await books(s, p.identifier)
    const shown = (await s.server.get(p.identifier)).body
    for (let i = 0; i < 2; i++) {
      const again = who === 'app' ? await s.server.cancel(p.identifier) : await s.client.cancel(p.identifier)
      assert.equal(again.status, 200, JSON.stringify(again.body))
      assert.deepEqual(again.body, shown)
    }
    assert.deepEqual(await books(s, p.identifier), before, 'nothing written, no money moved')
    return shown
  }

  it("the user cancelled, then the app cancels (pi-sdk's router): 200 with the payment as it is, approved or not", async () => {
    for (const approve of [false, true]) {
      const s = await scene()
      const p = (await s.client.create({ amount: 1, ...order })).body
      if (approve) assert.equal((await s.server.approve(p.identifier)).status, 200)
      const cancelled = await s.client.cancel(p.identifier)
      assert.equal(cancelled.status, 200)
      const shown = await cancelsAsItIs(s, p)
      // As it is: the user's cancel, not turned into the app's.
      assert.deepEqual(shown.status, { ...cancelled.body.status, user_cancelled: true, cancelled: false })
      assert.equal(shown.status.developer_approved, approve)
    }
  })

  it('the app cancels twice, U2A and A2U: 200 both times, the same body', async () => {
    const s = await scene()
    const u2a = (await s.client.create({ amount: 1, ...order })).body
    const first = await s.server.cancel(u2a.identifier)
    assert.equal(first.status, 200)
    assert.equal(first.body.status.cancelled, true)
    assert.deepEqual((await cancelsAsItIs(s, u2a)).status, first.body.status)

    const a2u = (await s.server.create({ amount: 1, ...order, uid: s.uid })).body
    assert.equal((await s.server.cancel(a2u.identifier)).body.status.cancelled, true)
    assert.equal((await cancelsAsItIs(s, a2u)).status.cancelled, true)
  })

  it('the app or the approval window cancelled, then the user cancels: 200 as it is', async () => {
    const s = await scene()
    const byApp = (await s.client.create({ amount: 1, ...order })).body
    await s.server.cancel(byApp.identifier)
    const shown = await cancelsAsItIs(s, byApp, 'user')
    assert.equal(shown.status.cancelled, true)
    assert.equal(shown.status.user_cancelled, false)

    const expired = (await s.client.create({ amount: 1, ...order })).body
    await sb.advanceClock(61)
    assert.equal((await s.server.get(expired.identifier)).body.status.cancelled, true)
    assert.equal((await cancelsAsItIs(s, expired)).status.cancelled, true)
    assert.equal((await cancelsAsItIs(s, expired, 'user')).status.user_cancelled, false)
  })

  it('a completed payment is still not cancelled, by the app or the user: already_completed, nothing moves', async () => {
    const s = await scene()
    const u2a = (await s.client.create({ amount: 1, ...order })).body
    await s.server.approve(u2a.identifier)
    const txid = (await s.client.submit(u2a.identifier)).body.transaction?.txid ?? ''
    assert.equal((await s.server.complete(u2a.identifier, txid)).status, 200)
    const a2u = (await s.server.create({ amount: 1, ...order, uid: s.uid })).body
    const a2uTxid = await pay(platform.app, { seed: s.app.wallet.seed, to: a2u.to_address, amount: '1', memo: a2u.identifier })
    assert.equal((await s.server.complete(a2u.identifier, a2uTxid)).status, 200)

    for (const p of [u2a, a2u]) {
      const before = await books(s, p.identifier)
      const shown = (await s.server.get(p.identifier)).body
      const refused = assertError(await s.server.cancel(p.identifier), 409, 'already_completed')
      assert.deepEqual(refused.payment, shown)
      assert.deepEqual(await books(s, p.identifier), before)
      assert.deepEqual((await s.server.get(p.identifier)).body, shown)
    }
    assertError(await s.client.cancel(u2a.identifier), 409, 'already_completed')
  })
})
