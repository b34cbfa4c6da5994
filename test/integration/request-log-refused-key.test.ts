import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'kysely'
import { json, sandbox, startPlatform, type TestPlatform } from '../helpers/platform.js'

interface Entry {
  key_id: string | null
  status: number
  error_code: string | null
  path: string
}

/**
 * A refused server API key leaves a trace in the log of the app it belongs to (#41 U22): one of
 * its revoked keys, or a key that starts as one of its keys (a mistyped or cut one). A key like
 * no app's is in no log. The caller's answer is the same 401 in every case, and no log keeps the
 * key it sent.
 */
describe('request log: refused keys', () => {
  let platform: TestPlatform
  before(async () => {
    platform = await startPlatform()
  })
  after(() => platform.close())

  const call = (key: string) =>
    platform.app.inject({ method: 'GET', url: '/v2/payments/incomplete_server_payments', headers: { authorization: `Key ${key}` } })
  const log = async (appId: string) =>
    json<{ requests: Entry[] }>(await platform.app.inject({ method: 'GET', url: `/sandbox/apps/${appId}/requests` })).requests

  it("a revoked key and a mistyped key are logged under their app's key, refused alike; a stranger's key nowhere", async () => {
    const sb = sandbox(platform.app)
    const shop = await sb.createApp()
    const other = await sb.createApp()
    const old = await sb.createKey(shop.app_id)
    await sb.revokeKey(shop.app_id, old.key_id)
    const last = shop.api_key.at(-1) === 'A' ? 'B' : 'A'
    const mistyped = `${shop.api_key.slice(0, -1)}${last}`
    const stranger = 'Z'.repeat(43)

    const answers = await Promise.all([call(old.api_key), call(mistyped), call(stranger)])
    for (const answer of answers) {
      assert.equal(answer.statusCode, 401)
      assert.equal(json<{ error: string }>(answer).error, 'invalid_api_key')
    }
    assert.equal(answers[0]?.body, answers[1]?.body, 'the same answer, whoever the key resembles')
    assert.equal(answers[1]?.body, answers[2]?.body)

    const rows = await log(shop.app_id)
    assert.deepEqual(
      rows.map((r) => [r.key_id, r.status, r.error_code]).sort(),
      [
        [old.key_id, 401, 'invalid_api_key'],
        [shop.key_id, 401, 'invalid_api_key'],
      ].sort(),
    )
    assert.deepEqual(await log(other.app_id), [], "another app's log has none of them")
    const stored = JSON.stringify(rows)
    for (const secret of [old.api_key, mistyped, shop.api_key]) assert.ok(!stored.includes(secret), 'no key is stored')
  })
  it('a wrong key finds its app by an index on the key prefix, not by reading every key', async () => {
    // Both backends plan the lookup the API makes (apps-repo.ts: where key_prefix = $1) on the
    // index of migration 0028, once sequential scans are off (the table is small in a test).
    // One transaction, so that the setting and the plan share a connection of a pool.
    const plan = await platform.db.transaction().execute(async (trx) => {
      await sql`set local enable_seqscan = off`.execute(trx)
      return sql<Record<string, string>>`explain select id, app_id from api_keys where key_prefix = ${'abcdefgh'}`.execute(trx)
    })
    const text = plan.rows.map((row) => Object.values(row).join(' ')).join('\n')
    assert.match(text, /api_keys_key_prefix/, text)
  })
})
