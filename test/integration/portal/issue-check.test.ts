/**
 * The check before an issue (#41 U17, docs/operators.md "Issuing money"): `POST /operator/issue/check`
 * answers the refusals an issue would meet (the amount, the reason, the target, the daily limit)
 * before the console asks the operator to confirm, and moves and records nothing either way. The
 * issue still checks at the act: a check that passed is refused there when the limit was used up
 * in between.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { adminOf, signedUp } from '../../helpers/accounts.js'
import { assertError } from '../../helpers/payments-client.js'
import { usePlatform } from '../../helpers/platform.js'
import { supplySnapshot } from '../../helpers/supply.js'

describe('checking an issue before confirming it', () => {
  const platform = usePlatform({ mode: 'production', portal: { operatorDailyIssueLimit: 1_000, operatorApprovalThreshold: 500 } })
  const app = () => platform.app

  it('answers what the issue would do, or its refusal, and moves nothing; the act checks again', async () => {
    const op = await signedUp(app)
    await adminOf(platform).grant(op.username, 'operator')
    const other = await signedUp(app)
    await adminOf(platform).grant(other.username, 'operator')
    const user = await signedUp(app)
    const before = await supplySnapshot(platform.db)
    const check = (body: Record<string, string>) => op.call('POST', '/operator/issue/check', body)

    const fine = await check({ target: user.username.toUpperCase(), amount: '400', reason: 'welcome' })
    assert.equal(fine.status, 200, JSON.stringify(fine.body))
    const address = ((await user.call('GET', '/account')).body.wallet as { address: string }).address
    assert.deepEqual(fine.body, {
      target: user.username,
      address,
      amount: '400.0000000',
      needs_approval: false,
      daily_limit: '1000.0000000',
      issued_today: '0.0000000',
    })
    assert.equal((await check({ target: user.username, amount: '600', reason: 'big' })).body.needs_approval, true)

    // Every refusal an issue would meet, in the documented shape, before any confirmation.
    assertError(await check({ target: user.username, amount: '1001', reason: 'too much' }), 409, 'issue_limit_reached')
    assertError(await check({ target: user.username, amount: '-1', reason: 'x' }), 400, 'invalid_amount')
    assertError(await check({ target: user.username, amount: '1', reason: ' \u200b ' }), 400, 'invalid_arguments')
    assertError(await check({ target: 'nobody_at_all', amount: '1', reason: 'x' }), 404, 'not_found')
    assert.deepEqual(await supplySnapshot(platform.db), before, 'a check moves nothing and records nothing')

    // Another operator uses the limit up after the check: the act refuses what the check allowed.
    assert.equal((await check({ target: user.username, amount: '400', reason: 'welcome' })).status, 200)
    assert.equal((await other.call('POST', '/operator/issue', { target: user.username, amount: '400', reason: 'first' })).status, 200)
    assert.equal((await other.call('POST', '/operator/issue', { target: user.username, amount: '400', reason: 'second' })).status, 200)
    const afterOthers = await supplySnapshot(platform.db)
    const late = await op.call('POST', '/operator/issue', { target: user.username, amount: '400', reason: 'welcome' })
    assertError(late, 409, 'issue_limit_reached')
    assert.deepEqual(await supplySnapshot(platform.db), afterOthers)
    assert.equal((await check({ target: user.username, amount: '1', reason: 'x' })).body.issued_today, '800.0000000')

    // Not an operator: refused like the issue.
    assertError(await user.call('POST', '/operator/issue/check', { target: user.username, amount: '1', reason: 'x' }), 403, 'forbidden')
  })
})
