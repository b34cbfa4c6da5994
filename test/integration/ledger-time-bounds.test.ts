import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
// stellar-sdk 10, as pi-backend 0.1.3 loads it: `setTimeout` times a transaction from the
// client's own clock (as the community Python and Ruby SDKs do), `fetchTimebounds` from the
// server's `Date` header.
import { Asset, Keypair, Operation, Server, TransactionBuilder } from 'stellar-sdk'
import { type SandboxApp, type SandboxUser, sandbox, startPlatform, type TestPlatform } from '../helpers/platform.js'

function resultCodes(error: unknown): unknown {
  return (error as { response?: { data?: { extras?: { result_codes?: unknown } } } }).response?.data?.extras?.result_codes
}

describe('ledger time bounds after sandbox clock moves (stellar-sdk 10 over HTTP)', () => {
  let platform: TestPlatform
  let server: Server
  let app: SandboxApp
  let user: SandboxUser

  before(async () => {
    platform = await startPlatform()
    const address = await platform.app.listen({ port: 0, host: '127.0.0.1' })
    server = new Server(`${address}/ledger`, { allowHttp: true })
    const sb = sandbox(platform.app)
    app = await sb.createApp()
    user = await sb.createUser()
  })
  after(() => platform.close())

  async function pay(timing: 'client clock' | 'Date header'): Promise<void> {
    const key = Keypair.fromSecret(app.wallet.seed)
    const account = await server.loadAccount(key.publicKey())
    const builder = new TransactionBuilder(account, {
      fee: '100',
      networkPassphrase: 'Pi Testnet',
      ...(timing === 'Date header' ? { timebounds: await server.fetchTimebounds(180) } : {}),
    }).addOperation(Operation.payment({ destination: user.wallet.address, asset: Asset.native(), amount: '0.01' }))
    if (timing === 'client clock') builder.setTimeout(180)
    const tx = builder.build()
    tx.sign(key)
    try {
      await server.submitTransaction(tx)
    } catch (error) {
      assert.fail(`timed from the ${timing}: ${JSON.stringify(resultCodes(error)) ?? String(error)}`)
    }
  }

  const moves: [string, number][] = [
    ['no move', 0],
    ['200 s', 200],
    ['1 day', 86_400],
    ['1 year', 366 * 86_400],
  ]
  for (const [name, seconds] of moves) {
    it(`applies a transaction timed from the client's clock and one timed from the Date header after a move of ${name}`, async () => {
      const before = platform.clock.offsetMs()
      if (seconds > 0) await sandbox(platform.app).advanceClock(seconds)
      assert.equal(platform.clock.offsetMs() - before, seconds * 1000)
      await pay('client clock')
      await pay('Date header')
    })
  }

  it('still refuses a transaction whose max time has passed on both clocks, and one not yet valid on either', async () => {
    const key = Keypair.fromSecret(app.wallet.seed)
    const build = async (minTime: number, maxTime: number) => {
      const tx = new TransactionBuilder(await server.loadAccount(key.publicKey()), {
        fee: '100',
        networkPassphrase: 'Pi Testnet',
        timebounds: { minTime, maxTime },
      })
        .addOperation(Operation.payment({ destination: user.wallet.address, asset: Asset.native(), amount: '0.01' }))
        .build()
      tx.sign(key)
      return tx
    }
    const wall = Math.floor(Date.now() / 1000)
    const platformNow = Math.floor(platform.clock.now().getTime() / 1000)
    await assert.rejects(server.submitTransaction(await build(0, wall - 60)), (error) => {
      assert.deepEqual(resultCodes(error), { transaction: 'tx_too_late' })
      return true
    })
    await assert.rejects(server.submitTransaction(await build(platformNow + 3600, 0)), (error) => {
      assert.deepEqual(resultCodes(error), { transaction: 'tx_too_early' })
      return true
    })
    // Bounds between the two clocks hold at neither; the refusal is the platform clock's.
    await assert.rejects(server.submitTransaction(await build(wall + 3600, platformNow - 3600)), (error) => {
      assert.deepEqual(resultCodes(error), { transaction: 'tx_too_late' })
      return true
    })
  })
})
