/**
 * The two-person rule of the operator's console (docs/operators.md, "Two operators"): an issue
 * above PLINTH_OPERATOR_APPROVAL_THRESHOLD and a grant of the operator role wait for another
 * operator; the daily limit binds all operators together; the last operator stays one.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { sql } from 'kysely'
import { type AccountBrowser, adminOf, signedUp } from '../../helpers/accounts.js'
import { assertError } from '../../helpers/payments-client.js'
import { usePlatform } from '../../helpers/platform.js'
import { supplySnapshot } from '../../helpers/supply.js'

describe('the two-person rule', () => {
  const platform = usePlatform({ mode: 'production', portal: { operatorDailyIssueLimit: 1000, operatorApprovalThreshold: 50 } })
  const app = () => platform.app
  const admin = () => adminOf(platform)
  const operator = async (): Promise<AccountBrowser & { username: string }> => {
    const user = await signedUp(app)
    await admin().grant(user.username, 'operator')
    return user
  }
  const actions = async (approvalId: string) =>
    (await admin().auditTrail(100)).records.filter((r) => r.details.approval_id === approvalId).map((r) => r.action)

  it('an issue above the threshold waits for another operator, runs when approved, and every step is audited', async () => {
    const [alice, bob] = [await operator(), await operator()]
    const user = await signedUp(app)
    assert.equal(
      (await alice.call('POST', '/operator/issue', { target: user.username, amount: '50', reason: 'at the threshold' })).status,
      200,
    )
    const before = await supplySnapshot(platform.db)
    const asked = await alice.call('POST', '/operator/issue', { target: user.username, amount: '80', reason: 'prize' })
    assert.equal(asked.status, 202, JSON.stringify(asked.body))
    const approval = asked.body.approval as Record<string, unknown>
    assert.deepEqual(
      { ...approval, approval_id: undefined, created_at: undefined, expires_at: undefined },
      {
        approval_id: undefined,
        kind: 'issue',
        requested_by: alice.username,
        target: user.username,
        amount: '80.0000000',
        role: null,
        reason: 'prize',
        status: 'pending',
        created_at: undefined,
        expires_at: undefined,
        decided_by: null,
        decided_at: null,
        decision_reason: null,
      },
    )
    const id = String(approval.approval_id)
    assert.equal(Date.parse(String(approval.expires_at)) - Date.parse(String(approval.created_at)), 24 * 3600 * 1000)
    assert.deepEqual(await supplySnapshot(platform.db), before, 'a request moves nothing')
    const listed = await bob.call('GET', '/operator/approvals?status=pending')
    assert.deepEqual(
      (listed.body.approvals as Array<{ approval_id: string }>).map((a) => a.approval_id),
      [id],
    )

    assertError(await alice.call('POST', `/operator/approvals/${id}/approve`), 403, 'forbidden')
    const approved = await bob.call('POST', `/operator/approvals/${id}/approve`)
    assert.equal(approved.status, 200, JSON.stringify(approved.body))
    assert.equal((approved.body.approval as { status: string }).status, 'approved')
    assert.equal((approved.body.approval as { decided_by: string }).decided_by, bob.username)
    assert.equal((approved.body.issued as { balance: string }).balance, '130.0000000')
    assertError(await bob.call('POST', `/operator/approvals/${id}/approve`), 409, 'approval_not_pending')
    assert.deepEqual(await actions(id), ['issue', 'approve-request', 'request-issue'])
    const issue = (await admin().auditTrail(100)).records.find((r) => r.action === 'issue' && r.details.approval_id === id)
    assert.equal(issue?.actor, `user:${String((await bob.account()).body.user_id)}`)
    assert.equal(issue?.details.requested_by, `user:${String((await alice.account()).body.user_id)}`)
    assertError(await bob.call('POST', '/operator/approvals/apr_none/approve'), 404, 'approval_not_found')
  })

  it('a rejected or expired request never runs; the requester may withdraw their own', async () => {
    const [alice, bob] = [await operator(), await operator()]
    const user = await signedUp(app)
    const ask = async () => {
      const asked = await alice.call('POST', '/operator/issue', { target: user.username, amount: '60', reason: 'maybe' })
      assert.equal(asked.status, 202)
      return String((asked.body.approval as { approval_id: string }).approval_id)
    }
    const before = await supplySnapshot(platform.db)
    const rejected = await ask()
    assertError(await bob.call('POST', `/operator/approvals/${rejected}/reject`, {}), 400, 'invalid_arguments')
    const done = await bob.call('POST', `/operator/approvals/${rejected}/reject`, { reason: 'not budgeted' })
    assert.deepEqual(
      [(done.body.approval as { status: string }).status, (done.body.approval as { decision_reason: string }).decision_reason],
      ['rejected', 'not budgeted'],
    )
    assertError(await bob.call('POST', `/operator/approvals/${rejected}/approve`), 409, 'approval_not_pending')
    assert.deepEqual(await actions(rejected), ['reject-request', 'request-issue'])

    const expired = await ask()
    await sql`update operator_approvals set expires_at = now() - interval '1 second' where id = ${expired}`.execute(platform.db)
    const listed = await bob.call('GET', '/operator/approvals?status=expired')
    assert.deepEqual(
      (listed.body.approvals as Array<{ approval_id: string; status: string }>).map((a) => [a.approval_id, a.status]),
      [[expired, 'expired']],
    )
    assertError(await bob.call('POST', `/operator/approvals/${expired}/approve`), 409, 'approval_not_pending')

    const withdrawn = await ask()
    assert.equal((await alice.call('POST', `/operator/approvals/${withdrawn}/reject`, { reason: 'typo' })).status, 200)
    assert.deepEqual(await supplySnapshot(platform.db), before)
  })

  it('the daily limit binds all operators together, and is checked again when a request is approved', async () => {
    const [alice, bob, carol] = [await operator(), await operator(), await operator()]
    const user = await signedUp(app)
    const issued = await sql<{ n: string }>`select coalesce(sum((details->>'amount')::numeric), 0)::text as n from audit_log
      where action = 'issue' and actor like 'user:%'`.execute(platform.db)
    const left = 1000 - Number(issued.rows[0]?.n)
    const asked = await alice.call('POST', '/operator/issue', { target: user.username, amount: String(left - 40), reason: 'big' })
    assert.equal(asked.status, 202, JSON.stringify(asked.body))
    const id = String((asked.body.approval as { approval_id: string }).approval_id)
    // Meanwhile other operators issue within the threshold: what is left for the request shrinks below it.
    assert.equal((await bob.call('POST', '/operator/issue', { target: user.username, amount: '45', reason: 'a' })).status, 200)
    const before = await supplySnapshot(platform.db)
    assertError(await carol.call('POST', `/operator/approvals/${id}/approve`), 409, 'issue_limit_reached')
    assert.deepEqual(await supplySnapshot(platform.db), before, 'a refused approval moves nothing')
    const still = await carol.call('GET', '/operator/approvals?status=pending')
    assert.ok(
      (still.body.approvals as Array<{ approval_id: string }>).some((a) => a.approval_id === id),
      'it stays pending',
    )
    // Over the limit already when asked: refused at once, and no request is stored.
    const count = async () => (await sql<{ n: number }>`select count(*)::int as n from operator_approvals`.execute(platform.db)).rows[0]?.n
    const stored = await count()
    const over = await alice.call('POST', '/operator/issue', { target: user.username, amount: String(left - 44), reason: 'more' })
    assertError(over, 409, 'issue_limit_reached')
    assert.equal(await count(), stored)
  })

  it('two operators approving one request at once run it once; a requester who is no longer an operator voids theirs', async () => {
    const [alice, bob, carol] = [await operator(), await operator(), await operator()]
    const user = await signedUp(app)
    const ask = async () => {
      const asked = await alice.call('POST', '/operator/issue', { target: user.username, amount: '55', reason: 'twice?' })
      assert.equal(asked.status, 202, JSON.stringify(asked.body))
      return String((asked.body.approval as { approval_id: string }).approval_id)
    }
    const id = await ask()
    const answers = await Promise.all([
      bob.call('POST', `/operator/approvals/${id}/approve`),
      carol.call('POST', `/operator/approvals/${id}/approve`),
    ])
    assert.deepEqual(answers.map((a) => a.status).sort(), [200, 409], JSON.stringify(answers.map((a) => a.body)))
    assert.equal(answers.find((a) => a.status === 409)?.body.error, 'approval_not_pending')
    assert.equal((await bob.call('GET', `/operator/users/${user.username}`)).body.balance, '55.0000000', 'paid once')

    const orphan = await ask()
    assert.equal((await bob.call('POST', `/operator/users/${alice.username}/roles`, { role: 'operator', grant: false })).status, 200)
    assertError(await carol.call('POST', `/operator/approvals/${orphan}/approve`), 409, 'approval_not_pending')
    assert.equal((await bob.call('GET', `/operator/users/${user.username}`)).body.balance, '55.0000000')
  })

  it('granting the operator role waits for another operator; granting developer does not', async () => {
    const [alice, bob] = [await operator(), await operator()]
    const user = await signedUp(app)
    const developer = await alice.call('POST', `/operator/users/${user.username}/roles`, { role: 'developer', grant: true })
    assert.deepEqual(developer.body, { username: user.username, roles: ['developer'] })
    const asked = await alice.call('POST', `/operator/users/${user.username}/roles`, {
      role: 'operator',
      grant: true,
      reason: 'night shift',
    })
    assert.equal(asked.status, 202, JSON.stringify(asked.body))
    const approval = asked.body.approval as { approval_id: string; kind: string; role: string; reason: string }
    assert.deepEqual([approval.kind, approval.role, approval.reason], ['grant-role', 'operator', 'night shift'])
    assertError(await user.call('GET', '/operator/users'), 403, 'forbidden')
    assertError(await alice.call('POST', `/operator/approvals/${approval.approval_id}/approve`), 403, 'forbidden')
    const approved = await bob.call('POST', `/operator/approvals/${approval.approval_id}/approve`)
    assert.equal(approved.status, 200, JSON.stringify(approved.body))
    assert.deepEqual(approved.body.roles, ['developer', 'operator'])
    assert.equal((await user.call('GET', '/operator/users')).status, 200)
    assert.deepEqual(await actions(approval.approval_id), ['grant-operator', 'approve-request', 'request-grant-operator'])
  })
})

describe('the last operator', () => {
  const platform = usePlatform({ mode: 'production', portal: { operatorApprovalThreshold: 'off' } })
  const app = () => platform.app
  const admin = () => adminOf(platform)
  const operators = async () =>
    (
      await sql<{ n: number }>`select count(*)::int as n from users where 'operator' = any(roles) and suspended_at is null`.execute(
        platform.db,
      )
    ).rows[0]?.n
  const pair = async () => {
    const [a, b] = [await signedUp(app), await signedUp(app)]
    for (const user of [a, b]) await admin().grant(user.username, 'operator')
    return [a, b] as const
  }

  it('with the two-person rule off, one operator grants the operator role alone', async () => {
    const [a] = await pair()
    const user = await signedUp(app)
    const granted = await a.call('POST', `/operator/users/${user.username}/roles`, { role: 'operator', grant: true })
    assert.deepEqual(granted.body, { username: user.username, roles: ['operator'] })
    await sql`update users set roles = '{}' where 'operator' = any(roles)`.execute(platform.db)
  })

  it('two operators withdrawing each other’s role at once leave one; two suspending each other at once too (6 rounds)', async () => {
    const refusals: string[] = []
    for (let round = 0; round < 6; round++) {
      const [a, b] = await pair()
      const withdraw = (by: AccountBrowser, whom: string) =>
        by.call('POST', `/operator/users/${whom}/roles`, { role: 'operator', grant: false })
      const suspend = (by: AccountBrowser, whom: string) => by.call('POST', `/operator/users/${whom}/suspend`, { reason: 'race' })
      const act = round % 2 === 0 ? withdraw : suspend
      const answers = await Promise.all([act(a, b.username), act(b, a.username)])
      // The loser is refused in the transaction (409 last_operator), or, if the winner committed before its request
      // was authenticated, at the door: its role (403) or its session (401) is gone already.
      const statuses = answers.map((x) => x.status).sort()
      assert.equal(statuses[0], 200, JSON.stringify(answers.map((x) => x.body)))
      assert.ok([401, 403, 409].includes(statuses[1] ?? 0), JSON.stringify(answers.map((x) => x.body)))
      refusals.push(String(answers.find((x) => x.status !== 200)?.body.error))
      assert.equal(await operators(), 1, 'one operator is left')
      // Clean slate for the next round.
      await sql`update users set roles = '{}', suspended_at = null where 'operator' = any(roles)`.execute(platform.db)
    }
    assert.ok(refusals.includes('last_operator'), `the transaction's check decided at least one race: ${refusals.join(', ')}`)
  })
})
