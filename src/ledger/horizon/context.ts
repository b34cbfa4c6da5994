import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyBaseLogger, FastifyInstance, RawReplyDefaultExpression, RawRequestDefaultExpression, RawServerDefault } from 'fastify'
import type { Clock } from '../../clock/clock.js'
import type { LedgerService } from '../ledger-service.js'
import type { HorizonLinks } from './links.js'
import type { Scopes } from './scopes.js'

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
  version: string
  tags: string[]
}
