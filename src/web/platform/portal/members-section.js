// @ts-check
/**
 * The portal's list of an app's members: added, removed and handed the app by its owner; a member may leave.
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
 * @param {{ app_id: string, name: string }} app
 * @param {import('../types').PortalMember[]} members
 * @param {boolean} owner
 */
export function membersSection(view, app, members, owner) {
  const path = /** @type {const} */ (`/portal/apps/${enc(app.app_id)}/members`)
  const me = view.user()?.username.toLowerCase()
  const username = h('input', { id: 'new-member', maxlength: '32', autocomplete: 'off', pattern: '[A-Za-z0-9_]{3,32}', required: true })
  /**
   * @param {import('../types').PortalMember} member
   * @param {boolean} leaving
   */
  const remove = async (member, leaving) => {
    const sure = await confirmAct({
      title: leaving ? `Leave ${app.name}?` : `Remove ${member.username}?`,
      text: leaving ? 'You will no longer see the app in your portal.' : `${member.username} will no longer see the app in their portal.`,
      action: leaving ? 'Leave' : 'Remove',
    })
    if (!sure) return
    const done = await view.attempt(() => account(`${path}/${enc(member.username)}`, { method: 'DELETE' }))
    if (!done.ok) return
    toast(leaving ? `You left ${app.name}.` : `${member.username} removed.`)
    if (leaving) {
      view.deselect()
      await view.reload()
    } else await view.renderDetail()
  }
  /** @param {import('../types').PortalMember} member */
  const handOver = async (member) => {
    const sure = await confirmAct({
      title: `Hand ${app.name} over to ${member.username}?`,
      text: `${member.username} becomes its owner (keys, members); you stay a member.`,
      action: 'Hand over',
    })
    if (!sure) return
    const done = await view.attempt(() =>
      account(`/portal/apps/${enc(app.app_id)}/owner`, { method: 'POST', body: { username: member.username } }),
    )
    if (!done.ok) return
    toast(`${member.username} owns ${app.name} now.`)
    await view.reload()
  }
  /** @param {import('../types').PortalMember} member */
  const row = (member) => {
    const self = member.username.toLowerCase() === me
    return h(
      'li',
      { 'data-username': member.username },
      h(
        'span',
        { class: 'grow' },
        h('strong', {}, member.username),
        h(
          'span',
          { class: 'muted' },
          ` ${member.role === 'owner' ? 'owner' : 'member'}${self ? ' (you)' : ''}, since ${when(member.added_at)}`,
        ),
      ),
      owner && member.role === 'member'
        ? [
            h(
              'button',
              { type: 'button', 'aria-label': `Hand the app over to ${member.username}`, onclick: () => handOver(member) },
              'Hand over',
            ),
            h(
              'button',
              { type: 'button', class: 'danger', 'aria-label': `Remove ${member.username}`, onclick: () => remove(member, false) },
              'Remove',
            ),
          ]
        : '',
      !owner && self ? h('button', { type: 'button', class: 'danger', onclick: () => remove(member, true) }, 'Leave the app') : '',
    )
  }
  return view.section(
    'members',
    'Members',
    h('ul', { class: 'list', 'aria-label': 'Members' }, members.map(row)),
    owner
      ? inlineForm({
          label: 'Add a member by username (a developer)',
          input: username,
          action: 'Add member',
          onSubmit: async () => {
            const done = await view.attempt(() => account(path, { method: 'POST', body: { username: username.value.trim() } }))
            if (!done.ok) return
            toast(`${done.value.username} is a member now.`)
            await view.renderDetail()
            // Ready for the next one: the field, drawn again empty.
            focusAfterAct('#new-member')
          },
        })
      : '',
  )
}
