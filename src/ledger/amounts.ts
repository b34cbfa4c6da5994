/**
 * Amounts of test Pi. In code they are BigInt stroops (1 Pi = 10,000,000 stroops), so adding
 * them is exact; on the wire and in SQL they are decimal strings with 7 places, as Horizon
 * writes them ("1.5000000"). A float never holds an amount.
 */
export const STROOPS_PER_PI = 10_000_000n
const DECIMALS = 7

/** At most 13 integer digits: what `numeric(20,7)` holds (Stellar's int64 stroops need 12). */
const AMOUNT = /^(0|[1-9]\d{0,12})(\.\d{1,7})?$/

/** "1.5" → 15000000n; undefined for anything that is not a non-negative decimal with at most 7 places. */
export function tryParseAmount(text: string): bigint | undefined {
  const match = AMOUNT.exec(text)
  if (match === null) return undefined
  const whole = match[1] ?? '0'
  const fraction = (match[2] ?? '.').slice(1).padEnd(DECIMALS, '0')
  return BigInt(whole) * STROOPS_PER_PI + BigInt(fraction)
}

export class AmountError extends Error {
  override name = 'AmountError'
}

export function parseAmount(text: string): bigint {
  const stroops = tryParseAmount(text)
  if (stroops === undefined) throw new AmountError(`"${text.slice(0, 40)}" is not an amount (a decimal with at most 7 places)`)
  return stroops
}

/**
 * An amount sent as a JSON number or string. A number is accepted only when it names a
 * decimal with at most 7 places exactly (0.1 yes, 0.12345678 no), so no rounding happens here.
 */
export function parseAmountInput(value: string | number): bigint | undefined {
  if (typeof value === 'string') return tryParseAmount(value)
  if (!Number.isFinite(value) || value < 0) return undefined
  const fixed = value.toFixed(DECIMALS)
  if (Number(fixed) !== value) return undefined
  return tryParseAmount(fixed)
}

/**
 * A value the database computed from amounts (a balance, a sum): any size, signed, at most
 * 7 places. Not for input from outside.
 */
export function parseStoredAmount(text: string): bigint {
  const match = /^(-?)(\d+)(?:\.(\d{1,7}))?$/.exec(text)
  if (match === null) throw new AmountError(`"${text.slice(0, 40)}" is not a stored amount`)
  const stroops = BigInt(match[2] ?? '0') * STROOPS_PER_PI + BigInt((match[3] ?? '').padEnd(DECIMALS, '0'))
  return match[1] === '-' ? -stroops : stroops
}

/** 15000000n → "1.5000000"; always 7 places, like Horizon. */
export function formatAmount(stroops: bigint): string {
  const negative = stroops < 0n
  const magnitude = negative ? -stroops : stroops
  const whole = magnitude / STROOPS_PER_PI
  const fraction = (magnitude % STROOPS_PER_PI).toString().padStart(DECIMALS, '0')
  return `${negative ? '-' : ''}${whole}.${fraction}`
}
