// @ts-check
/**
 * What a new person can do next (production; #41 U20, docs/accounts.md "Your first visit"): on the
 * home view of someone who has signed in to no app yet, a short guide above the directory: open an
 * app from the directory (or, while it is empty, that apps appear there), their wallet, a passkey
 * for their account, and, when they are not a developer, the way to become one (the section
 * below it: developer-signup.js, by PLINTH_DEVELOPER_SIGNUP). It goes once they have used an app.
 */

import { byId, h } from '../../../web/ui/dom.js'
import { account } from '../api.js'

/**
 * A button that does what a control of the top bar does (the wallet, the account panel).
 * @param {string} text
 * @param {string} controlId
 */
const opens = (text, controlId) => h('button', { type: 'button', class: 'link', onclick: () => byId(controlId).click() }, text)

export function createHomeGuide() {
  const element = h('section', {
    class: 'panel-section home-guide',
    'aria-labelledby': 'home-guide-title',
    'data-testid': 'home-guide',
    hidden: true,
  })

  /**
   * Shows the guide to a signed-in person who has used no app yet; hides it otherwise. `apps`: how
   * many the directory lists.
   * @param {number} apps
   */
  async function show(apps) {
    let me
    try {
      me = await account('/account')
    } catch {
      // Signed out meanwhile: the page's session handling takes over.
      element.hidden = true
      return
    }
    element.hidden = me.consents.length > 0
    if (element.hidden) return element.replaceChildren()
    const developer = me.roles.includes('developer')
    const signup = document.getElementById('developer-signup')
    element.replaceChildren(
      h('h2', { id: 'home-guide-title' }, 'Welcome: what you can do here'),
      h(
        'ul',
        {},
        h(
          'li',
          {},
          apps > 0
            ? 'Open an app from the directory below. The first time, it asks which of your details it may use; you can withdraw that later in your account.'
            : 'Use apps: the directory below lists them once developers have registered theirs. Nothing is listed yet.',
        ),
        h(
          'li',
          {},
          opens('Open your wallet', 'wallet-button'),
          ': your balance on each network and every payment you make or receive, with its receipt.',
        ),
        h(
          'li',
          {},
          opens('Your account', 'user-chip'),
          ': add a passkey to sign in without your password, and see where you are signed in.',
        ),
        developer
          ? h('li', {}, 'You are a developer: register your apps and make their keys in the Portal tab.')
          : signup !== null && !signup.hidden
            ? h('li', {}, 'Build apps of your own: see “Build apps on this platform” below.')
            : '',
      ),
    )
  }

  return { element, show }
}
