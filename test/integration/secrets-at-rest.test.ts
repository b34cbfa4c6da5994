import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { after, before, describe, it } from 'node:test'
import { promisify } from 'node:util'
import { Keypair } from '@stellar/stellar-base'
import type { InjectOptions } from 'fastify'
import { sha256Hex } from '../../src/lib/crypto.js'
import { seedDemo } from '../../src/sandbox/world/demo-seed.js'
import { pay } from '../helpers/ledger.js'
import { dumpDatabase, SANDBOX_CLIENT, sandbox, startPlatform, TEST_DB, type TestPlatform } from '../helpers/platform.js'
import { storedForms } from '../helpers/secret-forms.js'

describe('secrets at rest', () => {
  let platform: TestPlatform
  before(async () => {
    platform = await startPlatform()
  })
  after(() => platform.close())

  it('a dump of the database holds no key, token or wallet seed that was handed out', async () => {
    const sb = sandbox(platform.app)
    const handedOut: string[] = []
    const hashes: string[] = []
    for (let i = 0; i < 3; i++) {
      const app = await sb.createApp()
      const extra = await sb.createKey(app.app_id)
      handedOut.push(app.api_key, extra.api_key, app.wallet.seed)
      hashes.push(sha256Hex(app.api_key))
      const user = await sb.createUser()
      handedOut.push(user.wallet.seed)
      const auth = await sb.authenticate(app.app_id, user.user_id)
      handedOut.push(auth.accessToken)
      hashes.push(sha256Hex(auth.accessToken))
    }
    const demo = await seedDemo(platform.db, { clock: platform.clock, secretKey: platform.secretKey })
    assert.ok(demo.apiKey)
    handedOut.push(demo.apiKey)

    const dump = await dumpDatabase(platform.db)
    for (const hash of hashes) assert.ok(dump.includes(hash), 'the dump is real: it holds the hashes')
    for (const secret of handedOut) {
      assert.equal(dump.includes(secret), false, `the dump holds a secret that was handed out (${secret.slice(0, 4)}…)`)
      // Nor a large piece of one (a key kept in clear except for a few characters would be usable too).
      assert.equal(dump.includes(secret.slice(0, 20)), false)
    }
  })
})

describe('secrets at rest after whole flows', () => {
  const adminToken = 'secrets-at-rest-admin-token-42'
  const logLines: string[] = []
  let platform: TestPlatform
  before(async () => {
    platform = await startPlatform({ adminToken, logStream: { write: (line) => logLines.push(line) } })
  })
  after(() => platform.close())

  it('a dump (and pg_dump, and the log) holds no key, token, seed or the platform secret after apps, rotations, users, payments, ads and notifications', async (t) => {
    const admin = { 'x-admin-token': adminToken }
    const sb = sandbox(platform.app, admin)
    const call = async (options: InjectOptions, status: number) => {
      const response = await platform.app.inject(options)
      assert.equal(response.statusCode, status, `${options.method} ${String(options.url)}: ${response.body}`)
      return response.json() as Record<string, unknown>
    }
    const keys: string[] = []
    const tokens: string[] = []
    const seeds: string[] = []
    const scopes = ['username', 'payments', 'wallet_address', 'in_app_notifications']

    for (const network of ['Pi Testnet', 'Pi Network']) {
      const app = await sb.createApp(undefined, network)
      seeds.push(app.wallet.seed)
      keys.push(app.api_key)
      // Rotation: a second key, the first revoked, a third.
      const second = await sb.createKey(app.app_id)
      await sb.revokeKey(app.app_id, app.key_id)
      const third = await sb.createKey(app.app_id)
      keys.push(second.api_key, third.api_key)
      const key = { authorization: `Key ${third.api_key}` }
      await call(
        { method: 'GET', url: '/v2/payments/incomplete_server_payments', headers: { authorization: `Key ${second.api_key}` } },
        200,
      )

      const user = await sb.createUser()
      seeds.push(user.wallet.seed)
      const auth = await sb.authenticate(app.app_id, user.user_id, scopes)
      const bearer = { authorization: `Bearer ${auth.accessToken}` }
      tokens.push(auth.accessToken)
      await call({ method: 'GET', url: '/v2/me', headers: bearer }, 200)
      // Tokens revoked, expired and cut by a consent withdrawal are secrets too.
      const revoked = await sb.authenticate(app.app_id, user.user_id, ['username'])
      await sb.revokeToken(revoked.accessToken)
      const short = await sb.authenticate(app.app_id, user.user_id, ['username'], 1)
      tokens.push(revoked.accessToken, short.accessToken)
      const other = await sb.createUser()
      seeds.push(other.wallet.seed)
      const withdrawn = await sb.authenticate(app.app_id, other.user_id, scopes)
      tokens.push(withdrawn.accessToken)
      await call(
        { method: 'DELETE', url: `/sandbox/apps/${app.app_id}/users/${other.user_id}/consent`, headers: { ...admin, ...SANDBOX_CLIENT } },
        200,
      )

      // A2U: the app signs with its own seed; U2A: the platform signs with the user's sealed seed.
      const a2u = await call(
        {
          method: 'POST',
          url: '/v2/payments',
          headers: key,
          payload: { payment: { amount: 1.5, memo: 'A2U', metadata: {}, uid: auth.user.uid } },
        },
        200,
      )
      const txid = await pay(platform.app, {
        seed: app.wallet.seed,
        to: user.wallet.address,
        amount: '1.5',
        memo: String(a2u.identifier),
        network,
      })
      await call({ method: 'POST', url: `/v2/payments/${String(a2u.identifier)}/complete`, headers: key, payload: { txid } }, 200)
      const u2a = await call(
        { method: 'POST', url: '/v2/client/payments', headers: bearer, payload: { amount: 2, memo: 'U2A', metadata: {} } },
        201,
      )
      const id = String(u2a.identifier)
      await call({ method: 'POST', url: `/v2/payments/${id}/approve`, headers: key }, 200)
      const paid = await call({ method: 'POST', url: `/v2/client/payments/${id}/submit`, headers: bearer }, 200)
      const u2aTxid = (paid.transaction as { txid: string }).txid
      await call({ method: 'POST', url: `/v2/payments/${id}/complete`, headers: key, payload: { txid: u2aTxid } }, 200)

      // Ads and notifications.
      const shown = await call({ method: 'POST', url: '/v2/client/ads/rewarded/show', headers: bearer, payload: {} }, 200)
      await call({ method: 'GET', url: `/v2/ads_network/status/${String(shown.adId)}`, headers: key }, 200)
      const sent = await call(
        {
          method: 'POST',
          url: '/v2/in_app_notifications/notify',
          headers: key,
          payload: { notifications: [{ title: 'Hi', body: 'there', user_uid: auth.user.uid, subroute: '/' }] },
        },
        201,
      )
      const [note] = sent.delivered_notifications as Array<{ id: string }>
      await call({ method: 'POST', url: `/v2/client/notifications/${note?.id ?? ''}/seen`, headers: bearer }, 200)
      await call({ method: 'GET', url: '/v2/client/notifications', headers: bearer }, 200)
    }
    await sb.advanceClock(5)
    const demo = await seedDemo(platform.db, { clock: platform.clock, secretKey: platform.secretKey })
    assert.ok(demo.apiKey)
    keys.push(demo.apiKey)

    const secrets = [...keys, ...tokens, ...seeds, adminToken, platform.secretKey.toString('hex'), platform.secretKey.toString('base64')]
    const dumps: Array<[string, string]> = [['the database', await dumpDatabase(platform.db)]]
    // The dump is real: it holds what is meant to be there.
    for (const secret of [...keys, ...tokens])
      assert.ok(dumps[0]?.[1].includes(sha256Hex(secret)), 'the hash of each key and token is stored')
    for (const seed of seeds) assert.ok(dumps[0]?.[1].includes(Keypair.fromSecret(seed).publicKey()), 'each wallet address is stored')

    if (TEST_DB === 'postgres' && platform.schema !== undefined) {
      try {
        const { stdout } = await promisify(execFile)('pg_dump', ['--schema', platform.schema, process.env.DATABASE_URL ?? ''], {
          maxBuffer: 256 * 1024 * 1024,
        })
        assert.ok(stdout.includes(sha256Hex(keys[0] ?? '')), 'pg_dump dumped the data')
        dumps.push(['pg_dump', stdout])
      } catch (error) {
        if ((error as { code?: unknown }).code !== 'ENOENT') throw error
        t.diagnostic('pg_dump is not installed: only the SQL dump was searched')
      }
    }
    dumps.push(['the log', logLines.join('')])
    assert.ok(logLines.length > 20, 'the log is real')

    for (const [where, text] of dumps) {
      for (const secret of secrets) {
        for (const form of storedForms(secret)) {
          assert.equal(text.includes(form), false, `${where} holds a secret that was handed out (${secret.slice(0, 4)}…)`)
        }
      }
    }
  })
})

describe('demo seed', () => {
  let platform: TestPlatform
  before(async () => {
    platform = await startPlatform()
  })
  after(() => platform.close())

  it('creates the demo app and user once, all or nothing, and shows the key only then', async () => {
    const deps = { clock: platform.clock, secretKey: platform.secretKey }
    const [a, b] = await Promise.all([seedDemo(platform.db, deps), seedDemo(platform.db, deps)])
    const first = a?.apiKey === undefined ? b : a
    const other = first === a ? b : a
    assert.ok(first?.apiKey, 'one of two concurrent first starts created the demo')
    assert.equal(other?.apiKey, undefined)
    const later = await seedDemo(platform.db, deps)
    assert.equal(later.apiKey, undefined)
    assert.equal(later.appId, first.appId)
    assert.equal(later.userId, first.userId)
    assert.equal(later.username, 'demo_pioneer')
    const apps = await platform.db.selectFrom('apps').select('id').where('name', '=', 'Plinth Demo').execute()
    assert.equal(apps.length, 1)

    // The demo key and user work like any others.
    const sb = sandbox(platform.app)
    const { accessToken } = await sb.authenticate(first.appId, first.userId, ['username'])
    const me = await platform.app.inject({ method: 'GET', url: '/v2/me', headers: { authorization: `Bearer ${accessToken}` } })
    assert.equal(me.json().username, 'demo_pioneer')
  })
})
