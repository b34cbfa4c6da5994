/**
 * Production accounts across three `src/server.ts` processes on one PostgreSQL schema, set up by
 * the operator's commands (`plinth admin`, spawned as an operator runs it), driven with fetch:
 *
 * - sign-in throttling is exact: concurrent attempts spread over the processes, exactly the limit
 *   answered, every other one 429;
 * - sign-out everywhere holds on every process at the next request;
 * - an app holding a user's access token cannot move the user's money by any route;
 * - at trace level no process logs a password, a session token, an access token, a key or a seed.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { GOOD_PASSWORD, SESSION_COOKIE } from '../../helpers/accounts.js'
import { TEST_DB } from '../../helpers/platform.js'
import { type BackendSetup, freePort, PlinthProcess, runPlinthCli, setUpBackend } from '../../helpers/server-process.js'

const PROCESSES = 3
const ACCOUNT_LIMIT = 5
const ROUNDS = 4
const ATTEMPTS = 8 * PROCESSES

interface Answer {
  status: number
  body: Record<string, unknown>
  cookie: string | undefined
}

/** A client of one process, as fetch sends it: no browser headers, the session cookie it was given. */
function client(base: string, token?: string) {
  let session = token
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: {
        ...(method === 'GET' ? {} : { 'content-type': 'application/json' }),
        ...(session === undefined ? {} : { cookie: `${SESSION_COOKIE}=${session}` }),
        ...headers,
      },
      ...(method === 'GET' ? {} : { body: JSON.stringify(body ?? {}) }),
    })
    const set = response.headers.getSetCookie().find((line) => line.startsWith(`${SESSION_COOKIE}=`))
    const cookie = set?.slice(SESSION_COOKIE.length + 1).split(';', 1)[0]
    if (cookie !== undefined) session = cookie === '' ? undefined : cookie
    const text = await response.text()
    return { status: response.status, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>), cookie }
  }
  return {
    call,
    get session() {
      return session
    },
  }
}

describe('accounts across three production processes', { skip: TEST_DB !== 'postgres' && 'three processes need PostgreSQL' }, () => {
  let setup: BackendSetup
  const servers: PlinthProcess[] = []
  const logs: string[] = []
  /** Every secret the run saw: none may appear in a log line. */
  const secrets = new Set<string>()
  let shop: { app_id: string; api_key: string; wallet: { address: string; seed: string } }

  const admin = (args: string[], input = '') => runPlinthCli(['admin', ...args], { env: setup.env, input })
  const ok = async (args: string[], input = '') => {
    const result = await admin([...args, '--json'], input)
    assert.equal(result.code, 0, result.stderr)
    return JSON.parse(result.stdout) as Record<string, unknown>
  }
  const node = (i: number) => servers[i % PROCESSES] as PlinthProcess
  const signUp = async (username: string): Promise<ReturnType<typeof client>> => {
    const browser = client(node(0).base)
    const answer = await browser.call('POST', '/account/signup', { username, password: GOOD_PASSWORD })
    assert.equal(answer.status, 201, JSON.stringify(answer.body))
    secrets.add(browser.session as string)
    return browser
  }

  before(async () => {
    setup = await setUpBackend('postgres')
    secrets.add(GOOD_PASSWORD)
    // The operator's commands come first: they create and migrate the schema.
    await ok(['create-operator', 'shop_owner'], `${GOOD_PASSWORD}\n`)
    await ok(['users', 'grant-developer', 'shop_owner'])
    shop = (await ok(['apps', 'create', '--owner', 'shop_owner', '--name', 'Shop', '--url', 'https://shop.example'])) as typeof shop
    secrets.add(shop.api_key)
    secrets.add(shop.wallet.seed)
    const env = {
      ...setup.env,
      PLINTH_MODE: 'production',
      LOG_LEVEL: 'trace',
      PLINTH_SIGNIN_ATTEMPTS_PER_ACCOUNT: String(ACCOUNT_LIMIT),
      PLINTH_SIGNIN_ATTEMPTS_PER_ADDRESS: '100000',
      PLINTH_SIGNUPS_PER_ADDRESS_PER_HOUR: '100000',
    }
    for (let i = 0; i < PROCESSES; i++) {
      const server = PlinthProcess.spawn(await freePort(), env)
      logs.push('')
      server.child.stdout?.on('data', (chunk: Buffer) => {
        logs[i] += chunk.toString()
      })
      server.child.stderr?.on('data', (chunk: Buffer) => {
        logs[i] += chunk.toString()
      })
      servers.push(server)
    }
    await Promise.all(servers.map((server) => server.waitReady(60_000)))
  })

  after(async () => {
    await Promise.all(servers.map((server) => server.stop()))
    await setup?.cleanup()
  })

  it(`throttles sign-in exactly: ${ATTEMPTS} concurrent attempts over ${PROCESSES} processes, ${ACCOUNT_LIMIT} answered, the rest 429 (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const username = `thr_${round}_${process.pid}`
      await signUp(username)
      const answers = await Promise.all(
        Array.from({ length: ATTEMPTS }, (_, i) =>
          client(node(i).base).call('POST', '/account/signin', { username, password: `guess ${i}` }),
        ),
      )
      const statuses = answers.map((a) => a.status)
      assert.equal(statuses.filter((s) => s === 401).length, ACCOUNT_LIMIT, `round ${round}: ${statuses.join(' ')}`)
      assert.equal(statuses.filter((s) => s === 429).length, ATTEMPTS - ACCOUNT_LIMIT, `round ${round}: ${statuses.join(' ')}`)
      for (let i = 0; i < PROCESSES; i++) {
        const right = await client(node(i).base).call('POST', '/account/signin', { username, password: GOOD_PASSWORD })
        assert.equal(right.status, 429, 'the right password too, until the window passes')
      }
    }
  })

  it('sign-out everywhere holds on every process at the next request (3 rounds)', async () => {
    for (let round = 0; round < 3; round++) {
      const username = `out_${round}_${process.pid}`
      await signUp(username)
      const sessions: string[] = []
      for (let i = 0; i < PROCESSES; i++) {
        const browser = client(node(i).base)
        assert.equal((await browser.call('POST', '/account/signin', { username, password: GOOD_PASSWORD })).status, 200)
        sessions.push(browser.session as string)
        secrets.add(browser.session as string)
      }
      for (const token of sessions)
        for (let i = 0; i < PROCESSES; i++) assert.equal((await client(node(i).base, token).call('GET', '/account')).status, 200)
      const ended = await client(node(round + 1).base, sessions[round]).call('POST', '/account/signout-everywhere')
      assert.equal(ended.body.sessions_ended, PROCESSES + 1)
      const after = await Promise.all(
        sessions.flatMap((token) => servers.map((server) => client(server.base, token).call('GET', '/account'))),
      )
      assert.deepEqual(
        after.map((a) => a.status),
        Array(PROCESSES * PROCESSES).fill(401),
      )
    }
  })

  it("an app holding the user's access token cannot move the user's money by any route; the user pays in the account API", async () => {
    const user = await signUp(`payer_${process.pid}`)
    const issued = await ok(['wallets', 'issue', `payer_${process.pid}`, '25', '--reason', 'first money'])
    assert.equal(issued.balance, '25.0000000')
    const allowed = await user.call('POST', `/account/apps/${shop.app_id}/authenticate`, {
      scopes: ['username', 'payments', 'wallet_address'],
    })
    assert.equal(allowed.status, 200, JSON.stringify(allowed.body))
    const token = String(allowed.body.accessToken)
    secrets.add(token)
    const bearer = { authorization: `Bearer ${token}` }
    const backend = { authorization: `Key ${shop.api_key}` }
    const app = client(node(1).base)
    const startPayment = async (memo: string) => {
      const created = await app.call('POST', '/v2/client/payments', { amount: 2, memo, metadata: {} }, bearer)
      assert.equal(created.status, 201, JSON.stringify(created.body))
      const id = String(created.body.identifier)
      assert.equal((await app.call('POST', `/v2/payments/${id}/approve`, {}, backend)).status, 200)
      return id
    }

    // Every operation that is not a read, with the token, on every process, against an approved
    // payment: none pays. Three succeed and move nothing: the user's cancel, a sign-out without a
    // session (which ends nothing) and the options of a passkey sign-in (a challenge).
    const bait = await startPayment('bait')
    const document = (await (await fetch(`${node(0).base}/v2/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> }
    let tried = 0
    const succeeded = new Set<string>()
    for (const [path, operations] of Object.entries(document.paths)) {
      for (const method of Object.keys(operations)) {
        if (method === 'get' || method === 'head' || method === 'options') continue
        const url = path
          .replaceAll('{payment_id}', bait)
          .replaceAll('{app_id}', shop.app_id)
          .replace(/\{[^}]+\}/g, 'x')
        for (let i = 0; i < PROCESSES; i++) {
          const answer = await client(node(i).base).call(method.toUpperCase(), url, { paymentId: bait, txid: 'f'.repeat(64) }, bearer)
          if (answer.status < 300) succeeded.add(`${method.toUpperCase()} ${path}`)
          if (path === '/v2/client/payments/{payment_id}/submit') assert.equal(answer.body.error, 'user_confirmation_required')
          tried++
        }
      }
    }
    assert.ok(tried >= 10 * PROCESSES, `only ${tried} operations tried`)
    assert.deepEqual([...succeeded].sort(), [
      'POST /account/signin/passkey/options',
      'POST /account/signout',
      'POST /v2/client/payments/{payment_id}/cancel',
    ])
    const untouched = await client(node(2).base).call('GET', `/v2/payments/${bait}`, undefined, backend)
    assert.equal(untouched.body.transaction, null)
    assert.equal(((await user.call('GET', '/account')).body.wallet as { balance: string }).balance, '25.0000000')

    const id = await startPayment('a mug')
    const paid = await user.call('POST', `/account/payments/${id}/pay`)
    assert.equal(paid.status, 200, JSON.stringify(paid.body))
    const txid = (paid.body.transaction as { txid: string }).txid
    assert.equal((await app.call('POST', `/v2/payments/${id}/complete`, { txid }, backend)).status, 200)
    assert.equal(((await user.call('GET', '/account')).body.wallet as { balance: string }).balance, '22.9999900')
  })

  it('logs no password, session token, access token, server API key or wallet seed at trace level, on any process', async () => {
    const all = logs.join('\n')
    assert.ok(all.includes('"route":"/account/signin"'), 'the account requests are in the log')
    assert.ok(all.includes('"route":"/account/apps/:app_id/authenticate"'))
    for (const secret of secrets) assert.equal(all.includes(secret), false, `a log line holds a secret (${secret.slice(0, 4)}…)`)
  })
})
