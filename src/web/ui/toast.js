// @ts-check
/**
 * Toasts of both pages, in the page's `#toasts` region: a short message that goes by itself
 * (4 s; 8 s for an error, which is also an alert). The platform page stacks them; the console
 * (`oneAtATime`) shows one at a time, a new one replacing the one on screen, and a toast belongs
 * to the page (hash) it was shown on: leaving that page removes it. reportError() is the toast of an
 * error that a table, form or button of the UI layer met.
 */
import { byId, h } from './dom.js'

const options = { oneAtATime: false }
/** @type {ReturnType<typeof setTimeout> | undefined} */
let timer
/** @type {string | null} */
let owner = null

/**
 * Shows a message (`kind` 'info' or 'error').
 * @param {string} message
 * @param {'info' | 'error'} [kind]
 */
export function toast(message, kind = 'info') {
  const region = byId('toasts')
  const element = h('div', { class: `toast ${kind}`, 'data-testid': 'toast', role: kind === 'error' ? 'alert' : undefined }, message)
  const lasts = kind === 'error' ? 8000 : 4000
  if (!options.oneAtATime) {
    region.append(element)
    setTimeout(() => element.remove(), lasts)
    return
  }
  clearTimeout(timer)
  owner = location.hash
  region.replaceChildren(element)
  timer = setTimeout(() => element.remove(), lasts)
}

/** @type {(error: unknown) => boolean} */
let reportedElsewhere = () => false

/**
 * Shows an error as an error toast (its message), unless the page shows it its own way.
 * @param {unknown} error
 */
export function reportError(error) {
  if (reportedElsewhere(error)) return
  toast(error instanceof Error ? error.message : String(error), 'error')
}

/**
 * The errors reportError() leaves to the page (the console's refused admin token opens its token dialog).
 * @param {(error: unknown) => boolean} predicate
 */
export function reportElsewhere(predicate) {
  reportedElsewhere = predicate
}

/** Removes the toast unless it was shown for the page now open (set location.hash, then toast). */
export function clearToasts() {
  if (owner === location.hash) return
  clearTimeout(timer)
  owner = null
  byId('toasts').replaceChildren()
}

/** One toast at a time, each belonging to the page (hash) it was shown on (the console). */
export function oneToastAtATime() {
  options.oneAtATime = true
  window.addEventListener('hashchange', clearToasts)
}
