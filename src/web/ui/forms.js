// @ts-check
/**
 * Forms and buttons of both pages: a one-line form, a grid of search filters, a search box that
 * searches as one types, a form that hands its values to an async handler, and a button that runs
 * an action; both of these are busy (disabled) while it runs, and report its error (toast.js).
 */
import { h } from './dom.js'
import { reportError } from './toast.js'

/**
 * A one-line form: `label` for `input` (which has an id), more fields in `extra`, and a submit
 * button `action`; `onSubmit()` runs on submit. `search` marks it a search form.
 * @param {{ label: string, input: HTMLElement, extra?: import('./types').Child[], action: string, onSubmit: () => void, search?: boolean }} options
 */
export function inlineForm({ label, input, extra = [], action, onSubmit, search = false }) {
  return h(
    'form',
    {
      class: 'row',
      role: search ? 'search' : undefined,
      /** @param {SubmitEvent} event */
      onsubmit: (event) => {
        event.preventDefault()
        onSubmit()
      },
    },
    h('label', { for: input.id }, label),
    input,
    extra,
    h('button', { type: 'submit' }, action),
  )
}

/**
 * A search form of labelled fields (`[[label, input], …]`, each input with an id) in a grid; `onSubmit()` runs on submit.
 * @param {Array<[string, HTMLElement]>} fields
 * @param {() => void} onSubmit
 */
export function filterForm(fields, onSubmit, action = 'Search') {
  return h(
    'form',
    {
      class: 'filters',
      role: 'search',
      /** @param {SubmitEvent} event */
      onsubmit: (event) => {
        event.preventDefault()
        onSubmit()
      },
    },
    fields.map(([label, input]) => h('div', { class: 'field' }, h('label', { for: input.id }, label), input)),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, action)),
  )
}

/**
 * A search box that calls `onSearch(text)` on submit and after a pause in typing (300 ms).
 * @param {{ label: string, placeholder: string, maxlength: number, onSearch: (text: string) => void, testid: string, value?: string }} options
 */
export function searchBox({ label, placeholder, maxlength, onSearch, testid, value = '' }) {
  const input = h('input', { type: 'search', name: 'q', placeholder, maxlength, value, 'data-testid': testid })
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer
  input.addEventListener('input', () => {
    clearTimeout(timer)
    timer = setTimeout(() => onSearch(input.value.trim()), 300)
  })
  const el = h('form', { class: 'inline-form search', role: 'search' }, h('label', { class: 'field' }, h('span', {}, label), input))
  el.addEventListener('submit', (event) => {
    event.preventDefault()
    clearTimeout(timer)
    onSearch(input.value.trim())
  })
  return el
}

/**
 * A form whose submit handler gets its values by field name (`V`, as its fields give them: text,
 * or a File for a file input; an unchecked box is absent); its buttons are disabled while the
 * handler runs, and an error it throws is reported (reportError).
 * @template {Record<string, FormDataEntryValue | undefined>} V
 * @param {Record<string, unknown>} props the form's attributes
 * @param {import('./types').Child[]} children
 * @param {(values: V, form: HTMLFormElement) => unknown} onSubmit
 */
export function form(props, children, onSubmit) {
  const el = h('form', props, children)
  el.addEventListener('submit', async (event) => {
    event.preventDefault()
    const values = /** @type {V} */ (Object.fromEntries(new FormData(el).entries()))
    const buttons = el.querySelectorAll('button')
    for (const button of buttons) button.disabled = true
    try {
      await onSubmit(values, el)
    } catch (error) {
      reportError(error)
    } finally {
      for (const button of buttons) button.disabled = false
    }
  })
  return el
}

/**
 * A button that runs `run` once at a time, with a busy state (disabled, aria-busy), reporting an
 * error it throws; `confirm` asks for a second click first (the button says `confirm` for 4 s).
 * @param {string} label
 * @param {() => unknown} run
 * @param {{ kind?: string, confirm?: string, testid?: string }} [options]
 */
export function action(label, run, { kind = '', confirm, testid } = {}) {
  const button = h('button', { type: 'button', class: kind, 'data-testid': testid }, label)
  let armed = false
  button.addEventListener('click', async () => {
    if (confirm !== undefined && !armed) {
      armed = true
      button.textContent = confirm
      button.classList.add('armed')
      setTimeout(() => {
        armed = false
        button.textContent = label
        button.classList.remove('armed')
      }, 4000)
      return
    }
    button.disabled = true
    button.setAttribute('aria-busy', 'true')
    try {
      await run()
    } catch (error) {
      reportError(error)
    } finally {
      button.disabled = false
      button.removeAttribute('aria-busy')
    }
  })
  return button
}
