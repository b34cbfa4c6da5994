import fc from 'fast-check'
import {
  deepJson,
  hostileLeaf,
  hostileString,
  impossibleCursor,
  invalidJsonText,
  numericEdge,
  RawJson,
  rarely,
  rawNumber,
} from '../fuzz.js'
import { PoolRef } from './fixture.js'
import type { JsonSchema, RouteSpec, Security } from './routes.js'

/**
 * The route fuzzers' arbitraries: credentials, the admin token, path parameters, query strings,
 * content types and bodies (mostly shaped by the route's schema, with hostile leaves, duplicate
 * and prototype keys woven into the raw JSON text), drawn together as one case per request.
 */

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
  // GET /ledger/accounts?signer=G…|sponsor=G…: account ids.
  'signer',
  'sponsor',
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
/** The parts of a snapshot file (POST /sandbox/snapshots/import) no random draw gets right: mostly the fixture's own export's. */
const FROM_EXPORT = new Set(['plinth_snapshot', 'schema_version', 'sequences', 'tables'])

function schemaValue(schema: JsonSchema, name: string, depth = 0): fc.Arbitrary<unknown> {
  const named = namedField(name)
  const drawn = named ?? validFor(schema, name, depth)
  const valid = FROM_EXPORT.has(name)
    ? fc.oneof({ weight: 3, arbitrary: fc.nat().map((n) => new PoolRef(name, n)) }, { weight: 1, arbitrary: drawn })
    : drawn
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
export type Credential = { kind: CredentialKind; wrongScheme: boolean } | { raw: string }

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

export interface FuzzCase {
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
