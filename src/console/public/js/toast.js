import { h } from './dom.js'

// One toast at a time: a new message replaces the one on screen (errors no longer pile up).
const region = document.getElementById('toasts')
let timer

export function toast(message, kind = 'info') {
  clearTimeout(timer)
  const el = h('div', { class: `toast ${kind}`, 'data-testid': 'toast', role: kind === 'error' ? 'alert' : undefined }, message)
  region.replaceChildren(el)
  timer = setTimeout(() => el.remove(), kind === 'error' ? 8000 : 4000)
}
