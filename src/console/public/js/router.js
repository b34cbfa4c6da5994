// @ts-check
// Hash routes (#/apps/{id}/payments/{payment_id}) to pages. A page is an async function of the
// route's parameters answering the nodes to show; a newer navigation wins over a slower one.

import { append, byId, h } from '../../../web/ui/dom.js'
import { ApiFailure } from './api.js'

/** @typedef {import('../../../web/ui/types').Child} Child */
/**
 * The parameters a route's pattern names: `apps/:appId/requests/:id` → `{ appId: string, id: string }`.
 * @template {string} Pattern
 * @typedef {Pattern extends `${string}:${infer Name}/${infer Rest}`
 *   ? { [K in Name]: string } & ParamsOf<Rest>
 *   : Pattern extends `${string}:${infer Name}` ? { [K in Name]: string } : {}} ParamsOf
 */
/**
 * A page: what to show for the route's parameters.
 * @template Params
 * @typedef {(params: Params) => Promise<Child[]> | Child[]} Page
 */

const main = byId('main')
/** @type {{ regex: RegExp, names: string[], page: Page<Record<string, string>> }[]} */
const routes = []
let renderId = 0
/** @type {(() => void)[]} */
let leave = []

/**
 * Shows `page` at the hash `#/<pattern>`, where `:name` is a parameter (one path segment, decoded).
 * @template {string} Pattern
 * @param {Pattern} pattern
 * @param {Page<ParamsOf<Pattern>>} page
 */
export function route(pattern, page) {
  /** @type {string[]} */
  const names = []
  const source = pattern.replace(/:(\w+)/g, (_, name) => {
    names.push(name)
    return '([^/]+)'
  })
  // The regex gives the pattern's names, each a decoded segment: the parameters the page takes.
  routes.push({ regex: new RegExp(`^${source}$`), names, page: /** @type {Page<Record<string, string>>} */ (page) })
}

export function currentRoute() {
  return location.hash.replace(/^#\/?/, '') || 'apps'
}

/**
 * Runs `stop` when the page is left (timers of a live tail).
 * @param {() => void} stop
 */
export function onLeave(stop) {
  leave.push(stop)
}

export async function render() {
  const path = currentRoute().split('?')[0] ?? ''
  const section = path.split('/')[0]
  for (const link of /** @type {NodeListOf<HTMLAnchorElement>} */ (document.querySelectorAll('.sidenav a[data-section]'))) {
    const active = link.dataset.section === section
    link.classList.toggle('active', active)
    if (active) link.setAttribute('aria-current', 'page')
    else link.removeAttribute('aria-current')
  }
  for (const stop of leave) stop()
  leave = []
  const mine = ++renderId
  /** @type {Page<Record<string, string>>} */
  let page = notFound
  /** @type {Record<string, string>} */
  let params = {}
  for (const candidate of routes) {
    const match = candidate.regex.exec(path)
    if (match === null) continue
    page = candidate.page
    params = Object.fromEntries(candidate.names.map((name, i) => [name, decodeURIComponent(match[i + 1] ?? '')]))
    break
  }
  main.setAttribute('aria-busy', 'true')
  const loading = setTimeout(() => {
    if (mine === renderId) main.replaceChildren(h('p', { class: 'loading', 'data-testid': 'loading' }, 'Loading…'))
  }, 150)
  try {
    const content = await page(params)
    if (mine !== renderId) return
    main.replaceChildren()
    append(main, content)
  } catch (error) {
    if (mine !== renderId) return
    const message =
      error instanceof ApiFailure && error.code === 'invalid_admin_token'
        ? 'The sandbox API needs the admin token.'
        : error instanceof Error
          ? error.message
          : String(error)
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
