import type { Static, TObject, TSchema } from 'typebox'
import { parseInt64Id } from '../../lib/integers.js'
import { parseEffectCursor } from '../ledger-effects.js'
import { badParameter } from '../ledger-errors.js'
import type { PageQuery } from '../ledger-types.js'
import { afterLedgerToken } from '../paging-tokens.js'
import type { HorizonContext } from './context.js'
import { Collection, collectionEnvelope, EffectPageQuerySchema, PageQuerySchema, type PageQueryType, pageOf } from './paging.js'
import { problems } from './problems.js'
import { acceptsEventStream } from './streaming.js'

export interface CollectionSpec<P extends TObject, S, R extends TSchema> {
  /** Fastify's path, relative to /ledger: '/accounts/:account_id/payments'. */
  url: string
  operationId: string
  summary: string
  params?: P
  record: R
  /** The collection's paging tokens: TOIDs, or effects' "<TOID>-<order>". */
  cursor?: 'toid' | 'effect'
  /** Finds what the collection belongs to (an account, a transaction…), throwing notFound() if it does not exist. */
  resolve: (params: Static<P>) => Promise<S>
  /**
   * A page of records, in `page.order`, strictly after `page.cursor` (that collection's
   * paging token). Called with { order: 'asc', limit, cursor } it answers the records that
   * follow a cursor, which is what a stream needs.
   */
  list: (scope: S, page: PageQuery) => Promise<Array<Static<R> & { paging_token: string }>>
}

const isCursor = (cursor: string, kind: 'toid' | 'effect'): boolean =>
  kind === 'effect' ? parseEffectCursor(cursor) !== undefined : parseInt64Id(cursor) !== undefined

function checkCursor(cursor: string, kind: 'toid' | 'effect'): void {
  if (!isCursor(cursor, kind)) throw badParameter('cursor', 'a paging token (an integer from 0 to 2^63 − 1)')
}

/** The path of this request's collection (the `url` with its parameters), for the self/next/prev links. */
function pathOf(url: string, params: Record<string, unknown>): string {
  return url.replace(/:([a-z_]+)/g, (_match, name: string) => encodeURIComponent(String(params[name])))
}

/** Declares one Horizon collection: reads the page query, resolves the scope (404s), lists and wraps the page. */
export function collectionRoute<P extends TObject, S, R extends TSchema>(ctx: HorizonContext, spec: CollectionSpec<P, S, R>): void {
  // Typed as plain schemas: the records' type is checked where `list` is written, not through Fastify's generics.
  const response: Record<number, TSchema> = {
    200: Collection(spec.record),
    ...problems(...(spec.params === undefined ? [] : [404]), 429, 503),
  }
  ctx.r.route({
    method: 'GET',
    url: spec.url,
    schema: {
      tags: ctx.tags,
      operationId: spec.operationId,
      summary: spec.summary,
      ...(spec.params === undefined ? {} : { params: spec.params }),
      querystring: spec.cursor === 'effect' ? EffectPageQuerySchema : PageQuerySchema,
      response,
    },
    handler: async (request, reply) => {
      const params = (request.params ?? {}) as Static<P>
      const query = pageOf(request.query as PageQueryType)
      // The query is checked before the scope is looked up, as Horizon does: a bad cursor is a 400 even on a missing account.
      if (query.cursor !== undefined && query.cursor !== 'now') checkCursor(query.cursor, spec.cursor ?? 'toid')
      const scope = await spec.resolve(params)
      // `Accept: text/event-stream`: the same records, as Horizon's Server-Sent Events (streaming.ts).
      if (acceptsEventStream(request)) {
        const serialize = reply.compileSerializationSchema(spec.record as Record<string, unknown>) as (record: Static<R>) => string
        const kind = spec.cursor ?? 'toid'
        return ctx.streams.serve(request, reply, query, {
          list: (page) => spec.list(scope, page),
          serialize,
          isCursor: (cursor) => isCursor(cursor, kind),
        })
      }
      // Horizon's `now`: after the newest ledger's last possible record (toid.AfterLedger); the links carry that token.
      if (query.cursor === 'now') query.cursor = afterLedgerToken(BigInt((await ctx.ledger.latestLedger()).sequence))
      const records = await spec.list(scope, query)
      return collectionEnvelope(ctx.links.base, pathOf(spec.url, params as Record<string, unknown>), query, records)
    },
  })
}
