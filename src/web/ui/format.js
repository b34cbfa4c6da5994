// @ts-check
/**
 * Formats both pages show: amounts of Pi, times, durations and long ids.
 */

/**
 * `1234.5` → `1,234.5 π`, exact for the ledger's decimal strings too.
 * @param {string | number} amount
 */
export function formatPi(amount) {
  const [whole = '0', fraction = ''] = String(amount).split('.')
  const trimmed = fraction.replace(/0+$/, '')
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',')
  return `${grouped}${trimmed ? `.${trimmed}` : ''} π`
}

/**
 * A time in the person's own locale and zone (the platform page).
 * @param {string} iso
 */
export function formatLocalTime(iso) {
  const date = new Date(iso)
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString()
}

/**
 * A time in UTC, to the second (the console, where times are compared with logs): a dash for none.
 * @param {string | null | undefined} iso
 */
export function formatUtcTime(iso) {
  if (iso === null || iso === undefined) return '—'
  const date = new Date(iso)
  return Number.isNaN(date.getTime())
    ? String(iso)
    : date
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d{3}Z$/, ' UTC')
}

/**
 * How far the platform clock is ahead: `+1d 2h ahead`, or `real time`.
 * @param {number} seconds
 */
export function formatDuration(seconds) {
  if (seconds === 0) return 'real time'
  let rest = Math.round(Math.abs(seconds))
  const parts = []
  for (const [unit, size] of /** @type {const} */ ([
    ['d', 86_400],
    ['h', 3600],
    ['m', 60],
    ['s', 1],
  ])) {
    const n = Math.floor(rest / size)
    rest -= n * size
    if (n > 0) parts.push(`${n}${unit}`)
  }
  return `${seconds < 0 ? '−' : '+'}${parts.join(' ') || '0s'} ahead`
}

/**
 * A long id cut in the middle: its start and its last four characters.
 * @param {string} text
 * @param {number} [keep]
 */
export const shortMiddle = (text, keep = 8) => (text.length > keep * 2 + 1 ? `${text.slice(0, keep)}…${text.slice(-4)}` : text)

/**
 * A long id cut at its end (anything else as it is).
 * @template T
 * @param {T} id
 * @param {number} [keep]
 * @returns {T | string}
 */
export const shortId = (id, keep = 10) => (typeof id === 'string' && id.length > keep + 1 ? `${id.slice(0, keep)}…` : id)
