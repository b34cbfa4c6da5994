/** The largest value of PostgreSQL's bigint (and of Horizon's int64 paging tokens). */
export const INT64_MAX = 2n ** 63n - 1n

/**
 * A decimal integer written as digits only (no sign, exponent, point, spaces or 0x; leading
 * zeros allowed, as Horizon's ParseInt allows them) within [min, max], or undefined. Every
 * number a path or query parameter carries into a bigint column goes through here, so that a
 * value the column cannot hold is refused as a bad request instead of failing in the database.
 */
export function parseBoundedInteger(text: string, min: bigint, max: bigint): bigint | undefined {
  if (!/^[0-9]{1,40}$/.test(text)) return undefined
  const value = BigInt(text)
  return value < min || value > max ? undefined : value
}

/** A paging token, ledger number or other id stored as bigint: 0 … 2^63 − 1, else undefined. */
export function parseInt64Id(text: string): bigint | undefined {
  return parseBoundedInteger(text, 0n, INT64_MAX)
}
