// The platform clock in the top bar on every page.

import { formatDuration, formatUtcTime } from '../../../web/ui/format.js'
import { toast } from '../../../web/ui/toast.js'
import { get, post } from './api.js'

let base = null
const now = document.getElementById('clock-now')
const offset = document.getElementById('clock-offset')

/** The most the clock moves in one call (the API's bound: ten years and a bit). */
export const MAX_ADVANCE_SECONDS = 316_224_000

export async function refreshClock() {
  try {
    setClock(await get('/sandbox/clock'))
  } catch {
    now.textContent = 'unavailable'
  }
}

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

export async function advanceClock(seconds) {
  setClock(await post('/sandbox/clock', { advance_seconds: seconds }))
  toast(`Platform clock advanced by ${formatDuration(seconds).replace(' ahead', '')}`)
}
