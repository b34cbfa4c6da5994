// @ts-check
// The platform clock in the top bar on every page.

import { byId } from '../../../web/ui/dom.js'
import { formatDuration, formatUtcTime } from '../../../web/ui/format.js'
import { toast } from '../../../web/ui/toast.js'
import { get, post } from './api.js'

/** @type {{ ms: number, at: number, offset: number } | null} */
let base = null
const now = byId('clock-now')
const offset = byId('clock-offset')

/** The most the clock moves in one call (the API's bound: ten years and a bit). */
export const MAX_ADVANCE_SECONDS = 316_224_000

export async function refreshClock() {
  try {
    setClock(await get('/sandbox/clock'))
  } catch {
    now.textContent = 'unavailable'
  }
}

/** @param {{ timestamp: number, offset_seconds: number }} clock */
export function setClock(clock) {
  base = { ms: clock.timestamp * 1000, at: performance.now(), offset: clock.offset_seconds }
  tickClock()
}

export function tickClock() {
  if (base === null) return
  now.textContent = formatUtcTime(new Date(base.ms + (performance.now() - base.at)).toISOString())
  offset.textContent = formatDuration(base.offset)
}

export async function resetClock() {
  setClock(await post('/sandbox/clock/reset', {}))
  toast('Platform clock back on real time')
}

/** @param {number} seconds */
export async function advanceClock(seconds) {
  setClock(await post('/sandbox/clock', { advance_seconds: seconds }))
  toast(`Platform clock advanced by ${formatDuration(seconds).replace(' ahead', '')}`)
}
