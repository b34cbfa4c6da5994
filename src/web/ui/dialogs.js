// @ts-check
/**
 * Dialogs of both pages. The console's questions are native <dialog>s opened with showModal()
 * (the browser makes the page inert, traps nothing but gives Escape; focus.js keeps Tab inside).
 * The platform page's dialogs (consent, payment, the portal's and the operator's questions) sit
 * over the app's frame, which must not become inert (the app's own focus inside it would be lost
 * and not come back on close): they are drawn in the page's modal layer, which makes the rest of the
 * page inert itself (ARCHITECTURE.md, "The browser code").
 */
import { append, byId, h } from './dom.js'
import { focusable, keepFocusIn, trapFocus } from './focus.js'

/** @typedef {import('./dom.js').Child} Child */

/**
 * Where the page draws its modal dialogs: the id of the layer, a selector of what goes inert
 * behind a dialog, and where the focus goes when the element that opened it is gone.
 * @type {{ layer: string, behind: string, fallback: () => void }}
 */
const host = { layer: 'modal-layer', behind: '', fallback: () => document.getElementById('main')?.focus() }

/**
 * The page says where its modal dialogs go (once, at load).
 * @param {Partial<typeof host>} options
 */
export function setModalHost(options) {
  Object.assign(host, options)
}

let modalOpen = false

/** Whether a dialog is open: one at a time, so a second app request waits its turn (busy). */
export const isModalOpen = () => modalOpen

/**
 * @param {string} selector
 * @param {boolean} inert
 */
const setInert = (selector, inert) => {
  if (selector === '') return
  for (const element of /** @type {NodeListOf<HTMLElement>} */ (document.querySelectorAll(selector))) element.inert = inert
}

/**
 * Opens a modal dialog (WAI-ARIA's dialog pattern); `render(close)` returns its content. It takes
 * the focus (its first enabled button, or the dialog itself; always the dialog itself with
 * `focusAction: false`), keeps Tab inside, makes the page
 * behind it inert, and runs `onDismiss` on Escape. `close` gives the focus back to the element
 * that had it (the app's frame when the app asked), or to the host's fallback. Returns `close`.
 * @param {{ label: string, className?: string, render: (close: () => void) => Child | Child[], onDismiss?: () => void, focusAction?: boolean }} options
 * @returns {() => void}
 */
export function openModal({ label, className = '', render, onDismiss, focusAction = true }) {
  const layer = byId(host.layer)
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
    setInert(host.behind, false)
    // Only when the dialog still had it: a click elsewhere after closing keeps its own focus.
    if (hadFocus || document.activeElement === document.body || document.activeElement === null) {
      if (focusable(opener)) opener.focus()
      else host.fallback()
    }
  }
  /** @param {KeyboardEvent} event */
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
  append(dialog, [h('h2', { id: titleId }, label), render(close)])
  layer.replaceChildren(dialog)
  layer.hidden = false
  modalOpen = true
  document.addEventListener('keydown', onKey)
  // The dialog's main action when it can act, else its first usable button, else the dialog itself.
  // A dialog whose main action spends money (`focusAction: false`) starts on itself: a key meant
  // for the app, pressed as the dialog opened, must not land on it.
  const usable = ':not([disabled]):not([hidden])'
  const first = focusAction ? (dialog.querySelector(`button.primary${usable}`) ?? dialog.querySelector(`button${usable}`)) : null
  const target = /** @type {HTMLElement} */ (first ?? dialog)
  target.focus()
  setInert(host.behind, true)
  return close
}

/**
 * Asks a yes/no question in a native modal <dialog> (showModal: the page behind is inert, Escape
 * cancels); the focus starts on Cancel and stays in the dialog. Resolves true when confirmed.
 * @param {{ title: string, text: string, confirm: string, kind?: string, testid?: string }} options
 * @returns {Promise<boolean>}
 */
export function confirmDialog({ title, text, confirm, kind = 'danger', testid = 'confirm-dialog' }) {
  return new Promise((resolve) => {
    const yes = h('button', { type: 'button', class: `primary ${kind}`, 'data-testid': `${testid}-yes` }, confirm)
    const no = h('button', { type: 'button' }, 'Cancel')
    const dialog = /** @type {HTMLDialogElement} */ (
      h(
        'dialog',
        { 'data-testid': testid, 'aria-labelledby': `${testid}-title` },
        h('h2', { id: `${testid}-title` }, title),
        h('p', {}, text),
        h('div', { class: 'actions' }, yes, no),
      )
    )
    trapFocus(dialog)
    /** @param {boolean} answer */
    const done = (answer) => {
      dialog.close()
      dialog.remove()
      resolve(answer)
    }
    yes.addEventListener('click', () => done(true))
    no.addEventListener('click', () => done(false))
    dialog.addEventListener('cancel', (event) => {
      event.preventDefault()
      done(false)
    })
    document.body.append(dialog)
    dialog.showModal()
    no.focus()
  })
}
