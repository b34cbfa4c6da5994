import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import type { KyselyPlugin } from 'kysely'
import { type AuthFixture, authCases } from '../helpers/auth-cases.js'
import { type SandboxApp, sandbox, startPlatform, TEST_DB, type TestPlatform } from '../helpers/platform.js'

interface Delivered {
  id: string
  title: string
  body: string
  user_uid: string
  subroute: string
  seen_at: null
  dismissed_at: null
}
interface CentreItem extends Omit<Delivered, 'seen_at' | 'dismissed_at'> {
  app_id: string
  created_at: string
  seen_at: string | null
  dismissed_at: string | null
}

const NOTIFY_SCOPES = ['username', 'in_app_notifications']

describe('in-app notifications', () => {
  let platform: TestPlatform
  let sb: ReturnType<typeof sandbox>

  before(async () => {
    platform = await startPlatform()
    sb = sandbox(platform.app)
  })
  after(() => platform.close())

  async function notify(app: SandboxApp, notifications: unknown, on: FastifyInstance = platform.app) {
    const response = await on.inject({
      method: 'POST',
      url: '/v2/in_app_notifications/notify',
      headers: { authorization: `Key ${app.api_key}` },
      payload: { notifications } as Record<string, unknown>,
    })
    return {
      status: response.statusCode,
      body: response.json() as { success?: boolean; delivered_notifications?: Delivered[]; error?: string },
    }
  }
  const note = (uid: string, n = 0) => ({ title: `Title ${n}`, body: `Body ${n}`, user_uid: uid, subroute: `/items/${n}` })

  async function member(app: SandboxApp, scopes = NOTIFY_SCOPES) {
    const user = await sb.createUser()
    const auth = await sb.authenticate(app.app_id, user.user_id, scopes)
    return { user, uid: auth.user.uid, token: auth.accessToken }
  }
  async function centre(token: string, query = '') {
    const response = await platform.app.inject({
      method: 'GET',
      url: `/v2/client/notifications${query}`,
      headers: { authorization: `Bearer ${token}` },
    })
    return response.json() as { notifications: CentreItem[]; next_cursor: string | null; unseen_count: number }
  }
  /** Every notification the app delivered to the user, through the sandbox (access tokens expire when a test moves the clock). */
  async function delivered(app: SandboxApp, userId: string) {
    const response = await platform.app.inject({
      method: 'GET',
      url: `/sandbox/users/${userId}/notifications?app_id=${app.app_id}&limit=100`,
    })
    return (response.json() as { notifications: CentreItem[] }).notifications
  }
  const client = (token: string, method: 'GET' | 'POST' | 'PUT', url: string, payload?: Record<string, unknown>) =>
    platform.app.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(payload === undefined ? {} : { payload }) })

  it('delivers to users who granted in_app_notifications, in the documented shape', async () => {
    const app = await sb.createApp()
    const alice = await member(app)
    const result = await notify(app, [note(alice.uid, 1), note(alice.uid, 2)])
    assert.equal(result.status, 201)
    assert.equal(result.body.success, true)
    const delivered = result.body.delivered_notifications ?? []
    assert.equal(delivered.length, 2)
    assert.deepEqual(Object.keys(delivered[0] ?? {}).sort(), ['body', 'dismissed_at', 'id', 'seen_at', 'subroute', 'title', 'user_uid'])
    assert.deepEqual(
      { ...delivered[0], id: 'x' },
      { id: 'x', title: 'Title 1', body: 'Body 1', user_uid: alice.uid, subroute: '/items/1', seen_at: null, dismissed_at: null },
    )
    assert.notEqual(delivered[0]?.id, delivered[1]?.id)
    const listed = await centre(alice.token)
    assert.deepEqual(listed.notifications.map((n) => n.id).sort(), delivered.map((n) => n.id).sort())
    assert.equal(listed.unseen_count, 2)
    for (const item of listed.notifications) {
      assert.equal(item.app_id, app.app_id)
      assert.equal(item.seen_at, null)
      assert.match(item.created_at, /Z$/)
    }
  })

  it('leaves out recipients without consent, with notifications off, unknown or of another app', async () => {
    const app = await sb.createApp()
    const other = await sb.createApp()
    const yes = await member(app)
    const noScope = await member(app, ['username'])
    const off = await member(app)
    assert.equal((await client(off.token, 'PUT', '/v2/client/notifications/settings', { enabled: false })).statusCode, 200)
    const stranger = await member(other)
    const result = await notify(app, [
      note(yes.uid),
      note(noScope.uid),
      note(off.uid),
      note('00000000-0000-4000-8000-000000000000'),
      note(stranger.uid),
    ])
    assert.equal(result.status, 201)
    assert.deepEqual(
      result.body.delivered_notifications?.map((n) => n.user_uid),
      [yes.uid],
    )
    assert.equal((await centre(off.token)).notifications.length, 0)
    assert.equal((await delivered(app, noScope.user.user_id)).length, 0)
    // Nor may a token without in_app_notifications read the centre (docs/errors.md, Scopes).
    const refused = await client(noScope.token, 'GET', '/v2/client/notifications')
    assert.equal(refused.statusCode, 401)
    assert.equal((refused.json() as { error: string }).error, 'missing_scope')
    // Turned back on, the app reaches the user again.
    await client(off.token, 'PUT', '/v2/client/notifications/settings', { enabled: true })
    assert.deepEqual(JSON.parse((await client(off.token, 'GET', '/v2/client/notifications/settings')).body), { enabled: true })
    assert.equal((await notify(app, [note(off.uid)])).body.delivered_notifications?.length, 1)
  })

  it('refuses more than 256 notifications with 400 and the platform text', async () => {
    const app = await sb.createApp()
    const alice = await member(app)
    const result = await notify(
      app,
      Array.from({ length: 257 }, (_, i) => note(alice.uid, i)),
    )
    assert.equal(result.status, 400)
    assert.deepEqual(result.body, { error: 'Maximum 256 notifications allowed per request' })
  })

  for (const [what, notifications, pattern] of [
    ['an empty list', [], /must not be empty/],
    ['no list', undefined, /notifications is required/],
    ['a list of the wrong type', 'hello', /must be an array/],
    ['a missing title', [{ body: 'b', user_uid: 'u', subroute: '/x' }], /notifications\[0\]\.title is required/],
    ['a number body', [{ title: 't', body: 5, user_uid: 'u', subroute: '/x' }], /notifications\[0\]\.body must be a string/],
    ['a subroute without a leading slash', [{ title: 't', body: 'b', user_uid: 'u', subroute: 'x' }], /subroute must start with \//],
    ['a title over 100 characters', [{ title: 't'.repeat(101), body: 'b', user_uid: 'u', subroute: '/x' }], /at most 100/],
  ] as const) {
    it(`answers ${what} with 422 {error}`, async () => {
      const app = await sb.createApp()
      const result = await notify(app, notifications)
      assert.equal(result.status, 422)
      assert.deepEqual(Object.keys(result.body), ['error'])
      assert.match(result.body.error ?? '', pattern)
    })
  }

  it('answers bad credentials and malformed JSON in its own {error} shape', async () => {
    const noAuth = await platform.app.inject({ method: 'POST', url: '/v2/in_app_notifications/notify', payload: { notifications: [] } })
    assert.equal(noAuth.statusCode, 401)
    assert.deepEqual(Object.keys(noAuth.json()), ['error'])
    const app = await sb.createApp()
    const bad = await platform.app.inject({
      method: 'POST',
      url: '/v2/in_app_notifications/notify',
      headers: { authorization: `Key ${app.api_key}`, 'content-type': 'application/json' },
      payload: '{"notifications": [',
    })
    assert.equal(bad.statusCode, 422)
    assert.deepEqual(Object.keys(bad.json()), ['error'])
  })

  it('enforces 48 per user per 24 hours of platform time: all or nothing, refilled after the window', async () => {
    const app = await sb.createApp()
    const alice = await member(app)
    const bob = await member(app)
    assert.equal(
      (
        await notify(
          app,
          Array.from({ length: 40 }, (_, i) => note(alice.uid, i)),
        )
      ).status,
      201,
    )
    assert.equal(
      (
        await notify(
          app,
          Array.from({ length: 8 }, (_, i) => note(alice.uid, i)),
        )
      ).status,
      201,
    )
    // Alice is full: a request for Alice and Bob delivers nothing, not even Bob's.
    const refused = await notify(app, [note(bob.uid), note(alice.uid)])
    assert.equal(refused.status, 403)
    assert.deepEqual(refused.body, { error: `Notification quota exceeded for users: ${alice.uid}` })
    assert.equal((await centre(bob.token)).notifications.length, 0)
    // 49 in one request for a fresh user is over too, and names the user.
    const carol = await member(app)
    const over = await notify(
      app,
      Array.from({ length: 49 }, (_, i) => note(carol.uid, i)),
    )
    assert.equal(over.status, 403)
    assert.match(over.body.error ?? '', new RegExp(carol.uid))
    assert.equal((await centre(carol.token)).notifications.length, 0)
    // Two users over at once: the text names both, and nothing of the request is delivered.
    const dave = await member(app)
    const both = await notify(app, [...Array.from({ length: 49 }, (_, i) => note(dave.uid, i)), note(alice.uid), note(bob.uid)])
    assert.equal(both.status, 403)
    assert.deepEqual(Object.keys(both.body), ['error'])
    const named = (both.body.error ?? '').replace('Notification quota exceeded for users: ', '').split(', ').sort()
    assert.deepEqual(named, [alice.uid, dave.uid].sort())
    assert.equal((await centre(bob.token)).notifications.length, 0)
    assert.equal((await centre(dave.token)).notifications.length, 0)
    // The window slides on the platform clock.
    await sb.advanceClock(24 * 3600 + 1)
    assert.equal((await notify(app, [note(alice.uid)])).status, 201)
  })

  it('slides the window: each notification leaves it 24 hours after its delivery', async () => {
    const app = await sb.createApp()
    const gina = await member(app)
    const status = async (count: number, on: FastifyInstance = platform.app) =>
      (
        await notify(
          app,
          Array.from({ length: count }, (_, i) => note(gina.uid, i)),
          on,
        )
      ).status
    assert.equal(await status(30), 201)
    await sb.advanceClock(12 * 3600)
    assert.equal(await status(18), 201)
    assert.equal(await status(1), 403)
    // A day after the first 30: those 30 are out, the 18 of 12 hours ago still in.
    await sb.advanceClock(12 * 3600 + 1)
    assert.equal(await status(31), 403)
    assert.equal(await status(30), 201)
    assert.equal(await status(1), 403)
    // Half a day later the 18 are out too, and only they.
    await sb.advanceClock(12 * 3600)
    assert.equal(await status(19), 403)
    assert.equal(await status(18), 201)
    assert.equal(await status(1), 403)
    assert.equal((await delivered(app, gina.user.user_id)).length, 96)
  })

  it('keeps the quota of notifications stored before it kept its state on them', async () => {
    const app = await sb.createApp()
    const hank = await member(app)
    const at = platform.clock.now()
    await platform.db
      .insertInto('notifications')
      .values(
        Array.from({ length: 47 }, (_, i) => ({
          id: `ntf_legacy_${hank.user.user_id}_${i}`,
          app_id: app.app_id,
          user_id: hank.user.user_id,
          user_uid: hank.uid,
          title: 'Before',
          body: '',
          subroute: '/',
          created_at: new Date(at.getTime() - i * 1000),
        })),
      )
      .execute()
    assert.equal((await notify(app, [note(hank.uid), note(hank.uid, 1)])).status, 403)
    assert.equal((await notify(app, [note(hank.uid)])).status, 201)
    assert.equal((await notify(app, [note(hank.uid)])).status, 403)
  })

  it("stays exact when one process's clock lags another's", {
    skip: TEST_DB !== 'postgres' && 'PGlite is one process',
  }, async () => {
    // The second platform has its own copy of the clock's offset (refreshed with its revocation feed): right after the
    // first moves the clock an hour, its copy lags an hour behind.
    const second = await startPlatform({ sharing: platform })
    try {
      const app = await sb.createApp()
      const ivy = await member(app)
      const moved = (await sb.advanceClock(3600)).timestamp * 1000
      const batch = (count: number) => Array.from({ length: count }, (_, i) => note(ivy.uid, i))
      assert.equal((await notify(app, batch(47))).status, 201)
      // 47 in the lagging process's window too: one more fits there, and then neither process takes another.
      assert.equal((await notify(app, batch(1), second.app)).status, 201)
      assert.equal((await notify(app, batch(1))).status, 403)
      assert.equal((await notify(app, batch(1), second.app)).status, 403)
      // The lagging process stamps its delivery on the platform clock as stored (notify reads it in its
      // statement), not on its own stale copy: never before the move, nor before the newest delivery.
      const times = (await delivered(app, ivy.user.user_id)).map((n) => Date.parse(n.created_at)).sort((x, y) => x - y)
      assert.equal(times.length, 48)
      assert.ok((times[0] ?? 0) >= moved, 'every delivery is stamped after the move')
      assert.equal(new Set(times.slice(0, 47)).size, 1, 'one batch, one time')
    } finally {
      await second.close()
    }
  })

  it('counts only delivered notifications toward the quota', async () => {
    const app = await sb.createApp()
    const dave = await member(app)
    await client(dave.token, 'PUT', '/v2/client/notifications/settings', { enabled: false })
    const skipped = await notify(
      app,
      Array.from({ length: 60 }, (_, i) => note(dave.uid, i)),
    )
    assert.equal(skipped.status, 201)
    assert.deepEqual(skipped.body.delivered_notifications, [])
    await client(dave.token, 'PUT', '/v2/client/notifications/settings', { enabled: true })
    assert.equal(
      (
        await notify(
          app,
          Array.from({ length: 48 }, (_, i) => note(dave.uid, i)),
        )
      ).body.delivered_notifications?.length,
      48,
    )
  })

  it('delivers a 256-notification batch', async () => {
    const app = await sb.createApp()
    const members = await Promise.all(Array.from({ length: 6 }, () => member(app)))
    const batch = Array.from({ length: 256 }, (_, i) => note(members[i % 6]?.uid ?? '', i))
    const result = await notify(app, batch)
    assert.equal(result.status, 201)
    assert.equal(result.body.delivered_notifications?.length, 256)
    assert.deepEqual(
      result.body.delivered_notifications?.map((n) => n.subroute),
      batch.map((n) => n.subroute),
      'in request order',
    )
  })

  it('delivers a 256-notification batch in one statement, not 256', async () => {
    // Each statement as its kind and what of the delivery it names; background reads (the credential feed, the clock) run on timers too.
    const statements: string[] = []
    const counting: KyselyPlugin = {
      transformQuery: (args) => {
        const text = JSON.stringify(args.node)
        const tables = ['app_users', 'notifications', 'notify_deliver'].filter((name) => new RegExp(`\\b${name}\\b`).test(text))
        statements.push(`${args.node.kind} ${tables.join(' ')}`)
        return args.node
      },
      transformResult: async (args) => args.result,
    }
    const counted = await startPlatform({ wrapDb: (db) => db.withPlugin(counting) })
    try {
      const csb = sandbox(counted.app)
      const app = await csb.createApp()
      const uids: string[] = []
      for (let i = 0; i < 6; i++) {
        const user = await csb.createUser()
        uids.push((await csb.authenticate(app.app_id, user.user_id, NOTIFY_SCOPES)).user.uid)
      }
      statements.length = 0
      const result = await notify(
        app,
        Array.from({ length: 256 }, (_, i) => note(uids[i % 6] ?? '', i)),
        counted.app,
      )
      assert.equal(result.status, 201)
      assert.equal(result.body.delivered_notifications?.length, 256)
      const delivery = statements.filter((st) => /\b(notifications|app_users|notify_deliver)$/.test(st))
      assert.deepEqual(delivery, ['RawNode notify_deliver'])
    } finally {
      await counted.close()
    }
  })

  it('answers an unexpected failure with 500 in its own {error} shape, without details', async () => {
    // The database fails the statement that delivers (notify_deliver inserts), as a lost connection or a full disk would.
    let failInserts = false
    const failing: KyselyPlugin = {
      transformQuery: (args) => {
        const node = args.node as { kind: string; sqlFragments?: readonly string[] }
        const inserts = node.kind === 'InsertQueryNode' || /\b(insert into|notify_deliver)\b/i.test(node.sqlFragments?.join('$') ?? '')
        if (failInserts && inserts) throw new Error('the database is gone')
        return args.node
      },
      transformResult: async (args) => args.result,
    }
    const broken = await startPlatform({ wrapDb: (db) => db.withPlugin(failing) })
    try {
      const bsb = sandbox(broken.app)
      const app = await bsb.createApp()
      const user = await bsb.createUser()
      const uid = (await bsb.authenticate(app.app_id, user.user_id, NOTIFY_SCOPES)).user.uid
      failInserts = true
      const result = await notify(app, [note(uid)], broken.app)
      assert.equal(result.status, 500)
      assert.deepEqual(result.body, { error: 'Internal server error' })
    } finally {
      await broken.close()
    }
  })

  it('takes the longest valid request (256 notifications, every field at its bound, over 1 MiB of JSON)', async () => {
    const app = await sb.createApp()
    const members = await Promise.all(Array.from({ length: 6 }, () => member(app)))
    const batch = Array.from({ length: 256 }, (_, i) => ({
      title: '€'.repeat(100),
      body: '€'.repeat(1000),
      user_uid: members[i % 6]?.uid ?? '',
      subroute: `/${'€'.repeat(499)}`,
    }))
    assert.ok(Buffer.byteLength(JSON.stringify({ notifications: batch })) > 1024 * 1024)
    const result = await notify(app, batch)
    assert.equal(result.status, 201, JSON.stringify(result.body).slice(0, 200))
    assert.equal(result.body.delivered_notifications?.length, 256)
  })

  it('is exact under concurrency: 100 concurrent requests for one user deliver 48', async () => {
    const app = await sb.createApp()
    const erin = await member(app)
    const results = await Promise.all(Array.from({ length: 100 }, (_, i) => notify(app, [note(erin.uid, i)])))
    for (const r of results) assert.ok(r.status === 201 || r.status === 403, `status ${r.status}`)
    const delivered = results.reduce((sum, r) => sum + (r.body.delivered_notifications?.length ?? 0), 0)
    assert.equal(delivered, 48)
    assert.equal(results.filter((r) => r.status === 403).length, 52)
  })

  it('is exact across two Plinth processes sharing one PostgreSQL', {
    skip: TEST_DB !== 'postgres' && 'PGlite is one process',
  }, async () => {
    const second = await startPlatform({ sharing: platform })
    try {
      const app = await sb.createApp()
      const frank = await member(app)
      const results = await Promise.all(
        Array.from({ length: 100 }, (_, i) => notify(app, [note(frank.uid, i)], i % 2 === 0 ? platform.app : second.app)),
      )
      const delivered = results.reduce((sum, r) => sum + (r.body.delivered_notifications?.length ?? 0), 0)
      assert.equal(delivered, 48)
      for (const r of results) assert.ok(r.status === 201 || r.status === 403)
    } finally {
      await second.close()
    }
  })

  describe("the user's notification centre", () => {
    it('lists newest first, pages with a cursor, marks seen and dismisses', async () => {
      const app = await sb.createApp()
      const gina = await member(app)
      for (let i = 0; i < 5; i++) await notify(app, [note(gina.uid, i)])
      const first = await centre(gina.token, '?limit=2')
      assert.deepEqual(
        first.notifications.map((n) => n.title),
        ['Title 4', 'Title 3'],
      )
      assert.ok(first.next_cursor)
      const second = await centre(gina.token, `?limit=2&cursor=${first.next_cursor}`)
      assert.deepEqual(
        second.notifications.map((n) => n.title),
        ['Title 2', 'Title 1'],
      )
      const last = await centre(gina.token, `?limit=2&cursor=${second.next_cursor}`)
      assert.deepEqual(
        last.notifications.map((n) => n.title),
        ['Title 0'],
      )
      assert.equal(last.next_cursor, null)

      const id = first.notifications[0]?.id ?? ''
      const seen = await client(gina.token, 'POST', `/v2/client/notifications/${id}/seen`)
      assert.equal(seen.statusCode, 200)
      const seenAt = seen.json().seen_at
      assert.ok(!Number.isNaN(Date.parse(seenAt)))
      await sb.advanceClock(5)
      assert.equal(
        (await client(gina.token, 'POST', `/v2/client/notifications/${id}/seen`)).json().seen_at,
        seenAt,
        'the first time stands',
      )
      assert.equal((await centre(gina.token)).unseen_count, 4)

      const dismissed = await client(gina.token, 'POST', `/v2/client/notifications/${id}/dismiss`)
      assert.ok(dismissed.json().dismissed_at)
      assert.equal((await centre(gina.token)).notifications.length, 4)
      assert.equal((await centre(gina.token, '?include_dismissed=true')).notifications.length, 5)
    })

    it("answers another user's notification with 404 and changes nothing", async () => {
      const app = await sb.createApp()
      const owner = await member(app)
      const intruder = await member(app)
      const id = (await notify(app, [note(owner.uid)])).body.delivered_notifications?.[0]?.id ?? ''
      for (const action of ['seen', 'dismiss']) {
        const response = await client(intruder.token, 'POST', `/v2/client/notifications/${id}/${action}`)
        assert.equal(response.statusCode, 404)
        assert.equal(response.json().error, 'notification_not_found')
      }
      const item = (await centre(owner.token)).notifications[0]
      assert.equal(item?.seen_at, null)
    })

    it('lets the sandbox read any user’s notifications from every app', async () => {
      const appA = await sb.createApp()
      const appB = await sb.createApp()
      const user = await sb.createUser()
      const uidA = (await sb.authenticate(appA.app_id, user.user_id, NOTIFY_SCOPES)).user.uid
      const uidB = (await sb.authenticate(appB.app_id, user.user_id, NOTIFY_SCOPES)).user.uid
      await notify(appA, [note(uidA, 1)])
      await notify(appB, [note(uidB, 2)])
      const all = (await platform.app.inject({ method: 'GET', url: `/sandbox/users/${user.user_id}/notifications` })).json()
      assert.deepEqual(all.notifications.map((n: CentreItem) => n.app_id).sort(), [appA.app_id, appB.app_id].sort())
      const onlyA = (
        await platform.app.inject({ method: 'GET', url: `/sandbox/users/${user.user_id}/notifications?app_id=${appA.app_id}` })
      ).json()
      assert.deepEqual(
        onlyA.notifications.map((n: CentreItem) => n.title),
        ['Title 1'],
      )
    })
  })

  describe('authentication', () => {
    let fixture: AuthFixture
    before(async () => {
      const app = await sb.createApp()
      const m = await member(app)
      const revokedKey = await sb.createKey(app.app_id)
      await sb.revokeKey(app.app_id, revokedKey.key_id)
      const revoked = await sb.authenticate(app.app_id, m.user.user_id, NOTIFY_SCOPES)
      await sb.revokeToken(revoked.accessToken)
      fixture = {
        app: platform.app,
        apiKey: app.api_key,
        accessToken: m.token,
        revokedKey: revokedKey.api_key,
        revokedToken: revoked.accessToken,
      }
    })
    authCases('token', { method: 'GET', url: '/v2/client/notifications' }, () => fixture)
  })
})
