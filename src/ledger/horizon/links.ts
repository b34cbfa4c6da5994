import { Type } from 'typebox'

export const Link = Type.Object({ href: Type.String(), templated: Type.Optional(Type.Boolean()) })

/** The schema of a `_links` object with exactly these links. */
export const Links = <K extends string>(...names: K[]) =>
  Type.Object(Object.fromEntries(names.map((name) => [name, Link])) as Record<K, typeof Link>)

export interface HorizonLink {
  href: string
  templated?: boolean
}

/** Horizon's links are absolute: PLINTH_PUBLIC_URL + /ledger + path. */
export function horizonLinks(base: string) {
  return {
    base,
    link: (path: string): HorizonLink => ({ href: `${base}${path}` }),
    /** A link with an RFC 6570 template, as Horizon writes `{?cursor,limit,order}` and `{id}`. */
    templated: (path: string): HorizonLink => ({ href: `${base}${path}`, templated: true }),
    /** A collection link: `path{?cursor,limit,order}`. */
    collection: (path: string): HorizonLink => ({ href: `${base}${path}{?cursor,limit,order}`, templated: true }),
  }
}

export type HorizonLinks = ReturnType<typeof horizonLinks>

/** Horizon writes times in whole seconds: 2026-11-22T02:00:00Z. */
export const isoSeconds = (date: Date): string => date.toISOString().replace(/\.\d{3}Z$/, 'Z')
