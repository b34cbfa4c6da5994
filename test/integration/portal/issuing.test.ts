/**
 * Issuing money from the operator's console (docs/operators.md, "Issuing money"): an issue is one
 * atomic act (the limit checked, the supply minted, the recipient paid, the audit record written,
 * in one database transaction, or nothing), concurrent issues within the limit all succeed, and
 * the ledger check compares the supply three ways.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ledgerServiceFactory } from '../../../src/ledger/ledger-service.js'
import { type AccountBrowser, adminOf, signedUp } from '../../helpers/accounts.js'
import { buildPayment, submitEnvelope } from '../../helpers/ledger.js'
import { assertError } from '../../helpers/payments-client.js'
import { usePlatform } from '../../helpers/platform.js'
import { issuerAddress, supplySnapshot } from '../../helpers/supply.js'

describe('issuing money from the console', () => {
  const platform = usePlatform({ mode: 'production', portal: { operatorDailyIssueLimit: 10_000, operatorApprovalThreshold: 'off' } })
  const app = () => platform.app
  const admin = () => adminOf(platform)

  const operator = async (): Promise<AccountBrowser & { username: string }> => {
    const user = await signedUp(app)
    await admin().grant(user.username, 'operator')
    return user
  }

  it('refuses an issue over the daily limit (409) and moves nothing: no balance, no supply, no ledger row, no audit record', async () => {
    const op = await operator()
    const user = await signedUp(app)
    assert.equal((await op.call('POST', '/operator/issue', { target: user.username, amount: '150', reason: 'grant' })).status, 200)
    const before = await supplySnapshot(platform.db)
    const over = await op.call('POST', '/operator/issue', { target: user.username, amount: '20000', reason: 'too much' })
    assertError(over, 409, 'issue_limit_reached')
    assert.deepEqual(await supplySnapshot(platform.db), before)
    assert.equal(before?.issuer, '0.0000000', 'an issue mints what it pays and its fee, nothing more')
    const books = await op.call('GET', '/operator/ledger/check')
    const mainnet = {
      total_issued: '150.0000100',
      total_balances: '150.0000000',
      total_fees: '0.0000100',
      total_audited: '150.0000100',
      total_faucet: '0.0000000',
      negative_balances: 0,
      mismatched_accounts: 0,
      differs: [],
      balanced: true,
    }
    // Issued π is Pi Network's; Pi Testnet holds nothing (docs/operators.md, "The ledger check").
    const none = { ...mainnet, total_issued: '0.0000000', total_balances: '0.0000000', total_fees: '0.0000000', total_audited: '0.0000000' }
    assert.deepEqual(books.body, {
      ...mainnet,
      networks: [
        { network: 'Pi Testnet', ...none, total_split: '0.0000000' },
        { network: 'Pi Network', ...mainnet, total_split: '0.0000000' },
      ],
    })
  })
})

describe("an app's wallet in production", () => {
  const platform = usePlatform({ mode: 'production', portal: { operatorDailyIssueLimit: 10_000, operatorApprovalThreshold: 'off' } })
  const app = () => platform.app

  it('is empty until money is issued to it: its first app-to-user transaction is refused, moving nothing, then applies (docs/production.md §11)', async () => {
    const op = await signedUp(app)
    await adminOf(platform).grant(op.username, 'operator')
    const dev = await signedUp(app)
    await adminOf(platform).grant(dev.username, 'developer')
    const made = await dev.call('POST', '/portal/apps', { name: 'Empty Shop', url: 'https://shop.example.com/' })
    assert.equal(made.status, 201, JSON.stringify(made.body))
    const appId = (made.body.app as { app_id: string }).app_id
    const seed = String(made.body.wallet_seed)
    const wallet = async () => (await dev.call('GET', `/portal/apps/${appId}/wallet`)).body.balance
    assert.equal(await wallet(), '0.0000000')

    const user = await signedUp(app)
    const to = ((await user.call('GET', '/account')).body.wallet as { address: string }).address
    // Sequence 0: the wallet may have no ledger account yet, which is refused as well as an empty one.
    // A Mainnet app (POST /portal/apps without a network): its payments are signed under Pi Network, where operators issue.
    const network = 'Pi Network'
    const refused = await submitEnvelope(
      app(),
      await buildPayment(app(), { seed, to, amount: '1', memo: 'first reward', sequence: '0', network }),
    )
    assert.equal(refused.status, 400, JSON.stringify(refused.body))
    assert.equal(refused.body.type, 'https://stellar.org/horizon-errors/transaction_failed')
    assert.equal(await wallet(), '0.0000000')
    assert.equal(((await user.call('GET', '/account')).body.wallet as { balance: string }).balance, '0.0000000')

    assert.equal((await op.call('POST', '/operator/issue', { target: appId, amount: '5', reason: 'rewards budget' })).status, 200)
    assert.equal(await wallet(), '5.0000000')
    const paid = await submitEnvelope(app(), await buildPayment(app(), { seed, to, amount: '1', memo: 'first reward', network }))
    assert.equal(paid.status, 200, JSON.stringify(paid.body))
    assert.equal(((await user.call('GET', '/account')).body.wallet as { balance: string }).balance, '1.0000000')
  })
})

describe('concurrent issues from the console', () => {
  const platform = usePlatform({ mode: 'production', portal: { operatorDailyIssueLimit: 10_000, operatorApprovalThreshold: 'off' } })
  const app = () => platform.app

  it('runs concurrent issues within the limit all at once, though the issuing account holds a leftover', async () => {
    const op = await signedUp(app)
    await adminOf(platform).grant(op.username, 'operator')
    // The issuing account exists once something was issued.
    assert.equal((await op.call('POST', '/operator/issue', { target: op.username, amount: '1', reason: 'first' })).status, 200)
    const users = [await signedUp(app), await signedUp(app)]
    // A leftover an earlier version left in the issuing account (a refused issue minted it): new money no record accounts for.
    await ledgerServiceFactory({ network: 'Pi Network', db: platform.db, clock: platform.clock }).fund(
      await issuerAddress(platform.db),
      '7',
    )
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        op.call('POST', '/operator/issue', { target: users[i % 2]?.username, amount: '100', reason: `concurrent ${i}` }),
      ),
    )
    assert.deepEqual(
      answers.map((a) => a.status),
      Array(6).fill(200),
      JSON.stringify(answers.map((a) => a.body)),
    )
    for (const user of users) assert.equal((await op.call('GET', `/operator/users/${user.username}`)).body.balance, '300.0000000')
    assert.equal((await supplySnapshot(platform.db))?.issuer, '0.0000000', 'the leftover went into the first issue')
    // The books balance, but the audit log's issues fall short of the supply by the leftover: the check names the audit log.
    const books = await op.call('GET', '/operator/ledger/check')
    assert.deepEqual(books.body.differs, ['audit'])
    assert.equal(books.body.balanced, false)
    assert.equal(Number(books.body.total_issued) - Number(books.body.total_audited), 7)
  })
})
