/**
 * The developer portal (docs/portal.md): a developer registers an app, proves its domain against
 * a real local server, makes keys, shares the app with members; everyone else is kept out.
 */
import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, before, describe, it } from 'node:test'
import { type AccountBrowser, accountBrowser, adminOf, signedUp } from '../../helpers/accounts.js'
import { assertError } from '../../helpers/payments-client.js'
import { startPlatform, usePlatform } from '../../helpers/platform.js'

/** An app's web server: answers /validation-key.txt with whatever `key` holds now. */
function appServer() {
  let key = ''
  let hits = 0
  const server: Server = createServer((request, response) => {
    if (request.url === '/validation-key.txt') {
      hits += 1
      response.writeHead(200, { 'content-type': 'text/plain' }).end(`${key}\n`)
      return
    }
    response.writeHead(404).end()
  })
  return {
    start: () => new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve)),
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
    get url() {
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`
    },
    serve(value: string) {
      key = value
    },
    get hits() {
      return hits
    },
  }
}

describe('the developer portal', () => {
  const platform = usePlatform({ mode: 'production', portal: { allowPrivateAppUrls: true } })
  const app = () => platform.app
  const admin = () => adminOf(platform)
  const site = appServer()
  before(() => site.start())
  after(() => site.stop())

  const developer = async (): Promise<AccountBrowser & { username: string }> => {
    const user = await signedUp(app)
    await admin().grant(user.username, 'developer')
    return user
  }
  const v2 = (authorization: string, url: string) => platform.app.inject({ method: 'GET', url, headers: { authorization } })
  const register = async (owner: AccountBrowser, url = site.url) => {
    // Testnet: no listing review (listing.test.ts has the Mainnet one).
    const created = await owner.call('POST', '/portal/apps', {
      name: 'Teapots',
      url,
      network: 'Pi Testnet',
      description: 'Tea, by the pot.',
    })
    assert.equal(created.status, 201, JSON.stringify(created.body))
    return created.body as { app: { app_id: string; validation_key: string; verified: boolean }; api_key: string; key_id: string }
  }

  it('only a signed-in developer registers; the app is unverified, unlisted and given no tokens until its domain is proven', async () => {
    assertError(await signedUp(app).then((u) => u.call('POST', '/portal/apps', { name: 'X', url: site.url })), 403, 'forbidden')
    const anonymous = await (await signedUp(app)).call('POST', '/account/signout')
    assert.equal(anonymous.status, 200)

    const dev = await developer()
    const created = await register(dev)
    assert.equal(created.app.verified, false)
    assert.match(created.app.validation_key, /^plinth-[A-Za-z0-9_-]{32}$/)
    // The key works against the platform API at once: the app's backend can be built before launch.
    assert.equal((await v2(`Key ${created.api_key}`, '/v2/payments/incomplete_server_payments')).statusCode, 200)

    const user = await signedUp(app)
    const listed = (await user.call('GET', '/account/apps')).body.apps as Array<{ app_id: string }>
    assert.equal(
      listed.some((a) => a.app_id === created.app.app_id),
      false,
      'not in the directory',
    )
    assertError(await user.call('POST', `/account/apps/${created.app.app_id}/authenticate`, { scopes: [] }), 403, 'app_not_verified')

    // A wrong key is refused with the reason; the right one verifies.
    site.serve('plinth-not-this-one')
    const wrong = assertError(await dev.call('POST', `/portal/apps/${created.app.app_id}/verify`), 409, 'domain_check_failed')
    assert.equal((wrong as unknown as { reason: string }).reason, 'key_mismatch')
    site.serve(created.app.validation_key)
    const verified = await dev.call('POST', `/portal/apps/${created.app.app_id}/verify`)
    assert.equal(verified.status, 200, JSON.stringify(verified.body))
    assert.equal(verified.body.verified, true)
    assert.equal(verified.body.verified_by, 'domain')

    const now = (await user.call('GET', '/account/apps')).body.apps as Array<{ app_id: string; description: string }>
    assert.equal(now.find((a) => a.app_id === created.app.app_id)?.description, 'Tea, by the pot.')
    assert.equal((await user.call('POST', `/account/apps/${created.app.app_id}/authenticate`, { scopes: ['username'] })).status, 200)

    // A new URL must be proven again, and the change is in the audit log.
    const moved = await dev.call('PATCH', `/portal/apps/${created.app.app_id}`, { url: `${site.url}shop/` })
    assert.equal(moved.status, 200, JSON.stringify(moved.body))
    assert.equal(moved.body.verified, false)
    assertError(await user.call('POST', `/account/apps/${created.app.app_id}/authenticate`, { scopes: [] }), 403, 'app_not_verified')
    const trail = (await admin().auditTrail(20)).records.filter((r) => r.target === created.app.app_id).map((r) => r.action)
    assert.deepEqual(trail, ['change-app-url', 'verify-app-domain', 'register-app'])
  })

  it('the domain check refuses loopback and private addresses unless PLINTH_ALLOW_PRIVATE_APP_URLS=1', async () => {
    // A second process on the same database, with the default settings.
    const strict = await startPlatform({ mode: 'production', sharing: platform })
    try {
      const dev = await developer()
      const there = accountBrowser(() => strict.app)
      there.use(dev.token)
      const created = await there.call('POST', '/portal/apps', { name: 'Local', url: site.url })
      assert.equal(created.status, 201)
      const made = created.body.app as { app_id: string; validation_key: string }
      site.serve(made.validation_key)
      const before = site.hits
      const refused = await there.call('POST', `/portal/apps/${made.app_id}/verify`)
      assertError(refused, 409, 'domain_check_failed')
      assert.equal(refused.body.reason, 'private_address')
      assert.equal(site.hits, before, 'no request reached the server')
    } finally {
      await strict.close()
    }
  })

  it('counts domain checks: 30 an hour per developer, then 429 with Retry-After', async () => {
    const dev = await developer()
    const { app: made } = await register(dev)
    site.serve('plinth-not-this-one')
    for (let i = 0; i < 30; i++) {
      assertError(await dev.call('POST', `/portal/apps/${made.app_id}/verify`), 409, 'domain_check_failed')
    }
    const hits = site.hits
    const refused = await dev.call('POST', `/portal/apps/${made.app_id}/verify`)
    assertError(refused, 429, 'too_many_attempts')
    assert.ok(Number(refused.headers['retry-after']) > 0)
    assert.equal(site.hits, hits, 'no fetch once over the limit')
  })

  it('keys: named, shown once, listed with their last use, revoked by the owner only', async () => {
    const dev = await developer()
    const { app: made } = await register(dev)
    const key = await dev.call('POST', `/portal/apps/${made.app_id}/keys`, { name: 'backend' })
    assert.equal(key.status, 201)
    assert.equal(key.headers['cache-control'], 'no-store')
    const apiKey = String(key.body.api_key)
    let keys = (await dev.call('GET', `/portal/apps/${made.app_id}/keys`)).body.keys as Array<Record<string, unknown>>
    const listed = keys.find((k) => k.key_id === key.body.key_id)
    assert.equal(listed?.name, 'backend')
    assert.equal(listed?.last_used_at, null)
    assert.equal(JSON.stringify(keys).includes(apiKey), false, 'the key itself is never listed')
    assert.equal((await v2(`Key ${apiKey}`, '/v2/payments/incomplete_server_payments')).statusCode, 200)
    keys = (await dev.call('GET', `/portal/apps/${made.app_id}/keys`)).body.keys as Array<Record<string, unknown>>
    assert.equal(typeof keys.find((k) => k.key_id === key.body.key_id)?.last_used_at, 'string')

    const revoked = await dev.call('DELETE', `/portal/apps/${made.app_id}/keys/${String(key.body.key_id)}`)
    assert.equal(revoked.status, 200)
    assert.equal((await v2(`Key ${apiKey}`, '/v2/payments/incomplete_server_payments')).statusCode, 401)
    const actions = (await admin().auditTrail(20)).records.filter((r) => r.target === made.app_id).map((r) => r.action)
    assert.deepEqual(actions.slice(0, 2), ['revoke-key', 'create-key'])
    assert.equal(JSON.stringify(await admin().auditTrail(50)).includes(apiKey), false)
  })

  it('members: the owner adds a developer; a member sees the app but does no owner’s act; a stranger sees nothing; ownership moves', async () => {
    const owner = await developer()
    const { app: made } = await register(owner)
    const notDeveloper = await signedUp(app)
    assertError(
      await owner.call('POST', `/portal/apps/${made.app_id}/members`, { username: notDeveloper.username }),
      409,
      'not_a_developer',
    )
    const mate = await developer()
    assert.equal((await owner.call('POST', `/portal/apps/${made.app_id}/members`, { username: mate.username })).status, 201)
    assertError(await owner.call('POST', `/portal/apps/${made.app_id}/members`, { username: mate.username }), 409, 'member_exists')

    assert.equal((await mate.call('GET', `/portal/apps/${made.app_id}`)).body.role, 'member')
    assert.deepEqual(
      ((await mate.call('GET', '/portal/apps')).body.apps as Array<{ app_id: string }>).map((a) => a.app_id),
      [made.app_id],
    )
    assertError(await mate.call('POST', `/portal/apps/${made.app_id}/keys`, {}), 403, 'forbidden')
    assertError(await mate.call('POST', `/portal/apps/${made.app_id}/members`, { username: owner.username }), 403, 'forbidden')

    const stranger = await developer()
    assertError(await stranger.call('GET', `/portal/apps/${made.app_id}`), 404, 'app_not_found')
    assertError(await stranger.call('POST', `/portal/apps/${made.app_id}/keys`, {}), 404, 'app_not_found')
    assert.deepEqual((await stranger.call('GET', '/portal/apps')).body.apps, [])

    const handed = await owner.call('POST', `/portal/apps/${made.app_id}/owner`, { username: mate.username })
    assert.equal(handed.status, 200, JSON.stringify(handed.body))
    assert.equal((await mate.call('GET', `/portal/apps/${made.app_id}`)).body.role, 'owner')
    assertError(await owner.call('POST', `/portal/apps/${made.app_id}/keys`, {}), 403, 'forbidden')
    // The former owner leaves; the new owner cannot be removed.
    assert.equal((await owner.call('DELETE', `/portal/apps/${made.app_id}/members/${owner.username}`)).status, 200)
    assertError(await owner.call('GET', `/portal/apps/${made.app_id}`), 404, 'app_not_found')
    assertError(await mate.call('DELETE', `/portal/apps/${made.app_id}/members/${mate.username}`), 404, 'user_not_found')
    const members = (await mate.call('GET', `/portal/apps/${made.app_id}/members`)).body.members as Array<{
      username: string
      role: string
    }>
    assert.deepEqual(
      members.map((m) => [m.username, m.role]),
      [[mate.username, 'owner']],
    )
  })

  it('payments: a member finds the app’s payments by uid (never by username) and completes one with its txid', async () => {
    const dev = await developer()
    const made = await register(dev)
    site.serve(made.app.validation_key)
    assert.equal((await dev.call('POST', `/portal/apps/${made.app.app_id}/verify`)).status, 200)
    const user = await signedUp(app)
    // The app is on Pi Testnet: its user pays in test-π, from the faucet (an operator's issue is π, on Pi Network).
    assert.equal((await user.call('POST', '/account/faucet', {})).status, 200)
    const consent = await user.call('POST', `/account/apps/${made.app.app_id}/authenticate`, { scopes: ['payments'] })
    const token = String(consent.body.accessToken)
    const uid = String((consent.body.user as { uid: string }).uid)
    const created = await platform.app.inject({
      method: 'POST',
      url: '/v2/client/payments',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ amount: 2, memo: 'a pot', metadata: {} }),
    })
    assert.equal(created.statusCode, 201, created.body)
    const id = String(created.json().identifier)
    const approve = await platform.app.inject({
      method: 'POST',
      url: `/v2/payments/${id}/approve`,
      headers: { authorization: `Key ${made.api_key}` },
    })
    assert.equal(approve.statusCode, 200)
    const paid = await user.call('POST', `/account/payments/${id}/pay`)
    assert.equal(paid.status, 200, JSON.stringify(paid.body))
    const txid = String((paid.body.transaction as { txid: string }).txid)

    const byUid = (await dev.call('GET', `/portal/apps/${made.app.app_id}/payments?q=${uid}`)).body.payments as Array<
      Record<string, unknown>
    >
    assert.deepEqual(
      byUid.map((p) => p.identifier),
      [id],
    )
    assert.equal('username' in (byUid[0] ?? {}), false)
    assert.equal('user_id' in (byUid[0] ?? {}), false)
    assert.deepEqual((await dev.call('GET', `/portal/apps/${made.app.app_id}/payments?q=${user.username}`)).body.payments, [])

    const completed = await dev.call('POST', `/portal/apps/${made.app.app_id}/payments/${id}/complete`, { txid })
    assert.equal(completed.status, 200, JSON.stringify(completed.body))
    assert.equal((completed.body.status as { developer_completed: boolean }).developer_completed, true)
    const detail = await dev.call('GET', `/portal/apps/${made.app.app_id}/payments/${id}`)
    const timeline = detail.body.timeline as Array<{ kind: string; actor: string; actor_id: string }>
    assert.deepEqual(timeline.at(-1), { ...timeline.at(-1), kind: 'completed', actor: 'portal', actor_id: dev.username })
    const stranger = await developer()
    assertError(await stranger.call('GET', `/portal/apps/${made.app.app_id}/payments/${id}`), 404, 'app_not_found')

    const wallet = await dev.call('GET', `/portal/apps/${made.app.app_id}/wallet`)
    assert.equal(wallet.body.balance, '2.0000000')
  })

  it('the request log: off until the owner turns it on (audited), then the app’s /v2 calls are kept, redacted, readable by members only', async () => {
    const dev = await developer()
    const made = await register(dev)
    const call = () => v2(`Key ${made.api_key}`, '/v2/payments/incomplete_server_payments')
    assert.equal((await call()).statusCode, 200)
    let page = await dev.call('GET', `/portal/apps/${made.app.app_id}/requests`)
    assert.equal(page.status, 200, JSON.stringify(page.body))
    assert.deepEqual(page.body.requests, [], 'nothing kept while the log is off')
    assert.equal((await dev.call('GET', `/portal/apps/${made.app.app_id}`)).body.request_log, false)

    const mate = await developer()
    await dev.call('POST', `/portal/apps/${made.app.app_id}/members`, { username: mate.username })
    assertError(await mate.call('PATCH', `/portal/apps/${made.app.app_id}`, { request_log: true }), 403, 'forbidden')
    const on = await dev.call('PATCH', `/portal/apps/${made.app.app_id}`, { request_log: true })
    assert.equal(on.status, 200)
    assert.equal(on.body.request_log, true)
    assert.equal((await call()).statusCode, 200)
    const bad = await platform.app.inject({
      method: 'POST',
      url: '/v2/payments',
      headers: { authorization: `Key ${made.api_key}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ payment: { amount: 1, memo: 'x', metadata: {}, uid: 'nobody' } }),
    })
    assert.equal(bad.statusCode, 404)
    page = await mate.call('GET', `/portal/apps/${made.app.app_id}/requests`)
    const entries = page.body.requests as Array<{ id: string; route: string; status: number; key_id: string }>
    assert.deepEqual(
      entries.map((e) => [e.route, e.status]),
      [
        ['/v2/payments', 404],
        ['/v2/payments/incomplete_server_payments', 200],
      ],
    )
    assert.equal(JSON.stringify(page.body).includes(made.api_key), false)
    const one = await mate.call('GET', `/portal/apps/${made.app.app_id}/requests/${entries[0]?.id}`)
    assert.equal(one.body.status, 404)
    const stranger = await developer()
    assertError(await stranger.call('GET', `/portal/apps/${made.app.app_id}/requests`), 404, 'app_not_found')

    await dev.call('PATCH', `/portal/apps/${made.app.app_id}`, { request_log: false })
    assert.equal((await call()).statusCode, 200)
    const after = await dev.call('GET', `/portal/apps/${made.app.app_id}/requests`)
    assert.equal((after.body.requests as unknown[]).length, 2, 'off again: nothing more kept')
    const actions = (await admin().auditTrail(20)).records.filter((r) => r.target === made.app.app_id).map((r) => r.action)
    assert.deepEqual(actions.slice(0, 3), ['disable-request-log', 'enable-request-log', 'add-member'])
  })

  it('ads, notifications and a blocked user, as the app sees them (by uid)', async () => {
    const dev = await developer()
    const made = await register(dev)
    site.serve(made.app.validation_key)
    assert.equal((await dev.call('POST', `/portal/apps/${made.app.app_id}/verify`)).status, 200)
    const user = await signedUp(app)
    const consent = await user.call('POST', `/account/apps/${made.app.app_id}/authenticate`, {
      scopes: ['payments', 'in_app_notifications'],
    })
    const uid = String((consent.body.user as { uid: string }).uid)
    const token = String(consent.body.accessToken)
    const post = (url: string, authorization: string, body: unknown) =>
      platform.app.inject({
        method: 'POST',
        url,
        headers: { authorization, 'content-type': 'application/json' },
        payload: JSON.stringify(body),
      })
    const created = await post('/v2/client/payments', `Bearer ${token}`, { amount: 1, memo: 'blocked', metadata: {} })
    assert.equal(created.statusCode, 201, created.body)
    // Paid and never completed: the payment the user's next one is refused for.
    const id = String(created.json().identifier)
    assert.equal((await user.call('POST', '/account/faucet', {})).status, 200)
    assert.equal((await post(`/v2/payments/${id}/approve`, `Key ${made.api_key}`, {})).statusCode, 200)
    assert.equal((await user.call('POST', `/account/payments/${id}/pay`)).status, 200)
    const sent = await post('/v2/in_app_notifications/notify', `Key ${made.api_key}`, {
      notifications: [{ user_uid: uid, title: 'Hello', body: 'A pot is ready', subroute: '/pots' }],
    })
    assert.ok(sent.statusCode < 300, sent.body)

    const blocking = await dev.call('GET', `/portal/apps/${made.app.app_id}/users/${uid}/blocking`)
    assert.equal(blocking.status, 200, JSON.stringify(blocking.body))
    assert.deepEqual(blocking.body.blocked, { user_to_app: true, app_to_user: false })
    assert.equal(JSON.stringify(blocking.body).includes(user.username), false)
    // The advice the portal page reads, as the sandbox's view gives it (PaymentAdviceSchema).
    const [open] = blocking.body.open_payments as Array<{ advice: Record<string, unknown> }>
    assert.deepEqual(Object.keys(open?.advice ?? {}).sort(), ['blocks_new_payment', 'next_call', 'sandbox_actions', 'state', 'waiting_for'])
    assert.equal(open?.advice.blocks_new_payment, true)
    assertError(await dev.call('GET', `/portal/apps/${made.app.app_id}/users/not-a-uid/blocking`), 404, 'user_not_found')

    const notes = (await dev.call('GET', `/portal/apps/${made.app.app_id}/notifications`)).body.notifications as Array<
      Record<string, unknown>
    >
    assert.deepEqual(
      notes.map((n) => [n.uid, n.title, n.seen_at]),
      [[uid, 'Hello', null]],
    )
    assert.deepEqual((await dev.call('GET', `/portal/apps/${made.app.app_id}/ads`)).body.ads, [])
  })

  it('refuses bad input with the documented shape: a blank name, a javascript: URL, an SVG icon, an icon that lies about its type', async () => {
    const dev = await developer()
    const bad = async (body: Record<string, unknown>, pattern: RegExp) => {
      const answer = await dev.call('POST', '/portal/apps', { name: 'Fine', url: site.url, ...body })
      assertError(answer, 400, 'invalid_arguments')
      assert.match(String(answer.body.error_message), pattern)
    }
    await bad({ name: '   ' }, /name/)
    await bad({ url: 'javascript:alert(1)' }, /url/)
    await bad({ icon: `data:image/svg+xml;base64,${Buffer.from('<svg onload="alert(1)"/>').toString('base64')}` }, /icon/)
    await bad({ icon: `data:image/png;base64,${Buffer.from('GIF89a not a png').toString('base64')}` }, /icon's bytes/)
    await bad({ description: 'a\u0000b' }, /description/)
    const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex').toString('base64')
    const withIcon = await dev.call('POST', '/portal/apps', { name: 'Iconic', url: site.url, icon: `data:image/png;base64,${png}` })
    assert.equal(withIcon.status, 201)
  })
})

describe('who makes a developer (PLINTH_DEVELOPER_SIGNUP)', () => {
  it('open: a signed-in user takes the role themselves, audited; operator (the default) refuses that', async () => {
    const open = await startPlatform({ mode: 'production', portal: { developerSignup: 'open' } })
    try {
      const user = await signedUp(() => open.app)
      assertError(await user.call('GET', '/portal/apps'), 403, 'forbidden')
      const taken = await user.call('POST', '/portal/developer')
      assert.deepEqual(taken.body, { developer: true, already: false })
      assert.equal((await user.call('GET', '/portal/apps')).status, 200)
      const records = (await adminOf(open).auditTrail(10)).records.filter(
        (r) => r.action === 'grant-developer' && r.target === user.username,
      )
      assert.equal(records.length, 1)
      assert.equal(records[0]?.actor, `user:${String((await user.account()).body.user_id)}`)
      assert.deepEqual(records[0]?.details, { policy: 'open' })
      assert.deepEqual((await user.call('POST', '/portal/developer')).body, { developer: true, already: true })
    } finally {
      await open.close()
    }
    const strict = await startPlatform({ mode: 'production' })
    try {
      const user = await signedUp(() => strict.app)
      assertError(await user.call('POST', '/portal/developer'), 403, 'forbidden')
    } finally {
      await strict.close()
    }
  })

  it('invite: adding a user who is no developer as a member makes them one, and the audit record says so', async () => {
    const invite = await startPlatform({ mode: 'production', portal: { developerSignup: 'invite' } })
    try {
      const owner = await signedUp(() => invite.app)
      await adminOf(invite).grant(owner.username, 'developer')
      const made = await owner.call('POST', '/portal/apps', { name: 'Invites', url: 'https://invites.example/' })
      const appId = String((made.body.app as { app_id: string }).app_id)
      const friend = await signedUp(() => invite.app)
      assertError(await friend.call('GET', '/portal/apps'), 403, 'forbidden')
      assertError(await friend.call('POST', '/portal/developer'), 403, 'forbidden')
      assert.equal((await owner.call('POST', `/portal/apps/${appId}/members`, { username: friend.username })).status, 201)
      const listed = (await friend.call('GET', '/portal/apps')).body.apps as Array<{ app_id: string; role: string }>
      assert.deepEqual(
        listed.map((a) => [a.app_id, a.role]),
        [[appId, 'member']],
      )
      const record = (await adminOf(invite).auditTrail(10)).records.find((r) => r.action === 'add-member' && r.target === appId)
      assert.equal(record?.details.developer_granted, true)
    } finally {
      await invite.close()
    }
  })
})
