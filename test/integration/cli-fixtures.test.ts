import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { Keypair } from '@stellar/stellar-base'
import { type RunningPlinth, startPlinth } from '../../src/index.js'
import { assertOneLine, runCli } from '../helpers/cli-process.js'
import { TEST_DB } from '../helpers/platform.js'

/**
 * `plinth trigger`, `plinth seed` and `plinth faults` (src/cli/plinth.ts, src/cli/trigger.ts),
 * spawned as a user runs them against one running platform with its demo app. Each fixture's
 * payment is read back through GET /v2/payments/{id} with the app's key. `plinth snapshot`'s
 * files are cli-snapshot-files.test.ts: that suite runs on both backends, this one in the first
 * pass only (scripts/test.mjs, CLI_SUITES).
 */
interface Payment {
  identifier: string
  amount: number
  direction: string
  status: {
    developer_approved: boolean
    transaction_verified: boolean
    developer_completed: boolean
    cancelled: boolean
    user_cancelled: boolean
  }
  transaction: { txid: string; verified: boolean } | null
}
interface Made {
  fixture: string
  payment_id?: string
  user_id: string
  username: string
  uid?: string
  txid?: string
  balance?: string
  notification_id?: string
  wallet_seed?: string
}

describe(`plinth trigger, seed and faults (${TEST_DB})`, () => {
  let plinth: RunningPlinth
  let demoKey: string
  let demoAppId: string
  const adminToken = 'cli-fixtures-admin-token-0123456789'
  const dir = mkdtempSync(join(tmpdir(), 'plinth-cli-fixtures-'))
  before(async () => {
    plinth = await startPlinth({
      adminToken,
      seed: 'demo',
      ...(TEST_DB === 'postgres' ? { databaseUrl: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test' } : {}),
    })
    demoAppId = (await plinth.sandbox.demo()).app_id
    demoKey = (await plinth.sandbox.keys.create(demoAppId)).api_key
  })
  after(async () => {
    rmSync(dir, { recursive: true, force: true })
    await plinth.stop()
  })

  const cli = (...args: string[]) => runCli(['--url', plinth.url, '--admin-token', adminToken, ...args])
  const read = async (id: string, key = demoKey): Promise<Payment> => {
    const response = await fetch(`${plinth.url}/v2/payments/${id}`, { headers: { authorization: `Key ${key}` } })
    assert.equal(response.status, 200)
    return (await response.json()) as Payment
  }
  const made = async (...args: string[]): Promise<{ made: Made[]; note?: string }> => {
    const run = await cli(...args, '--json')
    assert.equal(run.code, 0, run.stderr)
    return JSON.parse(run.stdout) as { made: Made[]; note?: string }
  }
  const balance = async (userId: string): Promise<string> => {
    const user = await plinth.sandbox.call<{ wallet_address: string }>('GET', `/sandbox/users/${userId}`)
    const account = (await (await fetch(`${plinth.url}/ledger/accounts/${user.wallet_address}`)).json()) as {
      balances: Array<{ asset_type: string; balance: string }>
    }
    return account.balances.find((b) => b.asset_type === 'native')?.balance ?? ''
  }

  it('trigger: each U2A state of the demo app, as the API reads it back', async () => {
    const approved = (await made('trigger', 'approved')).made[0]
    assert.ok(approved?.payment_id)
    const a = await read(approved.payment_id)
    assert.deepEqual(a.status, {
      developer_approved: true,
      transaction_verified: false,
      developer_completed: false,
      cancelled: false,
      user_cancelled: false,
    })
    assert.equal(a.transaction, null)

    const paid = (await made('trigger', 'paid-not-completed')).made[0]
    const p = await read(paid?.payment_id ?? '')
    assert.equal(p.status.developer_approved, true)
    assert.equal(p.status.transaction_verified, true)
    assert.equal(p.status.developer_completed, false)
    assert.equal(p.transaction?.txid, paid?.txid)
    // The incomplete payment is the one the app's incomplete list shows for that user.
    const incomplete = await fetch(`${plinth.url}/v2/payments/incomplete_server_payments`, { headers: { authorization: `Key ${demoKey}` } })
    assert.equal(incomplete.status, 200)

    const completed = (await made('trigger', 'completed')).made[0]
    const c = await read(completed?.payment_id ?? '')
    assert.equal(c.status.developer_completed, true)
    assert.equal(c.status.transaction_verified, true)

    const cancelled = (await made('trigger', 'cancelled-by-user')).made[0]
    const u = await read(cancelled?.payment_id ?? '')
    assert.equal(u.status.user_cancelled, true)
    assert.equal(u.status.developer_approved, false)

    const created = (await made('trigger', 'created')).made[0]
    assert.deepEqual(Object.values((await read(created?.payment_id ?? '')).status), [false, false, false, false, false])

    // Readable output: a line per fixture, the payment id in it; --count makes that many, each its own user.
    const three = await cli('trigger', 'approved', '--count', '3')
    assert.equal(three.code, 0, three.stderr)
    const ids = [...three.stdout.matchAll(/payment (\S+)/g)].map((m) => m[1] ?? '')
    assert.equal(new Set(ids).size, 3)
    for (const id of ids) assert.equal((await read(id)).status.developer_approved, true)
    assert.match(three.stdout, /--json has the wallet seed of each new user/)
    // Each run's key is revoked when it ends: the demo app keeps its first key and the test's.
    const keys = await plinth.sandbox.call<{ keys: Array<{ revoked_at: string | null }> }>('GET', `/sandbox/apps/${demoAppId}`)
    assert.equal(keys.keys.filter((k) => k.revoked_at === null).length, 2)
    assert.ok(keys.keys.length >= 8)
  })

  it('trigger a2u-submitted on the demo app needs no --app-seed: GET /sandbox/demo answers its wallet seed (docs/testing.md)', async () => {
    const demo = await plinth.sandbox.demo()
    const wallet = await plinth.sandbox.call<{ wallet_address: string }>('GET', `/sandbox/apps/${demo.app_id}`)
    assert.ok(demo.app_wallet_seed !== null, 'the demo keeps its seed')
    assert.equal(Keypair.fromSecret(demo.app_wallet_seed).publicKey(), wallet.wallet_address, "the seed is the demo app wallet's")
    const a2u = (await made('trigger', 'a2u-submitted', '--amount', '1.5')).made[0]
    const sent = await read(a2u?.payment_id ?? '')
    assert.equal(sent.direction, 'app_to_user')
    assert.equal(sent.status.transaction_verified, true)
    assert.equal(sent.transaction?.txid, a2u?.txid)
  })

  it('trigger: a2u-submitted (with the app’s wallet seed), user-with-balance, notification, expired', async () => {
    const app = await cli('apps', 'create', 'Fixture Shop', '--json')
    assert.equal(app.code, 0, app.stderr)
    const shop = JSON.parse(app.stdout) as { app_id: string; api_key: string; wallet: { seed: string } }
    const noSeed = await cli('trigger', 'a2u-submitted', '--app', shop.app_id)
    assert.equal(noSeed.code, 2)
    assertOneLine(noSeed.stderr, /--app-seed/)
    const a2u = (await made('trigger', 'a2u-submitted', '--app', shop.app_id, '--app-seed', shop.wallet.seed, '--amount', '2.5')).made[0]
    const sent = await read(a2u?.payment_id ?? '', shop.api_key)
    assert.equal(sent.direction, 'app_to_user')
    assert.equal(sent.amount, 2.5)
    assert.equal(sent.status.transaction_verified, true)
    assert.equal(sent.status.developer_completed, false)
    assert.equal(sent.transaction?.txid, a2u?.txid)

    const rich = (await made('trigger', 'user-with-balance', '--balance', '12345.5')).made[0]
    assert.equal(rich?.balance, '12345.5000000')
    assert.equal(await balance(rich?.user_id ?? ''), '12345.5000000')
    const poor = (await made('trigger', 'user-with-balance', '--balance', '3')).made[0]
    assert.equal(await balance(poor?.user_id ?? ''), '3.0000000')

    const notice = (await made('trigger', 'notification', '--app', shop.app_id)).made[0]
    const listed = await plinth.sandbox.call<{ notifications: Array<{ id: string; app_id: string }> }>(
      'GET',
      `/sandbox/users/${notice?.user_id}/notifications`,
    )
    assert.deepEqual(
      listed.notifications.map((n) => [n.id, n.app_id]),
      [[notice?.notification_id, shop.app_id]],
    )

    const expired = await made('trigger', 'expired', '--count', '2')
    assert.equal(expired.made.length, 2)
    assert.match(expired.note ?? '', /clock moved \d+ s ahead/)
    for (const m of expired.made) {
      const e = await read(m.payment_id ?? '')
      assert.equal(e.status.cancelled, true, 'the platform cancelled it: its approval window passed')
      assert.equal(e.status.user_cancelled, false)
      assert.equal(e.status.developer_approved, false)
    }
    await plinth.sandbox.clock.reset()

    const usage = [
      ['trigger', 'frobnicated'],
      ['trigger', 'approved', '--count', '1001'],
      ['trigger', 'approved', '--count', 'many'],
      ['trigger', 'approved', '--amount', '-1'],
      ['trigger', 'approved', '--user', 'demo_pioneer', '--count', '2'],
      ['trigger'],
    ]
    // Independent of each other: run together.
    for (const [i, bad] of (await Promise.all(usage.map((args) => cli(...args)))).entries()) {
      assert.equal(bad.code, 2, `${usage[i]?.join(' ')}: ${bad.stderr}`)
      assertOneLine(bad.stderr, /^plinth: /)
    }
    const noApp = await cli('trigger', 'approved', '--app', 'app_doesnotexist')
    assert.equal(noApp.code, 1)
    assertOneLine(noApp.stderr, /app_not_found/)
  })

  it('seed: a file of users with balances, payments in states and notifications; a bad file is refused whole', async () => {
    const file = join(dir, 'fixtures.json')
    writeFileSync(
      file,
      JSON.stringify({
        users: [{ username: 'seed_alice', balance: '250' }, { username: 'seed_bob' }],
        payments: [
          { user: 'seed_alice', state: 'approved', amount: 3.5, memo: 'A hat', metadata: { sku: 'hat' } },
          { user: 'seed_bob', state: 'paid-not-completed', amount: '1.25' },
          { user: 'seed_alice', state: 'completed' },
          { user: 'seed_bob', state: 'cancelled-by-user' },
          { user: 'seed_alice', state: 'expired' },
        ],
        notifications: [{ user: 'seed_bob', title: 'Welcome', body: 'Hi Bob', subroute: '/inbox' }],
      }),
    )
    const seeded = await made('seed', file)
    const byState = (state: string) => seeded.made.find((m) => m.fixture === state)
    const alice = seeded.made.find((m) => m.username === 'seed_alice' && m.fixture === 'user')
    assert.equal(alice?.balance, '250.0000000')
    assert.ok(alice?.wallet_seed?.startsWith('S'))
    const approved = await read(byState('approved')?.payment_id ?? '')
    assert.equal(approved.status.developer_approved, true)
    assert.equal(approved.status.cancelled, false, 'the clock moved for the expired one before the open ones were made')
    assert.equal((await read(byState('paid-not-completed')?.payment_id ?? '')).status.transaction_verified, true)
    assert.equal((await read(byState('completed')?.payment_id ?? '')).status.developer_completed, true)
    assert.equal((await read(byState('cancelled-by-user')?.payment_id ?? '')).status.user_cancelled, true)
    assert.equal((await read(byState('expired')?.payment_id ?? '')).status.cancelled, true)
    assert.ok(byState('notification')?.notification_id)
    await plinth.sandbox.clock.reset()

    const cases: Array<[unknown, RegExp]> = [
      [{ users: [{ username: 'seed_x' }], payments: [{ user: 'seed_x', state: 'paid' }] }, /payments\[0\]\.state: one of created/],
      [{ users: [{ username: 'seed_x' }], payments: [{ user: 'nobody', state: 'approved' }] }, /payments\[0\]\.user: "nobody" is not one/],
      [
        {
          users: [{ username: 'seed_x' }],
          payments: [
            { user: 'seed_x', state: 'approved' },
            { user: 'seed_x', state: 'created' },
          ],
        },
        /payments\[1\]: seed_x has another open U2A payment/,
      ],
      [{ users: [{ username: 'x' }] }, /users\[0\]\.username: 3 to 32/],
      [{ users: [{ username: 'seed_x', balance: 'lots' }] }, /users\[0\]\.balance/],
      [{ users: [], extra: 1 }, /unknown field "extra"/],
      [[1, 2], /must hold a JSON object/],
      [{ users: [{ username: 'seed_x' }], payments: [{ user: 'seed_x', state: 'a2u-submitted' }] }, /needs "app_seed"/],
    ]
    const runs = await Promise.all(
      cases.map(([content], i) => {
        const path = join(dir, `bad-seed-${i}.json`)
        writeFileSync(path, JSON.stringify(content))
        return cli('seed', path)
      }),
    )
    for (const [i, bad] of runs.entries()) {
      assert.equal(bad.code, 2, `${JSON.stringify(cases[i]?.[0])}: ${bad.stderr}`)
      assertOneLine(bad.stderr, cases[i]?.[1] ?? /./)
    }
    writeFileSync(file, '{ not json')
    const notJson = await cli('seed', file)
    assert.equal(notJson.code, 2)
    assertOneLine(notJson.stderr, /is not JSON/)
    const missing = await cli('seed', join(dir, 'absent.json'))
    assert.equal(missing.code, 2)
    assertOneLine(missing.stderr, /cannot read .*ENOENT/)
    assert.deepEqual((await plinth.sandbox.users.find('seed_x')).users, [], 'nothing of a refused file was made')
  })

  it('faults add|list|delete|clear with every field the API takes; list shows probability', async () => {
    const add = await cli(
      'faults',
      'add',
      '--app',
      demoAppId,
      '--operation',
      'approvePayment',
      '--status',
      '503',
      '--retry-after',
      '7',
      '--when',
      'after',
      '--times',
      '2',
      '--probability',
      '0.5',
      '--json',
    )
    assert.equal(add.code, 0, add.stderr)
    const fault = JSON.parse(add.stdout) as {
      id: string
      match: unknown
      effect: unknown
      when: string
      times_left: number
      probability: number
    }
    assert.deepEqual(
      { match: fault.match, effect: fault.effect, when: fault.when, times_left: fault.times_left, probability: fault.probability },
      {
        match: { operation_id: 'approvePayment' },
        effect: { status: 503, retry_after_seconds: 7 },
        when: 'after',
        times_left: 2,
        probability: 0.5,
      },
    )
    const uid = (await made('trigger', 'created')).made[0]?.uid ?? ''
    const routed = await cli(
      'faults',
      'add',
      '--app',
      demoAppId,
      '--route',
      'GET /v2/payments/{payment_id}',
      '--user-uid',
      uid,
      '--delay-ms',
      '10',
    )
    assert.equal(routed.code, 0, routed.stderr)
    assert.match(
      routed.stdout,
      /GET \/v2\/payments\/:payment_id, user \S+ {2}delay 10 ms {2}when before {2}times_left unlimited {2}probability 1/,
    )
    assert.equal((await cli('faults', 'add', '--app', demoAppId, '--drop', '--times', '1')).code, 0)

    const list = await cli('faults', 'list', '--app', demoAppId)
    assert.equal(list.code, 0, list.stderr)
    assert.match(
      list.stdout,
      new RegExp(
        `${fault.id} {2}app ${demoAppId} {2}operation approvePayment {2}status 503 \\(Retry-After 7\\) {2}when after {2}times_left 2 {2}probability 0\\.5`,
      ),
    )
    assert.match(list.stdout, /drop {2}when before {2}times_left 1/)

    const deleted = await cli('faults', 'delete', fault.id)
    assert.equal(deleted.code, 0, deleted.stderr)
    assert.equal((await plinth.sandbox.faults.list(demoAppId)).faults.length, 2)
    const cleared = await cli('faults', 'clear', '--app', demoAppId)
    assert.equal(cleared.code, 0, cleared.stderr)
    assert.deepEqual((await plinth.sandbox.faults.list(demoAppId)).faults, [])
    assert.match((await cli('faults', 'list')).stdout, /\(no faults\)/)

    const usage = [
      ['faults', 'add', '--app', demoAppId],
      ['faults', 'add', '--app', demoAppId, '--status', '500', '--drop'],
      ['faults', 'add', '--app', demoAppId, '--status', 'bad'],
      ['faults', 'add', '--app', demoAppId, '--delay-ms', '5', '--retry-after', '3'],
      ['faults', 'add', '--app', demoAppId, '--drop', '--when', 'later'],
      ['faults', 'add', '--app', demoAppId, '--drop', '--probability', 'often'],
      ['faults', 'add', '--drop'],
    ]
    for (const [i, bad] of (await Promise.all(usage.map((args) => cli(...args)))).entries()) {
      assert.equal(bad.code, 2, `${usage[i]?.join(' ')}: ${bad.stderr}`)
      assertOneLine(bad.stderr, /^plinth: /)
    }
    // Ranges are the platform's: its refusal, exit 1.
    const refused = await cli('faults', 'add', '--app', demoAppId, '--drop', '--probability', '2')
    assert.equal(refused.code, 1)
    assertOneLine(refused.stderr, /invalid_arguments, 400/)
    const unknown = await cli('faults', 'delete', 'flt_nothere')
    assert.equal(unknown.code, 1)
    assertOneLine(unknown.stderr, /fault_not_found/)
  })
})
