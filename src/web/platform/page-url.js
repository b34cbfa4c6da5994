// @ts-check
/**
 * The platform page's URL: its query keeps the page's state (main.js), so a reload or a link lands
 * in the same place, and for tests it tunes the page's timers: `resend_ms` (how often payment
 * callbacks are re-sent, default 10000), `poll_ms` (payment polling, 1000), `ad_ms` (ad length,
 * 5000), `refresh_ms` (notification refresh, 5000) and `connect_ms` (how long the app has to
 * connect, 10000).
 */

/** The query the page was opened with. */
export const params = new URLSearchParams(location.search)

/**
 * @param {string} name
 * @param {number} fallback
 * @param {number} min
 */
const numberParam = (name, fallback, min) => {
  const value = Number(params.get(name))
  return params.has(name) && Number.isFinite(value) && value >= min ? value : fallback
}

/** The page's timers, in milliseconds. */
export const tuning = {
  resendMs: numberParam('resend_ms', 10_000, 50),
  pollMs: numberParam('poll_ms', 1000, 50),
  adMs: numberParam('ad_ms', 5000, 0),
  refreshMs: numberParam('refresh_ms', 5000, 100),
  connectMs: numberParam('connect_ms', 10_000, 100),
}

/**
 * Sets (a string) or removes (undefined) query parameters, in place: no new history entry.
 * @param {Record<string, string | undefined>} changes
 */
export function setUrl(changes) {
  const url = new URL(location.href)
  for (const [name, value] of Object.entries(changes)) {
    if (value === undefined) url.searchParams.delete(name)
    else url.searchParams.set(name, value)
  }
  history.replaceState(null, '', url)
}
