import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { InjectOptions } from 'fastify'
import { PIPELINE } from '../../src/app/pipeline.js'
import { ROUTE_GROUPS } from '../../src/app/routes.js'
import { ERROR_STATUS } from '../../src/core/errors.js'
import { json, sandbox, usePlatform } from '../helpers/platform.js'

/**
 * The request pipeline (src/app/pipeline.ts) is a list that registers its stages in order: these
 * tests pin that order and show, through a whole platform, that a request an early stage
 * refuses never reaches a later one (it is neither counted, nor faulted, nor logged).
 */
describe('the request pipeline', () => {
  it('registers its stages in this order, then the route groups', () => {
    assert.deepEqual(
      PIPELINE.map((stage) => stage.name),
      [
        'metrics',
        'routing',
        'request-id',
        'protocol',
        'host',
        'site',
        'body-parsers',
        'validation',
        'sandbox-epoch',
        'error-handling',
        'api-docs',
        'auth',
        'client-header',
        'rate-limit',
        'fault-injection',
        'request-log',
      ],
    )
    assert.deepEqual(
      ROUTE_GROUPS.map((group) => group.name),
      [
        'system',
        'platform API',
        'account',
        'portal',
        'operator',
        'SDK',
        'browser UI layer',
        'ledger',
        'sandbox API',
        'sandbox page',
        'hub',
        'platform page',
        'console',
      ],
    )
  })

  it('says of each stage what it does and why it sits there, and refuses only with documented codes and their statuses', () => {
    for (const stage of PIPELINE) {
      assert.ok(stage.does.length > 0 && stage.why.length > 0 && stage.runs.length > 0, stage.name)
      for (const refusal of stage.refuses) {
        assert.equal(ERROR_STATUS[refusal.code], refusal.status, `${stage.name}: ${refusal.code}`)
      }
    }
  })

  describe('on a platform', () => {
    const KEY_LIMIT = 5
    const TOKEN_LIMIT = 5
    const ADMIN = { 'x-admin-token': 'pipeline-admin-token' }
    const platform = usePlatform({
      adminToken: ADMIN['x-admin-token'],
      rateLimits: { keyPerMinute: KEY_LIMIT, tokenPerMinute: TOKEN_LIMIT, now: () => 0 },
    })
    const inject = (options: InjectOptions) => platform.app.inject(options)
    const INCOMPLETE = '/v2/payments/incomplete_server_payments'

    it('refuses in the protocol, host and auth stages before the rate limit, the faults and the request log see the call', async () => {
      const s = sandbox(platform.app, ADMIN)
      const shop = await s.createApp()
      const key = { authorization: `Key ${shop.api_key}` }
      const fault = await inject({
        method: 'POST',
        url: '/sandbox/faults',
        headers: ADMIN,
        payload: { app_id: shop.app_id, match: { route: `GET ${INCOMPLETE}` }, effect: { status: 503 }, times: 1 },
      })
      assert.equal(fault.statusCode, 201, fault.body)

      const refusals = [
        { headers: { ...key, expect: 'something-else' }, status: 417, code: 'expectation_failed' },
        { headers: { ...key, host: 'attacker.example' }, status: 421, code: 'misdirected_request' },
        { headers: { authorization: 'Bearer nope' }, status: 401, code: 'wrong_authorization_scheme' },
      ]
      for (const refusal of refusals) {
        const response = await inject({ method: 'GET', url: INCOMPLETE, headers: refusal.headers })
        assert.equal(response.statusCode, refusal.status, response.body)
        assert.equal(json(response).error, refusal.code)
        assert.match(String(response.headers['x-request-id']), /./, 'the request-id stage ran first')
        assert.equal(response.headers['x-ratelimit-limit'], undefined, `${refusal.code}: not counted`)
      }

      // The first call that passes them all is the first the rate limit counts and the fault hits.
      const faulted = await inject({ method: 'GET', url: INCOMPLETE, headers: key })
      assert.equal(faulted.statusCode, 503, faulted.body)
      assert.equal(json(faulted).error, 'injected_fault')
      assert.equal(faulted.headers['x-ratelimit-remaining'], String(KEY_LIMIT - 1))
      const served = await inject({ method: 'GET', url: INCOMPLETE, headers: key })
      assert.equal(served.statusCode, 200, served.body)
      assert.equal(served.headers['x-ratelimit-remaining'], String(KEY_LIMIT - 2))

      const log = await inject({ method: 'GET', url: `/sandbox/apps/${shop.app_id}/requests`, headers: ADMIN })
      assert.equal(log.statusCode, 200, log.body)
      const statuses = json<{ requests: Array<{ status: number }> }>(log).requests.map((entry) => entry.status)
      assert.deepEqual(statuses, [200, 503], 'only the calls that reached the routes are logged')
    })

    it('checks the scope after authentication and before the rate limit: the refusal names the user in the log, and is not counted', async () => {
      const s = sandbox(platform.app, ADMIN)
      const shop = await s.createApp()
      const user = await s.createUser()
      const { accessToken } = await s.authenticate(shop.app_id, user.user_id, ['username'])
      const bearer = { authorization: `Bearer ${accessToken}` }

      // Refused before its body is read or validated.
      const refused = await inject({ method: 'POST', url: '/v2/client/payments', headers: bearer, payload: { nonsense: true } })
      assert.equal(refused.statusCode, 401, refused.body)
      assert.equal(json(refused).error, 'missing_scope')
      assert.equal(refused.headers['x-ratelimit-limit'], undefined)

      const me = await inject({ method: 'GET', url: '/v2/me', headers: bearer })
      assert.equal(me.statusCode, 200, me.body)
      assert.equal(me.headers['x-ratelimit-remaining'], String(TOKEN_LIMIT - 1))

      const log = await inject({ method: 'GET', url: `/sandbox/apps/${shop.app_id}/requests`, headers: ADMIN })
      const entries = json<{ requests: Array<{ status: number; error_code: string | null; user_uid: string | null }> }>(log).requests
      assert.deepEqual(
        entries.map((entry) => [entry.status, entry.error_code]),
        [
          [200, null],
          [401, 'missing_scope'],
        ],
      )
      assert.ok(entries.every((entry) => entry.user_uid !== null))
    })

    it('refuses a foreign page in the site stage before the auth stage, and a missing admin token before the client-header rule', async () => {
      const form = { 'content-type': 'application/x-www-form-urlencoded' }
      const post = (headers: Record<string, string>) =>
        inject({ method: 'POST', url: '/sandbox/users', headers: { ...form, ...headers }, payload: 'username=mallory' })

      const crossSite = await post({ 'sec-fetch-site': 'cross-site' })
      assert.equal(crossSite.statusCode, 403)
      assert.equal(json(crossSite).error, 'cross_site_request')

      const noToken = await post({ 'sec-fetch-site': 'same-origin' })
      assert.equal(noToken.statusCode, 401)
      assert.equal(json(noToken).error, 'invalid_admin_token')

      const notJson = await post({ 'sec-fetch-site': 'same-origin', ...ADMIN })
      assert.equal(notJson.statusCode, 415)
      assert.equal(json(notJson).error, 'client_header_required')
    })
  })
})
