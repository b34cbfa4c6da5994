import assert from 'node:assert/strict'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import type { PaymentDTO } from '../../src/payments/payment-dto.js'
import { type PiBackend, PiNetwork, redirectPiBackendHorizon } from '../helpers/pi-backend.js'
import { type SandboxApp, sandbox, startPlatform, type TestPlatform } from '../helpers/platform.js'

describe('the official pi-backend SDK against Plinth', () => {
  let platform: TestPlatform
  let base: string
  let restoreHorizon: () => void = () => {}
  let app: SandboxApp
  let uid: string
  let pi: PiBackend<PaymentDTO>

  before(async () => {
    platform = await startPlatform()
    await platform.app.listen({ port: 0, host: '127.0.0.1' })
    base = `http://127.0.0.1:${(platform.app.server.address() as AddressInfo).port}`
    restoreHorizon = redirectPiBackendHorizon(base)
    const sb = sandbox(platform.app)
    app = await sb.createApp()
    const user = await sb.createUser()
    uid = (await sb.authenticate(app.app_id, user.user_id, ['username', 'payments', 'wallet_address'])).user.uid
    pi = new PiNetwork<PaymentDTO>(app.api_key, app.wallet.seed, { baseUrl: base })
  })
  after(async () => {
    restoreHorizon()
    await platform.close()
  })

  it('createPayment → submitPayment → completePayment → getPayment', async () => {
    const id = await pi.createPayment({ amount: 2.5, memo: 'Reward', metadata: { level: 3 }, uid })
    assert.match(id, /^[A-Za-z0-9_-]{24}$/)
    const txid = await pi.submitPayment(id)
    assert.match(txid, /^[0-9a-f]{64}$/)
    const completed = await pi.completePayment(id, txid)
    assert.equal(completed.status.developer_completed, true)
    assert.deepEqual(completed.transaction && { txid: completed.transaction.txid, verified: completed.transaction.verified }, {
      txid,
      verified: true,
    })
    const read = await pi.getPayment(id)
    assert.equal(read.identifier, id)
    assert.equal(read.amount, 2.5)
    assert.equal(read.direction, 'app_to_user')
    assert.equal(read.status.transaction_verified, true)
  })

  it('getIncompleteServerPayments and cancelPayment', async () => {
    const id = await pi.createPayment({ amount: 1, memo: 'Refund', metadata: {}, uid })
    const incomplete = await pi.getIncompleteServerPayments()
    assert.deepEqual(
      incomplete.incomplete_server_payments.map((p) => p.identifier),
      [id],
    )
    const cancelled = await pi.cancelPayment(id)
    assert.equal(cancelled.status.cancelled, true)
    assert.deepEqual((await pi.getIncompleteServerPayments()).incomplete_server_payments, [])
  })

  it('surfaces the platform error codes through axios', async () => {
    const first = await pi.createPayment({ amount: 1, memo: 'One', metadata: {}, uid })
    await assert.rejects(
      pi.createPayment({ amount: 1, memo: 'Two', metadata: {}, uid }),
      (error: { response?: { status: number; data: { error: string; payment?: { identifier: string } } } }) => {
        assert.equal(error.response?.status, 409)
        assert.equal(error.response?.data.error, 'ongoing_payment_found')
        assert.equal(error.response?.data.payment?.identifier, first)
        return true
      },
    )
    await pi.cancelPayment(first)
  })
  it('completes an A2U flow after the sandbox moved the clock a day ahead', async () => {
    await sandbox(platform.app).advanceClock(86_400)
    const id = await pi.createPayment({ amount: 1.5, memo: 'Tomorrow', metadata: {}, uid })
    const txid = await pi.submitPayment(id)
    const completed = await pi.completePayment(id, txid)
    assert.equal(completed.status.developer_completed, true)
    assert.equal(completed.transaction?.verified, true)
  })
})
