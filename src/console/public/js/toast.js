import { h } from './dom.js'

// One toast at a time: a new message replaces the one on screen (errors no longer pile up).
// A toast belongs to the page it was shown on: leaving that page removes it, so "Fault cleared"
// never shows over the next page.
const region = document.getElementById('toasts')
let timer
let owner = null

export function toast(message, kind = 'info') {
  clearTimeout(timer)
  const el = h('div', { class: `toast ${kind}`, 'data-testid': 'toast', role: kind === 'error' ? 'alert' : undefined }, message)
  owner = location.hash
  region.replaceChildren(el)
  timer = setTimeout(() => el.remove(), kind === 'error' ? 8000 : 4000)
}

/** Removes the toast unless it was shown for the page now open (set location.hash, then toast). */
export function clearToasts() {
  if (owner === location.hash) return
  clearTimeout(timer)
  owner = null
  region.replaceChildren()
}

window.addEventListener('hashchange', clearToasts)
