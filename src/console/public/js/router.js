// Hash routes (#/apps/{id}/payments/{payment_id}) to pages. A page is an async function of the
// route's parameters answering the nodes to show; a newer navigation wins over a slower one.

import { h } from '../../../web/ui/dom.js'
import { ApiFailure } from './api.js'

const main = document.getElementById('main')
const routes = []
let renderId = 0
let leave = []

export function route(pattern, page) {
  const names = []
  const source = pattern.replace(/:(\w+)/g, (_, name) => {
    names.push(name)
    return '([^/]+)'
  })
  routes.push({ regex: new RegExp(`^${source}$`), names, page })
}

export function currentRoute() {
  return location.hash.replace(/^#\/?/, '') || 'apps'
}

/** Runs `stop` when the page is left (timers of a live tail). */
export function onLeave(stop) {
  leave.push(stop)
}

export async function render() {
  const path = currentRoute().split('?')[0]
  const section = path.split('/')[0]
  for (const link of document.querySelectorAll('.sidenav a[data-section]')) {
    const active = link.dataset.section === section
    link.classList.toggle('active', active)
    if (active) link.setAttribute('aria-current', 'page')
    else link.removeAttribute('aria-current')
  }
  for (const stop of leave) stop()
  leave = []
  const mine = ++renderId
  let page = notFound
  let params = {}
  for (const candidate of routes) {
    const match = candidate.regex.exec(path)
    if (match === null) continue
    page = candidate.page
    params = Object.fromEntries(candidate.names.map((name, i) => [name, decodeURIComponent(match[i + 1])]))
    break
  }
  main.setAttribute('aria-busy', 'true')
  const loading = setTimeout(() => {
    if (mine === renderId) main.replaceChildren(h('p', { class: 'loading', 'data-testid': 'loading' }, 'Loading…'))
  }, 150)
  try {
    const content = await page(params)
    if (mine !== renderId) return
    main.replaceChildren(...content.flat().filter(Boolean))
  } catch (error) {
    if (mine !== renderId) return
    const message =
      error instanceof ApiFailure && error.code === 'invalid_admin_token' ? 'The sandbox API needs the admin token.' : error.message
    main.replaceChildren(
      h('section', { class: 'card' }, h('h2', {}, 'Could not load this page'), h('p', { class: 'error', role: 'alert' }, message)),
    )
  } finally {
    clearTimeout(loading)
    if (mine === renderId) main.removeAttribute('aria-busy')
  }
}

function notFound() {
  return [h('section', { class: 'card' }, h('h2', {}, 'Nothing here'), h('p', {}, h('a', { href: '#/apps' }, 'Back to the apps')))]
}
