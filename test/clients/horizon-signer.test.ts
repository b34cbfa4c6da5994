import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Asset, Horizon, Keypair } from '@stellar/stellar-sdk'
import { type ClientPlatform, startClientPlatform } from './client-platform.js'

/**
 * GET /ledger/accounts (Horizon's list of accounts by signer) through stellar-sdk 17's
 * Horizon.Server against a real Plinth process: accounts().forSigner() and the other
 * filters, paging, and Horizon's problems for a missing filter and hostile values.
 */
describe('stellar-sdk accounts().forSigner() against a real Plinth process', () => {
  let platform: ClientPlatform
  let server: Horizon.Server
  let wallet: string

  type Problem = { status: number; type: string; extras?: { invalid_field?: string } }
  /** The Horizon problem a rejected SDK call carries (a BadRequestError's `response` is the problem itself). */
  async function problemOf(call: Promise<unknown>): Promise<Problem> {
    const error = (await call.then(
      () => assert.fail('expected a Horizon problem'),
      (e: unknown) => e,
    )) as { response?: Problem | { data: Problem } }
    assert.ok(error.response !== undefined, String(error))
    return 'data' in error.response ? error.response.data : error.response
  }

  before(async () => {
    platform = await startClientPlatform()
    server = new Horizon.Server(`${platform.base}/ledger`, { allowHttp: true })
    wallet = (await platform.sb.createUser()).wallet.address
  })
  after(async () => {
    await platform.close()
  })

  it('forSigner(G): the account G signs for, itself, in the account record shape', async () => {
    const page = await server.accounts().forSigner(wallet).call()
    assert.deepEqual(
      page.records.map((r) => r.account_id),
      [wallet],
    )
    const [record] = page.records
    assert.ok(record !== undefined)
    assert.equal(record.paging_token, wallet)
    assert.deepEqual(record.signers, [{ weight: 1, key: wallet, type: 'ed25519_public_key' }])
    assert.equal(record.balances[0]?.asset_type, 'native')
    // The record is the same as accounts().accountId()'s.
    const one = await server.accounts().accountId(wallet).call()
    assert.equal(record.sequence, one.sequence)
    assert.equal(record.balances[0]?.balance, one.balances[0]?.balance)
    // The record's own links work like loadAccount's.
    assert.ok(Array.isArray((await record.payments()).records))
  })

  it('forSigner of a key with no account, and sponsor/asset/liquidity_pool: empty pages', async () => {
    const nobody = Keypair.random().publicKey()
    assert.deepEqual((await server.accounts().forSigner(nobody).call()).records, [])
    assert.deepEqual((await server.accounts().sponsor(wallet).call()).records, [])
    assert.deepEqual((await server.accounts().forAsset(new Asset('USD', nobody)).call()).records, [])
    assert.deepEqual((await server.accounts().forLiquidityPool('ab'.repeat(32)).call()).records, [])
  })

  it("paging: cursor, order, limit; next() and prev() carry the signer and answer Horizon's envelope", async () => {
    const first = await server.accounts().forSigner(wallet).limit(1).call()
    assert.equal(first.records.length, 1)
    const self = new URL(
      ((await (await fetch(`${platform.base}/ledger/accounts?signer=${wallet}&limit=1`)).json()) as { _links: { next: { href: string } } })
        ._links.next.href,
    )
    assert.equal(self.pathname, '/ledger/accounts')
    assert.equal(self.searchParams.get('signer'), wallet)
    assert.equal(self.searchParams.get('cursor'), wallet)
    assert.deepEqual((await first.next()).records, [])
    assert.deepEqual((await first.prev()).records, [])
    // The cursor is an account id, compared as one: strictly after it (asc) or before it (desc).
    const page = (cursor: string, order: 'asc' | 'desc') => server.accounts().forSigner(wallet).cursor(cursor).order(order).call()
    assert.equal((await page('A', 'asc')).records.length, 1)
    assert.equal((await page('A', 'desc')).records.length, 0)
    assert.equal((await page('Z', 'desc')).records.length, 1)
    assert.equal((await page('Z', 'asc')).records.length, 0)
    assert.equal((await page(wallet, 'asc')).records.length, 0)
    assert.equal((await page(wallet, 'desc')).records.length, 0)
  })

  it("no filter, or two: Horizon's invalid_accounts_params; asset=native: invalid_field asset", async () => {
    const none = await problemOf(server.accounts().call())
    assert.equal(none.status, 400)
    assert.equal(none.type, 'https://stellar.org/horizon-errors/invalid_accounts_params')
    const two = await problemOf(server.accounts().forSigner(wallet).sponsor(wallet).call())
    assert.equal(two.type, 'https://stellar.org/horizon-errors/invalid_accounts_params')
    const native = await problemOf(server.accounts().forAsset(Asset.native()).call())
    assert.equal(native.status, 400)
    assert.equal(native.extras?.invalid_field, 'asset')
  })

  it('hostile values are 400 problems naming the field; hostile cursors page nothing, never a 500', async () => {
    const cases: Array<[string, string]> = [
      [`signer=${'G'.repeat(56)}`, 'signer'],
      ["signer=G' OR 1=1 --", 'signer'],
      [`signer=${'G'.repeat(5000)}`, 'signer'],
      ['sponsor=%00', 'sponsor'],
      ['asset=USD', 'asset'],
      [`asset=${'A'.repeat(13)}:${wallet}`, 'asset'],
      ['liquidity_pool=xyz', 'liquidity_pool'],
      [`signer=${wallet}&limit=0`, 'limit'],
      [`signer=${wallet}&limit=201`, 'limit'],
      [`signer=${wallet}&order=sideways`, 'order'],
      [`signer=${wallet}&cursor=${'x'.repeat(201)}`, 'cursor'],
    ]
    for (const [query, field] of cases) {
      const response = await fetch(`${platform.base}/ledger/accounts?${query}`)
      assert.equal(response.status, 400, query)
      assert.match(response.headers.get('content-type') ?? '', /^application\/problem\+json/, query)
      const body = (await response.json()) as { extras?: { invalid_field?: string } }
      assert.equal(body.extras?.invalid_field, field, query)
    }
    // A NUL anywhere in a query is refused before any route (400), like every other path.
    assert.equal((await fetch(`${platform.base}/ledger/accounts?signer=${wallet}&cursor=%00`)).status, 400)
    for (const cursor of ["' OR 1=1 --", '%E2%80%AE%F0%9F%92%A5', 'now', '-1', '%FF%FE']) {
      const response = await fetch(`${platform.base}/ledger/accounts?signer=${wallet}&cursor=${cursor}`)
      assert.equal(response.status, 200, cursor)
      const body = (await response.json()) as { _embedded: { records: unknown[] } }
      assert.ok(body._embedded.records.length <= 1, cursor)
    }
  })

  it('is not streamed: Accept: text/event-stream gets the JSON page, as from Horizon', async () => {
    const response = await fetch(`${platform.base}/ledger/accounts?signer=${wallet}`, { headers: { accept: 'text/event-stream' } })
    assert.equal(response.status, 200)
    assert.match(response.headers.get('content-type') ?? '', /^application\/(hal\+)?json/)
    assert.equal(((await response.json()) as { _embedded: { records: unknown[] } })._embedded.records.length, 1)
  })

  it("the root's `accounts` link is Horizon's template of this list", async () => {
    const root = (await (await fetch(`${platform.base}/ledger`)).json()) as { _links: { accounts: { href: string; templated: boolean } } }
    assert.equal(root._links.accounts.href, `${platform.base}/ledger/accounts{?signer,sponsor,asset,liquidity_pool,cursor,limit,order}`)
    assert.equal(root._links.accounts.templated, true)
  })
})
