import rateLimit, { type FastifyRateLimitStore, type FastifyRateLimitStoreCtor } from '@fastify/rate-limit'
import type { FastifyInstance, FastifyRequest, onRequestHookHandler } from 'fastify'
import { ApiError, ErrorBody } from '../core/errors.js'
import { addRouteHook } from './route-hooks.js'

/**
 * Per-principal rate limits: requests a minute per server API key (`auth: 'key'` routes) and per
 * access token (`auth: 'token'` routes), counted in fixed one-minute windows.
 *
 * The counters live in each process's memory: no database round trip on the hot path, at the
 * price that N processes behind a load balancer let a principal make up to N times the limit.
 * The limiter runs as the route's own onRequest hook, added after the authentication hook (also
 * the route's own: registerAuth comes first), which sets `request.principal`, and before the body
 * is read. Requests that fail authentication, the
 * sandbox API and the public ledger are not limited here: per-address limits belong to the
 * reverse proxy, which alone sees the clients' addresses.
 */
export interface RateLimits {
  /** Requests a minute per server API key; 0 turns the limit off. */
  keyPerMinute: number
  /** Requests a minute per access token; 0 turns the limit off. */
  tokenPerMinute: number
  /** Milliseconds on a monotonic clock (performance.now by default); tests move it. */
  now?: () => number
}

export const RATE_LIMIT_WINDOW_MS = 60_000
/**
 * Principals tracked per limiter and process. An entry is a few dozen bytes, so this bounds the
 * memory at a few MB; past it the oldest window is dropped first, which has usually expired.
 */
export const MAX_TRACKED_PRINCIPALS = 100_000

interface Window {
  count: number
  startedAt: number
}

/**
 * Fixed-window counters in a bounded map, as a store of @fastify/rate-limit. A key's entry is
 * moved to the end of the map when its window starts, so the map is ordered by window start and
 * the first entry is the one to evict.
 */
export function windowCounters(now: () => number, maxKeys: number): FastifyRateLimitStoreCtor {
  return class WindowCounters implements FastifyRateLimitStore {
    readonly windows = new Map<string, Window>()

    incr(key: string, callback: (error: Error | null, result?: { current: number; ttl: number }) => void, timeWindow: number): void {
      const at = now()
      let window = this.windows.get(key)
      if (window === undefined || at - window.startedAt >= timeWindow) {
        if (window !== undefined) this.windows.delete(key)
        else if (this.windows.size >= maxKeys) {
          const oldest = this.windows.keys().next()
          if (oldest.done !== true) this.windows.delete(oldest.value)
        }
        window = { count: 0, startedAt: at }
        this.windows.set(key, window)
      }
      window.count += 1
      callback(null, { current: window.count, ttl: Math.max(0, window.startedAt + timeWindow - at) })
    }

    child(): FastifyRateLimitStore {
      return new WindowCounters()
    }
  }
}

const principalId = (request: FastifyRequest): string => {
  const principal = request.principal
  if (principal?.kind === 'key') return `key:${principal.keyId}`
  if (principal?.kind === 'token') return `token:${principal.tokenId}`
  return 'anonymous'
}

/**
 * Installs the limits on every `auth: 'key'` and `auth: 'token'` route declared after this call
 * (a limit of 0 installs nothing), and documents their 429 in the OpenAPI document. A refused
 * request answers 429 `rate_limited` with `Retry-After` (seconds until the window ends);
 * every limited response carries `X-RateLimit-Limit`, `-Remaining` and `-Reset`.
 */
export async function registerRateLimits(app: FastifyInstance, limits: RateLimits): Promise<void> {
  if (limits.keyPerMinute === 0 && limits.tokenPerMinute === 0) return
  await app.register(rateLimit, {
    global: false,
    hook: 'onRequest',
    store: windowCounters(limits.now ?? (() => performance.now()), MAX_TRACKED_PRINCIPALS),
    timeWindow: RATE_LIMIT_WINDOW_MS,
    keyGenerator: principalId,
  })

  const limiter = (max: number, what: string): onRequestHookHandler | undefined =>
    max === 0
      ? undefined
      : (app.rateLimit({
          max,
          errorResponseBuilder: (_request, context) =>
            new ApiError(
              'rate_limited',
              `Too many requests with this ${what}: at most ${max} a minute. Retry in ${Math.max(1, Math.ceil(context.ttl / 1000))} s.`,
            ),
        }) as unknown as onRequestHookHandler)
  const limiters = {
    key: limiter(limits.keyPerMinute, 'server API key'),
    token: limiter(limits.tokenPerMinute, 'access token'),
  }

  app.addHook('onRoute', (route) => {
    const kind = route.config?.auth
    if (kind !== 'key' && kind !== 'token') return
    const hook = limiters[kind]
    if (hook === undefined) return
    addRouteHook(route, 'onRequest', hook)
    const response = route.schema?.response as Record<string, unknown> | undefined
    if (route.schema !== undefined && response !== undefined && !('429' in response)) {
      route.schema = { ...route.schema, response: { ...response, 429: ErrorBody } }
    }
  })
}
