import assert from 'node:assert/strict'
import { BODY_LIMIT } from '../../../src/app.js'
import { TX_BODY_LIMIT } from '../../../src/ledger/horizon/transactions.js'
import { NOTIFY_BODY_LIMIT } from '../../../src/notifications/notifications-routes.js'
import { SNAPSHOT_IMPORT_LIMIT } from '../../../src/sandbox/world/world-routes.js'
import { encodeSegment } from '../fuzz.js'
import type { TestPlatform } from '../platform.js'
import type { Fixture } from './fixture.js'

/**
 * The routes the fuzzers (test/property/routes and sandbox) exercise: every operation of
 * GET /v2/openapi.json, with its security, parameters, body schema and documented answers, and
 * the error family each URL answers in.
 */

export interface JsonSchema {
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

export type Security = 'key' | 'token' | 'admin' | 'none'
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

/** The largest body the route reads: a byte more is 413. Routes with their own limit name it; the rest share BODY_LIMIT. */
export function bodyLimit(route: Pick<RouteSpec, 'method' | 'path'>): number {
  const key = `${route.method} ${route.path}`
  if (key === 'POST /v2/in_app_notifications/notify') return NOTIFY_BODY_LIMIT
  if (key === 'POST /ledger/transactions') return TX_BODY_LIMIT
  if (key === 'POST /sandbox/snapshots/import') return SNAPSHOT_IMPORT_LIMIT
  return BODY_LIMIT
}

export function familyOf(method: string, url: string): Family {
  const path = url.split('?')[0] ?? ''
  if (path === '/ledger' || path.startsWith('/ledger/')) return 'ledger'
  // Another method on notify's path is an unknown route, answered by the platform's not-found handler.
  if (path === '/v2/in_app_notifications/notify' && method === 'POST') return 'notify'
  return 'platform'
}

export function routeUrl(route: RouteSpec, fixture: Fixture): string {
  let path = route.path
  for (const name of route.pathParams) path = path.replace(`{${name}}`, encodeSegment(fixture.pools[name]?.[0] ?? 'x'))
  return path
}
