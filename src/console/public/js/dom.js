// DOM helpers. Every piece of data reaches the page through textContent or a checked attribute,
// never through HTML parsing.

/** h('td', {class: 'x', title: data}, child, …): strings become text nodes, never markup. */
export function h(tag, props, ...children) {
  const el = document.createElement(tag)
  for (const [name, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) continue
    if (name === 'on') {
      for (const [event, handler] of Object.entries(value)) el.addEventListener(event, handler)
    } else if (name === 'href') {
      const href = safeHref(value)
      if (href !== null) el.setAttribute('href', href)
    } else if (name.startsWith('on')) {
      throw new Error(`h(): use the on property, not ${name}`)
    } else {
      el.setAttribute(name, value === true ? '' : String(value))
    }
  }
  append(el, children)
  return el
}

export function append(el, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue
    if (Array.isArray(child)) append(el, child)
    else el.append(child instanceof Node ? child : document.createTextNode(String(child)))
  }
}

/** Only http(s) and same-page links: data never becomes a javascript: URL. */
export function safeHref(value) {
  const text = String(value)
  if (text.startsWith('#')) return text
  try {
    const url = new URL(text, location.href)
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null
  } catch {
    return null
  }
}

export function formatTime(iso) {
  if (iso === null || iso === undefined) return '—'
  const date = new Date(iso)
  return Number.isNaN(date.getTime())
    ? String(iso)
    : date
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d{3}Z$/, ' UTC')
}

export function formatDuration(seconds) {
  if (seconds === 0) return 'real time'
  let rest = Math.round(Math.abs(seconds))
  const parts = []
  for (const [unit, size] of [
    ['d', 86_400],
    ['h', 3600],
    ['m', 60],
    ['s', 1],
  ]) {
    const n = Math.floor(rest / size)
    rest -= n * size
    if (n > 0) parts.push(`${n}${unit}`)
  }
  return `${seconds < 0 ? '−' : '+'}${parts.join(' ') || '0s'} ahead`
}

export const short = (id, keep = 10) => (typeof id === 'string' && id.length > keep + 1 ? `${id.slice(0, keep)}…` : id)
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
