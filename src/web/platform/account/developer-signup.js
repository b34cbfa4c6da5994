// @ts-check
/**
 * Becoming a developer (production; docs/portal.md, "Becoming a developer"), on the home view of a
 * signed-in person who is not one yet. Under `PLINTH_DEVELOPER_SIGNUP=open` it is the **Become a
 * developer** button (`POST /portal/developer`, audited by the server); under `invite` and
 * `operator` it says whom to ask, with the person's username to give them. A refusal is shown next
 * to the button, announced, and changes nothing.
 */

import { h } from '../../../web/ui/dom.js'
import { toast } from '../../../web/ui/toast.js'
import { account } from '../api.js'

/** @typedef {'operator' | 'open' | 'invite'} DeveloperSignup */

/**
 * @typedef {object} DeveloperSignupContext
 * @property {() => void | Promise<void>} becameDeveloper The person holds the role now: show the Portal.
 * @property {() => void} signedOut The session is over: back to sign-in.
 */

/**
 * @typedef {object} SignedInPerson
 * @property {string} username
 * @property {string[]} [roles]
 */

/**
 * @param {unknown} value
 * @returns {value is DeveloperSignup}
 */
const isPolicy = (value) => value === 'operator' || value === 'open' || value === 'invite'

/**
 * What the page says under each policy but `open`, with the person's username to give.
 * @param {DeveloperSignup} policy
 * @param {string} username
 */
function howToAsk(policy, username) {
  const yours = h('strong', { class: 'mono' }, username)
  if (policy === 'invite') {
    return [
      'Developers register apps here. Ask a developer to add you, ',
      yours,
      ', as a member of one of their apps in the Portal: that makes you a developer. ',
      "This platform's operator can grant the role too.",
    ]
  }
  return [
    "Developers register apps here. This platform's operator grants the developer role: ask them, and give your username, ",
    yours,
    '.',
  ]
}

/** @param {DeveloperSignupContext} ctx */
export function createDeveloperSignup(ctx) {
  const element = h('section', {
    class: 'panel-section',
    id: 'developer-signup',
    'aria-labelledby': 'developer-signup-title',
    'data-testid': 'developer-signup',
    hidden: true,
  })

  /** @param {HTMLElement} problem @param {HTMLButtonElement} button */
  async function become(problem, button) {
    problem.hidden = true
    problem.textContent = ''
    button.disabled = true
    try {
      await account('/portal/developer', { method: 'POST' })
    } catch (error) {
      button.disabled = false
      const code = error instanceof Error && 'code' in error ? error.code : undefined
      if (code === 'session_required') return ctx.signedOut()
      // Next to the button that caused it, and announced (role="alert"): the person need not look elsewhere.
      problem.textContent = error instanceof Error ? error.message : String(error)
      problem.hidden = false
      button.focus()
      return
    }
    element.hidden = true
    toast('You are a developer now: register your first app in the Portal.')
    await ctx.becameDeveloper()
  }

  /**
   * Shows the section for a signed-in person without the developer role, and hides it otherwise
   * (`person` undefined: nobody signed in, or the sandbox).
   * @param {SignedInPerson | undefined} person
   * @param {unknown} [policy] platform.json's `developer_signup`
   */
  function show(person, policy) {
    const shown = person !== undefined && isPolicy(policy) && !(person.roles ?? []).includes('developer')
    element.hidden = !shown
    if (!shown) return element.replaceChildren()
    const title = h('h2', { id: 'developer-signup-title' }, 'Build apps on this platform')
    if (policy !== 'open') {
      element.replaceChildren(title, h('p', { 'data-testid': 'developer-signup-ask' }, howToAsk(policy, person.username)))
      return
    }
    const problem = h('p', { class: 'error', role: 'alert', 'data-testid': 'developer-signup-error', hidden: true })
    const button = h('button', { type: 'button', class: 'primary' }, 'Become a developer')
    button.addEventListener('click', () => become(problem, button))
    element.replaceChildren(
      title,
      h('p', {}, 'Developers register apps, make their server API keys and follow their payments in the Portal.'),
      button,
      problem,
    )
  }

  return { element, show }
}
