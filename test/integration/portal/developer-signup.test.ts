/**
 * Who makes a user a developer, per PLINTH_DEVELOPER_SIGNUP (docs/portal.md, "Becoming a
 * developer"), as the platform page sees it: the page reads the policy from platform.json (the
 * **Become a developer** button under `open`, whom to ask otherwise), `POST /portal/developer`
 * makes the caller a developer under `open` only, audited, and every refusal is in the error shape
 * of docs/errors.md and leaves the database as it was.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import type { Kysely } from 'kysely'
import type { DB } from '../../../src/db/schema.js'
import { accountBrowser, adminOf, signedUp } from '../../helpers/accounts.js'
import { assertError } from '../../helpers/payments-client.js'
import { dumpDatabase, startPlatform, type TestPlatform } from '../../helpers/platform.js'

const POLICIES = ['operator', 'invite', 'open'] as const
type Policy = (typeof POLICIES)[number]

/** A production platform under `policy` (undefined: the default, nothing set). */
function platformUnder(policy: Policy | undefined) {
  let platform: TestPlatform | undefined
  const app = (): FastifyInstance => {
    if (platform === undefined) throw new Error('the platform has not started')
    return platform.app
  }
  before(async () => {
    platform = await startPlatform({ mode: 'production', ...(policy === undefined ? {} : { portal: { developerSignup: policy } }) })
  })
  after(async () => {
    await platform?.close()
  })
  return {
    app,
    platform: () => {
      if (platform === undefined) throw new Error('the platform has not started')
      return platform
    },
  }
}

/**
 * The database as text, but for what a refused call writes by design: a session's last use (the
 * request was the session's), the request log, and the process registry's heartbeat.
 */
const stableState = (db: Kysely<DB>) =>
  dumpDatabase(db, ['request_log'], { sandbox_processes: ['seen_at'], account_sessions: ['last_seen_at'] })

const rolesOf = async (user: { account(): Promise<{ body: Record<string, unknown> }> }) => (await user.account()).body.roles as string[]
const pagePolicy = async (app: () => FastifyInstance) =>
  (await app().inject({ method: 'GET', url: '/ui/platform.json' })).json<{ developer_signup: string }>().developer_signup

describe('PLINTH_DEVELOPER_SIGNUP: the default', () => {
  const under = platformUnder(undefined)

  it('is operator: the page is told so, and a user cannot take the role', async () => {
    assert.equal(await pagePolicy(under.app), 'operator')
    const user = await signedUp(under.app)
    assertError(await user.call('POST', '/portal/developer'), 403, 'forbidden')
    assert.deepEqual(await rolesOf(user), [])
  })
})

for (const policy of ['operator', 'invite'] as const) {
  describe(`PLINTH_DEVELOPER_SIGNUP=${policy}`, () => {
    const under = platformUnder(policy)

    it('tells the page the policy, so it says whom to ask instead of offering the button', async () => {
      assert.equal(await pagePolicy(under.app), policy)
    })

    it('refuses POST /portal/developer with 403 forbidden in the documented shape, and moves nothing', async () => {
      const user = await signedUp(under.app)
      const state = await stableState(under.platform().db)
      const refused = assertError(await user.call('POST', '/portal/developer'), 403, 'forbidden')
      assert.match(refused.error_message, /operator grants the developer role/)
      assert.deepEqual(Object.keys(refused).sort(), ['error', 'error_message'])
      assert.equal(await stableState(under.platform().db), state, 'no role, no audit record, nothing else')
      assert.deepEqual(await rolesOf(user), [])
      assertError(await user.call('GET', '/portal/apps'), 403, 'forbidden')
    })
  })
}

describe('PLINTH_DEVELOPER_SIGNUP=open', () => {
  const under = platformUnder('open')

  it('tells the page to offer the Become a developer button', async () => {
    assert.equal(await pagePolicy(under.app), 'open')
  })

  it('makes the signed-in caller a developer, with one audit record; asking again changes nothing', async () => {
    const user = await signedUp(under.app)
    assert.deepEqual((await user.call('POST', '/portal/developer')).body, { developer: true, already: false })
    assert.deepEqual(await rolesOf(user), ['developer'])
    assert.equal((await user.call('GET', '/portal/apps')).status, 200)
    const trail = async () =>
      (await adminOf(under.platform()).auditTrail(50)).records.filter((r) => r.action === 'grant-developer' && r.target === user.username)
    const records = await trail()
    assert.equal(records.length, 1)
    assert.equal(records[0]?.actor, `user:${String((await user.account()).body.user_id)}`)
    assert.deepEqual(records[0]?.details, { policy: 'open' })
    assert.deepEqual((await user.call('POST', '/portal/developer')).body, { developer: true, already: true })
    assert.equal((await trail()).length, 1)
  })

  it('refuses without a session (401), without JSON (415) and from another site (403), and moves nothing', async () => {
    const user = await signedUp(under.app)
    const state = await stableState(under.platform().db)
    assertError(await accountBrowser(under.app).call('POST', '/portal/developer'), 401, 'session_required')
    const form = await user.call('POST', '/portal/developer', undefined, { 'content-type': 'application/x-www-form-urlencoded' })
    assert.equal(form.status, 415)
    assertError(await user.call('POST', '/portal/developer', {}, { 'sec-fetch-site': 'cross-site' }), 403, 'cross_site_request')
    assert.equal(await stableState(under.platform().db), state)
    assert.deepEqual(await rolesOf(user), [])
  })
})
