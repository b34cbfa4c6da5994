// @ts-check
/**
 * The DOM helpers of both pages (the platform page and the console). Text always goes in as text
 * nodes and links only as http(s) or same-page URLs: whatever the platform or an app sends (names,
 * memos, notification titles) is never parsed as HTML nor run as a javascript: URL.
 */

/**
 * Creates an element: `h('button', { class: 'primary', onclick }, 'Pay')`. A function property
 * `onX` listens to X, and `on: { click, input }` to several; other properties are attributes
 * (`true` an empty one; `undefined`, `null` and `false` none). Arrays of children, nested or
 * not, are flattened; strings become text nodes.
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Record<string, unknown> | null} [props]
 * @param {...Child} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, props, ...children) {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) continue
    if (name === 'class') element.className = String(value)
    else if (name === 'on') {
      for (const [event, handler] of Object.entries(/** @type {Record<string, EventListener>} */ (value))) {
        element.addEventListener(event, handler)
      }
    } else if (name.startsWith('on')) {
      if (typeof value !== 'function') throw new Error(`h(): ${name} must be a function`)
      element.addEventListener(name.slice(2), /** @type {EventListener} */ (value))
    } else if (name === 'href') {
      const href = safeHref(value)
      if (href !== null) element.setAttribute('href', href)
    } else element.setAttribute(name, value === true ? '' : String(value))
  }
  append(element, children)
  return element
}

/** @typedef {import('./types').Child} Child */

/**
 * Appends children (flattened; strings as text).
 * @param {Element} element
 * @param {Child[]} children
 */
export function append(element, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue
    if (Array.isArray(child)) append(element, child)
    else element.append(child instanceof Node ? child : String(child))
  }
}

/**
 * A link as written when it goes to an http(s) URL or within the page, else null: data never
 * becomes a javascript: URL.
 * @param {unknown} value
 * @returns {string | null}
 */
export function safeHref(value) {
  const text = String(value)
  if (text.startsWith('#')) return text
  try {
    const url = new URL(text, location.href)
    return url.protocol === 'http:' || url.protocol === 'https:' ? text : null
  } catch {
    return null
  }
}

/**
 * The element of the page with this id, of the class `kind` (HTMLElement unless given): a missing
 * one, or one of another kind, is a bug of the page.
 * @template {HTMLElement} [T=HTMLElement]
 * @param {string} id
 * @param {new () => T} [kind]
 * @returns {T}
 */
export const byId = (id, kind) => {
  const element = document.getElementById(id)
  if (element === null) throw new Error(`#${id} is missing from the page`)
  if (!(element instanceof (kind ?? HTMLElement))) throw new Error(`#${id} is not a ${kind?.name}`)
  return /** @type {T} */ (element)
}

/**
 * @param {HTMLElement} element
 * @param {boolean} visible
 */
export function show(element, visible) {
  element.hidden = !visible
}

/**
 * Shows an error's message in `element` (hidden when there is none).
 * @param {HTMLElement} element
 * @param {unknown} [error]
 */
export function showError(element, error) {
  element.textContent = error === undefined ? '' : error instanceof Error ? error.message : String(error)
  element.hidden = error === undefined
}
