// @ts-check
// Type-level tests of the console's route() (src/console/public/js/router.js), compiled by
// `npm run typecheck`: a page gets the parameters its route's pattern names, so main.js cannot
// hand a page a route whose parameters it does not read. Nothing here runs.

/**
 * @template {string} Pattern
 * @typedef {import('../../src/console/public/js/router.js').ParamsOf<Pattern>} ParamsOf
 */
/**
 * @template A, B
 * @typedef {import('./routes.check.js').Same<A, B>} Same
 */

/** @type {Same<keyof ParamsOf<'apps/:appId/requests/:id'>, 'appId' | 'id'>} */
export const eachParameter = true
/** @type {Same<ParamsOf<'apps/:appId/requests/:id'>['id'], string>} */
export const aParameterIsText = true
/** @type {Same<keyof ParamsOf<'ledger/transactions/:hash'>, 'hash'>} */
export const afterFixedSegments = true
/** @type {Same<keyof ParamsOf<'apps'>, never>} */
export const noParameter = true
