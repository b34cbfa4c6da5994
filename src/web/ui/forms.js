/**
 * Forms of both pages: a one-line form and a grid of search filters (the platform page), a form
 * whose submit gets its values and a search box (the console, components.js).
 */
import { h } from './dom.js'

/**
 * A one-line form: `label` for `input` (which has an id), more fields in `extra`, and a submit
 * button `action`; `onSubmit()` runs on submit. `search` marks it a search form.
 */
export function inlineForm({ label, input, extra = [], action, onSubmit, search = false }) {
  return h(
    'form',
    {
      class: 'row',
      role: search ? 'search' : undefined,
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

/** A search form of labelled fields (`[[label, input], …]`, each input with an id) in a grid; `onSubmit()` runs on submit. */
export function filterForm(fields, onSubmit, action = 'Search') {
  return h(
    'form',
    {
      class: 'filters',
      role: 'search',
      onsubmit: (event) => {
        event.preventDefault()
        onSubmit()
      },
    },
    fields.map(([label, input]) => h('div', { class: 'field' }, h('label', { for: input.id }, label), input)),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, action)),
  )
}
