import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyError, FastifyInstance, FastifyReply } from 'fastify'
import type { Clock } from '../../clock/clock.js'
import type { RouteTable } from '../../http/routing.js'
import { type HorizonProblem, notFound, problem } from '../ledger-errors.js'
import type { LedgerService } from '../ledger-service.js'
import { accountRoutes } from './accounts.js'
import type { HorizonContext } from './context.js'
import { effectRoutes } from './effects.js'
import { type Friendbot, friendbotRoutes } from './friendbot.js'
import { ledgerRoutes } from './ledgers.js'
import { horizonLinks } from './links.js'
import { operationRoutes } from './operations.js'
import { PROBLEM_CONTENT_TYPE, toProblem } from './problems.js'
import { rootRoutes } from './root.js'
import { scopes } from './scopes.js'
import type { StreamHub } from './streaming.js'
import { TX_BODY_LIMIT, transactionRoutes } from './transactions.js'

/**
 * The Horizon-compatible API of the embedded ledger, mounted at /ledger: what stellar-sdk
 * (and so pi-backend) calls to load an account, fetch the base fee and time bounds, submit a
 * transaction and read it back. An encapsulated plugin: its errors are Horizon problems
 * (application/problem+json), not the platform's `{error, error_message}`.
 */
export interface HorizonOptions {
  ledger: LedgerService
  clock: Clock
  /** PLINTH_PUBLIC_URL: links are absolute, as Horizon's are. */
  publicUrl: string
  version: string
  /** Wrong methods (405) and CORS preflights, answered for the ledger's paths too. */
  routes: RouteTable
  /** The open event streams of this process (streaming.ts). */
  streams: StreamHub
  /** The faucet behind GET /friendbot (friendbot.ts); none: no /friendbot. */
  friendbot?: Friendbot | undefined
  /** The base of every link (`PLINTH_PUBLIC_URL/ledger` when absent): a network's own origin when served there (origins.ts). */
  linkBase?: string
  /** Left out of the OpenAPI document: the same routes as /ledger's, at a network's own origin. */
  hidden?: boolean
}

export async function horizonRoutes(app: FastifyInstance, options: HorizonOptions): Promise<void> {
  const { ledger, clock, publicUrl, version } = options
  if (options.hidden === true) {
    app.addHook('onRoute', (route) => {
      route.schema = { ...route.schema, hide: true }
    })
  }

  // stellar-sdk takes the server's time from Horizon's Date header (fetchTimebounds): make it
  // the platform clock's, so time bounds agree with the ledger after the sandbox moves time.
  app.addHook('onSend', async (_request, reply) => {
    reply.header('date', clock.now().toUTCString())
  })

  // stellar-sdk submits `tx=<base64>` as a form: this plugin reads forms on every route, bounded in size.
  app.removeContentTypeParser('application/x-www-form-urlencoded')
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: TX_BODY_LIMIT }, (_request, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)))
  })

  const sendProblem = (reply: FastifyReply, body: HorizonProblem) => reply.code(body.status).type(PROBLEM_CONTENT_TYPE).send(body)
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const body = toProblem(error, (err) => request.log.error({ err }, 'unexpected error in the ledger API'))
    if (body.status === 413 || body.status === 415) reply.header('connection', 'close')
    // The closer's back-pressure and a transaction erased by a reset: nothing was applied, try again shortly.
    if (body.status === 503) reply.header('retry-after', '1')
    return sendProblem(reply, body)
  })
  app.setNotFoundHandler((request, reply) => {
    const unrouted = options.routes.unrouted(request)
    if (unrouted?.kind === 'preflight') return reply.code(204).headers(unrouted.headers).send()
    if (unrouted?.kind === 'method_not_allowed')
      return sendProblem(reply.header('allow', unrouted.allow), problem('method_not_allowed', unrouted.message))
    return sendProblem(reply, notFound().problem)
  })

  const ctx: HorizonContext = {
    r: app.withTypeProvider<TypeBoxTypeProvider>(),
    ledger,
    clock,
    links: horizonLinks(options.linkBase ?? `${publicUrl}/ledger`),
    scopes: scopes(ledger),
    streams: options.streams,
    version,
    tags: ['Ledger'],
  }
  rootRoutes(ctx)
  accountRoutes(ctx)
  transactionRoutes(ctx)
  operationRoutes(ctx)
  effectRoutes(ctx)
  ledgerRoutes(ctx)
  if (options.friendbot !== undefined) friendbotRoutes(ctx, options.friendbot)
}
