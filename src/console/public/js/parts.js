// The console's own parts of a page (titles, cards, facts, fields, badges), on the shared UI layer
// (src/web/ui/): every piece of data reaches the page through textContent or a checked attribute.
import { h } from '../../../web/ui/dom.js'

export const code = (text, title) => h('code', { title: title ?? text }, text)
export const badge = (text, kind) => h('span', { class: `badge ${kind ?? ''}` }, text)

export function pageTitle(title, subtitle, back) {
  return h(
    'div',
    { class: 'page-title' },
    back ? h('a', { href: back[0], class: 'back' }, `← ${back[1]}`) : null,
    h('h1', {}, title),
    subtitle ? h('p', { class: 'muted' }, subtitle) : null,
  )
}

export function card(title, actions, ...body) {
  return h(
    'section',
    { class: 'card' },
    h('div', { class: 'card-head' }, h('h2', {}, title), h('div', { class: 'card-actions' }, actions)),
    body,
  )
}

export function facts(pairs) {
  return h(
    'dl',
    { class: 'facts' },
    pairs.filter(Boolean).map(([term, value, testid]) => [h('dt', {}, term), h('dd', { 'data-testid': testid }, value)]),
  )
}

export function field(label, input, hint) {
  return h('label', { class: 'field' }, h('span', {}, label), input, hint ? h('small', {}, hint) : null)
}

export function select(name, options, value) {
  return h(
    'select',
    { name },
    options.map((option) => {
      const [text, optionValue] = Array.isArray(option) ? option : [option, option]
      return h('option', { value: optionValue, selected: String(optionValue) === String(value) }, text)
    }),
  )
}

export const external = (href, text, title) => h('a', { href, target: '_blank', rel: 'noopener noreferrer', title }, text)
