/**
 * Personal access tokens (docs/portal.md, "The portal from the command line"; docs/security.md,
 * "Personal access tokens"): made, listed and revoked by a session under /account; sent as
 * `Authorization: Bearer` on /portal, where they act as their account, and refused everywhere else.
 */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { before, describe, it } from 'node:test'
import { sql } from 'kysely'
import { type AccountBrowser, adminOf, freshName, signedUp } from '../../helpers/accounts.js'
import { usePlatform } from '../../helpers/platform.js'

interface Made {
  id: string
  token: string
  name: string
  scope: string
  prefix: string
  created_at: string
  expires_at: string
  last_used_at: string | null
}

describe('personal access tokens', () => {
  const platform = usePlatform({ mode: 'production' })
  const app = () => platform.app
  let owner: AccountBrowser & { username: string }
  let stranger: AccountBrowser & { username: string }
  let appId = ''
  let strangerApp = ''

  const developer = async () => {
    const user = await signedUp(app)
    await adminOf(platform).grant(user.username, 'developer')
    return user
  }
  const make = async (browser: AccountBrowser, body: Record<string, unknown> = {}): Promise<Made> => {
    const answer = await browser.call('POST', '/account/tokens', { name: 'ci', scope: 'write', expires_in_days: 30, ...body })
    assert.equal(answer.status, 201, JSON.stringify(answer.body))
    return answer.body as unknown as Made
  }
  /** A request as a script sends it: the token, no cookie, no browser header; JSON only when there is a body. */
  const bearer = async (token: string, method: 'GET' | 'POST' | 'DELETE' | 'PATCH', url: string, payload?: unknown, headers = {}) => {
    const response = await app().inject({
      method,
      url,
      headers: { authorization: `Bearer ${token}`, ...(payload === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
    })
    return { status: response.statusCode, body: response.json() as Record<string, unknown> }
  }

  before(async () => {
    owner = await developer()
    stranger = await developer()
    appId = String(
      ((await owner.call('POST', '/portal/apps', { name: 'Tokened', url: 'http://127.0.0.1:9/' })).body.app as { app_id: string }).app_id,
    )
    strangerApp = String(
      ((await stranger.call('POST', '/portal/apps', { name: 'Other', url: 'http://127.0.0.1:9/' })).body.app as { app_id: string }).app_id,
    )
  })

  it('shows the token once, keeps only its hash, and lists it without it', async () => {
    const made = await make(owner, { name: '  deploy  ', scope: 'read', expires_in_days: 7 })
    assert.match(made.token, /^plinth_pat_[A-Za-z0-9_-]{43}$/)
    assert.equal(made.name, 'deploy')
    assert.equal(made.scope, 'read')
    assert.equal(made.prefix, made.token.slice(0, 15))
    const days = (Date.parse(made.expires_at) - Date.parse(made.created_at)) / 86_400_000
    assert.equal(Math.round(days), 7)
    const listed = await owner.call('GET', '/account/tokens')
    assert.equal(listed.status, 200)
    const row = (listed.body.tokens as Made[]).find((t) => t.id === made.id)
    const { token, ...shown } = made
    assert.deepEqual(row, { ...shown, last_used_at: null })
    assert.ok(token.length > 0)
    assert.ok(!JSON.stringify(listed.body).includes(token.slice(15)), 'the list never holds the token')
    const stored = await platform.db.selectFrom('personal_tokens').selectAll().where('id', '=', made.id).executeTakeFirstOrThrow()
    assert.equal(stored.token_hash, createHash('sha256').update(made.token).digest('hex'))
    assert.ok(!Object.values(stored).some((value) => String(value).includes(made.token.slice(15))), 'no column holds the token')
  })

  it('acts as its account on /portal: its apps, and another account’s app is not shown to exist', async () => {
    const made = await make(owner)
    const me = await bearer(made.token, 'GET', '/portal/me')
    assert.deepEqual(me.body, { username: owner.username, roles: ['developer'], token: { id: made.id, scope: 'write' } })
    const apps = await bearer(made.token, 'GET', '/portal/apps')
    assert.equal(apps.status, 200)
    assert.deepEqual(
      (apps.body.apps as { app_id: string }[]).map((a) => a.app_id),
      [appId],
    )
    const other = await bearer(made.token, 'GET', `/portal/apps/${strangerApp}`)
    assert.equal(other.status, 404)
    assert.equal(other.body.error, 'app_not_found')
    // Its use is recorded (to the minute).
    const listed = (await owner.call('GET', '/account/tokens')).body.tokens as Made[]
    assert.notEqual(listed.find((t) => t.id === made.id)?.last_used_at, null)
  })

  it('write does what the session does, a DELETE without a body type included; read only GETs', async () => {
    const write = await make(owner)
    const key = await bearer(write.token, 'POST', `/portal/apps/${appId}/keys`, { name: 'from-ci' })
    assert.equal(key.status, 201, JSON.stringify(key.body))
    const keyId = String((key.body as { key_id?: string; id?: string }).key_id ?? (key.body as { id?: string }).id)
    const revoked = await bearer(write.token, 'DELETE', `/portal/apps/${appId}/keys/${keyId}`)
    assert.equal(revoked.status, 200, JSON.stringify(revoked.body))

    const read = await make(owner, { scope: 'read' })
    assert.equal((await bearer(read.token, 'GET', `/portal/apps/${appId}/keys`)).status, 200)
    const refused = await bearer(read.token, 'POST', `/portal/apps/${appId}/keys`, { name: 'nope' })
    assert.equal(refused.status, 403)
    assert.equal(refused.body.error, 'read_only_token')
    const keys = await owner.call('GET', `/portal/apps/${appId}/keys`)
    assert.ok(!JSON.stringify(keys.body).includes('nope'), 'the read token made no key')
  })

  it('keeps the role check: a token of a person without the developer role is 403 on developer routes', async () => {
    const user = await signedUp(app)
    const made = await make(user)
    assert.equal((await bearer(made.token, 'GET', '/portal/me')).status, 200)
    const refused = await bearer(made.token, 'GET', '/portal/apps')
    assert.equal(refused.status, 403)
    assert.equal(refused.body.error, 'forbidden')

    // The role is read with the token on every request: withdrawn, it holds at the next one.
    const dev = await developer()
    const theirs = await make(dev)
    assert.equal((await bearer(theirs.token, 'GET', '/portal/apps')).status, 200)
    await sql`update users set roles = '{}' where username = ${dev.username}`.execute(platform.db)
    assert.equal((await bearer(theirs.token, 'GET', '/portal/apps')).body.error, 'forbidden')
  })

  it('is refused on /account and /operator, an operator’s token included', async () => {
    const operator = await signedUp(app)
    await adminOf(platform).grant(operator.username, 'operator')
    const made = await make(operator)
    for (const [method, url, body] of [
      ['GET', '/account', undefined],
      ['GET', '/account/tokens', undefined],
      ['POST', '/account/tokens', { name: 'again', scope: 'write', expires_in_days: 1 }],
      ['GET', '/operator/users', undefined],
      ['POST', `/operator/users/${owner.username}/suspend`, { reason: 'by token' }],
    ] as const) {
      const answer = await bearer(made.token, method, url, body)
      assert.equal(answer.status, 401, `${method} ${url}`)
      assert.equal(answer.body.error, 'personal_token_refused', `${method} ${url}`)
    }
    assert.equal((await owner.call('GET', '/account')).status, 200, 'the owner was not suspended')
  })

  it('refuses an expired, a revoked and an unknown token, and a suspended account’s', async () => {
    const expired = await make(owner)
    await sql`update personal_tokens set expires_at = now() - interval '1 second' where id = ${expired.id}`.execute(platform.db)
    const late = await bearer(expired.token, 'GET', '/portal/apps')
    assert.equal(late.status, 401)
    assert.equal(late.body.error, 'token_expired')

    const revoked = await make(owner)
    assert.equal((await owner.call('DELETE', `/account/tokens/${revoked.id}`)).status, 200)
    const gone = await bearer(revoked.token, 'GET', '/portal/apps')
    assert.equal(gone.status, 401)
    assert.equal(gone.body.error, 'invalid_personal_token')
    assert.ok(!((await owner.call('GET', '/account/tokens')).body.tokens as Made[]).some((t) => t.id === revoked.id))
    assert.equal((await owner.call('DELETE', `/account/tokens/${revoked.id}`)).body.error, 'token_not_found')

    const unknown = await bearer(`plinth_pat_${'A'.repeat(43)}`, 'GET', '/portal/apps')
    assert.equal(unknown.body.error, 'invalid_personal_token')

    const person = await developer()
    const theirs = await make(person)
    await sql`update users set suspended_at = now() where username = ${person.username}`.execute(platform.db)
    const suspended = await bearer(theirs.token, 'GET', '/portal/apps')
    assert.equal(suspended.status, 403)
    assert.equal(suspended.body.error, 'user_suspended')
  })

  it('revokes only the account’s own tokens: another’s id is 404', async () => {
    const made = await make(owner)
    const answer = await stranger.call('DELETE', `/account/tokens/${made.id}`)
    assert.equal(answer.status, 404)
    assert.equal(answer.body.error, 'token_not_found')
    assert.equal((await bearer(made.token, 'GET', '/portal/apps')).status, 200)
  })

  it('needs a recent re-authentication to make one, bounded input, and at most 20 live tokens', async () => {
    const person = await signedUp(app, freshName('cap'))
    await sql`update account_sessions set reauthenticated_at = now() - interval '10 minutes' where user_id = (select id from users where username = ${person.username})`.execute(
      platform.db,
    )
    const stale = await person.call('POST', '/account/tokens', { name: 'x', scope: 'read', expires_in_days: 1 })
    assert.equal(stale.status, 403)
    assert.equal(stale.body.error, 'reauthentication_required')
    assert.equal((await person.signin(person.username)).status, 200)
    for (const bad of [
      { name: 'x', scope: 'read', expires_in_days: 0 },
      { name: 'x', scope: 'read', expires_in_days: 366 },
      { name: 'x', scope: 'admin', expires_in_days: 1 },
      { name: '   ', scope: 'read', expires_in_days: 1 },
      { name: 'x'.repeat(61), scope: 'read', expires_in_days: 1 },
    ]) {
      assert.equal((await person.call('POST', '/account/tokens', bad)).status, 400, JSON.stringify(bad))
    }
    const made = await Promise.all(Array.from({ length: 20 }, () => make(person)))
    const over = await person.call('POST', '/account/tokens', { name: 'x', scope: 'read', expires_in_days: 1 })
    assert.equal(over.status, 409)
    assert.equal(over.body.error, 'too_many_tokens')
    const first = made[0]
    assert.ok(first !== undefined)
    assert.equal((await person.call('DELETE', `/account/tokens/${first.id}`)).status, 200)
    await make(person)
  })

  it('audits making and revoking a token, and sign out everywhere revokes them all', async () => {
    const person = await developer()
    const made = await make(person, { name: 'audited' })
    assert.equal((await person.call('DELETE', `/account/tokens/${made.id}`)).status, 200)
    const records = await platform.db
      .selectFrom('audit_log')
      .select(['action', 'target', 'details'])
      .where('target', '=', made.id)
      .orderBy('id')
      .execute()
    assert.deepEqual(
      records.map((r) => r.action),
      ['create-personal-token', 'revoke-personal-token'],
    )
    assert.equal((records[0]?.details as { scope?: string } | undefined)?.scope, 'write')

    const kept = await make(person)
    assert.equal((await person.call('POST', '/account/signout-everywhere', {})).status, 200)
    const answer = await bearer(kept.token, 'GET', '/portal/apps')
    assert.equal(answer.body.error, 'invalid_personal_token')
  })

  it('keeps the site check: a Bearer request a browser sent from another site is refused', async () => {
    const made = await make(owner)
    const answer = await bearer(made.token, 'GET', '/portal/apps', undefined, { 'sec-fetch-site': 'cross-site' })
    assert.equal(answer.status, 403)
    assert.equal(answer.body.error, 'cross_site_request')
    // No CORS on /portal: a preflight for an Authorization header gets no Access-Control-Allow-Origin.
    const preflight = await app().inject({
      method: 'OPTIONS',
      url: '/portal/apps',
      headers: {
        origin: 'https://evil.example',
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'authorization',
      },
    })
    assert.equal(preflight.headers['access-control-allow-origin'], undefined)
  })
})
