import assert from 'node:assert/strict'
import fc from 'fast-check'
import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import { BODY_LIMIT } from '../../../src/app.js'
import { SCOPES } from '../../../src/core/scopes.js'
import { NOTIFY_BODY_LIMIT } from '../../../src/notifications/notifications-routes.js'
import {
  assertNoPollution,
  assertNotifyError,
  assertPlatformError,
  assertProblem,
  assertProperty,
  deepJson,
  encodeSegment,
  fcParams,
  fuzzInject,
  hostileLeaf,
  hostileString,
  impossibleCursor,
  impossibleCursors,
  invalidJsonText,
  jsonText,
  NUMERIC_EDGES,
  nested,
  numericEdge,
  parseJsonBody,
  RawJson,
  rarely,
  rawNumber,
  type StateWatch,
} from '../fuzz.js'
import { pay } from '../ledger.js'
import { type SandboxApp, type SandboxUser, sandbox, type TestPlatform } from '../platform.js'

/**
 * The machinery of the route fuzzers (test/property/routes and sandbox): the routes read from
 * GET /v2/openapi.json, a seeded fixture with real ids of two apps, arbitraries for credentials,
 * path parameters, query strings, content types and bodies (mostly shaped by the route's schema,
 * with hostile leaves, duplicate and prototype keys woven into the raw JSON text), a corpus of
 * deterministic hostile bodies, and `exercise`, which checks every answer.
 */

interface JsonSchema {
  type?: string | string[]
  properties?: Record<string, JsonSchema>
  required?: string[]
  items?: JsonSchema
  enum?: unknown[]
  const?: unknown
  anyOf?: JsonSchema[]
  oneOf?: JsonSchema[]
  pattern?: string
  minLength?: number
  maxLength?: number
  minimum?: number
  maximum?: number
  exclusiveMinimum?: number
  minItems?: number
  maxItems?: number
}

type Security = 'key' | 'token' | 'admin' | 'none'
type Family = 'platform' | 'notify' | 'ledger'

export interface RouteSpec {
  method: string
  path: string
  security: Security
  pathParams: string[]
  query: Array<{ name: string; schema: JsonSchema }>
  body: JsonSchema | undefined
  responses: Set<number>
}

interface OpenApiOperation {
  security?: Array<Record<string, unknown>>
  parameters?: Array<{ in: string; name: string; schema: JsonSchema }>
  requestBody?: { content: Record<string, { schema: JsonSchema }> }
  responses?: Record<string, unknown>
}

/**
 * Routes the fuzzers leave out, with why: a reset or a restore replaces the whole platform (the
 * fixture's apps and credentials with it), and a fault makes other routes fail on purpose. Their
 * inputs and effects are tested in test/integration/reset-snapshots.test.ts and faults.test.ts.
 */
const NOT_FUZZED = new Set(['POST /sandbox/reset', 'POST /sandbox/snapshots/{name}/restore', 'POST /sandbox/faults'])

/** Every operation of GET /v2/openapi.json: a new route is fuzzed without touching this file. */
export async function readRoutes(platform: TestPlatform): Promise<RouteSpec[]> {
  const response = await platform.app.inject({ method: 'GET', url: '/v2/openapi.json' })
  assert.equal(response.statusCode, 200)
  const doc = response.json() as { paths: Record<string, Record<string, OpenApiOperation>> }
  const routes: RouteSpec[] = []
  for (const [path, operations] of Object.entries(doc.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      if (NOT_FUZZED.has(`${method.toUpperCase()} ${path}`)) continue
      const schemes = (operation.security ?? []).flatMap((s) => Object.keys(s))
      const security: Security = schemes.includes('ServerApiKey')
        ? 'key'
        : schemes.includes('AccessToken')
          ? 'token'
          : schemes.includes('AdminToken')
            ? 'admin'
            : 'none'
      const parameters = operation.parameters ?? []
      routes.push({
        method: method.toUpperCase(),
        path,
        security,
        pathParams: parameters.filter((p) => p.in === 'path').map((p) => p.name),
        query: parameters.filter((p) => p.in === 'query').map((p) => ({ name: p.name, schema: p.schema })),
        body: operation.requestBody?.content['application/json']?.schema,
        responses: new Set(Object.keys(operation.responses ?? {}).map(Number)),
      })
    }
  }
  return routes
}

export function familyOf(method: string, url: string): Family {
  const path = url.split('?')[0] ?? ''
  if (path === '/ledger' || path.startsWith('/ledger/')) return 'ledger'
  // Another method on notify's path is an unknown route, answered by the platform's not-found handler.
  if (path === '/v2/in_app_notifications/notify' && method === 'POST') return 'notify'
  return 'platform'
}

/* ------------------------------------------------------------------ the fixture */

/** A value the fuzzer picks from the fixture's pools at run time (pools grow as the fuzzer creates things). */
class PoolRef {
  constructor(
    readonly pool: string,
    readonly n: number,
  ) {}
}

export type Pools = Record<string, string[]>

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
  for (const [alias, pool] of [
    ['user_uid', 'uid'],
    ['txid', 'hash'],
    ['address', 'account_id'],
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
function harvest(pools: Pools, body: unknown): void {
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

/* ------------------------------------------------------------------ arbitraries */

export const CONTENT_TYPES = [
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'application/json;charset=utf-16',
  'application/json; charset=latin1',
  'text/plain',
  'text/html',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=----fuzz',
  'application/octet-stream',
  'application/vnd.api+json',
  'application/json-patch+json',
  'application/jsonx',
  'application/problem+json',
  'application/json, text/plain',
  'json',
  '*/*',
  ';',
  '',
]

/** A string for a field or parameter of this name: one of the pool's real values, or a plausible one. */
const poolOr = (name: string, fallback: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> =>
  fc.oneof({ weight: 5, arbitrary: fc.nat().map((n) => new PoolRef(name, n)) }, { weight: 1, arbitrary: fallback })

const POOLED = new Set([
  'payment_id',
  'adId',
  'notification_id',
  'app_id',
  'key_id',
  'user_id',
  'uid',
  'user_uid',
  'account_id',
  'address',
  'hash',
  'txid',
  'sequence',
  'type',
  'accessToken',
  'username',
  'cursor',
])

const validAmount: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer({ min: 1, max: 50 }),
  fc
    .tuple(fc.integer({ min: 0, max: 20 }), fc.integer({ min: 1, max: 9_999_999 }))
    .map(([w, f]) => new RawJson(`${w}.${String(f).padStart(7, '0')}`)),
  fc.constantFrom(0.1, 0.0000001, 3.14),
)

/** Arbitraries for fields whose schema says little (Type.Unknown) or whose valid values come from the fixture. */
function namedField(name: string): fc.Arbitrary<unknown> | undefined {
  switch (name) {
    case 'amount':
      return fc.oneof(
        { weight: 8, arbitrary: validAmount },
        { weight: 2, arbitrary: rawNumber },
        { weight: 1, arbitrary: fc.double() },
        { weight: 1, arbitrary: fc.integer({ min: -1e9, max: 2e8 }) },
        { weight: 1, arbitrary: fc.constantFrom('1', '1.5', '0x10', '', ' 1', '1e2') },
      )
    case 'memo':
      return fc.oneof(fc.string({ maxLength: 40 }), fc.constantFrom('x'.repeat(1000), 'x'.repeat(1001), 'nul\u0000memo'))
    case 'metadata':
      return fc.oneof(
        { weight: 3, arbitrary: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }) },
        { weight: 1, arbitrary: fc.constantFrom({ big: 'x'.repeat(4090) }, { big: 'x'.repeat(5000) }, { nul: '\u0000' }) },
        { weight: 1, arbitrary: deepJson.map((deep) => new RawJson(`{"deep":${deep.text}}`)) },
      )
    case 'tx':
      return fc.oneof(
        fc.base64String({ maxLength: 400 }),
        fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b).toString('base64')),
      )
    case 'cursor':
      // A real one (harvested next_cursor, paging tokens), a notification cursor holding impossible contents, a number at an edge.
      return fc.oneof(
        { weight: 3, arbitrary: poolOr(name, hostileString) },
        { weight: 2, arbitrary: impossibleCursor },
        { weight: 2, arbitrary: numericEdge },
      )
    default:
      return POOLED.has(name) ? poolOr(name, hostileString) : undefined
  }
}

/** A value for a JSON schema: mostly valid, with hostile leaves now and then. */
function schemaValue(schema: JsonSchema, name: string, depth = 0): fc.Arbitrary<unknown> {
  const named = namedField(name)
  const valid = named ?? validFor(schema, name, depth)
  return fc.oneof({ weight: 8, arbitrary: valid }, { weight: 1, arbitrary: hostileLeaf })
}

function validFor(schema: JsonSchema, name: string, depth: number): fc.Arbitrary<unknown> {
  if (schema.const !== undefined) return fc.constant(schema.const)
  if (schema.enum !== undefined) return fc.constantFrom(...schema.enum)
  const branches = schema.anyOf ?? schema.oneOf
  if (branches !== undefined && branches.length > 0) return fc.oneof(...branches.map((b) => validFor(b, name, depth)))
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type
  switch (type) {
    case 'string': {
      const min = schema.minLength ?? 0
      const max = Math.min(schema.maxLength ?? 60, 60)
      const base =
        schema.pattern === undefined ? fc.string({ minLength: min, maxLength: max }) : fc.stringMatching(new RegExp(schema.pattern))
      return base.map((s) => s.slice(0, schema.maxLength ?? 60)).filter((s) => s.length >= min)
    }
    case 'integer':
    case 'number': {
      const min = schema.minimum ?? (schema.exclusiveMinimum === undefined ? -1000 : schema.exclusiveMinimum + 1)
      const max = schema.maximum ?? 1_000_000
      return type === 'integer' ? fc.integer({ min, max }) : fc.double({ min, max, noNaN: true })
    }
    case 'boolean':
      return fc.boolean()
    case 'null':
      return fc.constant(null)
    case 'array': {
      const items = schema.items ?? {}
      return fc.array(schemaValue(items, name, depth + 1), {
        minLength: schema.minItems ?? 0,
        maxLength: Math.min(schema.maxItems ?? 4, 4),
      })
    }
    case 'object': {
      const properties = schema.properties ?? {}
      const keys = Object.keys(properties)
      const record = fc.record(Object.fromEntries(keys.map((key) => [key, schemaValue(properties[key] ?? {}, key, depth + 1)])), {
        requiredKeys: schema.required ?? [],
      })
      // Now and then a required key is missing, or an unknown (maybe prototype) key is added.
      return fc
        .tuple(
          record,
          rarely(fc.constantFrom(...(keys.length > 0 ? keys : ['x'])), 8),
          rarely(fc.tuple(fc.oneof(hostileString, fc.constantFrom('__proto__', 'constructor', 'prototype')), hostileLeaf), 6),
        )
        .map(([value, drop, extra]) => {
          const out: Record<string, unknown> = { ...value }
          if (drop !== undefined) delete out[drop]
          if (extra !== undefined)
            Object.defineProperty(out, extra[0], { value: extra[1], enumerable: true, configurable: true, writable: true })
          return out
        })
    }
    default:
      return depth > 2 ? hostileLeaf : fc.jsonValue({ maxDepth: 2 })
  }
}

interface BodyCase {
  contentType: string | undefined
  payload: string | Buffer | undefined
}

const tape = fc.array(fc.nat({ max: 1000 }), { maxLength: 6 })

function bodyArb(schema: JsonSchema | undefined): fc.Arbitrary<{ value: unknown; tape: number[]; raw: string | undefined } | undefined> {
  const shaped = schema === undefined ? fc.jsonValue({ maxDepth: 2 }) : schemaValue(schema, '')
  return fc.oneof(
    { weight: schema === undefined ? 1 : 8, arbitrary: fc.record({ value: shaped, tape, raw: fc.constant(undefined) }) },
    { weight: 2, arbitrary: fc.record({ value: hostileLeaf, tape, raw: fc.constant(undefined) }) },
    { weight: 1, arbitrary: fc.record({ value: fc.constant(null), tape, raw: invalidJsonText }) },
    { weight: 1, arbitrary: fc.record({ value: fc.constant(null), tape, raw: deepJson.map((d) => d.text) }) },
    { weight: schema === undefined ? 8 : 1, arbitrary: fc.constant(undefined) },
  )
}

const contentTypeArb: fc.Arbitrary<string | undefined> = fc.oneof(
  { weight: 24, arbitrary: fc.constant('application/json') },
  { weight: 3, arbitrary: fc.constantFrom(...CONTENT_TYPES) },
  { weight: 1, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary-ascii', maxLength: 40 }) },
)

const CREDENTIAL_KINDS = [
  'none',
  'key',
  'otherKey',
  'revokedKey',
  'token',
  'otherToken',
  'noScopeToken',
  'expiredToken',
  'revokedToken',
] as const
type CredentialKind = (typeof CREDENTIAL_KINDS)[number]
type Credential = { kind: CredentialKind; wrongScheme: boolean } | { raw: string }

function credentialArb(security: Security): fc.Arbitrary<Credential> {
  const primary: CredentialKind = security === 'key' ? 'key' : security === 'token' ? 'token' : 'none'
  return fc.oneof(
    { weight: 8, arbitrary: fc.constant({ kind: primary, wrongScheme: false }) },
    { weight: 4, arbitrary: fc.record({ kind: fc.constantFrom(...CREDENTIAL_KINDS), wrongScheme: fc.boolean() }) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.constantFrom('Key ', 'Bearer ', 'key  ', 'BEARER ', 'Basic ', '', 'Key', 'Bearer\t'), hostileString)
        .map(([scheme, secret]) => ({ raw: `${scheme}${secret}` })),
    },
  )
}

/** X-Admin-Token: absent, right, wrong or hostile (only matters when the platform has one). */
const adminArb = fc.oneof(
  { weight: 6, arbitrary: fc.constant<'right' | 'none' | string>('right') },
  { weight: 2, arbitrary: fc.constant('none') },
  { weight: 2, arbitrary: hostileString.filter((s) => s !== 'right' && s !== 'none') },
)

const paramValue = (name: string): fc.Arbitrary<unknown> =>
  fc.oneof(
    { weight: 8, arbitrary: namedField(name) ?? hostileString },
    { weight: 2, arbitrary: hostileString },
    { weight: 1, arbitrary: fc.stringMatching(/^[0-9a-f]{1,80}$/) },
    { weight: 1, arbitrary: numericEdge },
  )

function queryArb(route: RouteSpec): fc.Arbitrary<unknown> {
  const documented = fc.record(
    Object.fromEntries(
      route.query.map((q) => [
        q.name,
        fc.oneof(
          validFor(q.schema, q.name, 0).map(String),
          namedField(q.name) ?? hostileString,
          fc.constantFrom('-1', '0', '1.5', '1e3', '201', '99999999999999999999', ' 5', '0x10', 'true', ''),
          numericEdge,
          hostileString,
        ),
      ]),
    ),
    { requiredKeys: [] },
  )
  const none: fc.Arbitrary<unknown> = fc.constant('')
  return fc.oneof(
    { weight: 4, arbitrary: none },
    { weight: route.query.length > 0 ? 5 : 0, arbitrary: documented.map((values): unknown => ({ values })) },
    { weight: 1, arbitrary: fc.dictionary(hostileString, hostileString, { maxKeys: 3 }).map((values): unknown => ({ values })) },
    {
      weight: 1,
      arbitrary: fc.oneof(
        fc.constantFrom(
          '__proto__[polluted]=1',
          '__proto__=1',
          'constructor[prototype][polluted]=1',
          'limit=1&limit=2',
          'order=asc&order=desc',
          '%',
          '%zz=%zz',
          'a=%E0%A4%A',
          '&&&',
          '=',
          'limit',
          'limit=',
          'cursor=%00',
          '?',
          'limit=%F0%9F%98%80',
          'limit=1&'.repeat(2000),
          `cursor=${'a'.repeat(100_000)}`,
          Array.from({ length: 2000 }, (_, i) => `k${i}=${i}`).join('&'),
        ),
        fc.string({ unit: 'binary-ascii', maxLength: 60 }),
      ),
    },
  )
}

interface FuzzCase {
  credential: Credential
  admin: string
  params: Array<{ value: unknown; raw: boolean }>
  query: unknown
  body: { value: unknown; tape: number[]; raw: string | undefined } | undefined
  contentType: string | undefined
  requestId: string | undefined
  method: string | undefined
  contentLength: string | undefined
}

export function caseArb(route: RouteSpec): fc.Arbitrary<FuzzCase> {
  return fc.record({
    credential: credentialArb(route.security),
    admin: adminArb,
    params: fc.tuple(
      ...route.pathParams.map((name) =>
        fc.record({
          value: paramValue(name),
          raw: fc.oneof({ weight: 5, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
        }),
      ),
    ),
    query: queryArb(route),
    body: bodyArb(route.body),
    contentType: contentTypeArb,
    requestId: rarely(hostileString, 4),
    // A Content-Length that lies about the body.
    contentLength: rarely(fc.constantFrom('0', '1', '-1', 'abc', '99999999', '1e3', ' 12', '12, 12'), 20),
    method: rarely(fc.constantFrom('HEAD', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'GET', 'POST', 'TRACE'), 12),
  }) as fc.Arbitrary<FuzzCase>
}

/* ------------------------------------------------------------------ running a case */

function resolve(value: unknown, pools: Pools): unknown {
  if (value instanceof PoolRef) {
    const pool = pools[value.pool] ?? []
    return pool.length === 0 ? 'no-such-thing' : pool[value.n % pool.length]
  }
  if (value instanceof RawJson || value === null || typeof value !== 'object') return value
  if (Array.isArray(value)) return value.map((v) => resolve(v, pools))
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(value))
    Object.defineProperty(out, k, { value: resolve(v, pools), enumerable: true, writable: true, configurable: true })
  return out
}

function credentialHeader(fixture: Fixture, credential: Credential): string | undefined {
  if ('raw' in credential) return credential.raw
  if (credential.kind === 'none') return undefined
  const secret = fixture.credentials[credential.kind]
  const isKey = credential.kind.endsWith('Key') || credential.kind === 'key'
  return `${isKey !== credential.wrongScheme ? 'Key' : 'Bearer'} ${secret}`
}

export function buildRequest(fixture: Fixture, route: RouteSpec, c: FuzzCase): { options: InjectOptions; exact: boolean } {
  let raw = false
  let path = route.path
  route.pathParams.forEach((name, i) => {
    const param = c.params[i]
    const value = String(resolve(param?.value, fixture.pools))
    const segment = param?.raw === true ? value : encodeSegment(value)
    // A raw parameter, a dot segment the URL parser folds away, or an empty one (a doubled or trailing
    // slash, served as if absent: docs/errors.md) may route elsewhere.
    if (param?.raw === true || segment === '.' || segment === '..' || segment === '') raw = true
    path = path.replace(`{${name}}`, segment)
  })
  const query = c.query as unknown
  let search = ''
  if (typeof query === 'string') search = query
  else if (typeof query === 'object' && query !== null) {
    const values = (query as { values: Record<string, unknown> }).values
    search = new URLSearchParams(
      Object.entries(values).map(([k, v]): [string, string] => [k, String(resolve(v, fixture.pools))]),
    ).toString()
  }
  const headers: Record<string, string> = {}
  const authorization = credentialHeader(fixture, c.credential)
  if (authorization !== undefined) headers.authorization = authorization
  if (fixture.adminToken !== undefined && c.admin !== 'none') headers['x-admin-token'] = c.admin === 'right' ? fixture.adminToken : c.admin
  if (c.requestId !== undefined) headers['x-request-id'] = c.requestId
  let payload: string | undefined
  if (c.body !== undefined) {
    payload = c.body.raw ?? jsonText(resolve(c.body.value, fixture.pools), c.body.tape)
    if (c.contentType !== undefined) headers['content-type'] = c.contentType
    if (c.contentLength !== undefined) headers['content-length'] = c.contentLength
  }
  const method = c.method ?? route.method
  return {
    options: { method: method as InjectOptions['method'], url: search === '' ? path : `${path}?${search}`, headers, payload },
    exact: !raw && method === route.method,
  }
}

export interface Runner {
  fixture: Fixture
  watch: StateWatch
}

/** Sends one request and checks the answer: JSON, never 5xx, a documented refusal in its family's shape, no state change on refusal. */
export async function exercise(
  runner: Runner,
  route: RouteSpec | undefined,
  options: InjectOptions,
  exact: boolean,
): Promise<LightMyRequestResponse | undefined> {
  const { fixture } = runner
  const response = await fuzzInject(fixture.platform.app, options)
  if (response === undefined) return undefined
  const status = response.statusCode
  const url = String(options.url)
  if (route !== undefined) countStatus(route, status, response.body)
  const payload = options.payload === undefined ? '' : String(options.payload)
  const sent =
    payload === '' ? '' : ` ${JSON.stringify(payload.slice(0, 120))}${payload.length > 120 ? `… (${payload.length} characters)` : ''}`
  const context = `${options.method} ${url.slice(0, 200)} [${String(options.headers?.['content-type'] ?? '-')}]${sent} → ${status}`
  assert.ok(status < 500, `${context}: ${response.body.slice(0, 500)}`)
  assert.ok(status >= 200 && status < 300 ? true : status >= 400, `${context}: only 2xx and 4xx`)
  assertNoPollution(context)

  if (status === 204) {
    // No Content (the sandbox's deletions): nothing to parse, and nothing may be sent.
    assert.equal(response.body, '', `${context}: a 204 has no body`)
    if (route !== undefined && exact) assert.ok(route.responses.has(204), `${context}: 204 is documented for the route`)
  } else if (options.method !== 'HEAD') {
    const body = parseJsonBody(response, context)
    if (status >= 400) {
      const family = familyOf(String(options.method), url)
      if (family === 'ledger') assertProblem(status, body, String(response.headers['content-type'] ?? ''), context)
      else if (family === 'notify') assertNotifyError(body, context)
      else assertPlatformError(status, body, context)
      if (route !== undefined && exact && !(status === 404 && (body as { error?: string }).error === 'not_found')) {
        assert.ok(route.responses.has(status) || status === 413 || status === 415, `${context}: ${status} is documented for the route`)
      }
    } else {
      if (route !== undefined && exact) assert.ok(route.responses.has(status), `${context}: ${status} is documented for the route`)
      harvest(fixture.pools, body)
    }
  }

  if (status >= 400) {
    await runner.watch.assertUnchanged(`${context} ${response.body.slice(0, 300)}`)
  } else {
    // Only these can take the fixture's credentials away (a revoked key or token, a withdrawn consent, a moved clock).
    if (/^\/sandbox\/(apps\/[^/]+\/(keys|users\/[^/]+\/consent)|tokens\/revoke|clock)/.test(url) && options.method !== 'GET') {
      await refreshCredentials(fixture)
    }
    await runner.watch.accepted()
  }
  return response
}

/* ------------------------------------------------------------------ deterministic hostile bodies */

/** A near-valid body for the schema, the base the corpus below mutates. */
function example(schema: JsonSchema | undefined, name: string, fixture: Fixture): unknown {
  if (schema === undefined) return {}
  const pool = fixture.pools[name]
  if (name === 'amount') return 1
  if (name === 'memo') return 'memo'
  if (name === 'metadata') return { k: 'v' }
  if (pool !== undefined && pool.length > 0) return pool[0]
  if (schema.const !== undefined) return schema.const
  if (schema.enum !== undefined) return schema.enum[0]
  const branch = (schema.anyOf ?? schema.oneOf)?.[0]
  if (branch !== undefined) return example(branch, name, fixture)
  switch (Array.isArray(schema.type) ? schema.type[0] : schema.type) {
    case 'string':
      if (name === 'title') return 'Title'
      if (name === 'subroute') return '/'
      if (name === 'url') return 'https://example.test/'
      if (name === 'name') return 'fuzz app'
      return 'x'.repeat(Math.max(1, schema.minLength ?? 1))
    case 'integer':
    case 'number':
      return schema.minimum ?? (schema.exclusiveMinimum === undefined ? 1 : schema.exclusiveMinimum + 1)
    case 'boolean':
      return true
    case 'array':
      return [example(schema.items, name, fixture)]
    case 'object':
      return Object.fromEntries(Object.entries(schema.properties ?? {}).map(([k, s]) => [k, example(s, k, fixture)]))
    default:
      return 1
  }
}

/** Paths to every leaf of an example body. */
function leaves(value: unknown, prefix: string[] = []): string[][] {
  if (Array.isArray(value)) return value.length === 0 ? [prefix] : leaves(value[0], [...prefix, '0'])
  if (typeof value === 'object' && value !== null && !(value instanceof RawJson)) {
    const entries = Object.entries(value)
    return entries.length === 0 ? [prefix] : entries.flatMap(([k, v]) => leaves(v, [...prefix, k]))
  }
  return [prefix]
}

function replaceAt(value: unknown, path: string[], replacement: unknown): unknown {
  if (path.length === 0) return replacement
  const [head, ...rest] = path as [string, ...string[]]
  if (Array.isArray(value)) return value.map((v, i) => (String(i) === head ? replaceAt(v, rest, replacement) : v))
  const record = value as Record<string, unknown>
  return { ...record, [head]: replaceAt(record[head], rest, replacement) }
}

const LEAF_HOSTILES: unknown[] = [
  ...[
    '1e999',
    '-1e999',
    '-0',
    '0.00000001',
    '1.12345678',
    '100000000.0000001',
    '100000001',
    '123456789012345678901234567890',
    '9007199254740993',
  ].map((t) => new RawJson(t)),
  -1,
  0,
  null,
  true,
  '',
  '\u0000',
  'a\u0000b',
  '\ud800',
  '😀'.repeat(30),
  'x'.repeat(70_000),
  [],
  {},
  JSON.parse('{"__proto__":{"polluted":true}}'),
  new RawJson(nested(10_000, 'array')),
  new RawJson(nested(10_000, 'object')),
  new RawJson(`[${'1,'.repeat(100_000)}1]`),
]

export function corpus(route: RouteSpec, fixture: Fixture): BodyCase[] {
  const limit =
    route.path === '/v2/in_app_notifications/notify' ? NOTIFY_BODY_LIMIT : route.path === '/ledger/transactions' ? 256 * 1024 : BODY_LIMIT
  const base = example(route.body, '', fixture)
  const baseText = JSON.stringify(base)
  const json = (payload: string | Buffer): BodyCase => ({ contentType: 'application/json', payload })
  const small: BodyCase[] = [
    json(nested(10_000, 'array')),
    json(nested(10_000, 'object')),
    json('{"__proto__":{"polluted":true}}'),
    json('{"constructor":{"prototype":{"polluted":true}}}'),
    json(`{"a":1,"a":2,${baseText.slice(1)}`),
    json(Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0xc0, 0x80, 0x22, 0x7d])),
    json(Buffer.from([0xef, 0xbb, 0xbf, ...Buffer.from(baseText)])),
    json(Buffer.from(baseText, 'utf16le')),
    json(`${baseText}\u0000`),
    json(`${baseText} ${baseText}`),
    json(''),
    json(' '),
    { contentType: undefined, payload: baseText },
    { contentType: 'application/x-www-form-urlencoded', payload: 'tx=AAAA&__proto__[polluted]=1&tx=BBBB' },
    { contentType: 'text/plain', payload: baseText },
    { contentType: 'multipart/form-data; boundary=----fuzz', payload: baseText },
  ]
  // A body on a route that takes none is refused or ignored the same way whatever its size: big bodies go to routes that read one.
  if (route.body === undefined) return [...small, json(`${baseText}${' '.repeat(limit + 1 - Buffer.byteLength(baseText))}`)]
  const cases: BodyCase[] = [
    ...small,
    json(nested(100_000, 'array')),
    // At the limit (the padding is JSON whitespace) and one byte over it.
    json(`${baseText}${' '.repeat(limit - Buffer.byteLength(baseText))}`),
    json(`${baseText}${' '.repeat(limit + 1 - Buffer.byteLength(baseText))}`),
    json(`{"pad":"${'p'.repeat(limit - 12)}"}`),
    json(`[${'{},'.repeat(Math.floor(limit / 3) - 2)}{}]`),
    ...CONTENT_TYPES.map((contentType) => ({ contentType, payload: baseText })),
  ]
  if (typeof base === 'object' && base !== null) {
    for (const path of leaves(base)) {
      if (path.length === 0) continue
      for (const hostile of LEAF_HOSTILES) cases.push(json(jsonText(replaceAt(base, path, hostile), [])))
    }
  }
  return cases
}

/* ------------------------------------------------------------------ numeric edges and cursors, every one */

const INT64_MAX = 2n ** 63n - 1n
/** What the server takes as an integer parameter: decimal digits only (leading zeros allowed). */
const decimalWithin = (text: string, min: bigint, max: bigint) => /^-?[0-9]{1,40}$/.test(text) && BigInt(text) >= min && BigInt(text) <= max

export interface EdgeCase {
  url: string
  /** What the parameter is, for messages. */
  what: string
  /** The value can be no record's, or breaks the parameter's schema: the answer must be a 400. */
  refused: boolean
}

/**
 * Every numeric edge in every numeric path or query parameter of the route (a ledger sequence,
 * a limit, a Horizon cursor), and the impossible notification cursors in every `cursor`. A
 * number outside the parameter's range or not written in decimal digits, and every impossible
 * cursor, must be a 400.
 */
export function edgeCases(route: RouteSpec, fixture: Fixture): EdgeCase[] {
  const cases: EdgeCase[] = []
  const base = routeUrl(route, fixture)
  for (const [i, name] of route.pathParams.entries()) {
    // Other path parameters are ids, for which a number is just an unknown id: the random cases send them numbers.
    if (name !== 'sequence') continue
    for (const edge of NUMERIC_EDGES) {
      let url = route.path
      for (const [j, other] of route.pathParams.entries()) {
        url = url.replace(`{${other}}`, encodeSegment(i === j ? edge : (fixture.pools[other]?.[0] ?? 'x')))
      }
      // A ledger sequence is an int64 (0 … 2^63 − 1).
      cases.push({ url, what: `path ${name}=${JSON.stringify(edge)}`, refused: !decimalWithin(edge, 0n, INT64_MAX) })
    }
  }
  for (const { name, schema } of route.query) {
    // Every notification cursor goes through one decoder: all of them on the client's list, a sample on the
    // sandbox's views and on Horizon's lists (whose cursors are numbers).
    const every = route.path === '/v2/client/notifications' ? 1 : route.path.startsWith('/ledger') ? 16 : 4
    const cursors = impossibleCursors().filter((_, k) => k % every === 0)
    const values = name === 'cursor' ? [...NUMERIC_EDGES, ...cursors] : NUMERIC_EDGES
    for (const value of values) {
      let refused: boolean
      if (name === 'cursor') {
        refused = route.path.startsWith('/ledger') ? !decimalWithin(value, 0n, INT64_MAX) : true
      } else if (schema.type === 'integer' || schema.type === 'number') {
        refused = !decimalWithin(value, BigInt(schema.minimum ?? -(2 ** 53)), BigInt(schema.maximum ?? 2 ** 53))
      } else continue
      cases.push({
        url: `${base}?${new URLSearchParams({ [name]: value }).toString()}`,
        what: `query ${name}=${JSON.stringify(value)}`,
        refused,
      })
    }
  }
  return cases
}

/* ------------------------------------------------------------------ running the properties */

export function routeUrl(route: RouteSpec, fixture: Fixture): string {
  let path = route.path
  for (const name of route.pathParams) path = path.replace(`{${name}}`, encodeSegment(fixture.pools[name]?.[0] ?? 'x'))
  return path
}

export async function fuzzRoutes(
  runner: Runner,
  routes: RouteSpec[],
  runs: number,
  t: { test: (name: string, fn: () => Promise<void>) => Promise<void> },
) {
  const { fixture } = runner
  for (const route of routes) {
    await t.test(`${route.method} ${route.path}`, async () => {
      await runner.watch.accepted()
      await assertProperty(
        fc.asyncProperty(caseArb(route), async (c) => {
          const { options, exact } = buildRequest(fixture, route, c)
          await exercise(runner, route, options, exact)
        }),
        fcParams(runs),
      )
      const check = await fixture.platform.app.inject({
        method: 'GET',
        url: '/sandbox/ledger/check',
        headers: fixture.adminToken === undefined ? {} : { 'x-admin-token': fixture.adminToken },
      })
      assert.equal(check.json().ok, true, `ledger invariants after ${route.method} ${route.path}: ${check.body}`)
    })
  }
}

/* ------------------------------------------------------------------ what came back, per route */

const STATS: Record<string, { accepted: number; all: number; refusals: Record<string, number> }> = {}

function countStatus(route: RouteSpec, status: number, body: string): void {
  const key = `${route.method} ${route.path}`
  const entry = STATS[key] ?? { accepted: 0, all: 0, refusals: {} }
  STATS[key] = entry
  entry.all += 1
  if (status < 300) {
    entry.accepted += 1
    return
  }
  let code = ''
  try {
    const parsed = JSON.parse(body) as { error?: unknown; type?: unknown }
    code = String(parsed.type ?? parsed.error ?? '')
      .replace('https://stellar.org/horizon-errors/', '')
      .slice(0, 40)
  } catch {}
  entry.refusals[`${status} ${code}`] = (entry.refusals[`${status} ${code}`] ?? 0) + 1
}

/** With PLINTH_FUZZ_STATS=1: how many inputs each route accepted, and which refusals the others got. */
export function printRouteStats(): void {
  if (process.env.PLINTH_FUZZ_STATS === undefined) return
  for (const [route, { accepted, all, refusals }] of Object.entries(STATS)) {
    console.log(`# ${route}: ${accepted}/${all} accepted; ${JSON.stringify(refusals)}`)
  }
}
