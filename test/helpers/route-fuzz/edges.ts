import { encodeSegment, impossibleCursors, NUMERIC_EDGES } from '../fuzz.js'
import type { Fixture } from './fixture.js'
import { type RouteSpec, routeUrl } from './routes.js'

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
  // The accounts list answers nothing without its one filter: each edge goes with a real signer, so it reaches the page.
  const required: Record<string, string> = route.path === '/ledger/accounts' ? { signer: String(fixture.pools.account_id?.[0] ?? '') } : {}
  for (const { name, schema } of route.query) {
    if (name in required) continue
    // Every notification cursor goes through one decoder: all of them on the client's list, a sample on the
    // sandbox's views and on Horizon's lists (whose cursors are numbers).
    const every = route.path === '/v2/client/notifications' ? 1 : route.path.startsWith('/ledger') ? 16 : 4
    const cursors = impossibleCursors().filter((_, k) => k % every === 0)
    const values = name === 'cursor' ? [...NUMERIC_EDGES, ...cursors] : NUMERIC_EDGES
    for (const value of values) {
      let refused: boolean
      if (name === 'cursor' && route.path === '/ledger/accounts') {
        // An account id, compared as text and not checked (as Horizon): any value up to 200 characters is a place in the list.
        refused = value.length > 200
      } else if (name === 'cursor') {
        refused = route.path.startsWith('/ledger') ? !decimalWithin(value, 0n, INT64_MAX) : true
      } else if (schema.type === 'integer' || schema.type === 'number') {
        refused = !decimalWithin(value, BigInt(schema.minimum ?? -(2 ** 53)), BigInt(schema.maximum ?? 2 ** 53))
      } else continue
      cases.push({
        url: `${base}?${new URLSearchParams({ ...required, [name]: value }).toString()}`,
        what: `query ${name}=${JSON.stringify(value)}`,
        refused,
      })
    }
  }
  return cases
}
