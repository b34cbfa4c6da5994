// @ts-check
/**
 * Pieces the portal and the operator's console share: the "shown once" box for secrets, the
 * dialogs that ask for a reason or a confirmation, a fact list, the panels' alert line and their
 * way of running a call, one-line forms, tables, lists that page with "More", and sub-tabs.
 * Everything goes in as text (dom.js).
 */
import { openModal } from '../../web/ui/dialogs.js'
import { h } from '../../web/ui/dom.js'
import { formatLocalTime } from '../../web/ui/format.js'
import { toast } from '../../web/ui/toast.js'

/**
 * @typedef {import('./api.js').ApiError} ApiError
 * @typedef {import('../ui/types').Child} Child
 * @typedef {{ element: HTMLElement, set(error: unknown): void }} AlertLine
 */

let ids = 0
/** An id no other element of the page has, for a label's `for`. */
export const uniqueId = (/** @type {string} */ prefix) => `${prefix}-${++ids}`

/** A Copy button for `value`; when the browser refuses the clipboard, `field` is selected for the person to copy. */
/**
 * @param {string} value
 * @param {string} label
 * @param {HTMLInputElement} [field]
 */
export function copyButton(value, label, field) {
  return h(
    'button',
    {
      type: 'button',
      'aria-label': `Copy ${label}`,
      onclick: () => {
        const fallback = () => {
          field?.select()
          toast('Select it and copy it: the browser did not allow the clipboard.')
        }
        if (navigator.clipboard === undefined) return fallback()
        navigator.clipboard.writeText(value).then(() => toast(`${label} copied.`), fallback)
      },
    },
    'Copy',
  )
}

/** A read-only text field with its label and a Copy button: `testid` names the field for tests. */
/**
 * @param {string} label
 * @param {string} value
 * @param {string} testid
 */
export function secretField(label, value, testid) {
  const id = uniqueId('secret')
  const field = h('input', { id, class: 'mono', readonly: true, value, spellcheck: 'false', 'data-testid': testid })
  return h(
    'div',
    { class: 'secret-field' },
    h('label', { for: id }, label),
    h('div', { class: 'row' }, field, copyButton(value, label, field)),
  )
}

/**
 * The box of secrets the platform answers once (a new app's key and wallet seed, a new key, a
 * reset link): marked so, with each one in a field to copy, until `onDone`.
 * @param {{ title: string, note: string, entries: Array<{ label: string, value: string, testid: string }>, onDone: () => void }} box
 */
export function onceBox({ title, note, entries, onDone }) {
  return h(
    'section',
    { class: 'once', 'aria-label': title, 'data-testid': 'shown-once' },
    h('h3', {}, title),
    h('p', { class: 'once-note' }, h('strong', {}, 'Shown once: copy it now. '), note),
    entries.map((entry) => secretField(entry.label, entry.value, entry.testid)),
    h('button', { type: 'button', onclick: onDone }, 'I have copied it: hide it'),
  )
}

/**
 * Asks why, in a dialog with a required text field (kept in the audit log). Resolves to the
 * reason, or undefined when the person cancels.
 * @param {{ title: string, action: string, text?: string }} options
 */
export function askReason({ title, action, text }) {
  return askText({
    title,
    action,
    text,
    label: 'Reason (kept in the audit log)',
    maxlength: 500,
    empty: 'Give a reason: it is kept in the audit log.',
  })
}

/**
 * Asks for a short text (a name, a reason) in a dialog, `value` filled in and selected, `text` an
 * explanation above the field. Resolves to the trimmed text, or undefined when the person cancels;
 * an empty one is refused in the dialog's alert line (`empty`). `submit(text)`, when given, runs
 * before the dialog closes: its refusal (the platform's message) is shown in the same alert line,
 * next to the field, and the dialog stays open to correct it.
 * @param {{ title: string, label: string, value?: string, maxlength?: number, action: string, text?: string, empty?: string, submit?: (text: string) => Promise<unknown> }} options
 * @returns {Promise<string | undefined>}
 */
export function askText({
  title,
  label,
  value = '',
  maxlength = 60,
  action,
  text,
  empty = `${label}: at least one character that is not a space.`,
  submit,
}) {
  return new Promise((resolve) => {
    const id = uniqueId('text')
    const input = h('input', { id, required: true, maxlength: String(maxlength), autocomplete: 'off', value })
    const problem = h('p', { class: 'error', role: 'alert', hidden: true })
    /** @param {string | undefined} result */
    const answer = (result) => {
      close()
      resolve(result)
    }
    const close = openModal({
      label: title,
      onDismiss: () => answer(undefined),
      render: () =>
        h(
          'form',
          {
            class: 'stack',
            // The page says what is missing itself, in the dialog's alert line.
            novalidate: true,
            onsubmit: async (/** @type {SubmitEvent} */ event) => {
              event.preventDefault()
              const given = input.value.trim()
              /** @param {string} message */
              const refuse = (message) => {
                problem.textContent = message
                problem.hidden = false
                input.focus()
              }
              if (given === '') return refuse(empty)
              try {
                await submit?.(given)
              } catch (error) {
                return refuse(error instanceof Error ? error.message : String(error))
              }
              answer(given)
            },
          },
          text === undefined ? '' : h('p', {}, text),
          h('label', { for: id }, label),
          input,
          problem,
          h(
            'div',
            { class: 'actions' },
            h('button', { type: 'button', onclick: () => answer(undefined) }, 'Cancel'),
            h('button', { type: 'submit', class: 'primary' }, action),
          ),
        ),
    })
    input.focus()
    input.select()
  })
}

/**
 * Asks to confirm an act; resolves true or false.
 * @param {{ title: string, text: string, action: string }} options
 * @returns {Promise<boolean>}
 */
export function confirmAct({ title, text, action }) {
  return new Promise((resolve) => {
    /** @param {boolean} value */
    const answer = (value) => {
      close()
      resolve(value)
    }
    const close = openModal({
      label: title,
      onDismiss: () => answer(false),
      render: () => [
        h('p', {}, text),
        h(
          'div',
          { class: 'actions' },
          h('button', { type: 'button', onclick: () => answer(false) }, 'Cancel'),
          h('button', { type: 'button', class: 'primary', onclick: () => answer(true) }, action),
        ),
      ],
    })
  })
}

/**
 * A definition list: `[[term, value], …]`; a value may be a node; empty ones are left out.
 * @param {Array<[string, Child]>} entries
 * @param {string} [label]
 */
export function facts(entries, label) {
  return h(
    'dl',
    { class: 'facts', 'aria-label': label },
    entries
      .filter(([, value]) => value !== undefined && value !== null && value !== '')
      .map(([term, value]) => [h('dt', {}, term), h('dd', {}, value)]),
  )
}

/**
 * A panel's alert line: `set(error)` shows an error's message (or hides the line with undefined).
 * @param {string} testid
 * @returns {AlertLine}
 */
export function alertLine(testid) {
  const element = h('p', { class: 'error', role: 'alert', 'data-testid': testid, hidden: true })
  return {
    element,
    set(error) {
      element.textContent = error === undefined ? '' : error instanceof Error ? error.message : String(error)
      element.hidden = error === undefined
    },
  }
}

/** The alert line shown beside a control (a form, a list row or the control itself), once made. @type {WeakMap<Element, AlertLine>} */
const besideLines = new WeakMap()

/**
 * Where a failure of what `control` started is shown (#41 U3): for a control inside a section of
 * `panel`, a line of its own right after the control's form (or inside its list row), so that the
 * person sees it where they acted and a screen reader announces it (role=alert); otherwise the
 * panel's line at its top.
 * @param {Element | null} control
 * @param {AlertLine} panelLine
 * @returns {AlertLine}
 */
function lineBeside(control, panelLine) {
  const panel = panelLine.element.parentElement
  if (!(control instanceof HTMLElement) || panel === null || !panel.contains(control)) return panelLine
  if (control.closest('section') === null || control.closest('dialog, .modal') !== null) return panelLine
  const anchor = control.closest('form') ?? control.closest('li') ?? control
  const known = besideLines.get(anchor)
  if (known !== undefined) return known
  const line = alertLine('control-error')
  if (anchor.tagName === 'LI') anchor.append(line.element)
  else anchor.after(line.element)
  besideLines.set(anchor, line)
  return line
}

/**
 * A panel's way of running a call: `attempt(work, line)` answers `{ok: true, value}`, or
 * `{ok: false, error}` with the error's message in `line`; without `line`, beside the control that
 * has the focus when the call starts (the button pressed, the form's field), or at the panel's top
 * when there is none (lineBeside). When the session is over it calls `signedOut()` (back to
 * sign-in) instead.
 * @param {AlertLine} panelLine
 * @param {() => void} signedOut
 * @returns {import('./types').Attempt}
 */
export function attempter(panelLine, signedOut) {
  return async (work, given) => {
    const line = given ?? lineBeside(document.activeElement, panelLine)
    panelLine.set(undefined)
    line.set(undefined)
    try {
      return { ok: true, value: await work() }
    } catch (failure) {
      // What account() throws: an ApiError, its code the platform's.
      if (/** @type {ApiError} */ (failure).code === 'session_required') {
        signedOut()
        return { ok: false }
      }
      line.set(failure)
      // Shown where the person looks: a line below the window's edge is scrolled just into view.
      if (line.element.isConnected) line.element.scrollIntoView({ block: 'nearest' })
      return { ok: false, error: failure }
    }
  }
}

/**
 * A Details button that shows below its row (in `slot`) what `load()` answers (a node, or
 * undefined when the call failed), and hides it on the next click.
 * @param {string} label
 * @param {() => Promise<Node | undefined>} load
 */
export function detailsToggle(label, load) {
  const slot = h('div', { class: 'row-details', hidden: true })
  const button = h('button', { type: 'button', 'aria-expanded': 'false', 'aria-label': label }, 'Details')
  button.addEventListener('click', async () => {
    if (slot.hidden) {
      const content = await load()
      if (content === undefined) return
      slot.replaceChildren(content)
    }
    slot.hidden = !slot.hidden
    button.setAttribute('aria-expanded', String(!slot.hidden))
  })
  return { button, slot }
}

/**
 * Sub-tabs: a row of buttons (`nav`, named `label`) that shows one of `panels` at a time, each
 * `{id, label, element, shown?}`; `open(id)` shows one and runs its `shown()`.
 * @param {string} label
 * @param {Array<{ id: string, label: string, element: HTMLElement, shown?: () => unknown }>} panels
 * @param {(id: string) => void} [onOpen]
 */
export function subTabs(label, panels, onOpen) {
  const buttons = new Map(
    panels.map((panel) => [panel.id, h('button', { type: 'button', class: 'subtab', onclick: () => open(panel.id) }, panel.label)]),
  )
  /** @type {string | undefined} */
  let current
  /** @param {string} id */
  const open = (id) => {
    current = id
    for (const panel of panels) {
      panel.element.hidden = panel.id !== id
      if (panel.id === id) buttons.get(panel.id)?.setAttribute('aria-current', 'true')
      else buttons.get(panel.id)?.removeAttribute('aria-current')
    }
    onOpen?.(id)
    return panels.find((panel) => panel.id === id)?.shown?.()
  }
  return { nav: h('nav', { class: 'subtabs', 'aria-label': label }, [...buttons.values()]), open, current: () => current }
}

/** A time, or a dash for none. */
export const when = (/** @type {string | null | undefined} */ iso) => (iso === null || iso === undefined ? '—' : formatLocalTime(iso))

/** Whether a string is an icon the page shows: a data: URL of a PNG, JPEG or WebP (what the platform accepts). */
export const isIcon = (/** @type {unknown} */ value) =>
  typeof value === 'string' && /^data:image\/(png|jpeg|webp);base64,[A-Za-z0-9+/]+={0,2}$/.test(value)

/**
 * A query string of the filters that have a value: `{q: 'x', state: ''}` → `?q=x`.
 * @param {Record<string, string | number | null | undefined>} filters
 */
export function query(filters) {
  const params = new URLSearchParams()
  for (const [name, value] of Object.entries(filters))
    if (value !== undefined && value !== null && value !== '') params.set(name, String(value))
  const text = params.toString()
  return text === '' ? '' : `?${text}`
}
