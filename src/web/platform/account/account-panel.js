// @ts-check
/**
 * The account panel (production): the apps the person allowed, and withdrawing that consent; the
 * live sessions, ending one or all; passkeys, added (after confirming it is you), renamed and
 * removed; changing the password; signing out. A password change and sign-out everywhere keep
 * only the passkeys ticked to keep. Everything goes through the account API with the session
 * cookie (docs/accounts.md).
 */

import { openModal } from '../../../web/ui/dialogs.js'
import { h } from '../../../web/ui/dom.js'
import { formatLocalTime } from '../../../web/ui/format.js'
import { toast } from '../../../web/ui/toast.js'
import { account } from '../api.js'
import { askText, uniqueId } from '../widgets.js'

const enc = encodeURIComponent

/**
 * What a failed call or passkey ceremony throws: an ApiError (its `code`), or another Error.
 * @typedef {{ code?: string, message: string }} Failure
 */
/** @typedef {import('../../api/routes').Answer<'/account/passkeys'>['passkeys'][number]} Passkey */

/**
 * `ctx`: `drawer`, `signedOut()` (the session is over: back to sign-in), `refresh()` (the notification centre).
 * @param {{ drawer: ReturnType<typeof import('../drawer.js').createDrawer>, signedOut: () => void, refresh: () => unknown }} ctx
 */
export function createAccountPanel(ctx) {
  /**
   * @param {Promise<unknown>} work
   * @param {string} [done]
   */
  const act = async (work, done) => {
    try {
      await work
      if (done !== undefined) toast(done)
    } catch (thrown) {
      const error = /** @type {Failure} */ (thrown)
      if (error.code === 'session_required') return ctx.signedOut()
      toast(error.message)
    }
    await render()
  }

  /** @param {import('../../api/routes').Answer<'/account'>['consents'][number]} app */
  const consentRow = (app) =>
    h(
      'li',
      {},
      h(
        'span',
        { class: 'grow' },
        h('strong', {}, app.name),
        h('span', { class: 'muted' }, app.scopes.length === 0 ? ' (withdrawn)' : ` ${app.scopes.join(', ')}`),
      ),
      app.scopes.length === 0
        ? ''
        : h(
            'button',
            {
              type: 'button',
              'aria-label': `Withdraw your consent from ${app.name}`,
              onclick: () =>
                act(
                  account(`/account/apps/${enc(app.app_id)}/consent`, { method: 'DELETE' }),
                  `${app.name} no longer has your consent.`,
                ).then(ctx.refresh),
            },
            'Withdraw',
          ),
    )

  /** @param {import('../../api/routes').Answer<'/account/sessions'>['sessions'][number]} session */
  const sessionRow = (session) => {
    const dates = `since ${formatLocalTime(session.created_at)}, last used ${formatLocalTime(session.last_seen_at)}`
    return h(
      'li',
      {},
      h(
        'span',
        { class: 'grow' },
        session.current ? h('strong', {}, 'This browser') : 'Another browser',
        h('span', { class: 'muted row-dates' }, dates),
      ),
      session.current
        ? ''
        : h(
            'button',
            {
              type: 'button',
              // Told apart from this browser's Sign out, and from each other (#41 U15).
              'aria-label': `Sign out the other browser, ${dates}`,
              onclick: () => act(account(`/account/sessions/${enc(session.id)}`, { method: 'DELETE' }), 'Signed out there.'),
            },
            'Sign out',
          ),
    )
  }

  /** @param {Passkey} passkey */
  const passkeyRow = (passkey) =>
    h(
      'li',
      {},
      h(
        'span',
        { class: 'grow' },
        h('strong', {}, passkey.name),
        h(
          'span',
          { class: 'muted passkey-dates' },
          `added ${formatLocalTime(passkey.created_at)}, ${passkey.last_used_at ? `last used ${formatLocalTime(passkey.last_used_at)}` : 'never used yet'}`,
        ),
      ),
      h(
        'button',
        {
          type: 'button',
          'aria-label': `Rename the passkey ${passkey.name}`,
          onclick: async () => {
            // A refused name (docs/accounts.md, "Passkeys") is said in the dialog, which stays open.
            const name = await askText({
              title: 'Rename the passkey',
              label: 'Name',
              value: passkey.name,
              action: 'Rename',
              submit: (given) => account(`/account/passkeys/${enc(passkey.id)}`, { method: 'PATCH', body: { name: given } }),
            })
            if (name !== undefined) await act(Promise.resolve(), 'Passkey renamed.')
          },
        },
        'Rename',
      ),
      h(
        'button',
        {
          type: 'button',
          'aria-label': `Remove the passkey ${passkey.name}`,
          onclick: () => act(account(`/account/passkeys/${enc(passkey.id)}`, { method: 'DELETE' }), 'Passkey removed.'),
        },
        'Remove',
      ),
    )

  /**
   * Asks the person to confirm it is them (the password, or one of their passkeys): adding a
   * passkey needs it within five minutes. Resolves true once the session is stamped, false when cancelled.
   * @param {boolean} hasPasskeys
   * @returns {Promise<boolean>}
   */
  const confirmIdentity = (hasPasskeys) =>
    new Promise((resolve) => {
      const id = uniqueId('reauth-password')
      const password = h('input', { id, type: 'password', autocomplete: 'current-password', required: true, maxlength: '512' })
      const problem = h('p', { class: 'error', role: 'alert', hidden: true })
      /** @param {boolean} value */
      const answer = (value) => {
        close()
        resolve(value)
      }
      /** @param {() => Promise<unknown>} work */
      const attempt = async (work) => {
        try {
          await work()
          answer(true)
        } catch (thrown) {
          problem.textContent = /** @type {Failure} */ (thrown).message
          problem.hidden = false
        }
      }
      const viaPasskey = async () => {
        const optionsJSON = await account('/account/reauthenticate/passkey/options', { method: 'POST' })
        const response = await window.SimpleWebAuthnBrowser.startAuthentication({ optionsJSON })
        await account('/account/reauthenticate/passkey/verify', { method: 'POST', body: { response } })
      }
      const close = openModal({
        label: 'Confirm it is you',
        onDismiss: () => answer(false),
        render: () =>
          h(
            'form',
            {
              class: 'stack',
              onsubmit: (/** @type {SubmitEvent} */ event) => {
                event.preventDefault()
                attempt(() => account('/account/reauthenticate', { method: 'POST', body: { password: password.value } }))
              },
            },
            h('p', {}, 'Adding a passkey needs your password or one of your passkeys from the last five minutes.'),
            h('label', { for: id }, 'Your password'),
            password,
            problem,
            h(
              'div',
              { class: 'actions' },
              h('button', { type: 'button', onclick: () => answer(false) }, 'Cancel'),
              hasPasskeys ? h('button', { type: 'button', onclick: () => attempt(viaPasskey) }, 'Use a passkey') : '',
              h('button', { type: 'submit', class: 'primary' }, 'Confirm'),
            ),
          ),
      })
      password.focus()
    })

  /** @param {string} name */
  const registrationOptions = (name) => account('/account/passkeys/options', { method: 'POST', body: { name } })

  /**
   * Adds a passkey: first its name, which the platform checks before the authenticator makes
   * anything (a refused one is said in the dialog); when the session's last proof is too old, asks
   * for one; then the authenticator's ceremony. Toasts when it is added; nothing when cancelled.
   * @param {boolean} hasPasskeys
   */
  const addPasskey = async (hasPasskeys) => {
    /** @type {Awaited<ReturnType<typeof registrationOptions>> | undefined} */
    let optionsJSON
    const name = await askText({
      title: 'Add a passkey',
      label: 'Its name: where the passkey is kept, such as “Work laptop” or “Phone”',
      value: 'Passkey',
      action: 'Continue',
      submit: async (given) => {
        try {
          optionsJSON = await registrationOptions(given)
        } catch (error) {
          // The name is checked first: this refusal means the name is fine and the session must confirm it is the person.
          if (/** @type {Failure} */ (error).code !== 'reauthentication_required') throw error
        }
      },
    })
    if (name === undefined) return
    if (optionsJSON === undefined) {
      if (!(await confirmIdentity(hasPasskeys))) throw new Error('No passkey added: you did not confirm it was you.')
      optionsJSON = await registrationOptions(name)
    }
    const response = await window.SimpleWebAuthnBrowser.startRegistration({ optionsJSON })
    await account('/account/passkeys/verify', { method: 'POST', body: { response, name } })
    toast('Passkey added: you can sign in with it.')
  }

  /** The passkeys ticked to keep when the password changes or every session ends: the others are removed. */
  /** @type {HTMLInputElement[]} */
  let keepBoxes = []
  const kept = () => keepBoxes.filter((box) => box.checked).map((box) => box.value)
  /** @param {Passkey[]} passkeys */
  const keepList = (passkeys) => {
    keepBoxes = passkeys.map((passkey) => h('input', { type: 'checkbox', value: passkey.id, id: uniqueId('keep') }))
    if (passkeys.length === 0) return ''
    return h(
      'fieldset',
      { class: 'stack' },
      h('legend', {}, 'Passkeys to keep when you change the password or sign out everywhere (the others are removed)'),
      passkeys.map((passkey, i) => h('label', { class: 'inline', for: keepBoxes[i].id }, keepBoxes[i], ` Keep ${passkey.name}`)),
    )
  }

  const passwordForm = () => {
    const current = h('input', {
      id: 'current-password',
      type: 'password',
      autocomplete: 'current-password',
      required: true,
      maxlength: '512',
    })
    const next = h('input', {
      id: 'new-password',
      type: 'password',
      autocomplete: 'new-password',
      required: true,
      minlength: '8',
      maxlength: '128',
    })
    return h(
      'form',
      {
        class: 'stack',
        onsubmit: (/** @type {SubmitEvent} */ event) => {
          event.preventDefault()
          act(
            account('/account/password', {
              method: 'POST',
              body: { current_password: current.value, new_password: next.value, keep_passkeys: kept() },
            }),
            'Password changed: every other browser is signed out, and every passkey not kept is removed.',
          )
        },
      },
      h('label', { for: 'current-password' }, 'Current password'),
      current,
      h('label', { for: 'new-password' }, 'New password'),
      next,
      h('button', { type: 'submit' }, 'Change password'),
    )
  }

  /**
   * @template {'/account/signout' | '/account/signout-everywhere'} P
   * @param {P} path
   * @param {() => import('../../api/routes').Body<P, 'POST'>} [body]
   */
  const signOut = (path, body) => async () => {
    try {
      await account(path, { method: 'POST', ...(body === undefined ? {} : { body: body() }) })
    } catch (thrown) {
      const error = /** @type {Failure} */ (thrown)
      if (error.code !== 'session_required') return toast(error.message)
    }
    ctx.signedOut()
  }

  async function render() {
    if (ctx.drawer.kind() !== 'account') return
    try {
      const [me, { sessions }, { passkeys }] = await Promise.all([
        account('/account'),
        account('/account/sessions'),
        account('/account/passkeys'),
      ])
      ctx.drawer.fill(
        'account',
        h('p', {}, 'Signed in as ', h('strong', { 'data-testid': 'account-username' }, me.username)),
        h('h3', {}, 'Apps you allowed'),
        me.consents.length === 0
          ? h('p', { class: 'muted' }, 'None yet.')
          : h('ul', { class: 'list', 'aria-label': 'Apps you allowed' }, me.consents.map(consentRow)),
        h('h3', {}, 'Where you are signed in'),
        h('ul', { class: 'list', 'aria-label': 'Sessions' }, sessions.map(sessionRow)),
        h('h3', {}, 'Passkeys'),
        passkeys.length === 0
          ? h('p', { class: 'muted' }, 'None yet.')
          : h('ul', { class: 'list', 'aria-label': 'Passkeys' }, passkeys.map(passkeyRow)),
        h('button', { type: 'button', onclick: () => act(addPasskey(passkeys.length > 0)) }, 'Add a passkey'),
        h('h3', {}, 'Password'),
        keepList(passkeys),
        passwordForm(),
        h(
          'div',
          { class: 'actions' },
          h('button', { type: 'button', onclick: signOut('/account/signout') }, 'Sign out'),
          h(
            'button',
            { type: 'button', onclick: signOut('/account/signout-everywhere', () => ({ keep_passkeys: kept() })) },
            'Sign out everywhere',
          ),
        ),
      )
    } catch (thrown) {
      const error = /** @type {Failure} */ (thrown)
      if (error.code === 'session_required') return ctx.signedOut()
      ctx.drawer.fill('account', h('p', { class: 'error' }, error.message))
    }
  }

  return {
    toggle() {
      if (ctx.drawer.toggle('account', 'Your account')) render()
    },
  }
}
