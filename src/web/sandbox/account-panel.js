/**
 * The account panel (production): the apps the person allowed, and withdrawing that consent; the
 * live sessions, ending one or all; passkeys, added and removed; changing the password; signing out. Everything goes through
 * the account API with the session cookie (docs/accounts.md).
 */
import { account } from './api.js'
import { formatTime, h, toast } from './dom.js'

const enc = encodeURIComponent

/** `ctx`: `drawer`, `signedOut()` (the session is over: back to sign-in), `refresh()` (the notification centre). */
export function createAccountPanel(ctx) {
  const act = async (work, done) => {
    try {
      await work
      if (done !== undefined) toast(done)
    } catch (error) {
      if (error.code === 'session_required') return ctx.signedOut()
      toast(error.message)
    }
    await render()
  }

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

  const sessionRow = (session) =>
    h(
      'li',
      {},
      h(
        'span',
        { class: 'grow' },
        session.current ? h('strong', {}, 'This browser') : 'Another browser',
        h('span', { class: 'muted' }, ` since ${formatTime(session.created_at)}, last used ${formatTime(session.last_seen_at)}`),
      ),
      session.current
        ? ''
        : h(
            'button',
            {
              type: 'button',
              onclick: () => act(account(`/account/sessions/${enc(session.id)}`, { method: 'DELETE' }), 'Signed out there.'),
            },
            'Sign out',
          ),
    )

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
          { class: 'muted' },
          ` added ${formatTime(passkey.created_at)}${passkey.last_used_at ? `, last used ${formatTime(passkey.last_used_at)}` : ''}`,
        ),
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

  const addPasskey = async () => {
    const optionsJSON = await account('/account/passkeys/options', { method: 'POST' })
    const response = await window.SimpleWebAuthnBrowser.startRegistration({ optionsJSON })
    await account('/account/passkeys/verify', { method: 'POST', body: { response, name: 'Passkey' } })
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
        onsubmit: (event) => {
          event.preventDefault()
          act(
            account('/account/password', { method: 'POST', body: { current_password: current.value, new_password: next.value } }),
            'Password changed: every other browser is signed out.',
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

  const signOut = (path) => async () => {
    try {
      await account(path, { method: 'POST' })
    } catch (error) {
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
        h('button', { type: 'button', onclick: () => act(addPasskey(), 'Passkey added: you can sign in with it.') }, 'Add a passkey'),
        h('h3', {}, 'Password'),
        passwordForm(),
        h(
          'div',
          { class: 'actions' },
          h('button', { type: 'button', onclick: signOut('/account/signout') }, 'Sign out'),
          h('button', { type: 'button', onclick: signOut('/account/signout-everywhere') }, 'Sign out everywhere'),
        ),
      )
    } catch (error) {
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
