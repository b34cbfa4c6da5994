import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Asset, Keypair, Memo, Operation, Server, TransactionBuilder } from 'stellar-sdk'
import { type PiBackend, PiNetwork, redirectPiBackendHorizon } from '../helpers/pi-backend.js'
import { type ClientPlatform, type PaymentDTO, type SignedIn, signedIn, startClientPlatform } from './client-platform.js'

describe('pi-backend and stellar-sdk against a real Plinth process', () => {
  let platform: ClientPlatform
  let s: SignedIn
  let pi: PiBackend<PaymentDTO>
  let horizon: Server
  let restoreHorizon: () => void = () => {}

  before(async () => {
    platform = await startClientPlatform()
    s = await signedIn(platform)
    restoreHorizon = redirectPiBackendHorizon(platform.base)
    pi = new PiNetwork<PaymentDTO>(s.app.api_key, s.app.wallet.seed, { baseUrl: platform.base })
    horizon = new Server(`${platform.base}/ledger`, { allowHttp: true })
  })
  after(async () => {
    restoreHorizon()
    await platform.close()
  })

  it('pi-backend: createPayment → submitPayment → completePayment → getPayment', async () => {
    const id = await pi.createPayment({ amount: 2.5, memo: 'Reward', metadata: { level: 3 }, uid: s.uid })
    const txid = await pi.submitPayment(id)
    assert.match(txid, /^[0-9a-f]{64}$/)
    const completed = await pi.completePayment(id, txid)
    assert.equal(completed.status.developer_completed, true)
    const read = await pi.getPayment(id)
    assert.equal(read.amount, 2.5)
    assert.equal(read.transaction?.txid, txid)
    assert.equal(read.transaction?.verified, true)
  })

  it('pi-backend: getIncompleteServerPayments and cancelPayment (a body-less post)', async () => {
    const id = await pi.createPayment({ amount: 1, memo: 'Refund', metadata: {}, uid: s.uid })
    assert.deepEqual(
      (await pi.getIncompleteServerPayments()).incomplete_server_payments.map((p) => p.identifier),
      [id],
    )
    assert.equal((await pi.cancelPayment(id)).status.cancelled, true)
    assert.deepEqual((await pi.getIncompleteServerPayments()).incomplete_server_payments, [])
  })

  it('stellar-sdk Server: loadAccount, fetchBaseFee, submitTransaction, transactions().forAccount(), transaction()', async () => {
    const appKey = Keypair.fromSecret(s.app.wallet.seed)
    const account = await horizon.loadAccount(appKey.publicKey())
    assert.equal(account.accountId(), appKey.publicKey())
    const fee = await horizon.fetchBaseFee()
    assert.equal(fee, 100)
    const tx = new TransactionBuilder(account, { fee: String(fee), networkPassphrase: s.app.network })
      .addOperation(Operation.payment({ destination: s.user.wallet.address, asset: Asset.native(), amount: '0.5' }))
      .addMemo(Memo.text('stellar-sdk client'))
      .setTimeout(180)
      .build()
    tx.sign(appKey)
    const result = await horizon.submitTransaction(tx)
    assert.equal(result.hash, tx.hash().toString('hex'))

    const page = await horizon.transactions().forAccount(appKey.publicKey()).order('desc').limit(5).call()
    assert.ok(page.records.some((record) => record.hash === result.hash))
    const record = await horizon.transactions().transaction(result.hash).call()
    assert.equal(record.memo, 'stellar-sdk client')
    assert.equal(record.source_account, appKey.publicKey())
  })
})
