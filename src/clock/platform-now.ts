import { type RawBuilder, sql } from 'kysely'

/**
 * The platform time as the database computes it: the database server's clock plus the offset
 * stored in `platform_clock`, read by the statement itself. Every process reads the same
 * value, so a decision made with it (an approval window, a token's expiry) does not depend on
 * which process asks, nor on how recently that process refreshed its copy of the offset.
 * `now()` is the time the transaction began; milliseconds, as JS dates and the API carry them.
 */
export const platformNow: RawBuilder<Date> = sql<Date>`date_trunc('milliseconds', now() + (select offset_ms from platform_clock where id = 1) * interval '1 millisecond')`

/** `platformNow` moved by `ms` milliseconds (negative: earlier). */
export function platformNowPlus(ms: number): RawBuilder<Date> {
  return sql<Date>`(${platformNow} + ${ms}::double precision * interval '1 millisecond')`
}
