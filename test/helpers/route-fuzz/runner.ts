import assert from 'node:assert/strict'
import fc from 'fast-check'
import type { InjectOptions, LightMyRequestResponse } from 'fastify'
import {
  assertNoPollution,
  assertNotifyError,
  assertPlatformError,
  assertProblem,
  assertProperty,
  encodeSegment,
  fcParams,
  fuzzInject,
  jsonText,
  parseJsonBody,
  RawJson,
  type StateWatch,
} from '../fuzz.js'
import { type Credential, caseArb, type FuzzCase } from './arbitraries.js'
import { type Fixture, harvest, JSON_POOLS, PoolRef, type Pools, refreshCredentials } from './fixture.js'
import { familyOf, type RouteSpec } from './routes.js'

/**
 * Running the route fuzzers: a drawn case becomes a request, `exercise` sends it and checks every
 * answer (JSON, never a 5xx, a documented refusal in its family's shape, no state change on a
 * refusal), and `fuzzRoutes` runs the property per route and checks the ledger after each.
 */

/* ------------------------------------------------------------------ running a case */

function resolve(value: unknown, pools: Pools): unknown {
  if (value instanceof PoolRef) {
    const pool = pools[value.pool] ?? []
    if (pool.length === 0) return 'no-such-thing'
    const picked = pool[value.n % pool.length] ?? ''
    return JSON_POOLS.has(value.pool) ? new RawJson(picked) : picked
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
  } else if (status < 300 && String(response.headers['content-type'] ?? '').startsWith('text/csv')) {
    // A sandbox export asked for as CSV (format=csv): a file, not JSON.
    if (route !== undefined && exact) assert.ok(route.responses.has(status), `${context}: ${status} is documented for the route`)
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

/* ------------------------------------------------------------------ running the properties */

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

/** With PLINTH_FUZZ_STATS=1: how many inputs each route accepted since the last print, and which refusals the others got. */
export function printRouteStats(): void {
  const stats = Object.entries(STATS)
  for (const [route] of stats) delete STATS[route]
  if (process.env.PLINTH_FUZZ_STATS === undefined) return
  for (const [route, { accepted, all, refusals }] of stats) {
    console.log(`# ${route}: ${accepted}/${all} accepted; ${JSON.stringify(refusals)}`)
  }
}
