// @ts-check
/**
 * The portal's list of an app's server API keys: made (the key shown once) and revoked by the app's owner.
 * `view`: what the portal's app page gives its sections: `attempt(call)`, `section(id, title, …children)`,
 * `renderDetail()` (draws the app again), `reload()` (the list too), `showSecret(secret)`, `deselect()`, `user()`.
 */

import { h } from '../../../web/ui/dom.js'
import { inlineForm } from '../../../web/ui/forms.js'
import { toast } from '../../../web/ui/toast.js'
import { account } from '../api.js'
import { focusAfterAct } from '../page-focus.js'
import { confirmAct, when } from '../widgets.js'

const enc = encodeURIComponent

/**
 * @param {import('../types').PortalSectionView} view
 * @param {{ app_id: string }} app
 * @param {import('../types').PortalKey[]} keys
 * @param {boolean} owner
 */
export function keysSection(view, app, keys, owner) {
  const path = /** @type {const} */ (`/portal/apps/${enc(app.app_id)}/keys`)
  const name = h('input', { id: 'new-key-name', maxlength: '60', autocomplete: 'off', placeholder: 'production server' })
  /** @param {import('../types').PortalKey} key */
  const row = (key) =>
    h(
      'li',
      { 'data-key-id': key.key_id },
      h(
        'span',
        { class: 'grow' },
        h('strong', {}, key.name === '' ? 'Unnamed key' : key.name),
        h('span', { class: 'mono muted' }, ` ${key.prefix}…`),
        h(
          'span',
          { class: 'muted small row-dates' },
          key.revoked_at === null
            ? ` made ${when(key.created_at)}, last used ${when(key.last_used_at)}`
            : ` revoked ${when(key.revoked_at)}`,
        ),
      ),
      owner && key.revoked_at === null
        ? h(
            'button',
            {
              type: 'button',
              class: 'danger',
              'aria-label': `Revoke the key ${key.name === '' ? key.prefix : key.name}`,
              onclick: async () => {
                const sure = await confirmAct({
                  title: 'Revoke this key?',
                  text: `A server using the key ${key.prefix}… is refused from now on. This cannot be undone.`,
                  action: 'Revoke',
                })
                if (!sure) return
                const done = await view.attempt(() => account(`${path}/${enc(key.key_id)}`, { method: 'DELETE' }))
                if (done.ok) {
                  view.forgetKey(key.prefix)
                  toast('Key revoked.')
                  await view.renderDetail()
                }
              },
            },
            'Revoke',
          )
        : '',
    )
  return view.section(
    'keys',
    'Server API keys',
    keys.length === 0 ? h('p', { class: 'muted' }, 'None.') : h('ul', { class: 'list', 'aria-label': 'Server API keys' }, keys.map(row)),
    owner
      ? inlineForm({
          label: 'A new key’s name (to tell keys apart)',
          input: name,
          action: 'Make a key',
          onSubmit: async () => {
            const done = await view.attempt(() => account(path, { method: 'POST', body: { name: name.value.trim() } }))
            if (!done.ok) return
            view.showSecret({
              appId: app.app_id,
              title: `New server API key${done.value.name === '' ? '' : ` “${done.value.name}”`}`,
              note: 'Plinth keeps only its hash: nobody can show it again.',
              entries: [{ label: 'Server API key', value: done.value.api_key, testid: 'secret-api-key' }],
            })
            await view.renderDetail()
            focusAfterAct('#portal-view [data-testid="secret-api-key"]')
          },
        })
      : h('p', { class: 'muted' }, 'The app’s owner makes and revokes keys.'),
  )
}
