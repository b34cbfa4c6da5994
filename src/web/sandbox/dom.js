/**
 * DOM helpers of the sandbox page. Text always goes in as text nodes: whatever an app sends
 * (memos, notification titles, share texts) is never parsed as HTML.
 */

/** Creates an element: `h('button', { class: 'primary', onclick }, 'Pay')`; arrays of children, nested or not, are flattened. */
export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue
    if (name === 'class') element.className = value
    else if (name.startsWith('on') && typeof value === 'function') element.addEventListener(name.slice(2), value)
    else element.setAttribute(name, value === true ? '' : String(value))
  }
  for (const child of children.flat(Number.POSITIVE_INFINITY)) {
    if (child === undefined || child === null || child === false) continue
    element.append(child instanceof Node ? child : String(child))
  }
  return element
}

export const byId = (id) => {
  const element = document.getElementById(id)
  if (element === null) throw new Error(`#${id} is missing from the page`)
  return element
}

export function show(element, visible) {
  element.hidden = !visible
}

export function showError(element, error) {
  element.textContent = error === undefined ? '' : error instanceof Error ? error.message : String(error)
  element.hidden = error === undefined
}

let modalOpen = false

/** Whether a dialog is open: one at a time, so a second app request waits its turn (busy). */
export const isModalOpen = () => modalOpen

/**
 * What the rest of the page is while a dialog is open: inert (no focus, no clicks). The app's frame
 * is left out: inert would drop the focus inside it, which goes back to the app's own button on
 * close; the overlay covers it and Tab stays in the dialog anyway.
 */
const BEHIND_DIALOG = '.skip-link, .topbar, #drawer, #main > section:not(#browser-view), #browser-view .appbar, #sdk-status'
const setInert = (inert) => {
  for (const element of document.querySelectorAll(BEHIND_DIALOG)) element.inert = inert
}

/** Whether focus may go back to `element`: still in the page, shown, not disabled. */
const focusable = (element) =>
  element instanceof HTMLElement &&
  element !== document.body &&
  element.isConnected &&
  !element.disabled &&
  element.getClientRects().length > 0

/**
 * Where focus goes when the element that had it is gone: the app's frame when an app is open,
 * else the heading of the view shown (never <body>).
 */
export function focusFallback() {
  const frame = document.getElementById('app-frame')
  if (frame !== null && focusable(frame)) return frame.focus()
  const heading = document.querySelector('#main > section:not([hidden]) h1')
  if (heading !== null) {
    heading.setAttribute('tabindex', '-1')
    heading.focus()
  } else document.getElementById('main')?.focus()
}

/** Whether anything in the page has had the focus: until then, the page is as it loaded. */
let focusedOnce = false
// (`globalThis.document`: the payment machine's unit tests load this module in Node, without a page.)
globalThis.document?.addEventListener('focusin', () => {
  focusedOnce = true
})

/**
 * After a view changed: focus that was on something now gone or hidden goes to focusFallback, never
 * stays on <body>. A page nobody has focused yet is left alone: its first Tab reaches the skip link.
 */
export function refocus() {
  if (focusedOnce && !focusable(document.activeElement)) focusFallback()
}

/**
 * Opens a modal dialog (WAI-ARIA's dialog pattern); `render(close)` returns its content. It takes
 * the focus (its first enabled button, or the dialog itself; always the dialog itself with
 * `focusAction: false`), keeps Tab inside, makes the page
 * behind it inert, and runs `onDismiss` on Escape. `close` gives the focus back to the element
 * that had it (the app's frame when the app asked), or to focusFallback. Returns `close`.
 */
export function openModal({ label, className = '', render, onDismiss, focusAction = true }) {
  const layer = byId('modal-layer')
  const titleId = `modal-title-${Math.random().toString(36).slice(2)}`
  const opener = document.activeElement
  let closed = false
  const close = () => {
    if (closed) return
    closed = true
    modalOpen = false
    document.removeEventListener('keydown', onKey)
    const hadFocus = dialog.contains(document.activeElement)
    layer.replaceChildren()
    layer.hidden = true
    setInert(false)
    // Only when the dialog still had it: a click elsewhere after closing keeps its own focus.
    if (hadFocus || document.activeElement === document.body || document.activeElement === null) {
      if (focusable(opener)) opener.focus()
      else focusFallback()
    }
  }
  const onKey = (event) => {
    if (event.key === 'Escape' && onDismiss !== undefined) {
      event.preventDefault()
      onDismiss()
    }
    if (event.key === 'Tab') keepFocusIn(dialog, event)
  }
  const dialog = h('div', {
    class: `modal ${className}`,
    role: 'dialog',
    'aria-modal': 'true',
    'aria-labelledby': titleId,
    tabindex: '-1',
  })
  dialog.append(h('h2', { id: titleId }, label), ...[render(close)].flat())
  layer.replaceChildren(dialog)
  layer.hidden = false
  modalOpen = true
  document.addEventListener('keydown', onKey)
  // The dialog's main action when it can act, else its first usable button, else the dialog itself.
  // A dialog whose main action spends money (`focusAction: false`) starts on itself: a key meant
  // for the app, pressed as the dialog opened, must not land on it.
  const usable = ':not([disabled]):not([hidden])'
  const first = focusAction ? (dialog.querySelector(`button.primary${usable}`) ?? dialog.querySelector(`button${usable}`)) : null
  ;(first ?? dialog).focus()
  setInert(true)
  return close
}

const FOCUSABLE = 'a[href], button:not([disabled]):not([hidden]), input:not([disabled]), select, textarea, [tabindex]:not([tabindex="-1"])'

/** Tab and Shift+Tab cycle inside the modal dialog: the page behind it is out of reach. */
function keepFocusIn(dialog, event) {
  const items = [...dialog.querySelectorAll(FOCUSABLE)].filter((el) => el.offsetParent !== null)
  if (items.length === 0) {
    event.preventDefault()
    return
  }
  const first = items[0]
  const last = items[items.length - 1]
  const inside = dialog.contains(document.activeElement)
  if (event.shiftKey && (document.activeElement === first || !inside)) {
    event.preventDefault()
    last.focus()
  } else if (!event.shiftKey && (document.activeElement === last || !inside)) {
    event.preventDefault()
    first.focus()
  }
}

export function toast(text) {
  const element = h('div', { class: 'toast' }, text)
  byId('toasts').append(element)
  setTimeout(() => element.remove(), 4000)
}

/** `1234.5` → `1,234.5 π`, exact for the ledger's decimal strings too. */
export function formatPi(amount) {
  const [whole = '0', fraction = ''] = String(amount).split('.')
  const trimmed = fraction.replace(/0+$/, '')
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',')
  return `${grouped}${trimmed ? `.${trimmed}` : ''} π`
}

export function formatTime(iso) {
  const date = new Date(iso)
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString()
}

export const short = (text, keep = 8) => (text.length > keep * 2 + 1 ? `${text.slice(0, keep)}…${text.slice(-4)}` : text)
