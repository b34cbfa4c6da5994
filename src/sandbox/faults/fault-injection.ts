import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { addRouteHook } from '../../http/route-hooks.js'
import type { Fault } from './faults-repo.js'
import type { FaultsService } from './faults-service.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** `<fault id>:<status|delay|drop>` when the sandbox injected a fault into this call (docs/testing.md). */
    injectedFault?: string
  }
}

/** The /v2 routes a fault can be set on: `METHOD /v2/pattern` → operationId. */
export interface FaultableRoutes {
  has(route: string): boolean
  hasOperation(operationId: string): boolean
  list(): string[]
}

/** `post  /v2/payments/{payment_id}/approve` → `POST /v2/payments/:payment_id/approve`. */
export function normalizeRoute(route: string): string {
  const [method = '', path = ''] = route.trim().split(/\s+/, 2)
  return `${method.toUpperCase()} ${path.replace(/\{([^}/]+)\}/g, ':$1')}`
}

const RETRY_AFTER_STATUSES = new Set([429, 503])
const kindOf = (fault: Fault): string => ('status' in fault.effect ? 'status' : 'delay_ms' in fault.effect ? 'delay' : 'drop')
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Injects faults into the /v2 calls of apps (server-key and access-token routes: the app is known
 * once the call is authenticated). Registered before the routes, sandbox mode only: production
 * mode never looks a fault up. A `before` fault acts in preHandler (after authentication, rate
 * limits and validation, before the handler: the call changes nothing); an `after` fault lets the
 * handler run and then replaces, delays or drops its answer (the change happened, the app does not
 * learn it: the live platform's approve or complete answering 500).
 */
export function registerFaultInjection(app: FastifyInstance, deps: { faults: FaultsService }): FaultableRoutes {
  const routes = new Map<string, string | undefined>()
  const operations = new Set<string>()
  app.addHook('onRoute', (route) => {
    const auth = route.config?.auth
    if ((auth !== 'key' && auth !== 'token') || !route.url.startsWith('/v2/')) return
    const operationId = (route.schema as { operationId?: string } | undefined)?.operationId
    for (const method of Array.isArray(route.method) ? route.method : [route.method]) {
      if (method === 'HEAD') continue
      routes.set(`${method} ${route.url}`, operationId)
    }
    if (operationId !== undefined) operations.add(operationId)
    // On these routes only, and at the cost of a Map lookup while the app has no fault.
    const url = route.url
    addRouteHook(route, 'preHandler', (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void) => {
      const principal = request.principal
      if (principal === undefined || principal.kind === 'session' || deps.faults.none(principal.appId)) {
        done()
        return
      }
      injectBefore(request, reply, `${request.method} ${url}`).then((answered) => {
        if (!answered) done()
      }, done)
    })
    addRouteHook(
      route,
      'onSend',
      (request: FastifyRequest, reply: FastifyReply, payload: unknown, done: (error: Error | null, payload?: unknown) => void) => {
        const fault = after.get(request)
        if (fault === undefined) {
          done(null, payload)
          return
        }
        after.delete(request)
        injectAfter(request, reply, fault, payload).then((sent) => done(null, sent), done)
      },
    )
  })

  if (!app.hasRequestDecorator('injectedFault')) app.decorateRequest('injectedFault', undefined)
  const after = new WeakMap<FastifyRequest, Fault>()

  const failBody = (fault: Fault, status: number) => ({
    error: 'injected_fault',
    error_message: `The sandbox made this call fail with ${status} (fault ${fault.id}, POST /sandbox/faults).`,
  })
  const fail = (reply: FastifyReply, status: number, retryAfter: number | undefined) => {
    reply.code(status).type('application/json; charset=utf-8')
    if (RETRY_AFTER_STATUSES.has(status)) reply.header('retry-after', String(retryAfter ?? 1))
  }

  /** A `before` fault, or an `after` one noted for onSend; answers whether the call was answered here. */
  async function injectBefore(request: FastifyRequest, reply: FastifyReply, route: string): Promise<boolean> {
    const principal = request.principal
    if (principal === undefined || principal.kind === 'session') return false
    const fault = await deps.faults.pick({
      appId: principal.appId,
      route,
      operationId: routes.get(route),
      userUid: async () => {
        if (principal.kind === 'token') return principal.uid
        const body = request.body as { uid?: unknown } | undefined
        if (typeof body?.uid === 'string') return body.uid
        const paymentId = (request.params as { payment_id?: unknown } | undefined)?.payment_id
        return typeof paymentId === 'string' ? deps.faults.paymentUserUid(principal.appId, paymentId) : undefined
      },
    })
    if (fault === undefined) return false
    request.injectedFault = `${fault.id}:${kindOf(fault)}`
    const effect = fault.effect
    if (fault.when === 'after') {
      after.set(request, fault)
      return false
    }
    if ('delay_ms' in effect) {
      await sleep(effect.delay_ms)
      return false
    }
    if ('drop' in effect) {
      // Answered (so the request completes and is logged), but the socket is destroyed before a byte is written (onSend).
      after.set(request, fault)
      fail(reply, 503, undefined)
      reply.send(failBody(fault, 503))
      return true
    }
    fail(reply, effect.status, effect.retry_after_seconds)
    reply.send(failBody(fault, effect.status))
    return true
  }

  /** What an `after` fault (or a drop) does to the answer on its way out: the payload to send. */
  async function injectAfter(request: FastifyRequest, reply: FastifyReply, fault: Fault, payload: unknown): Promise<unknown> {
    const effect = fault.effect
    if ('drop' in effect) {
      request.raw.socket?.destroy()
      return payload
    }
    if ('delay_ms' in effect) {
      await sleep(effect.delay_ms)
      return payload
    }
    fail(reply, effect.status, effect.retry_after_seconds)
    return JSON.stringify(failBody(fault, effect.status))
  }

  return {
    has: (route) => routes.has(route),
    hasOperation: (operationId) => operations.has(operationId),
    list: () => [...routes.keys()].sort(),
  }
}
