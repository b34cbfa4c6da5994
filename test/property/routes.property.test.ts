import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import fc from 'fast-check'
import type { InjectOptions } from 'fastify'
import { assertProperty, encodeSegment, FUZZ_SEED, fcParams, fuzzRuns, hostileString, StateWatch, triedSince } from '../helpers/fuzz.js'
import { SANDBOX_CLIENT, sandbox, startPlatform, type TestPlatform } from '../helpers/platform.js'
import { corpus } from '../helpers/route-fuzz/corpus.js'
import { edgeCases } from '../helpers/route-fuzz/edges.js'
import { type Fixture, seed } from '../helpers/route-fuzz/fixture.js'
import { bodyLimit, type RouteSpec, readRoutes, routeUrl } from '../helpers/route-fuzz/routes.js'
import { exercise, fuzzRoutes, printRouteStats, type Runner } from '../helpers/route-fuzz/runner.js'

/**
 * Every route of the OpenAPI document, fuzzed: random and hostile path parameters, query
 * strings, headers, credentials and bodies (raw JSON text with duplicate and prototype keys,
 * deep nesting, non-finite and over-precise numbers, NUL and lone surrogates, odd content
 * types, bodies at and over the limit). Every answer is JSON; a refusal is a documented 4xx in
 * its route family's shape (the platform's {error, error_message}, notify's {error}, the
 * ledger's Horizon problem) and leaves the database as it was; nothing is ever a 5xx.
 */

/** Runs per route (the unknown-route property runs four times as many). PLINTH_FUZZ_RUNS scales them. */
const RUNS = fuzzRuns(50)

describe('every route under hostile input (property)', () => {
  let report: () => string
  let platform: TestPlatform
  let fixture: Fixture
  let routes: RouteSpec[]
  let runner: Runner

  before(async () => {
    report = triedSince()
    platform = await startPlatform()
    fixture = await seed(platform)
    routes = await readRoutes(platform)
    runner = { fixture, watch: new StateWatch(platform.db) }
  })
  after(async () => {
    await platform.close()
    printRouteStats()
    console.log(`# routes fuzz: ${report()} (runs per route ${RUNS}, seed ${FUZZ_SEED})`)
  })

  it('reads the routes from the OpenAPI document', () => {
    assert.ok(routes.length >= 40, `${routes.length} routes`)
    for (const route of routes) assert.ok(route.responses.size > 0, `${route.method} ${route.path} documents its answers`)
  })

  it('answers random and hostile requests on every route with JSON, a documented 4xx in the right shape, or a 2xx; refusals change nothing', async (t) => {
    await fuzzRoutes(runner, routes, RUNS, t)
  })

  it('answers deep, huge, duplicate-key, prototype-key, mis-encoded and mis-typed bodies on every route the same way', async (t) => {
    for (const route of routes) {
      await t.test(`${route.method} ${route.path}`, async () => {
        await runner.watch.accepted()
        const credential = route.security === 'key' ? `Key ${fixture.credentials.key}` : `Bearer ${fixture.credentials.token}`
        for (const body of corpus(route, fixture)) {
          const headers: Record<string, string> = { authorization: credential }
          if (body.contentType !== undefined) headers['content-type'] = body.contentType
          const url = routeUrl(route, fixture)
          const response = await exercise(
            runner,
            route,
            { method: route.method as InjectOptions['method'], url, headers, payload: body.payload },
            true,
          )
          const size = body.payload === undefined ? 0 : Buffer.byteLength(body.payload)
          if (response !== undefined && route.body !== undefined && size > bodyLimit(route)) {
            assert.equal(response.statusCode, 413, `${route.method} ${route.path}: a body over the limit`)
          }
        }
      })
    }
  })

  it('refuses a NUL, an undecodable or an over-long path parameter on every route with a 400 in the route family shape', async () => {
    // Found by the fuzzer: each was a 500 (NUL reached PostgreSQL) or Fastify's own error body.
    for (const route of routes.filter((r) => r.pathParams.length > 0)) {
      for (const [i, name] of route.pathParams.entries()) {
        for (const bad of ['a\u0000b', '\ud800', 'x'.repeat(201)]) {
          let url = route.path
          for (const [j, other] of route.pathParams.entries()) {
            url = url.replace(`{${other}}`, encodeSegment(i === j ? bad : (fixture.pools[other]?.[0] ?? 'x')))
          }
          await runner.watch.accepted()
          const authorization = route.security === 'key' ? `Key ${fixture.credentials.key}` : `Bearer ${fixture.credentials.token}`
          const response = await exercise(
            runner,
            route,
            // The sandbox's body-less calls name their client (else 415 before the path is read).
            { method: route.method as InjectOptions['method'], url, headers: { ...SANDBOX_CLIENT, authorization } },
            true,
          )
          assert.equal(response?.statusCode, 400, `${route.method} ${url} (${name}): ${response?.body}`)
        }
      }
    }
  })

  it('answers every numeric edge in every path and query parameter, and every impossible cursor, with a 400 where no record can match (never a 5xx)', async (t) => {
    // Found by these cases: a ledger sequence or paging token past 2^63 − 1 and a notification
    // cursor holding a date PostgreSQL cannot store were 500s; `limit=1.5` or `0x10` was served as 1 or 16.
    let sent = 0
    for (const route of routes) {
      const cases = edgeCases(route, fixture)
      if (cases.length === 0) continue
      await t.test(`${route.method} ${route.path}`, async () => {
        await runner.watch.accepted()
        const authorization = route.security === 'key' ? `Key ${fixture.credentials.key}` : `Bearer ${fixture.credentials.token}`
        for (const edge of cases) {
          const method = route.method as InjectOptions['method']
          const response = await exercise(runner, route, { method, url: edge.url, headers: { authorization } }, true)
          sent += 1
          if (edge.refused) assert.equal(response?.statusCode, 400, `${route.method} ${edge.url} (${edge.what}): ${response?.body}`)
        }
      })
    }
    console.log(`# numeric edges and cursors: ${sent} requests`)
  })

  it('leaves the database as it was when a move is refused on a payment or an ad whose deadline passed unrecorded', async () => {
    // Found by the fuzzer: the refusal first recorded the due approval-window expiry (or ad verdict), then refused.
    const sb = sandbox(platform.app)
    const app = await sb.createApp()
    const user = await sb.createUser()
    const { accessToken } = await sb.authenticate(app.app_id, user.user_id, ['payments'])
    const bearer = { authorization: `Bearer ${accessToken}` }
    const created = await platform.app.inject({
      method: 'POST',
      url: '/v2/client/payments',
      headers: bearer,
      payload: { amount: 1, memo: 'm', metadata: {} },
    })
    assert.equal(created.statusCode, 201, created.body)
    const ad = await platform.app.inject({ method: 'POST', url: '/v2/client/ads/rewarded/show', headers: bearer, payload: {} })
    const adId = (ad.json() as { adId: string }).adId
    await sb.advanceClock(120)
    await runner.watch.accepted()
    const id = (created.json() as { identifier: string }).identifier
    const key = { authorization: `Key ${app.api_key}` }
    for (const [method, url, headers, payload] of [
      ['POST', `/v2/payments/${id}/approve`, key, undefined],
      ['POST', `/v2/payments/${id}/complete`, key, { txid: 'a'.repeat(64) }],
      ['POST', `/v2/client/payments/${id}/submit`, bearer, undefined],
      ['POST', `/sandbox/ads/${adId}/status`, {}, { mediator_ack_status: 'failed' }],
    ] as const) {
      const response = await exercise(runner, undefined, { method, url, headers, ...(payload === undefined ? {} : { payload }) }, false)
      assert.equal(response?.statusCode, 409, `${method} ${url}: ${response?.body}`)
    }
    // A read still shows (and records) what the deadlines decided.
    const read = await platform.app.inject({ method: 'GET', url: `/v2/payments/${id}`, headers: key })
    assert.equal((read.json() as { status: { cancelled: boolean } }).status.cancelled, true)
    const status = await platform.app.inject({ method: 'GET', url: `/v2/ads_network/status/${adId}`, headers: key })
    assert.equal((status.json() as { mediator_ack_status: string }).mediator_ack_status, 'granted')
    await runner.watch.accepted()
  })

  it('answers unknown routes and methods with 404 not_found (or a Horizon problem under /ledger)', async () => {
    await assertProperty(
      fc.asyncProperty(
        fc.constantFrom('/v2/', '/sandbox/', '/ledger/', '/', '/v2/client/', '/v2/payments/x/'),
        hostileString,
        fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'),
        async (prefix, rest, method) => {
          const url = `${prefix}${encodeSegment(rest)}/nothing`
          await exercise(runner, undefined, { method: method as InjectOptions['method'], url }, false)
        },
      ),
      fcParams(RUNS * 2),
    )
  })
})
