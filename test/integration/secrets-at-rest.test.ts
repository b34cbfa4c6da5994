import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sha256Hex } from '../../src/lib/crypto.js'
import { seedDemo } from '../../src/sandbox/demo-seed.js'
import { dumpDatabase, sandbox, startPlatform, type TestPlatform } from '../helpers/platform.js'

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
