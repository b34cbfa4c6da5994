/**
 * The portal's caps and hand-overs under concurrent requests (docs/portal.md, "Apps and roles"):
 * 40 requests at once, spread over two server processes on one PostgreSQL schema (on PGlite, one
 * process). Each cap is counted in the transaction that adds, under the parent row's lock, so the
 * count never passes the cap and every refusal is the documented 409; two hand-overs of one app at
 * once leave exactly one owner, and the loser is 409 ownership_changed, never a 500.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { cookieOf, GOOD_PASSWORD, SESSION_COOKIE } from '../../helpers/accounts.js'
import { type Nodes, startNodes } from '../../helpers/nodes.js'
import { TEST_DB } from '../../helpers/platform.js'

const CONCURRENT = 40
const PROCESSES = TEST_DB === 'postgres' ? 2 : 1

interface Answer {
  status: number
  body: { error?: string; error_message?: string } & Record<string, unknown>
}

describe(`portal caps under ${CONCURRENT} concurrent requests on ${PROCESSES} process(es)`, () => {
  let cluster: Nodes
  let cookie = ''
  let ownerId = ''
  const suffix = randomBytes(3).toString('hex')

  const call = async (node: FastifyInstance, method: 'POST' | 'GET', url: string, payload?: unknown): Promise<Answer> => {
    const response = await node.inject({
      method,
      url,
      headers: { cookie: `${SESSION_COOKIE}=${cookie}`, 'content-type': 'application/json', 'sec-fetch-site': 'same-origin' },
      ...(payload === undefined ? {} : { payload: JSON.stringify(payload) }),
    })
    return { status: response.statusCode, body: JSON.parse(response.body) as Answer['body'] }
  }
  /** `count` requests at once, dealt round-robin over the processes. */
  const atOnce = (count: number, request: (node: FastifyInstance, i: number) => Promise<Answer>) =>
    Promise.all(Array.from({ length: count }, (_, i) => request(cluster.nodes[i % cluster.nodes.length] as FastifyInstance, i)))
  const count = async (text: string) => Number((await cluster.query<{ n: string }>(text))[0]?.n)

  /** Users made with SQL (developers without a password: members need no sign-in). */
  const insertDevelopers = async (prefix: string, n: number) => {
    const values = Array.from(
      { length: n },
      (_, i) =>
        `('usr_${prefix}_${suffix}_${i}', '${prefix}_${suffix}_${i}', '${prefix}_${suffix}_${i}', 'G${prefix}${suffix}${i}', 'x', now(), '{developer}')`,
    )
    await cluster.query(
      `insert into users (id, username, username_key, wallet_address, wallet_seed_enc, created_at, roles) values ${values.join(', ')}`,
    )
    return Array.from({ length: n }, (_, i) => ({ id: `usr_${prefix}_${suffix}_${i}`, username: `${prefix}_${suffix}_${i}` }))
  }
  /** An app row owned by `owner`, made with SQL: the caps and hand-overs read only the app and its members. */
  const insertApp = async (id: string, owner: string) => {
    await cluster.query(
      `insert into apps (id, name, network, wallet_address, created_at) values ('${id}', 'Made', 'Pi Testnet', 'G${id}', now())`,
    )
    await cluster.query(`insert into app_members (app_id, user_id, role) values ('${id}', '${owner}', 'owner')`)
  }
  const refusals = (answers: Answer[]) => answers.filter((a) => a.status !== 201 && a.status !== 200)

  before(async () => {
    cluster = await startNodes({
      processes: PROCESSES,
      env: { PLINTH_MODE: 'production', PLINTH_SIGNUPS_PER_ADDRESS_PER_HOUR: '100000' },
      platform: { mode: 'production' },
    })
    const node = cluster.nodes[0] as FastifyInstance
    const username = `caps_${suffix}`
    const signup = await node.inject({
      method: 'POST',
      url: '/account/signup',
      headers: { 'content-type': 'application/json', 'sec-fetch-site': 'same-origin' },
      payload: JSON.stringify({ username, password: GOOD_PASSWORD }),
    })
    assert.equal(signup.statusCode, 201, signup.body)
    cookie = cookieOf(signup.headers) ?? ''
    assert.notEqual(cookie, '')
    await cluster.query(`update users set roles = '{developer}' where username_key = '${username}'`)
    ownerId = String((await cluster.query<{ id: string }>(`select id from users where username_key = '${username}'`))[0]?.id)
  })
  after(() => cluster?.close())

  it(`keys: an app with 1 key gets ${CONCURRENT} key requests at once; exactly 20 are active, the rest 409 too_many_keys`, async () => {
    const created = await call(cluster.nodes[0] as FastifyInstance, 'POST', '/portal/apps', { name: 'Keys', url: 'https://keys.example' })
    assert.equal(created.status, 201, JSON.stringify(created.body))
    const appId = (created.body.app as { app_id: string }).app_id
    const answers = await atOnce(CONCURRENT, (node, i) => call(node, 'POST', `/portal/apps/${appId}/keys`, { name: `k${i}` }))
    const active = await count(`select count(*) as n from api_keys where app_id = '${appId}' and revoked_at is null`)
    assert.equal(active, 20, `active keys at cap 20: ${active}`)
    assert.equal(answers.filter((a) => a.status === 201).length, 19)
    assert.deepEqual(
      refusals(answers).map((a) => [a.status, a.body.error, typeof a.body.error_message]),
      Array(CONCURRENT - 19).fill([409, 'too_many_keys', 'string']),
    )
    // Audited once per key made, never for a refusal.
    assert.equal(await count(`select count(*) as n from audit_log where action = 'create-key' and target = '${appId}'`), 19)
  })

  it(`members: an app with 21 members gets ${CONCURRENT} additions at once; exactly 50 are members, the rest 409 too_many_members`, async () => {
    const appId = `app_members_${suffix}`
    await insertApp(appId, ownerId)
    const already = await insertDevelopers('m', 20)
    await cluster.query(
      `insert into app_members (app_id, user_id, role) values ${already.map((u) => `('${appId}', '${u.id}', 'member')`).join(', ')}`,
    )
    const joining = await insertDevelopers('j', CONCURRENT)
    const answers = await atOnce(CONCURRENT, (node, i) =>
      call(node, 'POST', `/portal/apps/${appId}/members`, { username: joining[i]?.username }),
    )
    const members = await count(`select count(*) as n from app_members where app_id = '${appId}'`)
    assert.equal(members, 50, `members at cap 50: ${members}`)
    assert.equal(answers.filter((a) => a.status === 201).length, 29)
    assert.deepEqual(
      refusals(answers).map((a) => [a.status, a.body.error]),
      Array(CONCURRENT - 29).fill([409, 'too_many_members']),
    )
  })

  it(`apps: a developer owning 30 apps registers ${CONCURRENT} at once; exactly 50 are owned, the rest 409 too_many_apps`, async () => {
    const owner = await count(`select count(*) as n from app_members where user_id = '${ownerId}' and role = 'owner'`)
    for (let i = owner; i < 30; i++) await insertApp(`app_owned_${suffix}_${i}`, ownerId)
    const answers = await atOnce(CONCURRENT, (node, i) =>
      call(node, 'POST', '/portal/apps', { name: `App ${i}`, url: `https://app${i}.example` }),
    )
    const owned = await count(`select count(*) as n from app_members where user_id = '${ownerId}' and role = 'owner'`)
    assert.equal(owned, 50, `apps owned at cap 50: ${owned}`)
    assert.equal(answers.filter((a) => a.status === 201).length, 20)
    assert.deepEqual(
      refusals(answers).map((a) => [a.status, a.body.error]),
      Array(CONCURRENT - 20).fill([409, 'too_many_apps']),
    )
    // A refused registration leaves nothing behind: no app without its owner, no audit record.
    assert.equal(await count(`select count(*) as n from apps a where not exists (select 1 from app_members m where m.app_id = a.id)`), 0)
    assert.equal(await count(`select count(*) as n from audit_log where action = 'register-app' and actor = 'user:${ownerId}'`), 21)
  })

  it('hand-overs: 4 at once of one app, over 5 rounds; exactly one wins, the others 409 ownership_changed (403 once it committed), never a 500', async () => {
    const members = await insertDevelopers('h', 4)
    for (let round = 0; round < 5; round++) {
      const appId = `app_handover_${suffix}_${round}`
      await insertApp(appId, ownerId)
      await cluster.query(
        `insert into app_members (app_id, user_id, role) values ${members.map((u) => `('${appId}', '${u.id}', 'member')`).join(', ')}`,
      )
      const answers = await atOnce(members.length, (node, i) =>
        call(node, 'POST', `/portal/apps/${appId}/owner`, { username: members[i]?.username }),
      )
      const won = answers.filter((a) => a.status === 200)
      assert.equal(won.length, 1, JSON.stringify(answers))
      // A loser checked inside the winner's transaction is 409; one checked after it committed finds the caller a member: 403.
      for (const refused of refusals(answers)) {
        assert.ok(
          (refused.status === 409 && refused.body.error === 'ownership_changed') ||
            (refused.status === 403 && refused.body.error === 'forbidden'),
          JSON.stringify(refused),
        )
      }
      const owners = await cluster.query<{ username: string }>(
        `select u.username from app_members m join users u on u.id = m.user_id where m.app_id = '${appId}' and m.role = 'owner'`,
      )
      assert.deepEqual(
        owners.map((o) => o.username),
        [won[0]?.body.owner],
      )
      assert.equal(await count(`select count(*) as n from app_members where app_id = '${appId}'`), members.length + 1, 'nobody lost')
      assert.equal(await count(`select count(*) as n from audit_log where action = 'transfer-app' and target = '${appId}'`), 1)
    }
  })

  it('a hand-over racing the owner’s key requests: no key is made by the former owner once the hand-over committed (5 rounds)', async () => {
    const [heir] = await insertDevelopers('k', 1)
    assert.ok(heir)
    for (let round = 0; round < 5; round++) {
      const appId = `app_keyrace_${suffix}_${round}`
      await insertApp(appId, ownerId)
      await cluster.query(`insert into app_members (app_id, user_id, role) values ('${appId}', '${heir.id}', 'member')`)
      const answers = await atOnce(11, (node, i) =>
        i === 5
          ? call(node, 'POST', `/portal/apps/${appId}/owner`, { username: heir.username })
          : call(node, 'POST', `/portal/apps/${appId}/keys`, { name: `r${round}k${i}` }),
      )
      assert.equal(answers[5]?.status, 200, JSON.stringify(answers[5]))
      for (const answer of answers) assert.ok([200, 201, 403].includes(answer.status), JSON.stringify(answer))
      // The audit log is appended in commit order (under its lock): every key the former owner made comes before the hand-over.
      const trail = await cluster.query<{ action: string }>(
        `select action from audit_log where target = '${appId}' and action in ('create-key', 'transfer-app') order by id`,
      )
      const made = answers.filter((a) => a.status === 201).length
      assert.deepEqual(
        trail.map((r) => r.action),
        [...Array(made).fill('create-key'), 'transfer-app'],
      )
      assert.equal(await count(`select count(*) as n from api_keys where app_id = '${appId}'`), made)
    }
  })
})
