import { jsonText, nested, RawJson } from '../fuzz.js'
import { CONTENT_TYPES } from './arbitraries.js'
import { type Fixture, JSON_POOLS } from './fixture.js'
import { bodyLimit, type JsonSchema, type RouteSpec } from './routes.js'

/** Deterministic hostile bodies for a route: a near-valid example of its schema, mutated every way the random cases may miss. */

export interface BodyCase {
  contentType: string | undefined
  payload: string | Buffer | undefined
}

/** A near-valid body for the schema, the base the corpus below mutates. */
function example(schema: JsonSchema | undefined, name: string, fixture: Fixture): unknown {
  if (schema === undefined) return {}
  const pool = fixture.pools[name]
  if (name === 'amount') return 1
  if (name === 'memo') return 'memo'
  if (name === 'metadata') return { k: 'v' }
  if (pool !== undefined && pool.length > 0) return JSON_POOLS.has(name) ? JSON.parse(pool[0] ?? 'null') : pool[0]
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
  const limit = bodyLimit(route)
  const base = example(route.body, '', fixture)
  // A snapshot file's own name must be a snapshot name for the import to read further (the corpus sends no ?name=).
  if (route.path === '/sandbox/snapshots/import') (base as Record<string, unknown>).name = 'fuzz-import'
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
