// @ts-check
// Type-level tests of src/web/api/routes.d.ts, compiled by `npm run typecheck` (tsconfig.browser.json
// includes this folder): each `true` below is a type error, and so fails the type check, when the
// route a URL names is not exactly the one its line says. Nothing here runs.

/**
 * @template {string} P
 * @typedef {import('../../src/web/api/routes').RouteOf<P>} RouteOf
 */
/**
 * True when A and B are the same type (a union with one member more is not).
 * @template A, B
 * @typedef {(<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false} Same
 */

/**
 * The route a URL names, as the pages' API calls read it.
 * @template {string} P
 * @param {P} _url
 * @returns {RouteOf<P>}
 */
const routeOf = (_url) => /** @type {RouteOf<P>} */ ('')

/**
 * @param {string} id an expression in a URL, as a page writes `${seg(app_id)}`
 * @param {`/sandbox/apps/${string}/ads/script` | `/sandbox/apps/${string}/users/${string}/ads/script`} scriptPath
 */
export function routes(id, scriptPath) {
  // A fixed segment matches only itself: `script` is not the `{ad_id}` of another route.
  const script = routeOf(`/sandbox/apps/${id}/ads/script`)
  /** @type {Same<typeof script, '/sandbox/apps/{app_id}/ads/script'>} */
  const scriptIsNotAnAd = true
  const userScript = routeOf(`/sandbox/apps/${id}/users/${id}/ads/script`)
  /** @type {Same<typeof userScript, '/sandbox/apps/{app_id}/users/{user_id}/ads/script'>} */
  const userScriptIsNotAnAd = true
  // `export` is not the `{payment_id}` of a payment, nor the `{id}` of a request; a query string is left out.
  const payments = routeOf(`/sandbox/apps/${id}/payments/export?format=csv`)
  /** @type {Same<typeof payments, '/sandbox/apps/{app_id}/payments/export'>} */
  const exportIsNotAPayment = true
  const requests = routeOf(`/sandbox/apps/${id}/requests/export`)
  /** @type {Same<typeof requests, '/sandbox/apps/{app_id}/requests/export'>} */
  const exportIsNotARequest = true
  // An expression matches a parameter.
  const ad = routeOf(`/sandbox/apps/${id}/ads/${id}`)
  /** @type {Same<typeof ad, '/sandbox/apps/{app_id}/ads/{ad_id}'>} */
  const anExpressionIsAParameter = true
  // Each URL of a union names its route.
  const either = routeOf(scriptPath)
  /** @type {Same<typeof either, '/sandbox/apps/{app_id}/ads/script' | '/sandbox/apps/{app_id}/users/{user_id}/ads/script'>} */
  const eachOfAUnion = true
  // A route's own key names it.
  const key = routeOf('/sandbox/apps/{app_id}/ads/{ad_id}')
  /** @type {Same<typeof key, '/sandbox/apps/{app_id}/ads/{ad_id}'>} */
  const aKeyIsItsRoute = true
  // A URL that is a route as written names that one only, as the router prefers a static route.
  const incomplete = routeOf('/v2/client/payments/incomplete')
  /** @type {Same<typeof incomplete, '/v2/client/payments/incomplete'>} */
  const aStaticRouteWins = true
  // A URL that names no route names never.
  const nowhere = routeOf('/sandbox/nowhere')
  /** @type {Same<typeof nowhere, never>} */
  const noRoute = true
  // Returned so that each is used: the types are the test.
  return [
    script,
    userScript,
    payments,
    requests,
    ad,
    either,
    key,
    nowhere,
    incomplete,
    aStaticRouteWins,
    scriptIsNotAnAd,
    userScriptIsNotAnAd,
    exportIsNotAPayment,
    exportIsNotARequest,
    anExpressionIsAParameter,
    eachOfAUnion,
    aKeyIsItsRoute,
    noRoute,
  ]
}
