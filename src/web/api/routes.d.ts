/**
 * The API's routes as the pages call them, typed from the generated OpenAPI types (openapi.d.ts):
 * a page writes a concrete URL (`/portal/apps/${id}/keys?limit=5`), and `Answer<P, M>` is what
 * the route it names answers to method M. A URL segment that is an expression (`${id}`) matches
 * a path parameter (`{app_id}`), and nothing else: a fixed segment (`script`) matches only the same
 * fixed segment, never a parameter (a route's own key names itself), so `/sandbox/apps/${id}/ads/script` names `.../ads/script` and
 * not `.../ads/{ad_id}` (test/web-types/routes.check.js). A query string is left out of the match.
 */
import type { paths } from './openapi'

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

type Segments<S extends string> = S extends `${infer Head}/${infer Rest}` ? [Head, ...Segments<Rest>] : [S]
type WithoutQuery<S extends string> = S extends `${infer Path}?${string}` ? Path : S
type Matches<Given extends string[], Route extends string[]> = Given extends [infer G extends string, ...infer GivenRest extends string[]]
  ? Route extends [infer R extends string, ...infer RouteRest extends string[]]
    ? (string extends G ? (R extends `{${string}}` ? true : false) : G extends R ? true : false) extends true
      ? Matches<GivenRest, RouteRest>
      : false
    : false
  : Route extends []
    ? true
    : false

/**
 * The route (a key of `paths`) a concrete URL names, or never; each route of a union of URLs. A URL
 * that is a route as written names that route only, as the server's router prefers a static route
 * (`/v2/client/payments/incomplete` over `/v2/client/payments/{payment_id}`).
 */
export type RouteOf<P extends string> = P extends string
  ? WithoutQuery<P> extends keyof paths & string
    ? WithoutQuery<P>
    : {
        [K in keyof paths & string]: Matches<Segments<WithoutQuery<P>>, Segments<K>> extends true ? K : never
      }[keyof paths & string]
  : never

type Operation<P extends string, M extends Method> =
  RouteOf<P> extends infer K extends keyof paths ? NonNullable<paths[K][Lowercase<M> & keyof paths[K]]> : never

type Json<R> = R extends { content: { 'application/json': infer T } } ? T : undefined
type Success<Responses> = {
  [S in keyof Responses]: S extends 200 | 201 | 202 | 204 | '200' | '201' | '202' | '204' ? Json<Responses[S]> : never
}[keyof Responses]

/** What the route the URL `P` names answers to `M` when it succeeds (its JSON body; undefined for 204). */
export type Answer<P extends string, M extends Method = 'GET'> = Operation<P, M> extends { responses: infer R } ? Success<R> : never

/** The JSON body the route takes for `M`, or never when it takes none. */
export type Body<P extends string, M extends Method> =
  Operation<P, M> extends {
    requestBody?: { content: { 'application/json': infer B } }
  }
    ? B
    : never
