import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import fc from 'fast-check'
import type { InjectOptions } from 'fastify'
import {
  assertProperty,
  encodeSegment,
  FUZZ_SEED,
  fcParams,
  fuzzInject,
  fuzzRuns,
  hostileString,
  StateWatch,
  triedSince,
} from '../helpers/fuzz.js'
import { startPlatform, type TestPlatform } from '../helpers/platform.js'
import { seed } from '../helpers/route-fuzz/fixture.js'
import { type RouteSpec, readRoutes, routeUrl } from '../helpers/route-fuzz/routes.js'
import { exercise, fuzzRoutes, printRouteStats, type Runner } from '../helpers/route-fuzz/runner.js'

/**
 * The sandbox API behind an admin token, fuzzed like every route (test/property/routes) with the
 * X-Admin-Token header absent, wrong or hostile too; and every sandbox route in production mode,
 * where it does not exist (404 not_found) whatever is sent.
 */

/** Base runs (per sandbox route, half of them). PLINTH_FUZZ_RUNS scales them. */
const RUNS = fuzzRuns(50)
describe('the sandbox API with an admin token, and in production mode (property)', () => {
  let report: () => string
  const ADMIN = 'fuzz-admin-token-0123456789'
  let guarded: TestPlatform
  let production: TestPlatform
  let runner: Runner
  let sandboxRoutes: RouteSpec[]

  before(async () => {
    report = triedSince()
    ;[guarded, production] = await Promise.all([startPlatform({ adminToken: ADMIN }), startPlatform({ mode: 'production' })])
    const fixture = await seed(guarded, ADMIN)
    runner = { fixture, watch: new StateWatch(guarded.db) }
    sandboxRoutes = (await readRoutes(guarded)).filter((route) => route.security === 'admin')
  })
  after(async () => {
    await guarded.close()
    await production.close()
    printRouteStats()
    console.log(`# sandbox fuzz: ${report()} (runs per route ${Math.ceil(RUNS / 2)}, seed ${FUZZ_SEED})`)
  })

  it('refuses a missing or wrong X-Admin-Token with 401 invalid_admin_token, and fuzzes the sandbox behind it', async (t) => {
    assert.ok(sandboxRoutes.length >= 15)
    await fuzzRoutes(runner, sandboxRoutes, Math.ceil(RUNS / 2), t)
    await assertProperty(
      fc.asyncProperty(fc.constantFrom(...sandboxRoutes), fc.option(hostileString, { nil: undefined }), async (route, given) => {
        fc.pre(given !== ADMIN)
        const url = routeUrl(route, runner.fixture)
        const headers: Record<string, string> = given === undefined ? {} : { 'x-admin-token': given }
        const response = await exercise(
          runner,
          route,
          { method: route.method as InjectOptions['method'], url, headers, payload: route.body === undefined ? undefined : '{}' },
          true,
        )
        if (response !== undefined) assert.equal(response.json().error, 'invalid_admin_token', `${route.method} ${url}`)
      }),
      fcParams(RUNS * 2),
    )
  })

  it('answers every sandbox route with 404 not_found in production mode', async () => {
    await assertProperty(
      fc.asyncProperty(
        fc.constantFrom(...sandboxRoutes),
        hostileString,
        fc.option(hostileString, { nil: undefined }),
        async (route, param, body) => {
          let url = route.path
          for (const name of route.pathParams) url = url.replace(`{${name}}`, encodeSegment(param))
          const response = await fuzzInject(production.app, {
            method: route.method as InjectOptions['method'],
            url,
            headers: { 'content-type': 'application/json', 'x-admin-token': ADMIN },
            payload: body === undefined ? undefined : JSON.stringify({ x: body }),
          })
          if (response === undefined) return
          // A path that is not percent-encoded UTF-8 is refused before routing, in either mode.
          const decodable = (() => {
            if (route.pathParams.length === 0) return true
            try {
              decodeURIComponent(encodeSegment(param))
              return true
            } catch {
              return false
            }
          })()
          assert.equal(response.statusCode, decodable ? 404 : 400, `${route.method} ${url}: ${response.body}`)
          assert.equal(response.json().error, decodable ? 'not_found' : 'bad_request')
        },
      ),
      fcParams(RUNS * 2),
    )
  })
})
