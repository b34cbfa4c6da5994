/**
 * The faucet (docs/ledger.md, "Friendbot"): Stellar's friendbot at /ledger/friendbot and the
 * platform page's "Get test-π" (POST /account/faucet) pay test-π on Pi Testnet as audited issues
 * that the supply check counts; in production, limited per address and per person in 24 hours,
 * refused on Mainnet; a refused request moves nothing. The sandbox has no limits.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Keypair } from '@stellar/stellar-base'
import type { Kysely } from 'kysely'
import { sql } from 'kysely'
import type { DB } from '../../../src/db/schema.js'
import { adminOf, signedUp } from '../../helpers/accounts.js'
import { assertError } from '../../helpers/payments-client.js'
import { startPlatform, usePlatform } from '../../helpers/platform.js'
import { supplySnapshot } from '../../helpers/supply.js'

/** What a refused faucet request must leave as it was: the supply, and the faucet's records and accounts. */
async function faucetSnapshot(db: Kysely<DB>) {
  const { rows } = await sql<{ faucet: string; accounts: string }>`
    select (select count(*)::text from audit_log where action = 'faucet') as faucet,
      (select count(*)::text from ledger_accounts) as accounts`.execute(db)
  return { ...(await supplySnapshot(db)), ...rows[0] }
}

describe('the faucet in production', () => {
  const platform = usePlatform({
    mode: 'production',
    faucet: { amount: '25', dailyPerAddress: 2, dailyPerUser: 3 },
  })
  const app = () => platform.app
  const friendbot = async (addr: string, method: 'GET' | 'POST' = 'GET') => {
    const answer = await platform.app.inject(
      method === 'GET'
        ? { method, url: `/ledger/friendbot?addr=${encodeURIComponent(addr)}` }
        : { method, url: '/ledger/friendbot', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: `addr=${addr}` },
    )
    return { status: answer.statusCode, type: answer.headers['content-type'], body: answer.json() as Record<string, unknown> }
  }
  const balance = async (address: string) => {
    const answer = await platform.app.inject({ method: 'GET', url: `/ledger/accounts/${address}` })
    return answer.statusCode === 404 ? undefined : (answer.json().balances as Array<{ balance: string }>)[0]?.balance
  }

  it("answers friendbot with the funding transaction as Horizon's submission does, opening a new address", async () => {
    const address = Keypair.random().publicKey()
    const paid = await friendbot(address)
    assert.equal(paid.status, 200, JSON.stringify(paid.body))
    assert.equal(paid.body.successful, true)
    assert.match(String(paid.body.hash), /^[0-9a-f]{64}$/)
    assert.equal(typeof paid.body.envelope_xdr, 'string')
    assert.equal(paid.body.memo, 'faucet')
    // The transaction as Horizon serves it by its hash: the same record.
    const stored = await platform.app.inject({ method: 'GET', url: `/ledger/transactions/${String(paid.body.hash)}` })
    assert.deepEqual(stored.json(), paid.body)
    assert.equal(await balance(address), '25.0000000')
    // A form POST, as friendbot takes too.
    assert.equal((await friendbot(address, 'POST')).status, 200)
    assert.equal(await balance(address), '50.0000000')

    const record = (await adminOf(platform).auditTrail(20)).records.find((r) => r.action === 'faucet' && r.target === address)
    assert.ok(record)
    assert.equal((record.details as { network: string }).network, 'Pi Testnet')
    assert.equal((record.details as { amount: string }).amount, '25.0000000')
  })

  it('refuses past the daily limit per address at the boundary, as a Horizon problem, moving nothing', async () => {
    const address = Keypair.random().publicKey()
    assert.equal((await friendbot(address)).status, 200)
    assert.equal((await friendbot(address)).status, 200)
    const before = await faucetSnapshot(platform.db)
    const third = await friendbot(address)
    assert.equal(third.status, 429)
    assert.match(String(third.type), /^application\/problem\+json/)
    assert.equal(third.body.type, 'https://stellar.org/horizon-errors/rate_limit_exceeded')
    assert.match(String(third.body.detail), /PLINTH_FAUCET_DAILY_PER_ADDRESS/)
    assert.deepEqual(await faucetSnapshot(platform.db), before)
    assert.equal(await balance(address), '50.0000000')

    const bad = await friendbot('GNOTANADDRESS')
    assert.equal(bad.status, 400)
    assert.equal((bad.body.extras as { invalid_field: string }).invalid_field, 'addr')
    // A refused request opens no account either.
    const fresh = Keypair.random().publicKey()
    assert.equal(await balance(fresh), undefined)
  })

  it('limits a signed-in person per day across addresses, and refuses Mainnet (403), moving nothing', async () => {
    const user = await signedUp(app)
    const own = await user.call('POST', '/account/faucet', {})
    assert.equal(own.status, 200, JSON.stringify(own.body))
    assert.equal(own.body.network, 'Pi Testnet')
    // Test-π on Pi Testnet only: the wallet's π on Pi Network is untouched (docs/ledger.md, "Two networks").
    assert.deepEqual((await user.call('GET', '/account')).body.wallet as { balance: string; testnet_balance: string }, {
      address: (own.body as { address: string }).address,
      balance: '0.0000000',
      testnet_balance: '25.0000000',
    })
    for (let i = 0; i < 2; i++)
      assert.equal((await user.call('POST', '/account/faucet', { addr: Keypair.random().publicKey() })).status, 200)
    const other = await signedUp(app)
    const before = await faucetSnapshot(platform.db)
    const address = Keypair.random().publicKey()
    const fourth = assertError(await user.call('POST', '/account/faucet', { addr: address }), 429, 'faucet_limit_reached')
    assert.match(fourth.error_message, /PLINTH_FAUCET_DAILY_PER_USER/)
    assertError(await other.call('POST', '/account/faucet', { network: 'Pi Network' }), 403, 'faucet_not_on_network')
    assert.deepEqual(await faucetSnapshot(platform.db), before)
    assert.equal(await balance(address), undefined)
  })

  it('counts the faucet in the supply check: issued = balances + fees = audited, the faucet’s share named', async () => {
    const op = await signedUp(app)
    await adminOf(platform).grant(op.username, 'operator')
    assert.equal((await friendbot(Keypair.random().publicKey())).status, 200)
    const books = await op.call('GET', '/operator/ledger/check')
    assert.equal(books.body.balanced, true, JSON.stringify(books.body))
    const { rows } = await sql<{ n: string }>`select count(*)::text as n from audit_log where action = 'faucet'`.execute(platform.db)
    // Each faucet payment minted its amount and the fee: nothing else was issued on this platform.
    assert.equal(Number(books.body.total_faucet), Number(rows[0]?.n) * 25.00001)
    assert.equal(books.body.total_faucet, books.body.total_audited)
  })
})

describe('the faucet in the sandbox', () => {
  const platform = usePlatform({ faucet: { amount: '10', dailyPerAddress: 1 } })

  it('has no daily limits', async () => {
    const address = Keypair.random().publicKey()
    for (let i = 0; i < 3; i++) {
      const answer = await platform.app.inject({ method: 'GET', url: `/ledger/friendbot?addr=${address}` })
      assert.equal(answer.statusCode, 200, answer.body)
    }
    const account = await platform.app.inject({ method: 'GET', url: `/ledger/accounts/${address}` })
    assert.equal((account.json().balances as Array<{ balance: string }>)[0]?.balance, '30.0000000')
  })
})

// The faucet's test-π is Pi Testnet's own money (docs/ledger.md, "Two networks"): on by default in
// production, 3 payments an address a day; PLINTH_FAUCET_DAILY_PER_ADDRESS=0 turns it off.
describe('the faucet in production with the default settings', () => {
  const platform = usePlatform({ mode: 'production' })

  it('is on: pays test-π on Pi Testnet only, three times an address a day, and each network balances', async () => {
    const address = Keypair.random().publicKey()
    for (let i = 0; i < 3; i++) {
      const answer = await platform.app.inject({ method: 'GET', url: `/ledger/friendbot?addr=${address}` })
      assert.equal(answer.statusCode, 200, answer.body)
    }
    const before = await faucetSnapshot(platform.db)
    const fourth = await platform.app.inject({ method: 'GET', url: `/ledger/friendbot?addr=${address}` })
    assert.equal(fourth.statusCode, 429, fourth.body)
    assert.deepEqual(await faucetSnapshot(platform.db), before)
    const accounts = await platform.db
      .selectFrom('ledger_accounts')
      .select(['network', (eb) => eb.cast<string>('balance', 'text').as('balance')])
      .where('address', '=', address)
      .execute()
    assert.deepEqual(accounts, [{ network: 'Pi Testnet', balance: '300.0000000' }], 'no account, no π, on Pi Network')
    const books = await adminOf(platform).ledgerCheck()
    assert.equal(books.balanced, true, JSON.stringify(books))
    const testnet = books.networks.find((n) => n.network === 'Pi Testnet')
    const mainnet = books.networks.find((n) => n.network === 'Pi Network')
    assert.deepEqual([testnet?.total_faucet, testnet?.total_audited], ['300.0000300', '300.0000300'])
    assert.deepEqual([mainnet?.total_issued, mainnet?.total_audited], ['0.0000000', '0.0000000'])
  })

  it('PLINTH_FAUCET_DAILY_PER_ADDRESS=0 turns it off: friendbot refuses with the setting, and nothing moves', async () => {
    const off = await startPlatform({ mode: 'production', sharing: platform, faucet: { dailyPerAddress: 0 } })
    try {
      const before = await faucetSnapshot(platform.db)
      const answer = await off.app.inject({ method: 'GET', url: `/ledger/friendbot?addr=${Keypair.random().publicKey()}` })
      assert.equal(answer.statusCode, 429, answer.body)
      assert.match(String(answer.json().detail), /faucet is off.*PLINTH_FAUCET_DAILY_PER_ADDRESS/)
      assert.deepEqual(await faucetSnapshot(platform.db), before)
    } finally {
      await off.close()
    }
  })
})
