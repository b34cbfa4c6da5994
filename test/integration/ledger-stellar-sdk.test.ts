import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
// stellar-sdk 10 is what pi-backend 0.1.3 drives the ledger with (a dependency of the dev dependency pi-backend).
import { Asset, Keypair, Memo, NotFoundError, Operation, Server, TransactionBuilder } from 'stellar-sdk'
import { json, type SandboxApp, type SandboxUser, sandbox, startPlatform, type TestPlatform } from '../helpers/platform.js'

/** What an HTTP client of stellar-sdk (axios) rejects with when Horizon answers an error. */
function problemOf(error: unknown): { extras?: { result_codes?: { transaction: string; operations?: string[] } } } {
  const response = (error as { response?: { data?: unknown } }).response
  return (response?.data ?? {}) as ReturnType<typeof problemOf>
}

describe('the ledger API through stellar-sdk 10, over HTTP', () => {
  let platform: TestPlatform
  let server: Server
  let user: SandboxUser
  let app: SandboxApp

  before(async () => {
    platform = await startPlatform()
    const address = await platform.app.listen({ port: 0, host: '127.0.0.1' })
    server = new Server(`${address}/ledger`, { allowHttp: true })
    const sb = sandbox(platform.app)
    user = await sb.createUser()
    app = await sb.createApp()
  })
  after(() => platform.close())

  it('loads an account and fetches the base fee', async () => {
    const account = await server.loadAccount(user.wallet.address)
    assert.equal(account.accountId(), user.wallet.address)
    assert.equal(account.sequenceNumber(), '0')
    assert.equal(account.balances[0]?.balance, '1000.0000000')
    assert.equal(await server.fetchBaseFee(), 100)
    await assert.rejects(server.loadAccount(Keypair.random().publicKey()), NotFoundError)
  })

  it('takes time bounds from the platform clock (the Date header), after the sandbox moved it', async () => {
    await sandbox(platform.app).advanceClock(2 * 86_400)
    // pi-backend loads the account first; every answer updates stellar-sdk's idea of server time.
    await server.loadAccount(app.wallet.address)
    const bounds = await server.fetchTimebounds(180)
    const expected = Math.floor(platform.clock.now().getTime() / 1000) + 180
    assert.ok(Math.abs(bounds.maxTime - expected) <= 5, `maxTime ${bounds.maxTime}, platform time + 180 is ${expected}`)
  })

  it('submits an A2U payment as pi-backend builds it, and reads it back by hash', async () => {
    const appKey = Keypair.fromSecret(app.wallet.seed)
    const account = await server.loadAccount(appKey.publicKey())
    const tx = new TransactionBuilder(account, {
      fee: String(await server.fetchBaseFee()),
      networkPassphrase: 'Pi Testnet',
      timebounds: await server.fetchTimebounds(180),
    })
      .addOperation(Operation.payment({ destination: user.wallet.address, asset: Asset.native(), amount: '3.1415926' }))
      .addMemo(Memo.text('a2u-payment-identifier'))
      .build()
    tx.sign(appKey)
    const result = await server.submitTransaction(tx)
    assert.equal(result.hash, tx.hash().toString('hex'))
    assert.equal((result as unknown as { id: string }).id, result.hash, 'pi-backend returns txResponse.id as the txid')

    const record = await server.transactions().transaction(result.hash).call()
    assert.equal(record.memo, 'a2u-payment-identifier')
    assert.equal(record.source_account, appKey.publicKey())
    assert.equal(record.fee_charged, '100')
    assert.equal((await server.loadAccount(appKey.publicKey())).sequenceNumber(), '1')
    assert.equal((await server.loadAccount(user.wallet.address)).balances[0]?.balance, '1003.1415926')
  })

  it('submits a payment without memo (stellar-sdk first checks the destination does not require one)', async () => {
    const userKey = Keypair.fromSecret(user.wallet.seed)
    const tx = new TransactionBuilder(await server.loadAccount(userKey.publicKey()), { fee: '100', networkPassphrase: 'Pi Testnet' })
      .addOperation(Operation.payment({ destination: app.wallet.address, asset: Asset.native(), amount: '1' }))
      .setTimeout(0)
      .build()
    tx.sign(userKey)
    const result = await server.submitTransaction(tx)
    assert.equal(result.hash, tx.hash().toString('hex'))
  })

  it('rejects a refused transaction with the result codes in the response body', async () => {
    const appKey = Keypair.fromSecret(app.wallet.seed)
    const account = await server.loadAccount(appKey.publicKey())
    const tx = new TransactionBuilder(account, { fee: '100', networkPassphrase: 'Pi Testnet' })
      .addOperation(Operation.payment({ destination: user.wallet.address, asset: Asset.native(), amount: '999999' }))
      .addMemo(Memo.text('too-much'))
      .setTimeout(0)
      .build()
    tx.sign(appKey)
    const error = await server.submitTransaction(tx).then(
      () => undefined,
      (rejected: unknown) => rejected,
    )
    assert.ok(error, 'the submission was refused')
    assert.deepEqual(problemOf(error).extras?.result_codes, { transaction: 'tx_failed', operations: ['op_underfunded'] })
    const check = await platform.app.inject({ method: 'GET', url: '/sandbox/ledger/check' })
    assert.equal(json(check).ok, true)
  })
})
