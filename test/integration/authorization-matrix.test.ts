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
import { dumpDatabase, type SandboxApp, type SandboxUser, sandbox, startPlatform, type TestPlatform } from '../helpers/platform.js'

type Method = NonNullable<InjectOptions['method']>
type Auth = 'key' | 'token' | 'admin' | 'none'

interface Operation {
  method: Method
  path: string
  operationId: string
  auth: Auth
  params: string[]
}

interface OpenApi {
  paths: Record<string, Record<string, { operationId?: string; security?: Array<Record<string, string[]>> }>>
}

const SCHEME_AUTH: Record<string, Auth> = { ServerApiKey: 'key', AccessToken: 'token', AdminToken: 'admin' }

/** The route table, from the OpenAPI document: method, path, operationId, authentication and path params. */
async function routeTable(platform: TestPlatform): Promise<Operation[]> {
  const response = await platform.app.inject({ method: 'GET', url: '/v2/openapi.json' })
  assert.equal(response.statusCode, 200)
  const doc = response.json() as OpenApi
  const operations: Operation[] = []
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const schemes = (op.security ?? []).flatMap((requirement) => Object.keys(requirement))
      const kinds = [...new Set(schemes.map((scheme) => SCHEME_AUTH[scheme] ?? 'none'))]
      assert.ok(kinds.length <= 1, `${method} ${path} declares several kinds of authentication`)
      assert.ok(op.operationId, `${method} ${path} has no operationId`)
      operations.push({
        method: method.toUpperCase() as Method,
        path,
        operationId: op.operationId,
        auth: kinds[0] ?? 'none',
        params: [...path.matchAll(/\{(\w+)\}/g)].map((match) => match[1] ?? ''),
      })
    }
  }
  return operations
}

const fill = (op: Operation, values: Record<string, string> = {}) =>
  op.path.replace(/\{(\w+)\}/g, (_, name: string) => values[name] ?? (name === 'type' ? 'rewarded' : `x_${name}`))
const label = (op: Operation) => `${op.method} ${op.path}`

/** A world of two apps and three users: the owner (user 1 in app A) and everyone else. */
interface World {
  appA: SandboxApp
  appB: SandboxApp
  user1: SandboxUser
  /** user 1 in app A: the owner of every object. */
  owner: { token: string; uid: string }
  /** user 2 in app A, user 1 in app B, user 3 in app B. */
  sameAppOtherUser: string
  otherAppSameUser: string
  otherAppOtherUser: string
}

const SCOPES = ['username', 'payments', 'wallet_address', 'in_app_notifications']

/** An object of the owner's, made so that the route it is for would succeed for the owner. */
interface OwnedObject {
  id: string
  payload?: Record<string, unknown>
}

type Maker = (p: TestPlatform, w: World) => Promise<OwnedObject>

async function expectStatus(p: TestPlatform, options: InjectOptions, status: number): Promise<Record<string, unknown>> {
  const response = await p.app.inject(options)
  assert.equal(response.statusCode, status, `${options.method} ${String(options.url)}: ${response.body}`)
  return response.json() as Record<string, unknown>
}
const asKey = (app: SandboxApp) => ({ authorization: `Key ${app.api_key}` })
const asToken = (token: string) => ({ authorization: `Bearer ${token}` })

const u2aCreated: Maker = async (p, w) => {
  const body = await expectStatus(
    p,
    { method: 'POST', url: '/v2/client/payments', headers: asToken(w.owner.token), payload: { amount: 1, memo: 'bola', metadata: {} } },
    201,
  )
  return { id: String(body.identifier) }
}
const u2aApproved: Maker = async (p, w) => {
  const { id } = await u2aCreated(p, w)
  await expectStatus(p, { method: 'POST', url: `/v2/payments/${id}/approve`, headers: asKey(w.appA) }, 200)
  return { id }
}
const u2aPaid: Maker = async (p, w) => {
  const { id } = await u2aApproved(p, w)
  const paid = await expectStatus(p, { method: 'POST', url: `/v2/client/payments/${id}/submit`, headers: asToken(w.owner.token) }, 200)
  return { id, payload: { txid: String((paid.transaction as { txid: string }).txid) } }
}
const a2uCreated: Maker = async (p, w) => {
  const body = await expectStatus(
    p,
    {
      method: 'POST',
      url: '/v2/payments',
      headers: asKey(w.appA),
      payload: { payment: { amount: 1, memo: 'bola', metadata: {}, uid: w.owner.uid } },
    },
    200,
  )
  return { id: String(body.identifier) }
}
const rewardedAd: Maker = async (p, w) => {
  const body = await expectStatus(
    p,
    { method: 'POST', url: '/v2/client/ads/rewarded/show', headers: asToken(w.owner.token), payload: {} },
    200,
  )
  assert.equal(body.result, 'AD_REWARDED')
  return { id: String(body.adId) }
}
const notification: Maker = async (p, w) => {
  const body = await expectStatus(
    p,
    {
      method: 'POST',
      url: '/v2/in_app_notifications/notify',
      headers: asKey(w.appA),
      payload: { notifications: [{ title: 'Hello', body: 'bola', user_uid: w.owner.uid, subroute: '/' }] },
    },
    201,
  )
  const [delivered] = body.delivered_notifications as Array<{ id: string }>
  assert.ok(delivered)
  return { id: delivered.id }
}

/**
 * Every route whose path carries an object id: how to make the owner's object, and the 404
 * code every other tenant gets. The key is the operationId.
 */
const OBJECT_ROUTES: Record<string, { make: Maker; code: string }> = {
  getPayment: { make: u2aPaid, code: 'payment_not_found' },
  approvePayment: { make: u2aCreated, code: 'payment_not_found' },
  completePayment: { make: u2aPaid, code: 'payment_not_found' },
  cancelPayment: { make: a2uCreated, code: 'payment_not_found' },
  clientGetPayment: { make: u2aCreated, code: 'payment_not_found' },
  clientSubmitPayment: { make: u2aApproved, code: 'payment_not_found' },
  clientCancelPayment: { make: u2aCreated, code: 'payment_not_found' },
  getRewardedAdStatus: { make: rewardedAd, code: 'ad_not_found' },
  clientMarkNotificationSeen: { make: notification, code: 'notification_not_found' },
  clientDismissNotification: { make: notification, code: 'notification_not_found' },
}

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

  async function world(): Promise<World> {
    const sb = sandbox(platform.app)
    const [appA, appB] = [await sb.createApp(), await sb.createApp()]
    const [user1, user2, user3] = [await sb.createUser(), await sb.createUser(), await sb.createUser()]
    const owner = await sb.authenticate(appA.app_id, user1.user_id, SCOPES)
    return {
      appA,
      appB,
      user1,
      owner: { token: owner.accessToken, uid: owner.user.uid },
      sameAppOtherUser: (await sb.authenticate(appA.app_id, user2.user_id, SCOPES)).accessToken,
      otherAppSameUser: (await sb.authenticate(appB.app_id, user1.user_id, SCOPES)).accessToken,
      otherAppOtherUser: (await sb.authenticate(appB.app_id, user3.user_id, SCOPES)).accessToken,
    }
  }

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

          const before = await dumpDatabase(platform.db)
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
          assert.equal(await dumpDatabase(platform.db), before, 'the database is unchanged')

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
          const before = await dumpDatabase(platform.db)
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
          assert.equal(await dumpDatabase(platform.db), before, 'refused calls change nothing')
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
