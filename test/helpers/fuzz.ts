import assert from 'node:assert/strict'
import fc from 'fast-check'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { type Kysely, sql } from 'kysely'
import { ERROR_STATUS } from '../../src/core/errors.js'
import type { DB } from '../../src/db/schema.js'

/**
 * Shared pieces of the property tests (test/property): run counts, a fixed seed, hostile
 * values and JSON texts, a cheap fingerprint of the database, and the checks every answer
 * must pass. PLINTH_FUZZ_RUNS scales the runs up for a long run; PLINTH_FUZZ_SEED replays one.
 */

function positiveInteger(name: string): number | undefined {
  const text = process.env[name]
  if (text === undefined || text === '') return undefined
  const value = Number(text)
  if (!Number.isSafeInteger(value) || value < 1) throw new Error(`${name} must be a positive integer, got ${JSON.stringify(text)}`)
  return value
}

/** Runs of each property: small enough for CI, scaled by PLINTH_FUZZ_RUNS for the long run. */
export function fuzzRuns(ciDefault: number): number {
  return positiveInteger('PLINTH_FUZZ_RUNS') ?? ciDefault
}

/** Fixed, so CI failures reproduce; fast-check prints it (and the path) on failure. */
export const FUZZ_SEED = positiveInteger('PLINTH_FUZZ_SEED') ?? 20_261_122

export function fcParams<T = unknown>(runs: number): fc.Parameters<T> {
  return { numRuns: runs, seed: FUZZ_SEED, endOnFailure: false, verbose: 0 }
}

/** fc.assert, with fast-check's report (seed, path, counterexample) cut to a readable length. */
export async function assertProperty<T>(property: fc.IAsyncProperty<T>, params: fc.Parameters<T>): Promise<void> {
  try {
    await fc.assert(property, params)
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    const cut = message.length > 6000 ? `${message.slice(0, 6000)}… (${message.length - 6000} more characters)` : message
    throw new Error(cut, { cause: (error as { cause?: unknown }).cause })
  }
}

/** `arbitrary` one time in `oneIn`, else undefined (fc.option's freq is the other way round: nil one time in freq). */
export function rarely<T>(arbitrary: fc.Arbitrary<T>, oneIn: number): fc.Arbitrary<T | undefined> {
  return fc.oneof({ weight: oneIn - 1, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary })
}

/** How many requests the fuzzers sent, to report, and how many of each status class came back. */
export const tried = { requests: 0, byClass: {} as Record<string, number> }

/**
 * A fuzz suite's own count: call it when the suite starts; the function it returns answers the
 * requests sent since then, by status class, and the seconds taken. A process may run several
 * suites one after another (scripts/test.mjs runs many test files in one process).
 */
export function triedSince(): () => string {
  const started = Date.now()
  const requests = tried.requests
  const byClass = { ...tried.byClass }
  return () => {
    const classes = Object.entries(tried.byClass)
      .map(([k, n]) => [k, n - (byClass[k] ?? 0)] as const)
      .filter(([, n]) => n > 0)
      .sort()
      .map(([k, n]) => `${k} ${n}`)
      .join(', ')
    return `${tried.requests - requests} requests (${classes}) in ${((Date.now() - started) / 1000).toFixed(1)} s`
  }
}

/** app.inject, counted; answers undefined when light-my-request itself refuses the options (an invalid header or URL). */
export async function fuzzInject(app: FastifyInstance, options: InjectOptions): Promise<LightMyRequestResponse | undefined> {
  let response: LightMyRequestResponse
  try {
    response = await app.inject(options)
  } catch (error) {
    const code = (error as { code?: unknown }).code
    if (code === 'ERR_INVALID_CHAR' || code === 'ERR_INVALID_URL' || code === 'ERR_HTTP_INVALID_HEADER_VALUE') return undefined
    if (error instanceof TypeError && /Invalid URL|header/i.test(error.message)) return undefined
    throw error
  }
  tried.requests += 1
  const statusClass = `${Math.floor(response.statusCode / 100)}xx`
  tried.byClass[statusClass] = (tried.byClass[statusClass] ?? 0) + 1
  return response
}

/**
 * encodeURIComponent, except that a lone surrogate (which it refuses) is written as the
 * percent-encoded bytes of its WTF-8 form: a path segment the server cannot decode as UTF-8.
 */
export function encodeSegment(value: string): string {
  try {
    return encodeURIComponent(value)
  } catch {
    let out = ''
    for (const char of value) {
      const code = char.codePointAt(0) ?? 0
      if (code >= 0xd800 && code <= 0xdfff) {
        out += `%${(0xe0 | (code >> 12)).toString(16).toUpperCase()}%${(0x80 | ((code >> 6) & 0x3f)).toString(16).toUpperCase()}%${(0x80 | (code & 0x3f)).toString(16).toUpperCase()}`
      } else out += encodeURIComponent(char)
    }
    return out
  }
}

/* ------------------------------------------------------------------ database fingerprint */

let tableNames: string[] | undefined

/** Row count and an md5 of every row of every table, in one statement: a refused request must leave it unchanged. */
export async function fingerprint(db: Kysely<DB>): Promise<Map<string, string>> {
  if (tableNames === undefined) {
    const tables = await sql<{ table_name: string }>`
      select table_name from information_schema.tables
      where table_schema = current_schema() and table_type = 'BASE TABLE' order by table_name`.execute(db)
    // The request log records refused calls too, by design (written in the background, after the
    // answer): it is the record of requests, not state a request may change. Each process's sandbox
    // heartbeat (sandbox/sandbox-sync.ts) rewrites its own row on a timer: no request's doing.
    const unfingerprinted = new Set(['request_log', 'sandbox_processes'])
    tableNames = tables.rows.map((row) => row.table_name).filter((name) => !unfingerprinted.has(name))
  }
  const parts = tableNames.map((name) =>
    // The revocation feed is pruned of old events by every process's timer (all of them, once the
    // platform clock has moved far): what a request could change there is only what was added, so
    // its fingerprint is its id sequence, which only an insert moves.
    name === 'credential_events'
      ? sql`select ${name} as t, last_value::text || ':' || is_called::text as h from credential_events_id_seq`
      : name === 'api_keys'
        ? // A key's last use (recorded once a minute, refused request or not) is the record of its use, as the request log is.
          sql`select ${name} as t, count(*)::text || ':' || md5(coalesce(string_agg(x::text, '|' order by x::text), '')) as h
              from (select id, app_id, key_hash, key_prefix, created_at, revoked_at, name from api_keys) x`
        : sql`select ${name} as t, count(*)::text || ':' || md5(coalesce(string_agg(x::text, '|' order by x::text), '')) as h from ${sql.table(name)} x`,
  )
  const rows = await sql<{ t: string; h: string }>`${sql.join(parts, sql` union all `)}`.execute(db)
  return new Map(rows.rows.map((row) => [row.t, row.h]))
}

export function changedTables(before: Map<string, string>, after: Map<string, string>): string[] {
  return [...new Set([...before.keys(), ...after.keys()])].filter((name) => before.get(name) !== after.get(name))
}

/** The next transaction id: unchanged, no transaction wrote anything (a write needs a transaction id). */
async function nextXid(db: Kysely<DB>): Promise<string> {
  const result = await sql<{ xmax: string }>`select pg_snapshot_xmax(pg_current_snapshot())::text as xmax`.execute(db)
  return result.rows[0]?.xmax ?? ''
}

/**
 * Watches the database across requests: `accepted()` after a 2xx takes a new baseline,
 * `assertUnchanged()` after a refusal compares with it. A refusal that assigned no transaction
 * id wrote nothing, so the row-by-row fingerprint runs only when the transaction id moved (a
 * rolled-back write, or another process on the same PostgreSQL server).
 */
export class StateWatch {
  private xid = ''
  private rows = new Map<string, string>()
  /** Row-by-row comparisons made (the rest were settled by the transaction id). */
  compared = 0

  constructor(private readonly db: Kysely<DB>) {}

  async accepted(): Promise<void> {
    const xid = await nextXid(this.db)
    if (xid === this.xid && this.rows.size > 0) return
    this.xid = xid
    this.rows = await fingerprint(this.db)
  }

  async assertUnchanged(context: string): Promise<void> {
    const xid = await nextXid(this.db)
    if (xid === this.xid) return
    this.compared += 1
    const rows = await fingerprint(this.db)
    assert.deepEqual(changedTables(this.rows, rows), [], `${context}: a refused request changed the database`)
    this.xid = xid
  }
}

/* ------------------------------------------------------------------ hostile values */

/** A fragment of JSON text emitted as is: numbers JSON.stringify cannot write (1e999, 8 decimals, 30 digits). */
export class RawJson {
  constructor(readonly text: string) {}
  toJSON(): string {
    return `RawJson(${this.text})`
  }
}

const RAW_NUMBERS = [
  '1e999',
  '-1e999',
  '1e-999',
  '-0',
  '-0.0',
  '0.00000001',
  '1.12345678',
  '0.10000000',
  '100000000.0000001',
  '99999999.9999999',
  '100000000',
  '100000001',
  '123456789012345678901234567890',
  '-123456789012345678901234567890.5',
  '1E2',
  '1e+2',
  '0.0000001',
  '1.0000000000000000000001',
  '9007199254740993',
  '-9223372036854775809',
]

export const rawNumber = fc.constantFrom(...RAW_NUMBERS).map((text) => new RawJson(text))

const HOSTILE_STRINGS = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  'null',
  'undefined',
  '__proto__',
  'constructor',
  'prototype',
  'hasOwnProperty',
  'toString',
  '../../../../etc/passwd',
  '%00',
  '%2e%2e%2f',
  "' OR '1'='1' --",
  '"; drop table payments; --',
  '0',
  '-1',
  'NaN',
  'Infinity',
  '1e400',
  '\ud800',
  '\udfff\ud800',
  '\u202e\u0647\u0648',
  '😀'.repeat(40),
  'ǅ̴̡̛̣̹̫̦',
  '\r\n\t',
  '<script>alert(1)</script>',
  `$${'{'}process.exit()}`,
  'a'.repeat(64),
  'a'.repeat(65),
  'a'.repeat(200),
  'a'.repeat(201),
  'x'.repeat(5000),
  '\u00ff\u00fe',
  '\\',
  '/',
  '?',
  '#',
]

/** Strings a careless handler trips on: NUL, lone surrogates, huge, unicode, injection, names of Object.prototype. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary-ascii', minLength: 100, maxLength: 3000 }) },
)

/** A hostile JSON value of any type: a wrong type, a non-finite or over-precise number, a string from above, a prototype key. */
export const hostileLeaf: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 3, arbitrary: hostileString },
  { weight: 2, arbitrary: rawNumber },
  { weight: 2, arbitrary: fc.double() },
  { weight: 1, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.constantFrom(null, true, false, 0, -1, [], {}, [null], [[]]) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(JSON.parse('{"__proto__": {"polluted": true}}'), { constructor: { prototype: { polluted: true } } }),
  },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
)

/** Text of `depth` nested arrays or objects, optionally around `inner`. */
export function nested(depth: number, kind: 'array' | 'object', inner = '1'): string {
  return kind === 'array' ? `${'['.repeat(depth)}${inner}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}${inner}${'}'.repeat(depth)}`
}

/** A deep JSON value as raw text (up to 12,000 levels). */
export const deepJson: fc.Arbitrary<RawJson> = fc
  .tuple(fc.integer({ min: 100, max: 12_000 }), fc.constantFrom<'array' | 'object'>('array', 'object'))
  .map(([depth, kind]) => new RawJson(nested(depth, kind)))

const DUPLICATE_VALUES = ['null', '"x"', '-1', '1e999', '{}', '[]', 'true', '"\\u0000"']

/**
 * JSON text of `value`, with duplicate keys and prototype keys woven in as the tape says:
 * hostile JSON that JSON.stringify cannot write. RawJson fragments are emitted as they are.
 */
export function jsonText(value: unknown, tape: readonly number[]): string {
  let position = 0
  const next = (): number => {
    // 4 weaves nothing in: an empty tape gives the plain JSON text.
    const t = tape.length === 0 ? 4 : (tape[position % tape.length] ?? 4)
    position += 1
    return t
  }
  const emit = (v: unknown): string => {
    if (v instanceof RawJson) return v.text
    if (v === null || v === undefined) return 'null'
    if (typeof v === 'number') {
      if (Number.isNaN(v)) return 'null'
      if (!Number.isFinite(v)) return v > 0 ? '1e999' : '-1e999'
      return Object.is(v, -0) ? '-0' : JSON.stringify(v)
    }
    if (typeof v === 'string' || typeof v === 'boolean') return JSON.stringify(v)
    if (Array.isArray(v)) return `[${v.map(emit).join(',')}]`
    const entries = Object.entries(v as Record<string, unknown>).map(([k, x]) => [JSON.stringify(k), emit(x)] as const)
    const texts = entries.map(([k, x]) => `${k}:${x}`)
    const t = next()
    const first = entries[0]
    if (first !== undefined && t % 5 === 0) {
      const other = DUPLICATE_VALUES[t % DUPLICATE_VALUES.length] ?? 'null'
      // Before: the valid value wins (JSON.parse keeps the last); after: the hostile one does.
      if (t % 2 === 0) texts.unshift(`${first[0]}:${other}`)
      else texts.push(`${first[0]}:${other}`)
    }
    if (t % 17 === 1) texts.push('"__proto__":{"polluted":true,"admin":true}')
    if (t % 17 === 2) texts.push('"constructor":{"prototype":{"polluted":true}}')
    if (t % 17 === 3) texts.unshift('"__proto__":null')
    return `{${texts.join(',')}}`
  }
  return emit(value)
}

/** Text that is not JSON, or not quite. */
export const invalidJsonText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '{',
    '}',
    '{"a":',
    '{"a" 1}',
    "{'a': 1}",
    '{"a":1,}',
    '[1,2',
    'NaN',
    'Infinity',
    'undefined',
    '{"a":NaN}',
    '{"a":0x10}',
    '{"a":01}',
    '{"a":.5}',
    '{"a":"\u0000"}',
    '\u0000',
    '\ufeff{}',
    '{"a":"\\ud800"}',
    '{"a":"\\x41"}',
    '// comment\n{}',
    'null',
    '"string"',
    '42',
    'true',
    '[]',
    ' ',
    '\n\n',
  ),
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.json().map((text) => text.slice(0, Math.max(0, text.length - 1))),
)

/* ------------------------------------------------------------------ answer checks */

/** The error body of the Platform API and the sandbox API: `{error, error_message}`, the code from ERROR_STATUS with its status. */
export function assertPlatformError(status: number, body: unknown, context: string): void {
  assert.ok(typeof body === 'object' && body !== null && !Array.isArray(body), `${context}: error body is an object`)
  const { error, error_message } = body as { error?: unknown; error_message?: unknown }
  assert.equal(typeof error, 'string', `${context}: error is a string`)
  assert.equal(typeof error_message, 'string', `${context}: error_message is a string`)
  assert.ok(Object.hasOwn(ERROR_STATUS, error as string), `${context}: ${String(error)} is a documented code`)
  assert.equal(ERROR_STATUS[error as keyof typeof ERROR_STATUS], status, `${context}: ${String(error)} carries its status`)
}

/** Notify's own error body: `{error: "<text>"}` and nothing else. */
export function assertNotifyError(body: unknown, context: string): void {
  assert.ok(typeof body === 'object' && body !== null && !Array.isArray(body), `${context}: error body is an object`)
  assert.deepEqual(Object.keys(body as object), ['error'], `${context}: notify answers {error}`)
  assert.equal(typeof (body as { error: unknown }).error, 'string', `${context}: error is a string`)
}

const PROBLEM_KINDS = new Set([
  'bad_request',
  // GET /ledger/accounts without exactly one filter, as Horizon (docs/ledger.md).
  'invalid_accounts_params',
  'transaction_malformed',
  'transaction_failed',
  'not_found',
  'method_not_allowed',
  'payload_too_large',
  'unsupported_media_type',
])

/** Horizon's problem document, with its status in the body. */
export function assertProblem(status: number, body: unknown, contentType: string, context: string): void {
  assert.match(contentType, /^application\/problem\+json/, `${context}: problem content type`)
  assert.ok(typeof body === 'object' && body !== null && !Array.isArray(body), `${context}: problem is an object`)
  const problem = body as { type?: unknown; title?: unknown; status?: unknown; detail?: unknown }
  assert.equal(typeof problem.type, 'string', `${context}: problem type`)
  const kind = String(problem.type).replace('https://stellar.org/horizon-errors/', '')
  assert.ok(PROBLEM_KINDS.has(kind), `${context}: ${String(problem.type)} is a documented problem`)
  assert.equal(typeof problem.title, 'string', `${context}: problem title`)
  assert.equal(typeof problem.detail, 'string', `${context}: problem detail`)
  assert.equal(problem.status, status, `${context}: problem status matches the response`)
}

/** The body as JSON; fails the property when it is not JSON. */
export function parseJsonBody(response: LightMyRequestResponse, context: string): unknown {
  const contentType = String(response.headers['content-type'] ?? '')
  assert.match(
    contentType,
    /^application\/(problem\+)?json/,
    `${context}: JSON content type, got ${contentType || 'none'}: ${response.body.slice(0, 200)}`,
  )
  try {
    return JSON.parse(response.body)
  } catch {
    assert.fail(`${context}: the body is not JSON: ${response.body.slice(0, 200)}`)
  }
}

/** Nothing reached Object.prototype. */
export function assertNoPollution(context: string): void {
  assert.deepEqual(Object.keys(Object.prototype), [], `${context}: Object.prototype polluted`)
  assert.equal(({} as Record<string, unknown>).polluted, undefined, `${context}: Object.prototype polluted`)
}

/* ------------------------------------------------------------------ numeric edges and cursors */

/**
 * Numbers a path or query parameter may carry, as text: the edges of int64 and uint64 (what a
 * bigint column or a Horizon paging token holds), signs, exponents, fractions, hex, leading
 * zeros, spaces, and numbers far past any column.
 */
export const NUMERIC_EDGES = [
  '9223372036854775807',
  '9223372036854775808',
  '18446744073709551615',
  '18446744073709551616',
  '-9223372036854775808',
  '-9223372036854775809',
  '4294967295',
  '4294967296',
  '2147483648',
  '9007199254740993',
  '-1',
  '0',
  '-0',
  '+1',
  '1e3',
  '1e308',
  '1e309',
  '1.5',
  '1.0',
  '0x10',
  '007',
  '00000000000000000001',
  ' 1',
  '1 ',
  `1${'0'.repeat(40)}`,
  'Infinity',
  '-Infinity',
  'NaN',
]

export const numericEdge: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...NUMERIC_EDGES) },
  { weight: 1, arbitrary: fc.bigInt({ min: -(2n ** 65n), max: 2n ** 65n }).map(String) },
  { weight: 1, arbitrary: fc.double().map(String) },
)

/** Times a notification cursor may hold that no backend can store or no notification can have, and the edges of the range. */
const CURSOR_TIMES = [
  '-271821-04-20T00:00:00.000Z',
  '+275760-09-13T00:00:00.000Z',
  '-004713-01-01T00:00:00.000Z',
  '-004714-11-24T00:00:00.000Z',
  '+200000-12-31T00:00:00.000Z',
  '+294276-12-31T23:59:59.999Z',
  '+010000-01-01T00:00:00.000Z',
  '0000-01-01T00:00:00.000Z',
  '1969-12-31T23:59:59.999Z',
  '2026-02-30T00:00:00.000Z',
  '2026-01-01',
  '2026-01-01T00:00:00Z',
  '9223372036854775808',
  '-1',
  'NaN',
  '',
]
/** Ids a cursor may hold: none, NUL, too long, huge or negative numbers, a separator, a lone surrogate. */
const CURSOR_IDS = ['', '\u0000', 'ntf_\u0000x', 'x'.repeat(65), '9223372036854775808', '-1', 'a|b', '\ud800', '\ufffd', ' ', 'ntf_x']
const CURSOR_SEPARATORS = ['|', '', '||', '\u0000', '|x|']

/** A notification cursor's decoded text, encoded as the server encodes it (base64url of UTF-8). */
export const encodeNotificationCursor = (decoded: string | Buffer): string =>
  (typeof decoded === 'string' ? Buffer.from(decoded, 'utf8') : decoded).toString('base64url')

/**
 * Notification cursors (base64url of `<ISO time>|<id>`) whose decoded contents are impossible:
 * out-of-range or malformed dates, huge, negative or over-long ids, NUL, a missing or extra
 * separator, bytes that are not UTF-8. None is a cursor the server gave out.
 */
export const impossibleCursor: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc
      .tuple(fc.constantFrom(...CURSOR_TIMES), fc.constantFrom(...CURSOR_SEPARATORS), fc.constantFrom(...CURSOR_IDS))
      .filter(([time, separator, id]) => !(time.length === 24 && separator === '|' && id === 'ntf_x' && time.startsWith('2026-01')))
      .map(([time, separator, id]) => encodeNotificationCursor(`${time}${separator}${id}`)),
  },
  {
    weight: 2,
    // Any time a JS Date holds, most of them outside 1970..9999.
    arbitrary: fc
      .tuple(fc.integer({ min: -8.64e15, max: 8.64e15 }), fc.constantFrom(...CURSOR_IDS))
      .filter(([ms]) => ms < 0 || ms > Date.UTC(9999, 11, 31, 23, 59, 59, 999))
      .map(([ms, id]) => encodeNotificationCursor(`${new Date(ms).toISOString()}|${id === '' ? 'ntf_x' : id}`)),
  },
  {
    weight: 1,
    // A real-looking cursor followed by bytes that are not UTF-8.
    arbitrary: fc
      .uint8Array({ minLength: 1, maxLength: 8 })
      .map((bytes) =>
        encodeNotificationCursor(Buffer.concat([Buffer.from('2026-01-01T00:00:00.000Z|ntf_'), Buffer.from([0xff, ...bytes])])),
      ),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }).map(encodeNotificationCursor) },
)

/** Each impossible time with each id, and with each separator, encoded: the deterministic sweep. */
export function impossibleCursors(): string[] {
  const out: string[] = []
  for (const time of CURSOR_TIMES) {
    for (const id of CURSOR_IDS) if (id !== 'ntf_x') out.push(encodeNotificationCursor(`${time}|${id}`))
    for (const separator of CURSOR_SEPARATORS) out.push(encodeNotificationCursor(`${time}${separator}ntf_x`))
  }
  // A valid time with each impossible id and separator.
  for (const id of CURSOR_IDS) if (id !== 'ntf_x') out.push(encodeNotificationCursor(`2026-01-01T00:00:00.000Z|${id}`))
  for (const separator of CURSOR_SEPARATORS)
    if (separator !== '|') out.push(encodeNotificationCursor(`2026-01-01T00:00:00.000Z${separator}ntf_x`))
  out.push(encodeNotificationCursor(Buffer.concat([Buffer.from('2026-01-01T00:00:00.000Z|'), Buffer.from([0xff, 0xfe, 0xc0, 0x80])])))
  return out
}
