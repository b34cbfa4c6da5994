/**
 * OWASP API1 (object-level) and API5 (function-level) authorization as a matrix generated from
 * the route table (`GET /v2/openapi.json`, which every schema-first route is in): a new route
 * is covered as soon as it exists, and a route with an id in its path that the matrix does not
 * classify fails the run.
 *
 * Object level: every route taking an object id, called by another app's key or by another
 * user's token (in the same app and in another), answers the documented 404, exactly as for an
 * id that does not exist, and changes nothing in the database; the owner, sending the very same
 * request afterwards, succeeds. Lists never show another tenant's objects.
 * Function level: key routes refuse access tokens and token routes refuse keys (401
 * wrong_authorization_scheme); the sandbox API needs the admin token when one is set and does
 * not exist in production mode, nor do the sandbox browser and the console.
 * The full authentication cases of single routes (malformed headers, revoked, tampered) are
 * test/helpers/auth-cases.ts's, run by each domain's test file.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { InjectOptions } from 'fastify'
import { dumpState, sandbox, startPlatform, type TestPlatform } from '../helpers/platform.js'
import {
  a2uCreated,
  asKey,
  asToken,
  fill,
  label,
  type Method,
  makeWorld,
  notification,
  OBJECT_ROUTES,
  type Operation,
  rewardedAd,
  routeTable,
  u2aPaid,
  type World,
} from '../helpers/route-table.js'

/** Path params that name no tenant's object. */
const NOT_OBJECT_PARAMS: Record<string, string> = {
  type: 'an ad type (rewarded or interstitial), the same for everyone',
}

/**
 * Which routes with path params are outside the object-level matrix, and why. Anything else
 * with a path param must be in OBJECT_ROUTES.
 */
function exemption(op: Operation): string | undefined {
  if (op.auth === 'admin') return 'the sandbox API acts as the platform over every tenant (admin token; absent in production)'
  if (op.auth === 'none' && op.path.startsWith('/ledger/'))
    return 'the ledger is public, as Horizon is: accounts and transactions are no tenant objects'
  if (op.params.every((param) => NOT_OBJECT_PARAMS[param] !== undefined)) return `its params are no object ids (${op.params.join(', ')})`
  return undefined
}

/** Notify keeps the live platform's `{"error": "<text>"}` shape (docs/notifications.md); every other route answers the code. */
const TEXT_ERRORS: Record<string, RegExp> = { notify: /Server API Key|Authorization/ }
function refusedAs(op: Operation, body: Record<string, unknown>, code: string): void {
  const text = TEXT_ERRORS[op.operationId]
  if (text === undefined) assert.equal(body.error, code, label(op))
  else assert.match(String(body.error), text, label(op))
}

describe('authorization matrix', () => {
  let platform: TestPlatform
  let operations: Operation[]

  before(async () => {
    platform = await startPlatform()
    operations = await routeTable(platform)
  })
  after(() => platform.close())

  const world = () => makeWorld(platform)

  const intruders = (op: Operation, w: World): Array<[string, Record<string, string>]> =>
    op.auth === 'key'
      ? [["another app's key", asKey(w.appB)]]
      : [
          ["another user's token in the same app", asToken(w.sameAppOtherUser)],
          ["the same user's token in another app", asToken(w.otherAppSameUser)],
          ["another user's token in another app", asToken(w.otherAppOtherUser)],
        ]
  const ownerHeaders = (op: Operation, w: World) => (op.auth === 'key' ? asKey(w.appA) : asToken(w.owner.token))

  it('the route table is complete: every route with a path param is in the matrix or exempt for a reason', () => {
    assert.ok(operations.length > 30, `only ${operations.length} operations in the OpenAPI document`)
    const unclassified = operations
      .filter((op) => op.params.length > 0 && OBJECT_ROUTES[op.operationId] === undefined && exemption(op) === undefined)
      .map(label)
    assert.deepEqual(unclassified, [], 'routes with an id in their path that the authorization matrix does not cover')
    const stale = Object.keys(OBJECT_ROUTES).filter((id) => !operations.some((op) => op.operationId === id))
    assert.deepEqual(stale, [], 'matrix entries for routes that no longer exist')
    for (const op of operations.filter((o) => OBJECT_ROUTES[o.operationId] !== undefined)) {
      assert.ok(op.auth === 'key' || op.auth === 'token', `${label(op)}: an object route takes a key or a token`)
      assert.equal(op.params.length, 1, `${label(op)}: one object id in the path`)
    }
    // Every Platform API route is authenticated, but for the documentation itself.
    const open = operations.filter((op) => op.path.startsWith('/v2/') && op.auth === 'none').map(label)
    assert.deepEqual(open, [], 'Platform API routes without authentication')
  })

  describe('object level: another tenant gets 404 and changes nothing', () => {
    // The cases come from the route table, known only once the platform runs: one test a route.
    it('every object route', async (t) => {
      const covered = operations.filter((op) => OBJECT_ROUTES[op.operationId] !== undefined)
      assert.equal(covered.length, Object.keys(OBJECT_ROUTES).length)
      for (const op of covered) {
        await t.test(label(op), async () => {
          const entry = OBJECT_ROUTES[op.operationId]
          assert.ok(entry)
          const w = await world()
          const object = await entry.make(platform, w)
          const request = (headers: Record<string, string>, id = object.id): InjectOptions => ({
            method: op.method,
            url: fill(op, { [op.params[0] ?? '']: id }),
            headers,
            ...(object.payload === undefined ? {} : { payload: object.payload }),
          })

          // What an id that does not exist answers, for the owner.
          const missingId = `${object.id.slice(0, -4)}zzzz`
          const missing = await platform.app.inject(request(ownerHeaders(op, w), missingId))
          assert.equal(missing.statusCode, 404)
          const missingBody = missing.json() as Record<string, unknown>
          assert.equal(missingBody.error, entry.code)

          const before = await dumpState(platform.db)
          for (const [who, headers] of intruders(op, w)) {
            const response = await platform.app.inject(request(headers))
            assert.equal(response.statusCode, 404, `${who}: ${response.body}`)
            const body = response.json() as Record<string, unknown>
            assert.deepEqual(Object.keys(body).sort(), ['error', 'error_message'], `${who}: the 404 carries nothing of the object`)
            assert.equal(body.error, entry.code, who)
            // Indistinguishable from an id that does not exist.
            assert.equal(
              String(body.error_message).replace(object.id, '<id>'),
              String(missingBody.error_message).replace(missingId, '<id>'),
              who,
            )
          }
          assert.equal(await dumpState(platform.db), before, 'the database is unchanged')

          // The very same request is the owner's to make.
          const own = await platform.app.inject(request(ownerHeaders(op, w)))
          assert.ok(own.statusCode === 200 || own.statusCode === 201, `the owner's request answered ${own.statusCode}: ${own.body}`)
        })
      }
    })

    it("lists show no other tenant's objects", async (t) => {
      const w = await world()
      const ids = [
        (await u2aPaid(platform, w)).id,
        (await a2uCreated(platform, w)).id,
        (await rewardedAd(platform, w)).id,
        (await notification(platform, w)).id,
      ]
      const lists = operations.filter((op) => op.method === 'GET' && op.params.length === 0 && (op.auth === 'key' || op.auth === 'token'))
      assert.ok(lists.length >= 4)
      for (const op of lists) {
        await t.test(label(op), async () => {
          for (const [who, headers] of intruders(op, w)) {
            const response = await platform.app.inject({ method: 'GET', url: op.path, headers })
            assert.equal(response.statusCode, 200, `${who}: ${response.body}`)
            for (const id of ids) assert.equal(response.body.includes(id), false, `${who} sees ${id}`)
          }
        })
      }
      // The lists are not vacuous: the owner sees its own.
      const own = await platform.app.inject({ method: 'GET', url: '/v2/client/payments/incomplete', headers: asToken(w.owner.token) })
      assert.ok(own.body.includes(ids[0] ?? '-'))
    })
  })

  describe('function level', () => {
    it('every key route refuses an access token and every token route a server key (401 wrong_authorization_scheme)', async (t) => {
      const w = await world()
      const routes = operations.filter((op) => op.auth === 'key' || op.auth === 'token')
      assert.ok(routes.length >= 15)
      for (const op of routes) {
        await t.test(label(op), async () => {
          const wrong = op.auth === 'key' ? asToken(w.owner.token) : asKey(w.appA)
          const response = await platform.app.inject({ method: op.method, url: fill(op), headers: wrong })
          assert.equal(response.statusCode, 401, response.body)
          refusedAs(op, response.json() as Record<string, unknown>, 'wrong_authorization_scheme')
          // Nor does the sandbox's admin token stand in for either.
          const admin = await platform.app.inject({ method: op.method, url: fill(op), headers: { 'x-admin-token': 'a'.repeat(32) } })
          assert.equal(admin.statusCode, 401)
          refusedAs(op, admin.json() as Record<string, unknown>, 'missing_authorization')
        })
      }
    })
  })

  describe('the sandbox API with an admin token', () => {
    const adminToken = 'matrix-admin-token-0123456789'
    let platform: TestPlatform
    before(async () => {
      platform = await startPlatform({ adminToken })
    })
    after(() => platform.close())

    it('every sandbox route needs X-Admin-Token; keys and tokens do not stand in for it', async (t) => {
      const sb = sandbox(platform.app, { 'x-admin-token': adminToken })
      const app = await sb.createApp()
      const user = await sb.createUser()
      const { accessToken } = await sb.authenticate(app.app_id, user.user_id, ['payments'])
      const routes = operations.filter((op) => op.path.startsWith('/sandbox'))
      assert.ok(routes.length >= 20)
      for (const op of routes) {
        assert.equal(op.auth, 'admin', `${label(op)} is documented as an admin route`)
        await t.test(label(op), async () => {
          const before = await dumpState(platform.db)
          for (const headers of [
            {},
            { 'x-admin-token': 'wrong-admin-token-0123456789' },
            { 'x-admin-token': '' },
            { authorization: `Key ${app.api_key}` },
            { authorization: `Bearer ${accessToken}` },
            { authorization: `Bearer ${adminToken}` },
          ]) {
            const response = await platform.app.inject({ method: op.method, url: fill(op), headers, payload: {} })
            assert.equal(response.statusCode, 401, `${JSON.stringify(Object.keys(headers))}: ${response.body}`)
            assert.equal((response.json() as { error: string }).error, 'invalid_admin_token')
          }
          assert.equal(await dumpState(platform.db), before, 'refused calls change nothing')
          const allowed = await platform.app.inject({ method: op.method, url: fill(op), headers: { 'x-admin-token': adminToken } })
          assert.notEqual(allowed.statusCode, 401, allowed.body)
          assert.ok(allowed.statusCode < 500, allowed.body)
        })
      }
    })
  })

  describe('production mode', () => {
    let production: TestPlatform
    before(async () => {
      production = await startPlatform({ mode: 'production' })
    })
    after(() => production.close())

    it('no sandbox route, sandbox page or console page exists (404 not_found)', async () => {
      // The sandbox routes as sandbox mode has them.
      const sandboxRoutes = operations.filter((op) => op.path.startsWith('/sandbox'))
      assert.ok(sandboxRoutes.length >= 20)
      const pages: Array<[Method, string]> = [
        ['GET', '/sandbox'],
        ['GET', '/sandbox/'],
        ['GET', '/sandbox/ui/platform.json'],
        ['GET', '/sandbox/ui/app.js'],
        ['GET', '/console'],
        ['GET', '/console/'],
        ['GET', '/console/index.html'],
      ]
      for (const [method, url] of [...sandboxRoutes.map((op): [Method, string] => [op.method, fill(op)]), ...pages]) {
        for (const headers of [{}, { 'x-admin-token': 'any-admin-token-0123456789' }]) {
          const response = await production.app.inject({ method, url, headers, payload: {} })
          assert.equal(response.statusCode, 404, `${method} ${url}: ${response.body}`)
          assert.equal((response.json() as { error: string }).error, 'not_found', `${method} ${url}`)
        }
      }
      const openapi = await routeTable(production)
      assert.deepEqual(openapi.filter((op) => op.auth === 'admin' || op.path.startsWith('/sandbox')).map(label), [])
    })
  })
})
