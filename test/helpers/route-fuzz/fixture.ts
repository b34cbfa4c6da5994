import assert from 'node:assert/strict'
import type { InjectOptions } from 'fastify'
import { SCOPES } from '../../../src/core/scopes.js'
import { pay } from '../ledger.js'
import { type SandboxApp, type SandboxUser, sandbox, type TestPlatform } from '../platform.js'

/**
 * The route fuzzers' fixture: two apps with real ids, users, working and broken credentials, and
 * pools of ids (payments, ads, notifications, accounts, cursors…) that grow with what the
 * fuzzer creates and feed later path parameters and body fields.
 */

/** A value the fuzzer picks from the fixture's pools at run time (pools grow as the fuzzer creates things). */
export class PoolRef {
  constructor(
    readonly pool: string,
    readonly n: number,
  ) {}
}

export type Pools = Record<string, string[]>

/** Pools that hold JSON text, sent as that JSON (a snapshot file's parts), not as a string. */
export const JSON_POOLS = new Set(['plinth_snapshot', 'sequences', 'tables'])

export interface Fixture {
  platform: TestPlatform
  sb: ReturnType<typeof sandbox>
  adminToken: string | undefined
  apps: [SandboxApp, SandboxApp]
  users: { main: SandboxUser; other: SandboxUser; victim: SandboxUser }
  credentials: Record<'key' | 'otherKey' | 'revokedKey' | 'token' | 'otherToken' | 'noScopeToken' | 'expiredToken' | 'revokedToken', string>
  pools: Pools
}

const MAX_POOL = 40
function addTo(pools: Pools, name: string, value: unknown): void {
  if (typeof value !== 'string' || value === '') return
  const pool = pools[name] ?? []
  pools[name] = pool
  if (pool.includes(value)) return
  pool.push(value)
  if (pool.length > MAX_POOL) pool.splice(4, 1)
}

export async function seed(platform: TestPlatform, adminToken?: string): Promise<Fixture> {
  const headers: Record<string, string> = adminToken === undefined ? {} : { 'x-admin-token': adminToken }
  const sb = sandbox(platform.app, headers)
  const appA = await sb.createApp()
  const appB = await sb.createApp(undefined, 'Pi Network')
  const main = await sb.createUser()
  const other = await sb.createUser()
  const victim = await sb.createUser()
  const all = [...SCOPES]
  const monthS = 30 * 86_400
  const tokenA = await sb.authenticate(appA.app_id, main.user_id, all, monthS)
  const tokenB = await sb.authenticate(appB.app_id, main.user_id, all, monthS)
  const noScope = await sb.authenticate(appA.app_id, other.user_id, [], monthS)
  const victimA = await sb.authenticate(appA.app_id, victim.user_id, all, monthS)
  const victimB = await sb.authenticate(appB.app_id, victim.user_id, all, monthS)
  const expired = await sb.authenticate(appA.app_id, other.user_id, ['payments'], 1)
  const revokedToken = await sb.authenticate(appA.app_id, main.user_id, all, monthS)
  await sb.revokeToken(revokedToken.accessToken)
  const revokedKey = await sb.createKey(appA.app_id)
  await sb.revokeKey(appA.app_id, revokedKey.key_id)
  const spareKeyA = await sb.createKey(appA.app_id)
  const spareKeyB = await sb.createKey(appB.app_id)
  await sb.advanceClock(2)

  const inject = async (options: InjectOptions, expected: number) => {
    const response = await platform.app.inject(options)
    assert.equal(response.statusCode, expected, `${options.method} ${options.url}: ${response.body}`)
    return response.json() as Record<string, unknown>
  }
  const key = (app: SandboxApp) => ({ authorization: `Key ${app.api_key}` })
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
  const u2a = await inject(
    {
      method: 'POST',
      url: '/v2/client/payments',
      headers: bearer(tokenA.accessToken),
      payload: { amount: 1.5, memo: 'fuzz', metadata: {} },
    },
    201,
  )
  const a2u = await inject(
    {
      method: 'POST',
      url: '/v2/payments',
      headers: key(appA),
      payload: { payment: { amount: 2, memo: 'fuzz', metadata: { a: 1 }, uid: tokenA.user.uid } },
    },
    200,
  )
  const a2uB = await inject(
    {
      method: 'POST',
      url: '/v2/payments',
      headers: key(appB),
      payload: { payment: { amount: 3, memo: 'b', metadata: {}, uid: tokenB.user.uid } },
    },
    200,
  )
  const adA = await inject({ method: 'POST', url: '/v2/client/ads/rewarded/show', headers: bearer(tokenA.accessToken), payload: {} }, 200)
  const adB = await inject({ method: 'POST', url: '/v2/client/ads/rewarded/show', headers: bearer(tokenB.accessToken), payload: {} }, 200)
  const notify = (app: SandboxApp, uid: string) =>
    inject(
      {
        method: 'POST',
        url: '/v2/in_app_notifications/notify',
        headers: key(app),
        payload: { notifications: [{ title: 'Hi', body: 'fuzz', user_uid: uid, subroute: '/' }] },
      },
      201,
    )
  const noteA = (await notify(appA, tokenA.user.uid)).delivered_notifications as Array<{ id: string }>
  const noteB = (await notify(appB, tokenB.user.uid)).delivered_notifications as Array<{ id: string }>
  const txid = await pay(platform.app, { seed: victim.wallet.seed, to: appA.wallet.address, amount: '1', memo: 'fuzz' })

  const pools: Pools = {}
  const add = (name: string, ...values: unknown[]) => {
    for (const value of values) addTo(pools, name, value)
  }
  add('payment_id', u2a.identifier, a2u.identifier, a2uB.identifier)
  add('adId', adA.adId, adB.adId)
  add('notification_id', noteA[0]?.id, noteB[0]?.id)
  add('app_id', appA.app_id, appB.app_id)
  add('key_id', spareKeyA.key_id, spareKeyB.key_id, revokedKey.key_id)
  add('user_id', victim.user_id, other.user_id, main.user_id)
  add('uid', tokenA.user.uid, tokenB.user.uid, victimA.user.uid, victimB.user.uid, noScope.user.uid)
  add('account_id', main.wallet.address, appA.wallet.address, appB.wallet.address, victim.wallet.address)
  add('hash', txid, txid.toUpperCase())
  add('sequence', '1', '2', '0', '18446744073709551616')
  add('type', 'rewarded', 'interstitial')
  add('accessToken', victimA.accessToken, victimB.accessToken, revokedToken.accessToken, expired.accessToken)
  add('username', main.username, victim.username.toUpperCase())
  add('cursor', '1', '4294967296', txid)
  // A snapshot file of this world (POST /sandbox/snapshots/import's body), cut to one row of two tables:
  // its parts feed the import's fields, and the deterministic corpus mutates each leaf of its rows.
  const saved = await platform.app.inject({ method: 'POST', url: '/sandbox/snapshots', headers, payload: { name: 'fuzz-fixture' } })
  assert.equal(saved.statusCode, 201, saved.body)
  const exported = await platform.app.inject({ method: 'GET', url: '/sandbox/snapshots/fuzz-fixture/export', headers })
  const file = exported.json() as { schema_version: string; created_at: string; sequences: unknown; tables: Record<string, unknown[]> }
  const tables = Object.fromEntries(['apps', 'payments'].map((table) => [table, (file.tables[table] ?? []).slice(0, 1)]))
  add('plinth_snapshot', '1')
  add('schema_version', file.schema_version)
  add('created_at', file.created_at)
  add('sequences', JSON.stringify(file.sequences))
  add('tables', JSON.stringify(tables))
  for (const [alias, pool] of [
    ['user_uid', 'uid'],
    ['txid', 'hash'],
    ['address', 'account_id'],
    ['signer', 'account_id'],
    ['sponsor', 'account_id'],
  ] as const) {
    pools[alias] = pools[pool] ?? []
  }

  return {
    platform,
    sb,
    adminToken,
    apps: [appA, appB],
    users: { main, other, victim },
    credentials: {
      key: appA.api_key,
      otherKey: appB.api_key,
      revokedKey: revokedKey.api_key,
      token: tokenA.accessToken,
      otherToken: tokenB.accessToken,
      noScopeToken: noScope.accessToken,
      expiredToken: expired.accessToken,
      revokedToken: revokedToken.accessToken,
    },
    pools,
  }
}

/** The fuzzer may revoke keys, withdraw consent or move the clock: give the fixture working credentials again. */
export async function refreshCredentials(fixture: Fixture): Promise<void> {
  const { platform, sb, credentials } = fixture
  const [appA, appB] = fixture.apps
  const works = async (url: string, authorization: string) =>
    (await platform.app.inject({ method: 'GET', url, headers: { authorization } })).statusCode === 200
  for (const [name, app] of [
    ['key', appA],
    ['otherKey', appB],
  ] as const) {
    if (!(await works('/v2/payments/incomplete_server_payments', `Key ${credentials[name]}`))) {
      credentials[name] = (await sb.createKey(app.app_id)).api_key
    }
  }
  const all = [...SCOPES]
  for (const [name, app, user, scopes] of [
    ['token', appA, fixture.users.main, all],
    ['otherToken', appB, fixture.users.main, all],
    ['noScopeToken', appA, fixture.users.other, []],
  ] as const) {
    if (!(await works('/v2/me', `Bearer ${credentials[name]}`))) {
      credentials[name] = (await sb.authenticate(app.app_id, user.user_id, [...scopes], 30 * 86_400)).accessToken
    }
  }
}

/** Ids the fuzzer created become path parameters and body fields of later runs. */
export function harvest(pools: Pools, body: unknown): void {
  if (typeof body !== 'object' || body === null) return
  const record = body as Record<string, unknown>
  addTo(pools, 'payment_id', record.identifier)
  addTo(pools, 'adId', record.adId)
  addTo(pools, 'hash', record.hash)
  addTo(pools, 'key_id', record.key_id)
  addTo(pools, 'cursor', record.next_cursor)
  if (typeof record.wallet === 'object' && record.wallet !== null) {
    addTo(pools, 'account_id', (record.wallet as { address?: unknown }).address)
    addTo(pools, 'app_id', record.app_id)
    addTo(pools, 'user_id', record.user_id)
  }
  for (const list of [record.delivered_notifications, record.notifications]) {
    if (Array.isArray(list)) for (const item of list.slice(0, 3)) addTo(pools, 'notification_id', (item as { id?: unknown }).id)
  }
  if (typeof record.accessToken === 'string') addTo(pools, 'accessToken', record.accessToken)
}
