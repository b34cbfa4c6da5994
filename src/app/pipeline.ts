import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { PlatformClock } from '../clock/clock.js'
import { clockRepo } from '../clock/clock-repo.js'
import { ErrorBody, type ErrorCode } from '../core/errors.js'
import { registerAuth } from '../http/auth.js'
import { registerBodyParsers } from '../http/body-parsers.js'
import { registerDrain } from '../http/drain.js'
import { registerErrorHandling } from '../http/errors.js'
import { registerProtocolChecks } from '../http/protocol.js'
import { registerRateLimits } from '../http/rate-limit.js'
import { type RouteTable, registerRouting } from '../http/routing.js'
import { registerClientHeaderRule, registerHostCheck, registerSiteCheck, servedHostNames } from '../http/site-guard.js'
import { validatorCompiler } from '../http/validation.js'
import { type ReplayGrants, replayGrants } from '../request-log/replay.js'
import { type RequestLog, registerRequestLog } from '../request-log/request-log.js'
import { type FaultableRoutes, registerFaultInjection } from '../sandbox/faults/fault-injection.js'
import { registerRequestMetrics } from '../system/metrics.js'
import { registerApiDocs } from '../web/docs-routes.js'
import type { AppDeps } from './app-deps.js'
import { BODY_LIMIT, VERSION } from './server.js'
import type { Services } from './services.js'

/**
 * The request pipeline, in the order its stages are registered: this list registers them.
 *
 * How registration order becomes run order. Fastify runs a request's hooks phase by phase:
 * onRequest (the global ones, then the route's own), the body parser, validation, preHandler,
 * the handler, onSend, onResponse. Within a phase, global hooks run in the order they were
 * added; a route's own hooks are added by `onRoute` captures (src/http/route-hooks.ts) when the
 * route is declared, so they run in the order of the stages that capture them, and only on the
 * routes declared after those stages: every route group (src/app/routes.ts) is registered after
 * this whole list. A stage that refuses ends the request there: nothing below it runs, and the
 * error handler answers in the platform's shape. Each stage says when it runs (`runs`).
 *
 * Before this list, where the server is created (src/app/server.ts): the URL is normalised
 * (`rewriteUrl`), a path the router cannot read is refused 400 bad_request (`frameworkErrors`),
 * and what Node's HTTP parser refuses is answered on the socket (`clientErrorHandler`: 400
 * bad_request, 408 request_timeout, 431 headers_too_large). After it, by the entry point of a
 * listening server only: DRAIN, below.
 */
export interface PipelineContext {
  config: AppDeps['config']
  clock: PlatformClock
  services: Services
  /** The rate limits' clock (ms); a monotonic clock when absent. */
  rateLimitNow: (() => number) | undefined
}

/** What stages hand to later stages and to the route groups. */
export interface PipelineProducts {
  /** Every route declared, for the 405s and CORS preflights of the not-found handler (the routing stage). */
  routes?: RouteTable
  /** Sandbox mode: whether a reset or a restore committed while a request ran (the sandbox-epoch stage). */
  replacedDuring?: (request: FastifyRequest) => Promise<boolean>
  /** Sandbox mode: the routes a fault can be set on (the fault-injection stage). */
  faultable?: FaultableRoutes
  /** The request log's writer, when the log is on (the request-log stage). */
  requestLog?: RequestLog
  /** Sandbox mode: one-use credentials a request-log replay authenticates with (the auth stage). */
  replayGrants?: ReplayGrants
}

interface Refusal {
  status: number
  code: ErrorCode
  when: string
}

interface Stage {
  name: string
  /** When Fastify runs it, and on which requests. */
  runs: string
  does: string
  /** What it answers instead of letting the request go on (empty: it lets every request through). */
  refuses: readonly Refusal[]
  /** Why it sits where it does. */
  why: string
  /** Registered only when this holds (every time when absent). */
  when?: (ctx: PipelineContext) => boolean
  register(app: FastifyInstance, ctx: PipelineContext, products: PipelineProducts): void | Promise<void>
}

const sandboxMode = (ctx: PipelineContext) => ctx.config.mode === 'sandbox'

/** A product of an earlier stage: its absence means the list was reordered, which must fail at start-up. */
function need<T>(product: T | undefined, stage: string, by: string): T {
  if (product === undefined) throw new Error(`the ${by} stage needs the ${stage} stage registered before it`)
  return product
}

export const PIPELINE: readonly Stage[] = [
  {
    name: 'metrics',
    runs: 'onResponse, every request; when GET /metrics is served (sandbox mode, or a metrics token)',
    does: 'Counts and times each request by method, route pattern and status.',
    refuses: [],
    why: 'First, so that it sees every request, those refused by any stage below and the 404s included, and times it before the request log writes anything.',
    when: (ctx) => ctx.services.metricsServed,
    register: (app, ctx) => registerRequestMetrics(app, ctx.services.metrics),
  },
  {
    name: 'routing',
    runs: "onRoute, every route; CORS headers as the first of each CORS route's own onRequest hooks",
    does: 'Records every route declared (the not-found handler answers 405 with Allow and the CORS preflights from it) and sets the CORS headers of the ledger and of the access-token routes.',
    refuses: [],
    why: "Before every route, which it records; its CORS hook goes first among a route's own, so that a 401 of the auth stage carries the CORS headers and the browser lets the page read it.",
    register: (app, _ctx, products) => {
      products.routes = registerRouting(app)
    },
  },
  {
    name: 'request-id',
    runs: 'onRequest, every request (the first global hook)',
    does: "Sets X-Request-Id (the client's, when well-formed) and X-Content-Type-Options: nosniff on the answer.",
    refuses: [],
    why: 'Before every check that can refuse, so that each refusal carries the request id.',
    register: (app) => {
      // Hooks on every request are written with `done`: an async hook costs a promise per request.
      app.addHook('onRequest', (request, reply, done) => {
        reply.header('x-request-id', request.id).header('x-content-type-options', 'nosniff')
        done()
      })
    },
  },
  {
    name: 'protocol',
    runs: 'onRequest, every request; CONNECT on the socket',
    does: "Routes what Node would answer on its own (an unknown Expect, an HTTP/1.1 request without Host) so that it is refused in the platform's shape; answers a CONNECT on its socket.",
    refuses: [
      { status: 417, code: 'expectation_failed', when: 'an Expect other than 100-continue (before the body is read)' },
      { status: 400, code: 'bad_request', when: 'an HTTP/1.1 request without Host, or a CONNECT' },
    ],
    why: 'Before the host stage, which lets a request without Host through because this one has refused it.',
    register: (app) => registerProtocolChecks(app),
  },
  {
    name: 'host',
    runs: 'onRequest, every request',
    does: "Serves only the host names this server is known by (loopback, the public URL's, PLINTH_ALLOWED_HOSTS); /healthz and /readyz answer any Host.",
    refuses: [{ status: 421, code: 'misdirected_request', when: 'a Host this server is not known by (DNS rebinding)' }],
    why: "After the missing-Host check; before anything a rebound page could read or change, and before every route's own hooks.",
    register: (app, ctx) => registerHostCheck(app, { names: servedHostNames(ctx.config.publicUrl, ctx.config.allowedHosts ?? []) }),
  },
  {
    name: 'site',
    runs: "a route's own onRequest, on the routes no key or token guards (the sandbox API, production's account API), the ledger's aside",
    does: 'Refuses what a browser sent from a page of another site (Sec-Fetch-Site, or Origin).',
    refuses: [{ status: 403, code: 'cross_site_request', when: 'a sandbox or account API request from a page of another site or port' }],
    why: 'Registered before the auth stage, so it runs before it: a foreign page learns nothing of the admin token either.',
    register: (app, ctx) => registerSiteCheck(app, { publicUrl: ctx.config.publicUrl }),
  },
  {
    name: 'body-parsers',
    runs: 'after every onRequest hook, on requests with a body',
    does: 'Reads JSON bodies (and form fields where a route allows them); an empty body is no body.',
    refuses: [
      { status: 400, code: 'invalid_json', when: 'a body that is not valid JSON' },
      { status: 413, code: 'payload_too_large', when: "a body over the route's limit (1 MiB; 16 KiB for forms)" },
      { status: 415, code: 'unsupported_media_type', when: 'a non-empty body of another type' },
    ],
    why: 'Fastify reads the body only once every onRequest hook has let the request through: a refused request is never read.',
    register: (app) => registerBodyParsers(app, { bodyLimit: BODY_LIMIT }),
  },
  {
    name: 'validation',
    runs: 'after the body is read, before preHandler, on routes with a schema',
    does: "Checks parameters, query and body against the route's schema.",
    refuses: [{ status: 400, code: 'invalid_arguments', when: "a request its route's schema refuses" }],
    why: 'Set before any route is declared: each route compiles its schema with it.',
    register: (app) => {
      app.setValidatorCompiler(validatorCompiler)
    },
  },
  {
    name: 'sandbox-epoch',
    runs: 'onRequest, every request; sandbox mode',
    does: 'Notes the clock epoch each request starts in: a reset or a restore starts a new one.',
    refuses: [],
    why: "A global hook, so the epoch is noted before any route's hook awaits; before the error-handling stage, which answers an unexpected error of a request that ran across a new epoch as a 503 to retry.",
    when: sandboxMode,
    register: (app, ctx, products) => {
      const { clock, services } = ctx
      const startedIn = new WeakMap<FastifyRequest, number>()
      app.addHook('onRequest', (request, _reply, done) => {
        startedIn.set(request, clock.epoch())
        done()
      })
      products.replacedDuring = async (request) => {
        const started = startedIn.get(request)
        return started !== undefined && (await clockRepo(services.db).read()).epoch !== started
      }
    },
  },
  {
    name: 'error-handling',
    runs: 'whenever a stage or a handler throws, and for requests no route matched',
    does: "Answers every error in the platform's shape ({error, error_message}; Horizon problems under /ledger are the ledger's own), and what no route matched: a CORS preflight, 405 with Allow, or 404.",
    refuses: [
      { status: 404, code: 'not_found', when: 'no route of that path' },
      { status: 405, code: 'method_not_allowed', when: 'a known path asked with a method it does not serve' },
      {
        status: 503,
        code: 'service_unavailable',
        when: 'sandbox mode: an unexpected error of a request that ran across a reset or a restore',
      },
      { status: 500, code: 'unknown_error', when: 'any other unexpected error (logged, with the request id)' },
    ],
    why: 'Needs the route table (routing) and the epoch (sandbox-epoch); set before the documentation plugins and every route, which inherit it.',
    register: (app, _ctx, products) => {
      const { replacedDuring } = products
      registerErrorHandling(app, need(products.routes, 'routing', 'error-handling'), replacedDuring === undefined ? {} : { replacedDuring })
      app.addSchema(ErrorBody)
    },
  },
  {
    name: 'api-docs',
    runs: 'onRoute, every route (the OpenAPI document); /docs, its own onRequest',
    does: 'Collects the OpenAPI document of every route declared after it (GET /v2/openapi.json serves it) and serves the interactive reference at /docs (compressed, with its headers) and the error table at /docs/errors (src/web/docs-routes.ts).',
    refuses: [],
    why: 'Before every API route, which it documents; /docs is declared before the auth and request-log stages, which do not concern it.',
    register: (app, ctx) => registerApiDocs(app, { publicUrl: ctx.config.publicUrl, mode: ctx.config.mode, version: VERSION }),
  },
  {
    name: 'auth',
    runs: "a route's own onRequest, on routes declared with config.auth (key, token, admin or session), before the body is read",
    does: "Authenticates the server API key, the access token, the admin token or the session cookie (on /portal, a personal access token instead: Authorization: Bearer), and sets request.principal; then checks the token's scope. A session route's every answer, a refusal included, carries Cache-Control: no-store. Every token route must declare the scope it needs (the application does not start otherwise; its OpenAPI operation documents it). In sandbox mode a one-use replay grant (src/request-log/replay.ts) also stands for the key whose call the sandbox API replays.",
    refuses: [
      { status: 401, code: 'missing_authorization', when: 'a key or token route without a usable Authorization' },
      { status: 401, code: 'wrong_authorization_scheme', when: 'Key where Bearer is needed, or the reverse' },
      { status: 401, code: 'invalid_api_key', when: 'an unknown or revoked server API key' },
      { status: 401, code: 'invalid_access_token', when: 'an unknown or revoked access token' },
      { status: 401, code: 'token_expired', when: 'an expired access token' },
      { status: 401, code: 'invalid_admin_token', when: 'the sandbox API without the configured admin token' },
      {
        status: 401,
        code: 'session_required',
        when: 'an account route without a live session cookie (production); for a session that is over, with `reason` (idle, expired, signed_out, suspended). X-Plinth-Background: 1 marks a request that records no use',
      },
      { status: 401, code: 'invalid_personal_token', when: 'a /portal route with an unknown or revoked personal access token' },
      {
        status: 401,
        code: 'personal_token_refused',
        when: 'an /account or /operator route with Authorization: Bearer (a personal access token is for /portal only)',
      },
      { status: 403, code: 'read_only_token', when: 'a read personal access token on a /portal route other than GET or HEAD' },
      {
        status: 401,
        code: 'missing_scope',
        when: "an access token not granted the route's scope (the principal is set first: the request log names the app and user)",
      },
    ],
    why: "After the routing stage's CORS and the site check (their hooks were captured first); before the rate limit and the faults, which need the principal.",
    register: (app, ctx, products) => {
      const { credentials, apps, identity, accounts, personalTokens } = ctx.services
      const cached = credentials.authenticator({ verifyApiKey: apps.verifyApiKey, verifyAccessToken: identity.verifyAccessToken })
      // Sandbox mode: a request-log replay, injected by the sandbox API, authenticates as the key that made the call.
      const grants = sandboxMode(ctx) ? replayGrants() : undefined
      if (grants !== undefined) products.replayGrants = grants
      registerAuth(app, {
        adminToken: ctx.config.adminToken,
        verifySession: accounts?.verifySession,
        verifyPersonalToken: personalTokens?.verify,
        authenticator: {
          verifyAccessToken: cached.verifyAccessToken,
          identifyRefusedKey: apps.identifyRefusedKey,
          // A key's last use is recorded (to the minute) whether the cache or the database answered.
          async verifyApiKey(key) {
            const checked = grants?.take(key) ?? (await cached.verifyApiKey(key))
            if (typeof checked === 'object') await apps.noteKeyUse(checked.keyId)
            return checked
          },
        },
      })
    },
  },
  {
    name: 'client-header',
    runs: "a route's own onRequest, on the state-changing routes of the sandbox API and production's account API",
    does: 'Requires Content-Type: application/json or, on the sandbox API without a body, X-Plinth-Client: what no simple cross-site request can carry. A /portal request the auth stage accepted a personal access token for is exempt: its Authorization header is what no simple request carries.',
    refuses: [
      { status: 415, code: 'client_header_required', when: 'a sandbox API POST, PUT, PATCH or DELETE with neither' },
      { status: 415, code: 'unsupported_media_type', when: 'an account API POST or DELETE that is not application/json' },
    ],
    why: 'After the auth stage: a call without the admin token is told that first.',
    register: (app) => registerClientHeaderRule(app),
  },
  {
    name: 'rate-limit',
    runs: "a route's own onRequest, on key and token routes (none when both limits are 0)",
    does: 'Counts requests a minute per server API key and per access token, in this process; documents the 429.',
    refuses: [{ status: 429, code: 'rate_limited', when: 'a key or token past its limit (with Retry-After)' }],
    why: 'After the auth stage: it counts per principal, and a request that failed authentication is not counted; before the body is read.',
    register: (app, ctx) =>
      registerRateLimits(app, {
        keyPerMinute: ctx.config.rateLimitKeyPerMinute,
        tokenPerMinute: ctx.config.rateLimitTokenPerMinute,
        ...(ctx.rateLimitNow === undefined ? {} : { now: ctx.rateLimitNow }),
      }),
  },
  {
    name: 'fault-injection',
    runs: "a route's own preHandler and onSend, on the /v2 key and token routes; sandbox mode",
    does: 'Injects the faults an app set (POST /sandbox/faults): a status, a delay or a dropped connection, before the handler or after it.',
    refuses: [{ status: 500, code: 'injected_fault', when: 'a fault of the app matches the call (its status: 500, 502, 503 or 429)' }],
    why: 'preHandler: after authentication, rate limits and validation, before the handler (a `before` fault changes nothing); production mode never looks a fault up.',
    when: sandboxMode,
    register: (app, ctx, products) => {
      const sandbox = need(ctx.services.sandbox, 'sandbox services', 'fault-injection')
      products.faultable = registerFaultInjection(app, { faults: sandbox.faults })
    },
  },
  {
    name: 'request-log',
    runs: "onSend and onResponse, every request (it keeps the /v2 calls of an authenticated app); every app's in sandbox mode, each app that opted in in production, unless PLINTH_REQUEST_LOG says otherwise",
    does: "Keeps each /v2 call of an app (its status, bodies and any fault injected into it) in a buffer written in batches, off the request's path.",
    refuses: [],
    why: "Before the routes it logs. Its hooks are global and only observe: its onResponse runs after the metrics stage's, and reads the status a fault may have set.",
    // Its cost (BENCHMARKS.md, "Issue 40"): the one stage over 5 µs a request, because each logged
    // call becomes a stored row, with its headers and bodies redacted and written by COPY. The
    // request's own path keeps references only; the redaction, the JSON and the write run in the
    // flush, which is CPU of the same process all the same.
    when: (ctx) => ctx.config.requestLog !== false,
    register: (app, ctx, products) => {
      const { metrics, db, requestLogOptIn } = ctx.services
      const requestLog = registerRequestLog(app, {
        db,
        clock: ctx.clock,
        log: app.log,
        ...(requestLogOptIn === undefined ? {} : { logs: requestLogOptIn.has }),
      })
      metrics.gauge('plinth_request_log_buffered', "Request-log rows waiting in this process's buffer", requestLog.buffered)
      metrics.gauge(
        'plinth_request_log_dropped',
        'Request-log rows this process dropped since it started (buffer full, or a batch refused)',
        requestLog.dropped,
      )
      products.requestLog = requestLog
    },
  },
]

/** Registers the stages of the pipeline that apply, in order; the route groups come after. */
export async function applyPipeline(app: FastifyInstance, ctx: PipelineContext): Promise<PipelineProducts> {
  const products: PipelineProducts = {}
  for (const stage of PIPELINE) {
    if (stage.when === undefined || stage.when(ctx)) await stage.register(app, ctx, products)
  }
  return products
}

/**
 * The last stage, a listening server's only (src/start.ts adds it once the application is
 * built): its onSend comes after every route's.
 */
export const DRAIN = {
  name: 'drain',
  runs: 'onSend, every request of a listening server',
  does: 'A graceful stop: once stopping, the last answer on each connection carries Connection: close, and idle connections are closed.',
  refuses: [],
  why: "After the routes: only a server that listens drains (the tests' injected requests have no connection), and the drain must see every answer.",
  register: (app: FastifyInstance) => registerDrain(app),
} as const satisfies Omit<Stage, 'register'> & { register(app: FastifyInstance): unknown }
