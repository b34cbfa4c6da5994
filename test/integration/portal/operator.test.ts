/**
 * The operator's console API (docs/operators.md): suspensions that hold at once, roles, reset
 * links, issuing under a daily limit, and the audit log that records it all.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { sql } from 'kysely'
import { type AccountBrowser, accountBrowser, adminOf, GOOD_PASSWORD, signedUp } from '../../helpers/accounts.js'
import { assertError } from '../../helpers/payments-client.js'
import { usePlatform } from '../../helpers/platform.js'

describe('the operator’s console', () => {
  const platform = usePlatform({ mode: 'production', portal: { operatorDailyIssueLimit: 100 } })
  const app = () => platform.app
  const admin = () => adminOf(platform)

  const operator = async (): Promise<AccountBrowser & { username: string }> => {
    const user = await signedUp(app)
    await admin().grant(user.username, 'operator')
    return user
  }
  const v2 = (authorization: string, url = '/v2/me') => platform.app.inject({ method: 'GET', url, headers: { authorization } })
  /** A developer's app made by the CLI (verified), a user with a token for it. */
  const world = async () => {
    const dev = await signedUp(app)
    await admin().grant(dev.username, 'developer')
    const shop = await admin().createApp({ owner: dev.username, name: 'Shop', url: 'https://shop.example/' })
    const user = await signedUp(app)
    const token = String((await user.call('POST', `/account/apps/${shop.app_id}/authenticate`, { scopes: ['username'] })).body.accessToken)
    return { dev, shop, user, token }
  }

  it('needs the operator role: anonymous 401, a user or a developer 403', async () => {
    const nobody = accountBrowser(app)
    assertError(await nobody.call('GET', '/operator/users'), 401, 'session_required')
    const user = await signedUp(app)
    assertError(await user.call('GET', '/operator/users'), 403, 'forbidden')
    await admin().grant(user.username, 'developer')
    assertError(await user.call('GET', '/operator/audit'), 403, 'forbidden')
  })

  it('suspends an app: its key and its users’ tokens are refused with app_suspended, it leaves the directory; restore undoes it', async () => {
    const op = await operator()
    const { shop, user, token } = await world()
    assert.equal((await v2(`Key ${shop.api_key}`, '/v2/payments/incomplete_server_payments')).statusCode, 200, 'cached now')
    assert.equal((await v2(`Bearer ${token}`)).statusCode, 200, 'cached now')

    await admin().issue({ target: user.username, amount: '5', reason: 'test money' })
    const payer = String((await user.call('POST', `/account/apps/${shop.app_id}/authenticate`, { scopes: ['payments'] })).body.accessToken)
    const created = await platform.app.inject({
      method: 'POST',
      url: '/v2/client/payments',
      headers: { authorization: `Bearer ${payer}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ amount: 1, memo: 'before', metadata: {} }),
    })
    const pending = String(created.json().identifier)
    const approved = await platform.app.inject({
      method: 'POST',
      url: `/v2/payments/${pending}/approve`,
      headers: { authorization: `Key ${shop.api_key}` },
    })
    assert.equal(approved.statusCode, 200)
    const suspended = await op.call('POST', `/operator/apps/${shop.app_id}/suspend`, { reason: 'phishing report' })
    assert.deepEqual(suspended.body, { changed: true })
    const key = await v2(`Key ${shop.api_key}`, '/v2/payments/incomplete_server_payments')
    assert.equal(key.statusCode, 403)
    assert.equal(key.json().error, 'app_suspended')
    const bearer = await v2(`Bearer ${token}`)
    assert.equal(bearer.statusCode, 403)
    assert.equal(bearer.json().error, 'app_suspended')
    const directory = (await user.call('GET', '/account/apps')).body.apps as Array<{ app_id: string }>
    assert.equal(
      directory.some((a) => a.app_id === shop.app_id),
      false,
    )
    assertError(await user.call('POST', `/account/apps/${shop.app_id}/authenticate`, { scopes: [] }), 403, 'app_suspended')
    assert.deepEqual((await op.call('POST', `/operator/apps/${shop.app_id}/suspend`, { reason: 'again' })).body, { changed: false })
    // A payment approved before the suspension: the user cannot pay a suspended app.
    assertError(await user.call('POST', `/account/payments/${pending}/pay`), 403, 'app_suspended')

    assert.deepEqual((await op.call('POST', `/operator/apps/${shop.app_id}/restore`, { reason: 'cleared' })).body, { changed: true })
    assert.equal((await user.call('POST', `/account/payments/${pending}/pay`)).status, 200, 'restored: the user may pay')
    assert.equal((await v2(`Key ${shop.api_key}`, '/v2/payments/incomplete_server_payments')).statusCode, 200)
    assert.equal((await v2(`Bearer ${token}`)).statusCode, 200)
    const detail = await op.call('GET', `/operator/apps/${shop.app_id}`)
    assert.equal(detail.body.suspended, false)
    assert.equal(detail.body.verified_by, 'operator')
    assert.equal((detail.body.members as Array<{ role: string }>)[0]?.role, 'owner')
  })

  it('suspends a user: their sessions end, tokens are refused with user_suspended, sign-in says so only to the password’s holder', async () => {
    const op = await operator()
    const { user, token } = await world()
    assertError(await op.call('POST', `/operator/users/${user.username}/suspend`, {}), 400, 'invalid_arguments')
    assert.deepEqual((await op.call('POST', `/operator/users/${user.username}/suspend`, { reason: 'fraud' })).body, { changed: true })
    assertError(await user.account(), 401, 'session_required')
    const refused = await v2(`Bearer ${token}`)
    assert.equal(refused.statusCode, 403)
    assert.equal(refused.json().error, 'user_suspended')
    const again = accountBrowser(app)
    assertError(await again.signin(user.username), 403, 'user_suspended')
    assertError(await again.signin(user.username, 'not the password at all'), 401, 'invalid_credentials')
    assertError(await op.call('POST', `/operator/users/${op.username}/suspend`, { reason: 'me' }), 403, 'forbidden')

    assert.deepEqual((await op.call('POST', `/operator/users/${user.username}/restore`, { reason: 'appeal' })).body, { changed: true })
    assert.equal((await again.signin(user.username)).status, 200)
    assert.equal((await v2(`Bearer ${token}`)).statusCode, 200)
  })

  it('grants and withdraws roles; an operator keeps their own operator role', async () => {
    const op = await operator()
    const user = await signedUp(app)
    const granted = await op.call('POST', `/operator/users/${user.username}/roles`, { role: 'developer', grant: true })
    assert.deepEqual(granted.body.roles, ['developer'])
    assert.equal((await user.call('GET', '/portal/apps')).status, 200)
    await op.call('POST', `/operator/users/${user.username}/roles`, { role: 'developer', grant: false })
    assertError(await user.call('GET', '/portal/apps'), 403, 'forbidden')
    assertError(await op.call('POST', `/operator/users/${op.username}/roles`, { role: 'operator', grant: false }), 403, 'forbidden')
    assertError(await op.call('POST', `/operator/users/${user.username}/roles`, { role: 'root', grant: true }), 400, 'invalid_arguments')
    const actions = (await admin().auditTrail(10)).records.filter((r) => r.target === user.username).map((r) => r.action)
    assert.deepEqual(actions, ['withdraw-developer', 'grant-developer'])
  })

  it('a reset link sets a new password once, ends every session, and is kept only as its hash', async () => {
    const op = await operator()
    const user = await signedUp(app)
    const link = await op.call('POST', `/operator/users/${user.username}/password-reset`)
    assert.equal(link.status, 201)
    assert.equal(link.headers['cache-control'], 'no-store')
    const token = String(link.body.url).split('#/reset/')[1] ?? ''
    assert.match(token, /^[A-Za-z0-9_-]{43}$/)
    const dump = JSON.stringify(await platform.db.selectFrom('password_resets').selectAll().execute())
    assert.equal(dump.includes(token), false)
    assert.equal(JSON.stringify(await admin().auditTrail(20)).includes(token), false)

    const fresh = accountBrowser(app)
    assertError(await fresh.call('POST', '/account/password-reset', { token, new_password: 'password1' }), 400, 'weak_password')
    const used = await fresh.call('POST', '/account/password-reset', { token, new_password: 'meadow copper harbor violet' })
    assert.equal(used.status, 200, JSON.stringify(used.body))
    assertError(await user.account(), 401, 'session_required')
    assert.equal((await fresh.account()).body.username, user.username)
    assertError(
      await fresh.call('POST', '/account/password-reset', { token, new_password: 'meadow copper harbor violet' }),
      400,
      'invalid_reset_link',
    )
    assertError(await accountBrowser(app).signin(user.username, GOOD_PASSWORD), 401, 'invalid_credentials')
    assertError(
      await accountBrowser(app).call('POST', '/account/password-reset', { token: 'x'.repeat(43), new_password: GOOD_PASSWORD }),
      400,
      'invalid_reset_link',
    )
  })

  it('issues money with a reason, at most the daily limit for all operators together, and the ledger’s books stay balanced', async () => {
    const op = await operator()
    const user = await signedUp(app)
    const first = await op.call('POST', '/operator/issue', { target: user.username, amount: '60', reason: 'launch grant' })
    assert.equal(first.status, 200, JSON.stringify(first.body))
    assert.equal(first.body.balance, '60.0000000')
    const over = await op.call('POST', '/operator/issue', { target: user.username, amount: '40.0000001', reason: 'more' })
    assertError(over, 409, 'issue_limit_reached')
    assert.equal((await op.call('POST', '/operator/issue', { target: user.username, amount: '40', reason: 'more' })).status, 200)
    // The limit is the platform's: another operator (one made by an operator at the limit, say) issues nothing more.
    const other = await operator()
    assertError(
      await other.call('POST', '/operator/issue', { target: user.username, amount: '1', reason: 'x' }),
      409,
      'issue_limit_reached',
    )
    assertError(await op.call('POST', '/operator/issue', { target: user.username, amount: '-1', reason: 'x' }), 400, 'invalid_amount')
    assertError(await op.call('POST', '/operator/issue', { target: 'nobody_at_all', amount: '1', reason: 'x' }), 404, 'not_found')
    const books = await op.call('GET', '/operator/ledger/check')
    assert.equal(books.body.balanced, true, JSON.stringify(books.body))
    const issued = (await admin().auditTrail(20)).records.filter((r) => r.action === 'issue' && r.target === user.username)
    assert.equal(issued.length, 2)
    assert.equal(issued.at(-1)?.actor, `user:${String((await op.account()).body.user_id)}`)
    assert.equal(typeof issued.at(-1)?.details.request_id, 'string')
  })

  it('records sign-in attempts over the limit once a window, naming the account but no password', async () => {
    const user = await signedUp(app)
    const guesser = accountBrowser(app)
    const statuses: number[] = []
    for (let i = 0; i < 13; i++) statuses.push((await guesser.signin(user.username, `wrong guess ${i}`)).status)
    assert.deepEqual(statuses, [...Array(10).fill(401), 429, 429, 429])
    const records = (await admin().auditTrail(50)).records.filter(
      (r) => r.action === 'throttle-signin' && r.target === `signin-account:${user.username.toLowerCase()}`,
    )
    assert.equal(records.length, 1, 'the first refusal of the window only')
    assert.equal(records[0]?.actor, 'platform')
    assert.deepEqual(records[0]?.details, { attempts: 10, window_seconds: 900 })
    assert.equal(JSON.stringify(records).includes('wrong guess'), false)
  })

  it('the audit log: newest first, filtered, paged with cursors, exported as JSON lines, no route edits it; a direct edit breaks the chain', async () => {
    const op = await operator()
    const { shop } = await world()
    for (const reason of ['one', 'two', 'three']) {
      await op.call('POST', `/operator/apps/${shop.app_id}/suspend`, { reason })
      await op.call('POST', `/operator/apps/${shop.app_id}/restore`, { reason })
    }
    const page1 = await op.call('GET', `/operator/audit?target=${shop.app_id}&limit=4`)
    const records1 = page1.body.records as Array<{ id: string; action: string }>
    assert.deepEqual(
      records1.map((r) => r.action),
      ['restore-app', 'suspend-app', 'restore-app', 'suspend-app'],
    )
    const page2 = await op.call('GET', `/operator/audit?target=${shop.app_id}&limit=4&before=${String(page1.body.next_cursor)}`)
    const records2 = page2.body.records as Array<{ id: string; action: string }>
    assert.deepEqual(
      records2.map((r) => r.action),
      ['restore-app', 'suspend-app', 'create-app'],
    )
    assert.equal(page2.body.next_cursor, null)
    assert.equal(((await op.call('GET', `/operator/audit?q=TWO&target=${shop.app_id}`)).body.records as unknown[]).length, 2)
    assertError(await op.call('GET', '/operator/audit?before=bm90LWEtY3Vyc29y'), 400, 'invalid_arguments')

    const exported = await platform.app.inject({
      method: 'GET',
      url: `/operator/audit/export?target=${shop.app_id}`,
      headers: { cookie: `__Host-plinth_session=${op.token}`, 'sec-fetch-site': 'same-origin' },
    })
    assert.equal(exported.headers['content-type'], 'application/x-ndjson; charset=utf-8')
    const lines = exported.body
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { action: string })
    assert.deepEqual(lines.map((l) => l.action)[0], 'create-app', 'oldest first')
    assert.equal(lines.length, 7)

    for (const method of ['DELETE', 'PATCH', 'PUT'] as const) {
      const answer = await platform.app.inject({
        method,
        url: '/operator/audit',
        headers: { cookie: `__Host-plinth_session=${op.token}`, 'sec-fetch-site': 'same-origin', 'content-type': 'application/json' },
        payload: '{}',
      })
      assert.ok([404, 405].includes(answer.statusCode), `${method} /operator/audit answered ${answer.statusCode}`)
    }
    assert.deepEqual((await op.call('GET', '/operator/audit/verify')).body.broken_at, null)
    const victim = records2[1]?.id ?? ''
    const { rows } = await sql<{ details: string }>`select details::text as details from audit_log where id = ${victim}`.execute(
      platform.db,
    )
    await sql`update audit_log set details = jsonb_set(details, '{reason}', '"nothing happened"') where id = ${victim}`.execute(platform.db)
    assert.equal((await op.call('GET', '/operator/audit/verify')).body.broken_at, victim)
    // Mended for the other tests of this platform: what the record said.
    await sql`update audit_log set details = ${rows[0]?.details ?? ''}::jsonb where id = ${victim}`.execute(platform.db)
    assert.deepEqual((await op.call('GET', '/operator/audit/verify')).body.broken_at, null)
  })
})
