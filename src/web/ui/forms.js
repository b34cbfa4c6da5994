// @ts-check
/**
 * Forms: a one-line form, and a grid of search filters.
 */
import { h } from './dom.js'

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
