import { type Static, type TSchema, Type } from 'typebox'
import type { PageQuery } from '../ledger-types.js'
import { Links } from './links.js'

/** Paging tokens are TOIDs (int64 digits), or `now`: after the newest record. */
const TOID_CURSOR = '^([0-9]{1,20}|now)$'

export const PageQuerySchema = Type.Object({
  order: Type.Optional(Type.Union([Type.Literal('asc'), Type.Literal('desc')])),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, description: 'At most 200; default 10' })),
  cursor: Type.Optional(Type.String({ pattern: TOID_CURSOR, description: 'A paging_token; the page starts after it' })),
})
export type PageQueryType = Static<typeof PageQuerySchema>

/** Effects page by "<operation TOID>-<order>" (or a TOID alone, or `now`). */
export const EffectPageQuerySchema = Type.Object({
  ...PageQuerySchema.properties,
  cursor: Type.Optional(
    Type.String({ pattern: '^([0-9]{1,20}(-[0-9]{1,20})?|now)$', description: 'An effect paging_token; the page starts after it' }),
  ),
})

export const pageOf = (query: PageQueryType): PageQuery => ({ order: query.order ?? 'asc', limit: query.limit ?? 10, cursor: query.cursor })

export const Collection = <T extends TSchema>(record: T) =>
  Type.Object({ _links: Links('self', 'next', 'prev'), _embedded: Type.Object({ records: Type.Array(record) }) })

/** Horizon's collection envelope, with next/prev links that carry the paging tokens (and `filter`, a list's query: ?signer=…). */
export function collectionEnvelope<T extends { paging_token: string }>(
  base: string,
  path: string,
  query: PageQuery,
  records: T[],
  filter: Record<string, string> = {},
) {
  const href = (cursor: string | undefined, order: 'asc' | 'desc') =>
    `${base}${path}?${new URLSearchParams({ ...(cursor === undefined ? {} : { cursor }), limit: String(query.limit), order, ...filter }).toString()}`
  const reverse = query.order === 'asc' ? 'desc' : 'asc'
  return {
    _links: {
      self: { href: href(query.cursor, query.order) },
      next: { href: href(records.at(-1)?.paging_token ?? query.cursor, query.order) },
      prev: { href: href(records.at(0)?.paging_token ?? query.cursor, reverse) },
    },
    _embedded: { records },
  }
}
