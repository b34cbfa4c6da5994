// @ts-check
// One search box in the header across apps, users, payments, txids and request ids
// (GET /sandbox/search), and the page of its results (#/search?q=…).

import { h } from '../../../../web/ui/dom.js'
import { get, query } from '../api.js'
import { card, pageTitle } from '../parts.js'
import { currentRoute, render } from '../router.js'

/** @type {[type: string, title: string][]} */
const GROUPS = [
  ['app', 'Apps'],
  ['user', 'Users'],
  ['payment', 'Payments'],
  ['transaction', 'Ledger transactions'],
  ['request', 'Request log entries'],
]
const MAX_QUERY = 200

/** Wires the header's box: Enter opens the results page (and reloads it when the text did not change). */
export function mountSearch() {
  const formEl = document.getElementById('global-search')
  const input = document.getElementById('global-search-input')
  if (formEl === null || !(input instanceof HTMLInputElement)) return
  formEl.addEventListener('submit', (event) => {
    event.preventDefault()
    const q = input.value.trim()
    if (q === '') return
    const hash = `#/search${query({ q })}`
    if (location.hash === hash) render()
    else location.hash = hash
  })
}

/**
 * The console's own link for a hit: the hash of its console_url.
 * @param {string} url
 */
const hashOf = (url) => url.slice(url.indexOf('#'))

export async function searchPage() {
  const q = (new URLSearchParams(currentRoute().split('?')[1] ?? '').get('q') ?? '').trim().slice(0, MAX_QUERY)
  const input = document.getElementById('global-search-input')
  if (input instanceof HTMLInputElement && input.value.trim() !== q) input.value = q
  if (q === '') {
    return [pageTitle('Search', 'Type an app, user, payment or request id, a name, a txid or a memo in the box above.')]
  }
  const found = await get(`/sandbox/search${query({ q })}`)
  const groups = GROUPS.map(([type, title]) => {
    const hits = found.hits.filter((hit) => hit.type === type)
    if (hits.length === 0) return null
    return card(
      `${title} (${hits.length})`,
      null,
      h(
        'ul',
        { class: 'hits', 'data-testid': `hits-${type}` },
        hits.map((hit) =>
          h(
            'li',
            { 'data-testid': 'hit', 'data-type': hit.type, 'data-id': hit.id },
            h('a', { href: hashOf(hit.console_url) }, hit.title),
            h('span', { class: 'muted small' }, ` ${hit.detail}`),
          ),
        ),
      ),
    )
  })
  const none = found.hits.length === 0
  return [
    pageTitle(`Search: ${q}`, none ? null : `${found.hits.length} found${found.truncated ? ' (the first 10 of each kind)' : ''}`),
    none ? card('Nothing found', null, h('p', { 'data-testid': 'no-hits' }, `Nothing matches “${q}”.`)) : null,
    ...groups,
  ]
}
