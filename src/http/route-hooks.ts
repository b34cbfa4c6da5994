import type { RouteOptions } from 'fastify'

type RouteHookName = 'onRequest' | 'preHandler' | 'onSend'

/**
 * Adds a hook to one route's own hooks, at `onRoute` time: it runs for that route only, with what
 * it needs captured when the route is declared. A global hook runs for every request and reads
 * `request.routeOptions`, which Fastify builds anew on each read. Route hooks run after the global
 * ones, in the order they were added (`first` puts one before the others). Hooks on every request
 * are written with `done` where their common path is synchronous: an async hook costs a promise.
 */
export function addRouteHook(route: RouteOptions, name: RouteHookName, hook: unknown, first = false): void {
  const hooks = route as unknown as Record<RouteHookName, unknown>
  const existing = hooks[name]
  const list = existing === undefined ? [] : Array.isArray(existing) ? existing : [existing]
  hooks[name] = first ? [hook, ...list] : [...list, hook]
}
