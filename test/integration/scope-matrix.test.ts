/**
 * Scopes as a matrix generated from the route table (`GET /v2/openapi.json`): every route that
 * takes an access token, called by the owner of the object it acts on with a token of no scope,
 * of each scope alone and of every scope. A token without the route's scope is refused with 401
 * `missing_scope` and changes nothing in the database; with it, the very same request succeeds.
 *
 * The scope each route needs is the table of docs/errors.md ("Scopes"): the test fails when a
 * token route of the OpenAPI document declares no scope, declares another one, or is missing from
 * that table. A token route registered without a scope stops the application from starting.
 */
import assert from 'node:assert/strict'
import { readFile } from 'node:fs/promises'
import { after, before, describe, it } from 'node:test'
import type { InjectOptions } from 'fastify'
import Fastify from 'fastify'
import { SCOPES } from '../../src/core/scopes.js'
import { registerAuth } from '../../src/http/auth.js'
import { dumpState, sandbox, startPlatform, type TestPlatform } from '../helpers/platform.js'
import { asToken, fill, label, makeWorld, OBJECT_ROUTES, type Operation, routeTable, type World } from '../helpers/route-table.js'

/** The tokens every route is tried with: no scope, each scope alone, every scope. */
const SCOPE_SETS: Array<{ name: string; scopes: string[] }> = [
  { name: 'no scope', scopes: [] },
  ...SCOPES.map((scope) => ({ name: `only ${scope}`, scopes: [scope] })),
  { name: 'every scope', scopes: [...SCOPES] },
]

/** Bodies of the token routes that take one and act on no object of their own. */
const BODIES: Record<string, Record<string, unknown>> = {
  clientCreatePayment: { amount: 1, memo: 'scope matrix', metadata: {} },
  clientShowAd: {},
  clientSetNotificationSettings: { enabled: false },
}

/** Path params that name no object. */
const PLAIN_PARAMS = new Set(['type'])

/** docs/errors.md's "Scopes" table: `METHOD /path` → the scope, or 'none'. */
async function documentedScopes(): Promise<Record<string, string>> {
  const text = await readFile(new URL('../../docs/errors.md', import.meta.url), 'utf8')
  const start = text.indexOf('\n## Scopes')
  assert.ok(start >= 0, 'docs/errors.md has a Scopes section')
  const table: Record<string, string> = {}
  for (const match of text.slice(start).matchAll(/^\| `([A-Z]+ \/\S+)` \| (?:none|`(\w+)`)/gm)) {
    table[match[1] ?? ''] = match[2] ?? 'none'
  }
  return table
}

/** The owner's request to the route, on a fresh object of the owner's when the route acts on one. */
async function ownRequest(platform: TestPlatform, op: Operation, w: World): Promise<Omit<InjectOptions, 'headers'>> {
  const objectParams = op.params.filter((param) => !PLAIN_PARAMS.has(param))
  if (objectParams.length === 0) {
    const body = BODIES[op.operationId]
    return { method: op.method, url: fill(op), ...(body === undefined ? {} : { payload: body }) }
  }
  const entry = OBJECT_ROUTES[op.operationId]
  assert.ok(entry, `${label(op)} takes an object id: add it to OBJECT_ROUTES (test/helpers/route-table.ts)`)
  const object = await entry.make(platform, w)
  return {
    method: op.method,
    url: fill(op, { [objectParams[0] ?? '']: object.id }),
    ...(object.payload === undefined ? {} : { payload: object.payload }),
  }
}

describe('scope matrix', () => {
  let platform: TestPlatform
  let operations: Operation[]
  let documented: Record<string, string>

  before(async () => {
    platform = await startPlatform()
    operations = (await routeTable(platform)).filter((op) => op.auth === 'token')
    documented = await documentedScopes()
  })
  after(() => platform.close())

  it('every token route declares its scope in the OpenAPI document, as docs/errors.md lists it', async () => {
    assert.ok(operations.length >= 13, `only ${operations.length} token routes`)
    const undeclared = operations.filter((op) => op.scope === undefined).map(label)
    assert.deepEqual(undeclared, [], 'token routes whose OpenAPI operation declares no scope (x-scope)')
    for (const op of operations) {
      const scope = op.scope ?? ''
      assert.ok(scope === 'none' || (SCOPES as readonly string[]).includes(scope), `${label(op)}: ${scope} is no scope`)
      assert.deepEqual(op.securityScopes, scope === 'none' ? [] : [scope], `${label(op)}: security lists its scope`)
      assert.match(op.description, scope === 'none' ? /Access token scope: none/ : new RegExp(`Access token scope: \`${scope}\``))
    }
    const declared = Object.fromEntries(operations.map((op) => [label(op), op.scope]))
    assert.deepEqual(declared, documented, 'the OpenAPI document and the table of docs/errors.md disagree')
    const full = await routeTable(platform)
    assert.deepEqual(full.filter((op) => op.auth !== 'token' && op.scope !== undefined).map(label), [], 'only token routes declare a scope')
  })

  it('a token route registered without a scope stops the application from starting', async () => {
    const app = Fastify({ logger: false })
    registerAuth(app, {
      adminToken: undefined,
      authenticator: { verifyApiKey: async () => undefined, verifyAccessToken: async () => undefined },
    })
    assert.throws(() => app.get('/v2/client/forgetful', { config: { auth: 'token' } }, async () => ({})), /no scope/)
    assert.throws(() => app.get('/v2/server/odd', { config: { auth: 'key', scope: 'payments' } }, async () => ({})), /token/)
    app.get('/v2/client/declared', { config: { auth: 'token', scope: 'none' } }, async () => ({}))
    await app.ready()
    await app.close()
  })

  it('every token route, with every scope set: refused without its scope and unchanged, served with it', async (t) => {
    for (const op of operations) {
      await t.test(label(op), async () => {
        const scope = documented[label(op)]
        assert.ok(scope, `${label(op)} is missing from the Scopes table of docs/errors.md`)
        const allowed = SCOPE_SETS.filter((set) => scope === 'none' || set.scopes.includes(scope))
        const refused = SCOPE_SETS.filter((set) => !allowed.includes(set))
        assert.equal(allowed.length, scope === 'none' ? SCOPE_SETS.length : 2)

        const sb = sandbox(platform.app)
        const tokenFor = async (w: World, scopes: string[]) => (await sb.authenticate(w.appA.app_id, w.user1.user_id, scopes)).accessToken

        // The owner's own object, and the owner's tokens of every scope set, made before the dump.
        const w = await makeWorld(platform)
        const request = await ownRequest(platform, op, w)
        const refusedTokens = await Promise.all(refused.map((set) => tokenFor(w, set.scopes)))
        const firstAllowed = await tokenFor(w, allowed[0]?.scopes ?? [])

        const before = await dumpState(platform.db)
        for (const [index, set] of refused.entries()) {
          const response = await platform.app.inject({ ...request, headers: asToken(refusedTokens[index] ?? '') })
          assert.equal(response.statusCode, 401, `${set.name}: ${response.body}`)
          const body = response.json() as { error: string; error_message: string }
          assert.equal(body.error, 'missing_scope', set.name)
          assert.match(body.error_message, new RegExp(`\\b${scope} scope`), set.name)
        }
        assert.equal(await dumpState(platform.db), before, 'refused calls change nothing')

        // With the scope, the very same request is served; every other allowed set on a fresh object.
        for (const [index, set] of allowed.entries()) {
          const world = index === 0 ? w : await makeWorld(platform)
          const own = index === 0 ? request : await ownRequest(platform, op, world)
          const token = index === 0 ? firstAllowed : await tokenFor(world, set.scopes)
          const response = await platform.app.inject({ ...own, headers: asToken(token) })
          assert.ok(response.statusCode === 200 || response.statusCode === 201, `${set.name}: ${response.statusCode} ${response.body}`)
        }
      })
    }
  })
})
