/**
 * Suspensions across three `src/server.ts` processes on one PostgreSQL schema (docs/operators.md,
 * "Suspending"): every process has the app's key and the user's token in its credential cache
 * when an operator suspends, on one of them; the process that suspended refuses at once, and
 * every process refuses one second after the answer (the cache's staleness bound,
 * src/identity/credential-cache.ts). A restore holds at once everywhere: refusals are not cached.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { GOOD_PASSWORD, SESSION_COOKIE } from '../../helpers/accounts.js'
import { TEST_DB } from '../../helpers/platform.js'
import { type BackendSetup, freePort, PlinthProcess, runPlinthCli, setUpBackend } from '../../helpers/server-process.js'

const PROCESSES = 3
const ROUNDS = 3
/** The credential cache's bound (maxStalenessMs) and a margin for the request itself. */
const WITHIN_MS = 1000 + 150

describe('suspensions across three production processes', { skip: TEST_DB !== 'postgres' && 'three processes need PostgreSQL' }, () => {
  let setup: BackendSetup
  const servers: PlinthProcess[] = []
  let shop: { app_id: string; api_key: string }
  let operatorCookie = ''
  let token = ''
  let username = ''

  const cli = async (args: string[], input = '') => {
    const result = await runPlinthCli(['admin', ...args, '--json'], { env: setup.env, input })
    assert.equal(result.code, 0, result.stderr)
    return JSON.parse(result.stdout) as Record<string, unknown>
  }
  const call = async (server: PlinthProcess, method: string, path: string, headers: Record<string, string>, body?: unknown) => {
    const response = await fetch(`${server.base}${path}`, {
      method,
      headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    const text = await response.text()
    return { status: response.status, body: (text === '' ? {} : JSON.parse(text)) as Record<string, unknown>, headers: response.headers }
  }
  const asOperator = (server: PlinthProcess, path: string, body: unknown) =>
    call(server, 'POST', path, { cookie: `${SESSION_COOKIE}=${operatorCookie}` }, body)
  /** What every process answers the key and the token now: [status of key, status of token] per process. */
  const everywhere = () =>
    Promise.all(
      servers.map(async (server) => [
        (await call(server, 'GET', '/v2/payments/incomplete_server_payments', { authorization: `Key ${shop.api_key}` })).status,
        (await call(server, 'GET', '/v2/me', { authorization: `Bearer ${token}` })).status,
      ]),
    )

  before(async () => {
    setup = await setUpBackend('postgres')
    await cli(['create-operator', 'olga'], `${GOOD_PASSWORD}\n`)
    await cli(['users', 'grant-developer', 'olga'])
    shop = (await cli(['apps', 'create', '--owner', 'olga', '--name', 'Shop', '--url', 'https://shop.example'])) as typeof shop
    const env = { ...setup.env, PLINTH_MODE: 'production', PLINTH_SIGNUPS_PER_ADDRESS_PER_HOUR: '100000' }
    for (let i = 0; i < PROCESSES; i++) servers.push(PlinthProcess.spawn(await freePort(), env))
    await Promise.all(servers.map((server) => server.waitReady(60_000)))
    const first = servers[0] as PlinthProcess
    const signin = await call(first, 'POST', '/account/signin', {}, { username: 'olga', password: GOOD_PASSWORD })
    operatorCookie = /plinth_session=([^;]+)/.exec(signin.headers.get('set-cookie') ?? '')?.[1] ?? ''
    username = `user_${process.pid}`
    const signup = await call(first, 'POST', '/account/signup', {}, { username, password: GOOD_PASSWORD })
    const cookie = /plinth_session=([^;]+)/.exec(signup.headers.get('set-cookie') ?? '')?.[1] ?? ''
    const consent = await call(
      first,
      'POST',
      `/account/apps/${shop.app_id}/authenticate`,
      { cookie: `${SESSION_COOKIE}=${cookie}` },
      { scopes: [] },
    )
    token = String(consent.body.accessToken)
    assert.ok(operatorCookie !== '' && token !== 'undefined')
  })

  after(async () => {
    await Promise.all(servers.map((server) => server.stop()))
    await setup?.cleanup()
  })

  it(`an app suspended on one process is refused on all ${PROCESSES} within a second; a restore holds at once (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      // Every process has both credentials cached (a hit is served without the database).
      assert.deepEqual(await everywhere(), Array(PROCESSES).fill([200, 200]))
      const by = servers[round % PROCESSES] as PlinthProcess
      const suspended = await asOperator(by, `/operator/apps/${shop.app_id}/suspend`, { reason: `round ${round}` })
      const answeredAt = Date.now()
      assert.deepEqual(suspended.body, { changed: true })
      const here = await call(by, 'GET', '/v2/payments/incomplete_server_payments', { authorization: `Key ${shop.api_key}` })
      assert.equal(here.status, 403, 'at once on the process that suspended')
      assert.equal(here.body.error, 'app_suspended')
      await sleep(Math.max(0, answeredAt + WITHIN_MS - Date.now()))
      assert.deepEqual(await everywhere(), Array(PROCESSES).fill([403, 403]))
      assert.deepEqual((await asOperator(by, `/operator/apps/${shop.app_id}/restore`, { reason: 'ok' })).body, { changed: true })
      assert.deepEqual(await everywhere(), Array(PROCESSES).fill([200, 200]))
    }
  })

  it(`a user suspended on one process: their token is refused on all ${PROCESSES} within a second, their sessions at once (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      assert.deepEqual(await everywhere(), Array(PROCESSES).fill([200, 200]))
      const by = servers[(round + 1) % PROCESSES] as PlinthProcess
      const signin = await call(
        servers[round % PROCESSES] as PlinthProcess,
        'POST',
        '/account/signin',
        {},
        { username, password: GOOD_PASSWORD },
      )
      const session = /plinth_session=([^;]+)/.exec(signin.headers.get('set-cookie') ?? '')?.[1] ?? ''
      assert.equal((await asOperator(by, `/operator/users/${username}/suspend`, { reason: `round ${round}` })).status, 200)
      const answeredAt = Date.now()
      for (const server of servers) {
        const account = await call(server, 'GET', '/account', { cookie: `${SESSION_COOKIE}=${session}` })
        assert.equal(account.status, 401, 'sessions end at the next request, everywhere')
      }
      await sleep(Math.max(0, answeredAt + WITHIN_MS - Date.now()))
      const statuses = await everywhere()
      assert.deepEqual(
        statuses.map(([, bearer]) => bearer),
        Array(PROCESSES).fill(403),
      )
      assert.equal((await asOperator(by, `/operator/users/${username}/restore`, { reason: 'ok' })).status, 200)
    }
    const trail = await runPlinthCli(['admin', 'audit', 'verify'], { env: setup.env })
    assert.equal(trail.code, 0, trail.stdout + trail.stderr)
  })
})
