import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { json, type SandboxApp, sandbox, startPlatform, type TestPlatform } from '../helpers/platform.js'

const USERS = 1_000
const PAYERS = 50
const PAYMENTS_EACH = 20

interface UsersPage {
  users: Array<{ user_id: string; username: string }>
  next_cursor: string | null
  total: number
}
interface PaymentsPage {
  payments: Array<{ identifier: string; user_id: string; username: string; memo: string; state: string; direction: string }>
  next_cursor: string | null
}

/** Runs `count` calls, `width` at a time. */
async function inBatches(count: number, width: number, fn: (i: number) => Promise<unknown>): Promise<void> {
  for (let start = 0; start < count; start += width) {
    await Promise.all(Array.from({ length: Math.min(width, count - start) }, (_, k) => fn(start + k)))
  }
}

describe('sandbox search and paging with realistic data', () => {
  let platform: TestPlatform
  const tag = `s${randomBytes(3).toString('hex')}`
  let shop: SandboxApp
  let other: SandboxApp
  const userIds: string[] = []
  const paymentIds: string[] = []
  const payerNames: string[] = []

  before(async () => {
    // The open payments must stay open while 1,000 are made: on a loaded machine that took longer
    // than the default 60 s approval window, and the state filter then found expired ones.
    platform = await startPlatform({ approvalWindowSeconds: 3600 })
    const sb = sandbox(platform.app)
    shop = await sb.createApp()
    other = await sb.createApp()
    await inBatches(USERS, 25, async (i) => {
      const user = await sb.createUser(`${tag}_User_${String(i).padStart(4, '0')}`)
      userIds[i] = user.user_id
    })
    // 50 users each make 20 payments: each new one cancels the one before (one open payment per user and app).
    await inBatches(PAYERS, 10, async (p) => {
      const userId = userIds[p] ?? ''
      payerNames[p] = `${tag}_User_${String(p).padStart(4, '0')}`
      const { accessToken } = await sb.authenticate(shop.app_id, userId)
      for (let k = 0; k < PAYMENTS_EACH; k++) {
        const answer = await platform.app.inject({
          method: 'POST',
          url: '/v2/client/payments',
          headers: { authorization: `Bearer ${accessToken}` },
          payload: { amount: 1, memo: `order ${p}-${k}${k === 7 ? ' 100%_off' : ''}`, metadata: {} },
        })
        assert.equal(answer.statusCode, 201, answer.body)
        paymentIds.push(json<{ identifier: string }>(answer).identifier)
      }
    })
  })
  after(() => platform.close())

  const get = async <T>(url: string) => {
    const response = await platform.app.inject({ method: 'GET', url })
    return { status: response.statusCode, body: json<T>(response), raw: json(response) }
  }
  async function allPages<T extends { next_cursor: string | null }>(url: string, rows: (page: T) => string[]): Promise<string[]> {
    const seen: string[] = []
    let cursor: string | null = null
    for (let guard = 0; guard < 1000; guard++) {
      const sep = url.includes('?') ? '&' : '?'
      const page: { status: number; body: T } = await get<T>(cursor === null ? url : `${url}${sep}before=${encodeURIComponent(cursor)}`)
      assert.equal(page.status, 200)
      seen.push(...rows(page.body))
      cursor = page.body.next_cursor
      if (cursor === null) return seen
    }
    throw new Error('paging did not end')
  }

  it('finds every user by a part of the name, regardless of case, each exactly once across pages, with the total', async () => {
    for (const limit of [200, 37]) {
      const seen = await allPages<UsersPage>(`/sandbox/users?q=${tag.toUpperCase()}_uSeR&limit=${limit}`, (p) =>
        p.users.map((u) => u.user_id),
      )
      assert.equal(seen.length, USERS)
      assert.equal(new Set(seen).size, USERS)
      assert.deepEqual(new Set(seen), new Set(userIds))
    }
    const first = await get<UsersPage>(`/sandbox/users?q=${tag}&limit=5`)
    assert.equal(first.body.total, USERS)
    assert.equal(first.body.users.length, 5)
    const one = await get<UsersPage>(`/sandbox/users?q=${tag}_user_0042`)
    assert.equal(one.body.total, 1)
    assert.equal(one.body.users[0]?.user_id, userIds[42])
    // % and _ are taken literally: no username holds a %.
    assert.equal((await get<UsersPage>('/sandbox/users?q=%25')).body.total, 0)
    // Every user, no search: each exactly once (the sandbox holds other users too: the demo's, none here).
    const everyone = await allPages<UsersPage>('/sandbox/users?limit=200', (p) => p.users.map((u) => u.user_id))
    assert.equal(new Set(everyone).size, everyone.length)
    for (const id of userIds) assert.ok(everyone.includes(id))
  })

  it("pages an app's 1,000 payments, each exactly once, and filters by state, direction, user and memo", async () => {
    for (const limit of [200, 33]) {
      const seen = await allPages<PaymentsPage>(`/sandbox/apps/${shop.app_id}/payments?limit=${limit}`, (p) =>
        p.payments.map((x) => x.identifier),
      )
      assert.equal(seen.length, PAYERS * PAYMENTS_EACH)
      assert.deepEqual(new Set(seen), new Set(paymentIds))
    }
    const open = await allPages<PaymentsPage>(`/sandbox/apps/${shop.app_id}/payments?state=created&limit=200`, (p) =>
      p.payments.map((x) => x.state),
    )
    assert.equal(open.length, PAYERS)
    assert.ok(open.every((s) => s === 'created'))
    const cancelled = await allPages<PaymentsPage>(`/sandbox/apps/${shop.app_id}/payments?state=cancelled&limit=200`, (p) =>
      p.payments.map((x) => x.identifier),
    )
    assert.equal(cancelled.length, PAYERS * (PAYMENTS_EACH - 1))
    assert.equal((await get<PaymentsPage>(`/sandbox/apps/${shop.app_id}/payments?direction=app_to_user`)).body.payments.length, 0)

    const byName = await allPages<PaymentsPage>(`/sandbox/apps/${shop.app_id}/payments?q=${payerNames[3]?.toUpperCase()}`, (p) =>
      p.payments.map((x) => x.user_id),
    )
    assert.equal(byName.length, PAYMENTS_EACH)
    assert.ok(byName.every((id) => id === userIds[3]))
    const byUserId = await get<PaymentsPage>(`/sandbox/apps/${shop.app_id}/payments?q=${userIds[4]}&limit=200`)
    assert.equal(byUserId.body.payments.length, PAYMENTS_EACH)
    const byId = await get<PaymentsPage>(`/sandbox/apps/${shop.app_id}/payments?q=${paymentIds[123]}`)
    assert.deepEqual(
      byId.body.payments.map((x) => x.identifier),
      [paymentIds[123]],
    )
    const byMemo = await allPages<PaymentsPage>(`/sandbox/apps/${shop.app_id}/payments?q=${encodeURIComponent('100%_OFF')}`, (p) =>
      p.payments.map((x) => x.memo),
    )
    assert.equal(byMemo.length, PAYERS)
    assert.ok(byMemo.every((m) => m.endsWith('100%_off')))
    assert.equal((await get<PaymentsPage>(`/sandbox/apps/${shop.app_id}/payments?q=${encodeURIComponent('%')}`)).body.payments.length, 50)

    // Another app sees none of them.
    assert.deepEqual((await get<PaymentsPage>(`/sandbox/apps/${other.app_id}/payments?q=${payerNames[3]}`)).body.payments, [])
    assert.deepEqual((await get<PaymentsPage>(`/sandbox/apps/${other.app_id}/payments?q=${paymentIds[0]}`)).body.payments, [])
    const foreign = await get(`/sandbox/apps/${other.app_id}/payments/${paymentIds[0]}`)
    assert.equal(foreign.status, 404)
  })

  it('refuses hostile cursors in the documented shape', async () => {
    const paymentsCursor = (await get<PaymentsPage>(`/sandbox/apps/${shop.app_id}/payments?limit=1`)).body.next_cursor ?? ''
    const usersCursor = (await get<UsersPage>(`/sandbox/users?q=${tag}&limit=1`)).body.next_cursor ?? ''
    const forged = (text: string) => Buffer.from(text).toString('base64url')
    const hostile = [
      'garbage',
      '-1',
      '9223372036854775808',
      forged(`payments|${shop.app_id}|9223372036854775808|abc`),
      forged(`payments|${shop.app_id}|-1|abc`),
      forged(`payments|${shop.app_id}|1|a b`),
      forged('payments'),
      '%00',
      'x'.repeat(201),
    ]
    const cases: Array<[string, string[]]> = [
      [`/sandbox/apps/${shop.app_id}/payments`, [...hostile, usersCursor]],
      // Another app's cursor.
      [`/sandbox/apps/${other.app_id}/payments`, [paymentsCursor]],
      ['/sandbox/users', [...hostile, paymentsCursor]],
      ['/sandbox/apps', [...hostile, usersCursor]],
    ]
    for (const [url, cursors] of cases) {
      for (const cursor of cursors) {
        const answer = await get(`${url}?before=${encodeURIComponent(cursor)}`)
        assert.equal(answer.status, 400, `${url} before=${cursor}`)
        assert.equal(answer.raw.error, 'invalid_arguments')
        assert.equal(typeof answer.raw.error_message, 'string')
      }
    }
  })

  it('pages apps with a cursor, and edits an app under the one rule for names and URLs', async () => {
    const sb = sandbox(platform.app)
    const created = await Promise.all(Array.from({ length: 7 }, () => sb.createApp()))
    const seen = await allPages<{ apps: Array<{ app_id: string }>; next_cursor: string | null }>('/sandbox/apps?limit=3', (p) =>
      p.apps.map((a) => a.app_id),
    )
    assert.equal(new Set(seen).size, seen.length)
    for (const app of [...created, shop, other]) assert.ok(seen.includes(app.app_id))

    const patch = (payload: unknown, appId = shop.app_id) =>
      platform.app.inject({ method: 'PATCH', url: `/sandbox/apps/${appId}`, payload: payload as Record<string, unknown> })
    const renamed = await patch({ name: 'Shop Two', url: 'http://127.0.0.1:3000/' })
    assert.equal(renamed.statusCode, 200, renamed.body)
    assert.equal(json(renamed).name, 'Shop Two')
    assert.equal(json(renamed).url, 'http://127.0.0.1:3000/')
    assert.equal(json(await platform.app.inject({ method: 'GET', url: `/sandbox/apps/${shop.app_id}` })).name, 'Shop Two')
    assert.equal(json(await patch({ url: null })).url, null)
    for (const [payload, words] of [
      [{ name: 'n'.repeat(61) }, /at most 60 characters/],
      [{ name: '   ' }, /empty/],
      [{ name: 'a\nb' }, /control characters/],
      [{ url: 'http://plinth.test/app/' }, /another origin/],
      [{ url: 'ftp://example.com/' }, /http/],
      [{}, /name, url or both/],
    ] as const) {
      const answer = await patch(payload)
      assert.equal(answer.statusCode, 400, JSON.stringify(payload))
      assert.equal(json(answer).error, 'invalid_arguments')
      assert.match(String(json(answer).error_message), words)
    }
    assert.equal((await patch({ name: 'x' }, 'app_nope')).statusCode, 404)
    // Creation applies the same rule.
    const create = await platform.app.inject({
      method: 'POST',
      url: '/sandbox/apps',
      payload: { name: 'Own', url: 'http://plinth.test:80/' },
    })
    assert.equal(create.statusCode, 400)
  })
})
