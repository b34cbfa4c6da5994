// @ts-check
/**
 * Signing in, by mode: in the sandbox, the list of test users (sign in as any, or create one); in
 * production, people's own accounts (password, passkey, sign-up) and the password reset link an
 * operator issued (`#/reset/<token>`).
 */

import { byId, h, showError } from '../../web/ui/dom.js'
import { toast } from '../../web/ui/toast.js'
import { account, sandbox } from './api.js'
import { refocus } from './page-focus.js'

const enc = encodeURIComponent

/**
 * `ctx`: `production()`, `showView(id)`, `failIn(element)` (shows an error there, or asks for the
 * admin token), `signIn(userId)` (sandbox), `enterAccount()` (production: whoever the session is),
 * `leaveApp()` (closes the app and the drawer).
 * @param {import('./types').SignInContext} ctx
 */
export function createSignIn(ctx) {
  // Signing in

  async function showSignIn() {
    ctx.showView('signin-view')
    showError(byId('signin-error'))
    const list = byId('user-list')
    list.replaceChildren(h('li', { class: 'muted' }, 'Loading…'))
    try {
      // 50 at a time, newest first; any other user is a search away (the list API counts every match).
      const q = byId('user-search', HTMLInputElement).value.trim()
      const { users, total } = await sandbox(`/sandbox/users?limit=50${q === '' ? '' : `&q=${enc(q)}`}`)
      byId('user-count').textContent =
        total > users.length ? `Showing the newest ${users.length} of ${total}: search by name for the others.` : ''
      list.replaceChildren(
        ...(users.length === 0
          ? [h('li', { class: 'muted' }, 'No users yet: create one.')]
          : users.map((user) =>
              h(
                'li',
                {},
                h('span', { class: 'grow' }, h('strong', {}, user.username), h('span', { class: 'muted' }, ` ${user.user_id}`)),
                h(
                  'button',
                  {
                    type: 'button',
                    'aria-label': `Sign in as ${user.username}`,
                    onclick: () => ctx.signIn(user.user_id).catch(ctx.failIn(byId('signin-error'))),
                  },
                  'Sign in',
                ),
              ),
            )),
      )
    } catch (error) {
      list.replaceChildren()
      ctx.failIn(byId('signin-error'))(error)
    }
    refocus()
  }

  byId('user-search-form').addEventListener('submit', (event) => {
    event.preventDefault()
    showSignIn()
  })

  // An error about the name typed ("already taken") goes once the name changes.
  byId('new-username').addEventListener('input', () => showError(byId('signin-error')))

  byId('new-user-form').addEventListener('submit', (event) => {
    event.preventDefault()
    const username = byId('new-username', HTMLInputElement).value.trim()
    sandbox('/sandbox/users', { method: 'POST', body: { username } })
      .then((created) => {
        byId('new-username', HTMLInputElement).value = ''
        return ctx.signIn(created.user_id)
      })
      .catch(ctx.failIn(byId('signin-error')))
  })

  // Production: a password reset link (`#/reset/<token>`), which an operator issued

  const resetToken = () => {
    const match = /^#\/reset\/([A-Za-z0-9_-]{1,128})$/.exec(location.hash)
    return match?.[1]
  }

  function showReset() {
    ctx.leaveApp()
    ctx.showView('reset-view')
    showError(byId('reset-error'))
    byId('reset-password').focus()
  }

  const clearHash = () => history.replaceState(null, '', `${location.pathname}${location.search}`)

  byId('reset-form').addEventListener('submit', (event) => {
    event.preventDefault()
    const token = resetToken()
    const password = byId('reset-password', HTMLInputElement)
    if (token === undefined) return showError(byId('reset-error'), 'This page is not a reset link any more: open the link again.')
    account('/account/password-reset', { method: 'POST', body: { token, new_password: password.value } })
      .then(() => {
        password.value = ''
        clearHash()
        toast('Your new password is set: you are signed in. Every passkey was removed: add yours again from your account.')
        return ctx.enterAccount()
      })
      .catch((error) => {
        keepIfWeak(password, error)
        showError(byId('reset-error'), error)
      })
  })

  byId('reset-cancel').addEventListener('click', () => {
    clearHash()
    ctx.enterAccount().catch((error) => showAccountSignIn(error))
  })

  // A link pasted into a tab where the page is open already changes only the hash.
  window.addEventListener('hashchange', () => {
    if (ctx.production() && resetToken() !== undefined) showReset()
  })

  // Production: people sign in to their own accounts

  /** @param {unknown} [message] */
  function showAccountSignIn(message) {
    ctx.showView('account-view')
    showError(byId('account-error'), message)
    byId('signin-username').focus()
  }

  // "Show the password": the field shows what was typed while the box is ticked (ASVS 2.1.12).
  for (const box of document.querySelectorAll('input[data-reveals]')) {
    if (!(box instanceof HTMLInputElement)) continue
    box.addEventListener('change', () => {
      byId(String(box.dataset.reveals), HTMLInputElement).type = box.checked ? 'text' : 'password'
    })
  }

  byId('passkey-signin').addEventListener('click', async () => {
    showError(byId('account-error'))
    try {
      const optionsJSON = await account('/account/signin/passkey/options', { method: 'POST' })
      const response = await window.SimpleWebAuthnBrowser.startAuthentication({ optionsJSON })
      await account('/account/signin/passkey/verify', { method: 'POST', body: { response } })
      await ctx.enterAccount()
    } catch (error) {
      showError(byId('account-error'), error)
    }
  })

  /** @type {Array<[string, '/account/signin' | '/account/signup', [string, string]]>} */
  const accountForms = [
    ['signin-form', '/account/signin', ['signin-username', 'signin-password']],
    ['signup-form', '/account/signup', ['signup-username', 'signup-password']],
  ]
  for (const [formId, path, fields] of accountForms) {
    byId(formId).addEventListener('submit', (event) => {
      event.preventDefault()
      const [username, password] = fields.map((id) => byId(id, HTMLInputElement))
      account(path, { method: 'POST', body: { username: username.value.trim(), password: password.value } })
        .then(() => {
          password.value = ''
          return ctx.enterAccount()
        })
        .catch((error) => {
          keepIfWeak(password, error)
          showError(byId('account-error'), error)
        })
    })
  }

  return { showSignIn, showAccountSignIn, showReset, resetToken }
}

/**
 * After a refusal: a password refused as too easy to guess stays typed, focused, to be made
 * longer (the "Show the password" box shows it); any other refusal (a wrong password) clears it.
 * @param {HTMLInputElement} password
 * @param {unknown} error
 */
function keepIfWeak(password, error) {
  if (/** @type {{ code?: unknown }} */ (error)?.code === 'weak_password') password.focus()
  else password.value = ''
}
