/** The approval window against the ledger: on a platform of their own, as they move its clock. */
import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import type { PaymentDTO } from '../../../src/payments/payment-dto.js'
import { buildPayment, ledgerAccount, pay, submitEnvelope } from '../../helpers/ledger.js'
import { A2U_SCOPES, paymentClients } from '../../helpers/payments-client.js'
import { sandbox, usePlatform } from '../../helpers/platform.js'

describe('payments', () => {
  describe('the approval window and the ledger (a platform of their own: they move its clock)', () => {
    const own = usePlatform()
    const { call, scene } = paymentClients(own)
    let ownSb: ReturnType<typeof sandbox>
    before(() => {
      ownSb = sandbox(own.app)
    })

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
})
