/**
 * Production's own routes under hostile input (property): every /account, /portal and /operator
 * operation of the OpenAPI document, called with a live session of someone who holds every role
 * (a developer owning an app, and an operator), with random and hostile path parameters, query
 * strings and bodies. Strings carry NUL, lone surrogates, a BOM, huge text; numbers are 2^63, -1,
 * 1e999, fractions; cursors decode to impossible positions. Every answer is JSON; an error is a
 * documented code with its status; nothing is a 5xx; a refusal leaves the database as it was,
 * but for what records a request rather than changes state (a session's last use, sign-in
 * attempts counted, a key's last use).
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import fc from 'fast-check'
import { adminOf, cookieOf, SESSION_COOKIE, signedUp } from '../helpers/accounts.js'
import {
  assertPlatformError,
  assertProperty,
  changedTables,
  encodeSegment,
  fcParams,
  fingerprint,
  fuzzInject,
  fuzzRuns,
  hostileLeaf,
  hostileString,
  jsonText,
  NUMERIC_EDGES,
  numericEdge,
  triedSince,
} from '../helpers/fuzz.js'
import { startPlatform, type TestPlatform } from '../helpers/platform.js'
import { type JsonSchema, type RouteSpec, readRoutes } from '../helpers/route-fuzz/routes.js'

const RUNS = fuzzRuns(20)
/** Ending the caller's own session would make every later case a 401: their effects are tested in the accounts tests. */
const NOT_FUZZED = new Set(['POST /account/signout', 'POST /account/signout-everywhere'])
/** Tables a refused request may write by design: the session's last use, attempts counted, a key's last use, the first refusal over a limit. */
const RECORDS = new Set(['account_sessions', 'signin_throttle', 'audit_log'])

/** A cursor of this platform's shape (base64url of kind|scope|n|id) naming an impossible position. */
const impossiblePlinthCursor = fc
  .tuple(
    fc.constantFrom('audit', 'users', 'apps', 'payments', 'requests', 'x'),
    fc.constantFrom('', 'app_none'),
    fc.constantFrom(...NUMERIC_EDGES, ''),
    fc.oneof(fc.constantFrom('', 'a|b', '\u0000', '💥'), hostileString),
  )
  .map((parts) => Buffer.from(parts.join('|')).toString('base64url'))

/** Values a field of this schema plausibly takes, so that the other fields of a body get checked too. */
function plausibleFor(schema: JsonSchema | undefined): fc.Arbitrary<unknown> {
  const plausible: fc.Arbitrary<unknown>[] = []
  if (schema?.enum !== undefined) plausible.push(fc.constantFrom(...schema.enum))
  if (schema?.const !== undefined) plausible.push(fc.constant(schema.const))
  for (const option of [...(schema?.anyOf ?? []), ...(schema?.oneOf ?? [])])
    if (option.const !== undefined) plausible.push(fc.constant(option.const))
  const type = Array.isArray(schema?.type) ? schema?.type[0] : schema?.type
  if (type === 'string')
    plausible.push(fc.constantFrom('x', 'Teapots', 'lantern orbit velvet quarry', 'https://example.com/', '1', '\ufeffx'))
  if (type === 'boolean') plausible.push(fc.boolean())
  if (type === 'integer' || type === 'number') plausible.push(fc.constantFrom(0, 1, -1, 2 ** 63, 1.5))
  if (type === 'array') plausible.push(fc.constantFrom([], ['username'], ['payments', 'username']))
  return plausible.length === 0 ? hostileLeaf : fc.oneof(...plausible)
}

/** A value for one schema property: a plausible one, or a hostile one. */
function valueFor(schema: JsonSchema | undefined): fc.Arbitrary<unknown> {
  return fc.oneof({ weight: 2, arbitrary: plausibleFor(schema) }, { weight: 3, arbitrary: hostileLeaf })
}

/**
 * A body: every field plausible but one hostile (so the hostile one is what the route must refuse,
 * after whatever the plausible ones let it do); any mix; or text that is no object at all.
 */
function bodyFor(schema: JsonSchema | undefined): fc.Arbitrary<string | undefined> {
  const properties = Object.entries(schema?.properties ?? {})
  const text = (value: fc.Arbitrary<unknown>) =>
    fc.tuple(value, fc.array(fc.nat(8), { maxLength: 4 })).map(([v, tape]) => jsonText(v, tape))
  const mixed =
    properties.length === 0
      ? fc.constant({})
      : fc.record(Object.fromEntries(properties.map(([name, s]) => [name, valueFor(s)])), { requiredKeys: [] })
  const plausibleBody = fc.record(Object.fromEntries(properties.map(([name, s]) => [name, plausibleFor(s)])))
  // The one hostile field: a hostile string where a string is due (it passes the type, so the route's own rules must refuse it).
  const takesString = (s: JsonSchema) => s.type === 'string' || (s.anyOf ?? []).some((option) => option.type === 'string')
  const allButOne =
    properties.length === 0
      ? fc.constant({})
      : fc.tuple(plausibleBody, fc.nat(properties.length - 1)).chain(([body, i]) => {
          const [name, s] = properties[i] ?? ['x', {}]
          return (takesString(s) ? hostileString : hostileLeaf).map((hostile) => ({ ...body, [name]: hostile }))
        })
  return fc.oneof(
    { weight: 2, arbitrary: text(properties.length === 0 ? fc.constant({}) : plausibleBody) },
    { weight: 4, arbitrary: text(allButOne) },
    { weight: 3, arbitrary: text(mixed) },
    { weight: 1, arbitrary: fc.constantFrom(undefined, '', 'null', '[]', '"x"', '{', '{"a":1e999}') },
    { weight: 1, arbitrary: hostileLeaf.map((value) => jsonText(value, [])) },
  )
}

describe('production’s routes under hostile input (property)', () => {
  let platform: TestPlatform
  let routes: RouteSpec[]
  let cookie = ''
  let pools: Record<string, string[]> = {}
  let report: () => string

  before(async () => {
    report = triedSince()
    platform = await startPlatform({
      mode: 'production',
      accounts: {
        sessionIdleSeconds: 3600,
        sessionMaxSeconds: 86_400,
        signinPerAccount: { attempts: 1_000_000, windowSeconds: 900 },
        signinPerAddress: { attempts: 1_000_000, windowSeconds: 900 },
        signupPerAddress: { attempts: 1_000_000, windowSeconds: 3600 },
      },
    })
    const app = () => platform.app
    const admin = adminOf(platform)
    const everyone = await signedUp(app)
    await admin.grant(everyone.username, 'developer')
    await admin.grant(everyone.username, 'operator')
    const made = await everyone.call('POST', '/portal/apps', { name: 'Fuzzed', url: 'https://fuzzed.example/' })
    assert.equal(made.status, 201, JSON.stringify(made.body))
    const appId = String((made.body.app as { app_id: string }).app_id)
    const other = await signedUp(app)
    await admin.grant(other.username, 'developer')
    cookie = `${SESSION_COOKIE}=${everyone.token}`
    pools = {
      app_id: [appId, 'app_none'],
      username: [other.username, 'nobody_here'],
      key_id: [String(made.body.key_id), 'key_none'],
      payment_id: ['pay_none'],
      uid: ['uid-none'],
      id: ['1', '9223372036854775807'],
      session_id: ['ses_none'],
      passkey_id: ['pk_none'],
    }
    routes = (await readRoutes(platform)).filter(
      (route) => /^\/(account|portal|operator)(\/|$)/.test(route.path) && !NOT_FUZZED.has(`${route.method} ${route.path}`),
    )
  })
  after(async () => {
    await platform?.close()
    console.log(`# production routes fuzz: ${report()} (runs per route ${RUNS})`)
  })

  it('reads the account, portal and operator routes from the OpenAPI document', () => {
    assert.ok(routes.length >= 50, `${routes.length} routes`)
  })

  it('answers every request with JSON: a 2xx, or a documented 4xx that changed nothing; never a 5xx', async (t) => {
    for (const route of routes) {
      await t.test(`${route.method} ${route.path}`, async () => {
        const param = (name: string) =>
          fc.oneof(
            // Mostly the real object (the caller's app, a user who exists), so that the body gets checked.
            { weight: 6, arbitrary: fc.constant(pools[name]?.[0] ?? 'x') },
            { weight: 2, arbitrary: fc.constantFrom(...(pools[name] ?? ['x'])) },
            { weight: 1, arbitrary: hostileString },
            { weight: 1, arbitrary: numericEdge },
          )
        const query = fc.record(
          Object.fromEntries(
            route.query.map(({ name, schema }) => [
              name,
              fc.oneof(
                valueFor(schema).map((v) => (typeof v === 'string' ? v : (JSON.stringify(v) ?? ''))),
                numericEdge,
                impossiblePlinthCursor,
              ),
            ]),
          ),
          { requiredKeys: [] },
        )
        const arbitrary = fc.record({
          params: fc.tuple(...route.pathParams.map(param)),
          query,
          body: route.method === 'GET' ? fc.constant(undefined) : bodyFor(route.body),
          contentType: fc.oneof(
            { weight: 8, arbitrary: fc.constant('application/json') },
            { weight: 1, arbitrary: fc.constantFrom('text/plain', 'application/x-www-form-urlencoded') },
          ),
        })
        await assertProperty(
          fc.asyncProperty(arbitrary, async (c) => {
            let path = route.path
            route.pathParams.forEach((name, i) => {
              path = path.replace(`{${name}}`, encodeSegment(String(c.params[i] ?? 'x')) || 'x')
            })
            const search = new URLSearchParams(Object.entries(c.query as Record<string, string>)).toString()
            const url = search === '' ? path : `${path}?${search}`
            const before = await fingerprint(platform.db)
            const response = await fuzzInject(platform.app, {
              method: route.method as 'GET',
              url,
              headers: {
                cookie,
                'sec-fetch-site': 'same-origin',
                ...(c.body === undefined ? {} : { 'content-type': c.contentType }),
              },
              ...(c.body === undefined ? {} : { payload: c.body }),
            })
            if (response === undefined) return
            // A password change or a reset signs this browser in anew: follow its cookie, as a browser does.
            const renewed = cookieOf(response.headers)
            if (renewed !== undefined && renewed !== '') cookie = `${SESSION_COOKIE}=${renewed}`
            const context = `${route.method} ${url.slice(0, 200)} [${(c.body ?? '').slice(0, 200)}] → ${response.statusCode} ${response.body.slice(0, 300)}`
            assert.ok(response.statusCode < 500, context)
            const type = String(response.headers['content-type'] ?? '')
            if (response.statusCode >= 400) {
              assert.match(type, /^application\/json/, context)
              assertPlatformError(response.statusCode, JSON.parse(response.body), context)
              const changed = changedTables(before, await fingerprint(platform.db)).filter((table) => !RECORDS.has(table))
              assert.deepEqual(changed, [], `${context}: a refused request changed the database`)
            }
          }),
          fcParams(RUNS),
        )
        // The caller is still signed in with every role: no case passed by answering 401 to everything.
        const alive = await platform.app.inject({ method: 'GET', url: '/account', headers: { cookie } })
        assert.equal(alive.statusCode, 200, `after ${route.method} ${route.path}: the session ended`)
        assert.deepEqual(alive.json().roles, ['developer', 'operator'])
      })
    }
  })
})
