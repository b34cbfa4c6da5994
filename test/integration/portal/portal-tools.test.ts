/**
 * The console's tools in the portal (docs/portal.md, "The app's tools"): a live app's members get
 * its overview, its users as the app sees them, exports of its payments and request log, and a
 * logged call as curl, for their app only, paged and bounded.
 */
import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import { type AccountBrowser, adminOf, signedUp } from '../../helpers/accounts.js'
import { assertError } from '../../helpers/payments-client.js'
import { usePlatform } from '../../helpers/platform.js'

describe('the portal: the app’s tools', () => {
  const platform = usePlatform({ mode: 'production' })
  const app = () => platform.app
  const admin = () => adminOf(platform)
  let owner: AccountBrowser
  let mate: AccountBrowser
  let stranger: AccountBrowser
  let appId = ''
  let apiKey = ''
  let strangerApp = ''
  let strangerKey = ''
  const users: Array<{ username: string; uid: string; token: string }> = []
  let approved = ''

  const developer = async () => {
    const user = await signedUp(app)
    await admin().grant(user.username, 'developer')
    return user
  }
  const v2 = async (method: 'GET' | 'POST', url: string, authorization: string, payload?: unknown) => {
    const answer = await app().inject({
      method,
      url,
      headers: { authorization, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
    })
    return { status: answer.statusCode, body: answer.json() as Record<string, unknown> }
  }
  const base = () => `/portal/apps/${appId}`

  before(async () => {
    const ownerUser = await developer()
    owner = ownerUser
    const mateUser = await developer()
    mate = mateUser
    const strangerUser = await developer()
    stranger = strangerUser
    const made = await admin().createApp({ owner: ownerUser.username, name: 'Tooled', url: 'https://tooled.example/' })
    appId = made.app_id
    apiKey = made.api_key
    const elsewhere = await admin().createApp({ owner: strangerUser.username, name: 'Elsewhere', url: 'https://elsewhere.example/' })
    strangerApp = elsewhere.app_id
    strangerKey = elsewhere.api_key
    assert.equal((await owner.call('POST', `${base()}/members`, { username: mateUser.username })).status, 201)
    assert.equal((await owner.call('PATCH', base(), { request_log: true })).status, 200)
    // One user grants payments only (the app never learns their username), the other the username too.
    for (const scopes of [['payments'], ['payments', 'username']]) {
      const user = await signedUp(app)
      const consent = await user.call('POST', `/account/apps/${appId}/authenticate`, { scopes })
      assert.equal(consent.status, 200, JSON.stringify(consent.body))
      users.push({
        username: user.username,
        uid: String((consent.body.user as { uid: string }).uid),
        token: String(consent.body.accessToken),
      })
    }
    const [a, b] = users as [(typeof users)[number], (typeof users)[number]]
    assert.equal((await v2('GET', '/v2/me', `Bearer ${a.token}`)).status, 200)
    const first = await v2('POST', '/v2/client/payments', `Bearer ${a.token}`, { amount: 1, memo: '=SUM(1+1)', metadata: {} })
    assert.equal(first.status, 201, JSON.stringify(first.body))
    approved = String(first.body.identifier)
    assert.equal((await v2('POST', `/v2/payments/${approved}/approve`, `Key ${apiKey}`)).status, 200)
    assert.equal(
      (await v2('POST', '/v2/client/payments', `Bearer ${b.token}`, { amount: 2, memo: "tea 'n' $(cake)", metadata: {} })).status,
      201,
    )
    const missing = await v2('POST', '/v2/payments', `Key ${apiKey}`, { payment: { amount: 1, memo: "it's", metadata: {}, uid: 'nobody' } })
    assert.equal(missing.status, 404)
  })

  it('the overview: payments by state, the last errors from the request log, the setup checklist', async () => {
    const answer = await mate.call('GET', `${base()}/overview`)
    assert.equal(answer.status, 200, JSON.stringify(answer.body))
    const payments = answer.body.payments as { count: number; by_state: Array<{ state: string; count: number }> }
    assert.equal(payments.count, 2)
    const counted = Object.fromEntries(payments.by_state.map((s) => [s.state, s.count]))
    assert.deepEqual(counted, { created: 1, approved: 1, transaction_linked: 0, verified: 0, completed: 0, cancelled: 0 })
    const errors = answer.body.last_errors as Array<{ route: string; status: number; error_code: string }>
    assert.deepEqual(
      errors.map((e) => [e.route, e.status]),
      [['/v2/payments', 404]],
    )
    assert.equal(typeof errors[0]?.error_code, 'string')
    const checklist = answer.body.checklist as Record<string, { done: boolean }>
    assert.deepEqual(Object.fromEntries(Object.entries(checklist).map(([step, s]) => [step, s.done])), {
      key_made: true,
      url_set: true,
      first_me: true,
      first_approve: true,
      first_complete: false,
    })
    assert.equal(answer.body.request_log, true)
    // Another app's developer: not shown to exist; their own app shows none of this app's data.
    assertError(await stranger.call('GET', `${base()}/overview`), 404, 'app_not_found')
    const theirs = await stranger.call('GET', `/portal/apps/${strangerApp}/overview`)
    assert.equal((theirs.body.payments as { count: number }).count, 0)
    assert.deepEqual(theirs.body.last_errors, [])
  })

  it('users: only those who granted the app, by uid or (granted) username, paged with cursors of this list only', async () => {
    const [a, b] = users as [(typeof users)[number], (typeof users)[number]]
    const find = async (q: string) =>
      (await mate.call('GET', `${base()}/users?q=${encodeURIComponent(q)}`)).body.users as Array<Record<string, unknown>>
    assert.deepEqual(await find(a.uid), [
      { uid: a.uid, username: null, scopes: ['payments'], granted_at: (await find(a.uid))[0]?.granted_at },
    ])
    assert.deepEqual(
      (await find(b.username.slice(2))).map((u) => [u.uid, u.username]),
      [[b.uid, b.username]],
    )
    assert.deepEqual(await find(a.username), [], 'a username the app was not given finds nobody')
    assert.deepEqual((await stranger.call('GET', `/portal/apps/${strangerApp}/users`)).body.users, [])

    const first = await mate.call('GET', `${base()}/users?limit=1`)
    const cursor = String(first.body.next_cursor)
    const second = await mate.call('GET', `${base()}/users?limit=1&before=${cursor}`)
    const uids = [...(first.body.users as Array<{ uid: string }>), ...(second.body.users as Array<{ uid: string }>)].map((u) => u.uid)
    assert.deepEqual(uids, [b.uid, a.uid], 'newest grant first')
    assert.equal(second.body.next_cursor, null)
    assertError(await stranger.call('GET', `/portal/apps/${strangerApp}/users?before=${cursor}`), 400, 'invalid_arguments')
    const impossible = Buffer.from(`app-users|${appId}|-5|x`).toString('base64url')
    assertError(await mate.call('GET', `${base()}/users?before=${impossible}`), 400, 'invalid_arguments')
    assertError(await mate.call('GET', `${base()}/users?limit=201`), 400, 'invalid_arguments')
    assertError(await stranger.call('GET', `${base()}/users`), 404, 'app_not_found')
  })

  it('payments export: JSON and CSV, without the platform’s user id or username, formulas defused, bounded by limit', async () => {
    const json = await mate.call('GET', `${base()}/payments/export`)
    assert.equal(json.status, 200)
    assert.equal(json.body.exported, 2)
    assert.equal(json.body.truncated, false)
    const rows = json.body.payments as Array<Record<string, unknown>>
    assert.equal(
      rows.some((p) => 'username' in p || 'user_id' in p),
      false,
    )
    assert.equal(JSON.stringify(json.body).includes(users[0]?.username ?? '?'), false)

    const bounded = await mate.call('GET', `${base()}/payments/export?limit=1`)
    assert.equal(bounded.body.exported, 1)
    assert.equal(bounded.body.truncated, true)
    assert.equal(bounded.headers['x-plinth-export-truncated'], 'true')
    assertError(await mate.call('GET', `${base()}/payments/export?limit=10001`), 400, 'invalid_arguments')

    const csv = await mate.call('GET', `${base()}/payments/export?format=csv&state=approved`)
    assert.match(String(csv.headers['content-type']), /^text\/csv/)
    assert.match(String(csv.headers['content-disposition']), new RegExp(`attachment; filename="${appId}-payments.csv"`))
    const text = String(csv.body.text)
    const [header = '', ...lines] = text.trimEnd().split('\r\n')
    assert.equal(header.includes('"user_id"') || header.includes('"username"'), false)
    assert.equal(lines.length, 1)
    assert.match(lines[0] ?? '', new RegExp(`^"${approved}"`))
    assert.ok(lines[0]?.includes(`"'=SUM(1+1)"`), 'a memo a spreadsheet would run is defused')
    assertError(await stranger.call('GET', `${base()}/payments/export`), 404, 'app_not_found')
  })

  it('the request log: found by request id or status, exported as JSON and CSV, bounded', async () => {
    const all = (await mate.call('GET', `${base()}/requests`)).body.requests as Array<{ id: string; request_id: string; status: number }>
    const error = all.find((e) => e.status === 404)
    assert.ok(error)
    const byId = await mate.call('GET', `${base()}/requests?request_id=${encodeURIComponent(error.request_id)}`)
    assert.deepEqual(
      (byId.body.requests as Array<{ id: string }>).map((e) => e.id),
      [error.id],
    )

    const one = await mate.call('GET', `${base()}/requests/export?request_id=${encodeURIComponent(error.request_id)}`)
    assert.deepEqual(
      (one.body.requests as Array<{ id: string }>).map((e) => e.id),
      [error.id],
    )
    const json = await mate.call('GET', `${base()}/requests/export?status=4xx`)
    assert.deepEqual(
      (json.body.requests as Array<{ id: string }>).map((e) => e.id),
      [error.id],
    )
    assert.equal(JSON.stringify(json.body).includes(apiKey), false)
    const bounded = await mate.call('GET', `${base()}/requests/export?limit=2`)
    assert.equal(bounded.body.exported, 2)
    assert.equal(bounded.body.truncated, all.length > 2)
    const csv = await mate.call('GET', `${base()}/requests/export?format=csv`)
    assert.equal(String(csv.body.text).trimEnd().split('\r\n').length, all.length + 1)
    assert.equal(String(csv.body.text).includes(apiKey), false)
    assertError(await mate.call('GET', `${base()}/requests/export?limit=0`), 400, 'invalid_arguments')
    assertError(await stranger.call('GET', `${base()}/requests/export`), 404, 'app_not_found')
  })

  it('copy as curl: the call with its credential as $PI_API_KEY or $PI_ACCESS_TOKEN, never the secret', async () => {
    const all = (await mate.call('GET', `${base()}/requests`)).body.requests as Array<{ id: string; route: string; status: number }>
    const keyCall = all.find((e) => e.route === '/v2/payments' && e.status === 404)
    const userCall = all.find((e) => e.route === '/v2/me')
    assert.ok(keyCall && userCall)
    const byKey = await mate.call('GET', `${base()}/requests/${keyCall.id}/curl`)
    assert.equal(byKey.status, 200, JSON.stringify(byKey.body))
    const curl = String(byKey.body.curl)
    assert.match(curl, /^curl -X POST 'http:\/\/[^']+\/v2\/payments'/)
    assert.ok(curl.includes('-H "Authorization: Key $PI_API_KEY"'))
    assert.ok(curl.includes(`"memo":"it'\\''s"`), 'a quote in the body is quoted for the shell')
    assert.equal(curl.includes(apiKey), false)
    assert.equal(byKey.body.complete, true)
    const byUser = String((await mate.call('GET', `${base()}/requests/${userCall.id}/curl`)).body.curl)
    assert.ok(byUser.includes('-H "Authorization: Bearer $PI_ACCESS_TOKEN"'))
    for (const { token } of users) assert.equal(byUser.includes(token), false)

    assertError(await mate.call('GET', `${base()}/requests/999999/curl`), 404, 'request_not_found')
    assertError(await stranger.call('GET', `${base()}/requests/${keyCall.id}/curl`), 404, 'app_not_found')
    assertError(await stranger.call('GET', `/portal/apps/${strangerApp}/requests/${keyCall.id}/curl`), 404, 'request_not_found')
  })

  it('a read-scoped personal access token reads the tools, for its owner’s apps only', async () => {
    const made = await mate.call('POST', '/account/tokens', { name: 'ci', scope: 'read', expires_in_days: 1 })
    assert.equal(made.status, 201, JSON.stringify(made.body))
    const read = (url: string) => app().inject({ method: 'GET', url, headers: { authorization: `Bearer ${String(made.body.token)}` } })
    const exported = await read(`${base()}/payments/export?format=csv`)
    assert.equal(exported.statusCode, 200)
    assert.match(exported.body, /^"identifier"/)
    assert.equal((await read(`${base()}/overview`)).statusCode, 200)
    assert.equal((await read(`/portal/apps/${strangerApp}/overview`)).json().error, 'app_not_found')
  })

  it('the overview lists the newest 10 errors only, and none of an app whose log is off', async () => {
    for (let i = 0; i < 11; i++) assert.equal((await v2('GET', `/v2/payments/missing${i}`, `Key ${apiKey}`)).status, 404)
    const errors = (await mate.call('GET', `${base()}/overview`)).body.last_errors as Array<{ path: string }>
    assert.deepEqual(
      errors.map((e) => e.path),
      Array.from({ length: 10 }, (_, i) => `/v2/payments/missing${10 - i}`),
    )
    // The stranger's app keeps no log (its owner never turned it on): its failed call is not listed.
    assert.equal((await v2('GET', '/v2/payments/missing', `Key ${strangerKey}`)).status, 404)
    assert.deepEqual((await stranger.call('GET', `/portal/apps/${strangerApp}/overview`)).body.last_errors, [])
  })
})
