/**
 * The route table of `GET /v2/openapi.json` and the objects its routes act on, shared by the
 * authorization matrices (test/integration/authorization-matrix.test.ts, scope-matrix.test.ts):
 * a new route is covered as soon as it is in the document.
 */
import assert from 'node:assert/strict'
import type { InjectOptions } from 'fastify'
import { type SandboxApp, type SandboxUser, sandbox, type TestPlatform } from './platform.js'

export type Method = NonNullable<InjectOptions['method']>
export type Auth = 'key' | 'token' | 'admin' | 'none'

export interface Operation {
  method: Method
  path: string
  operationId: string
  auth: Auth
  params: string[]
  /** Token routes: the scope their `x-scope` declares ('none': any access token), if any. */
  scope: string | undefined
  /** The scopes the operation's `security` lists. */
  securityScopes: string[]
  description: string
}

interface OpenApi {
  paths: Record<
    string,
    Record<string, { operationId?: string; description?: string; 'x-scope'?: string; security?: Array<Record<string, string[]>> }>
  >
}

const SCHEME_AUTH: Record<string, Auth> = { ServerApiKey: 'key', AccessToken: 'token', AdminToken: 'admin' }

/** The route table, from the OpenAPI document: method, path, operationId, authentication, scope and path params. */
export async function routeTable(platform: TestPlatform): Promise<Operation[]> {
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
        scope: op['x-scope'],
        securityScopes: (op.security ?? []).flatMap((requirement) => Object.values(requirement).flat()),
        description: op.description ?? '',
      })
    }
  }
  return operations
}

export const fill = (op: Operation, values: Record<string, string> = {}) =>
  op.path.replace(/\{(\w+)\}/g, (_, name: string) => values[name] ?? (name === 'type' ? 'rewarded' : `x_${name}`))
export const label = (op: Pick<Operation, 'method' | 'path'>) => `${op.method} ${op.path}`

/** A world of two apps and three users: the owner (user 1 in app A) and everyone else. */
export interface World {
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

export const WORLD_SCOPES = ['username', 'payments', 'wallet_address', 'in_app_notifications']

export async function makeWorld(platform: TestPlatform): Promise<World> {
  const sb = sandbox(platform.app)
  const [appA, appB] = [await sb.createApp(), await sb.createApp()]
  const [user1, user2, user3] = [await sb.createUser(), await sb.createUser(), await sb.createUser()]
  const owner = await sb.authenticate(appA.app_id, user1.user_id, WORLD_SCOPES)
  return {
    appA,
    appB,
    user1,
    owner: { token: owner.accessToken, uid: owner.user.uid },
    sameAppOtherUser: (await sb.authenticate(appA.app_id, user2.user_id, WORLD_SCOPES)).accessToken,
    otherAppSameUser: (await sb.authenticate(appB.app_id, user1.user_id, WORLD_SCOPES)).accessToken,
    otherAppOtherUser: (await sb.authenticate(appB.app_id, user3.user_id, WORLD_SCOPES)).accessToken,
  }
}

/** An object of the owner's, made so that the route it is for would succeed for the owner. */
export interface OwnedObject {
  id: string
  payload?: Record<string, unknown>
}

export type Maker = (p: TestPlatform, w: World) => Promise<OwnedObject>

export async function expectStatus(p: TestPlatform, options: InjectOptions, status: number): Promise<Record<string, unknown>> {
  const response = await p.app.inject(options)
  assert.equal(response.statusCode, status, `${options.method} ${String(options.url)}: ${response.body}`)
  return response.json() as Record<string, unknown>
}
export const asKey = (app: SandboxApp) => ({ authorization: `Key ${app.api_key}` })
export const asToken = (token: string) => ({ authorization: `Bearer ${token}` })

export const u2aCreated: Maker = async (p, w) => {
  const body = await expectStatus(
    p,
    { method: 'POST', url: '/v2/client/payments', headers: asToken(w.owner.token), payload: { amount: 1, memo: 'bola', metadata: {} } },
    201,
  )
  return { id: String(body.identifier) }
}
export const u2aApproved: Maker = async (p, w) => {
  const { id } = await u2aCreated(p, w)
  await expectStatus(p, { method: 'POST', url: `/v2/payments/${id}/approve`, headers: asKey(w.appA) }, 200)
  return { id }
}
export const u2aPaid: Maker = async (p, w) => {
  const { id } = await u2aApproved(p, w)
  const paid = await expectStatus(p, { method: 'POST', url: `/v2/client/payments/${id}/submit`, headers: asToken(w.owner.token) }, 200)
  return { id, payload: { txid: String((paid.transaction as { txid: string }).txid) } }
}
export const a2uCreated: Maker = async (p, w) => {
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
export const rewardedAd: Maker = async (p, w) => {
  const body = await expectStatus(
    p,
    { method: 'POST', url: '/v2/client/ads/rewarded/show', headers: asToken(w.owner.token), payload: {} },
    200,
  )
  assert.equal(body.result, 'AD_REWARDED')
  return { id: String(body.adId) }
}
export const notification: Maker = async (p, w) => {
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
export const OBJECT_ROUTES: Record<string, { make: Maker; code: string }> = {
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
