// @ts-check
// The console's own parts of a page (titles, cards, facts, fields, badges), on the shared UI layer
// (src/web/ui/): every piece of data reaches the page through textContent or a checked attribute.
import { h } from '../../../web/ui/dom.js'

/** @typedef {import('../../../web/ui/types').Child} Child */

/**
 * @param {string} text
 * @param {string} [title] the tooltip (the text itself unless given)
 */
export const code = (text, title) => h('code', { title: title ?? text }, text)
/**
 * @param {string} text
 * @param {string} [kind] ok, info, warn or off
 */
export const badge = (text, kind) => h('span', { class: `badge ${kind ?? ''}` }, text)

/**
 * @param {string} title
 * @param {string | null} [subtitle]
 * @param {[href: string, text: string]} [back] the link back up
 */
export function pageTitle(title, subtitle, back) {
  return h(
    'div',
    { class: 'page-title' },
    back ? h('a', { href: back[0], class: 'back' }, `← ${back[1]}`) : null,
    h('h1', {}, title),
    subtitle ? h('p', { class: 'muted' }, subtitle) : null,
  )
}

/**
 * @param {string} title
 * @param {Child} actions what goes beside the title (buttons), or null
 * @param {...Child} body
 */
export function card(title, actions, ...body) {
  return h(
    'section',
    { class: 'card' },
    h('div', { class: 'card-head' }, h('h2', {}, title), h('div', { class: 'card-actions' }, actions)),
    body,
  )
}

/**
 * A list of terms and their values (`testid` on the value); null entries are left out.
 * @param {([term: string, value: Child, testid?: string] | null)[]} pairs
 */
export function facts(pairs) {
  return h(
    'dl',
    { class: 'facts' },
    pairs.map((pair) => (pair === null ? null : [h('dt', {}, pair[0]), h('dd', { 'data-testid': pair[2] }, pair[1])])),
  )
}

/**
 * @param {string} label
 * @param {HTMLElement} input
 * @param {string} [hint]
 */
export function field(label, input, hint) {
  return h('label', { class: 'field' }, h('span', {}, label), input, hint ? h('small', {}, hint) : null)
}

/**
 * A <select> of `options`: each its text and value, or one text that is both; `value` is chosen.
 * @param {string} name
 * @param {readonly (string | readonly [text: string, value: string | number])[]} options
 * @param {string | number} [value]
 */
export function select(name, options, value) {
  return h(
    'select',
    { name },
    options.map((option) => {
      const [text, optionValue] = typeof option === 'string' ? [option, option] : option
      return h('option', { value: optionValue, selected: String(optionValue) === String(value) }, text)
    }),
  )
}

/**
 * A link that opens in a new tab.
 * @param {string} href
 * @param {string} text
 * @param {string} [title]
 */
export const external = (href, text, title) => h('a', { href, target: '_blank', rel: 'noopener noreferrer', title }, text)
