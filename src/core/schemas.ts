import { Type } from 'typebox'

/*
 * The TypeBox building blocks routes share. Each is a function, so every use is a schema object of
 * its own (nothing a route or the OpenAPI generator does to one schema reaches another route), and
 * the emitted JSON is what the route would have written by hand.
 */

/** An object's identifier in a path or a query: the ids src/lib/crypto.ts makes fit, and so do uids. */
export const Id = (options: { description?: string } = {}) => Type.String({ minLength: 1, maxLength: 64, ...options })

/** A value, or null in its place (a timestamp not reached yet, a field not given). */
export const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()])

/** The path parameters of a route under one app. */
export const AppParams = () => Type.Object({ app_id: Id() })

/** A paging cursor in a query. */
export const Cursor = (options: { description?: string } = {}) => Type.String({ minLength: 1, maxLength: 200, ...options })

/** The page size of the sandbox's lists. */
export const PageLimit = () => Type.Integer({ minimum: 1, maximum: 200, default: 50 })

/** A point in time in a response body. */
export const Timestamp = (description = 'ISO 8601 UTC') => Type.String({ description })

/** What a list is searched or filtered by, in a query. */
export const SearchText = (options: { description?: string } = {}) => Type.String({ minLength: 1, maxLength: 200, ...options })

/** A platform username: unique regardless of case. */
export const Username = () =>
  Type.String({
    minLength: 3,
    maxLength: 32,
    pattern: '^[A-Za-z0-9_]+$',
    description: '3 to 32 letters, digits or underscores; unique regardless of case',
  })
