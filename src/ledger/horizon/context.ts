import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyBaseLogger, FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from 'fastify'
import type { Clock } from '../../clock/clock.js'
import type { LedgerService } from '../ledger-service.js'
import type { HorizonLinks } from './links.js'
import type { Scopes } from './scopes.js'
import type { StreamHub } from './streaming.js'

export type HorizonRouter = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>

/** What every resource's routes are declared with. */
export interface HorizonContext {
  r: HorizonRouter
  ledger: LedgerService
  clock: Clock
  links: HorizonLinks
  scopes: Scopes
  /** Every collection streams through it when asked for text/event-stream. */
  streams: StreamHub
  version: string
  tags: string[]
}
