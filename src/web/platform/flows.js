// @ts-check
/**
 * What the sandbox page does for each SDK request: the consent dialog, the payment dialog,
 * the ad player, the share and open-URL dialogs. Each handler answers through the bridge's
 * channel (`reply`): a result, an error, or for a payment a stream of events.
 */

import { isModalOpen, openModal } from '../../web/ui/dialogs.js'
import { h } from '../../web/ui/dom.js'
import { toast } from '../../web/ui/toast.js'
import { call } from './api.js'
import { runPaymentDialog } from './payment/payment-dialog.js'

/**
 * @typedef {import('./platform.js').Scope} Scope
 * @typedef {import('./platform.js').PlatformUser} PlatformUser
 * @typedef {import('./bridge.js').Channel} Channel
 * @typedef {{ token: string, user: unknown, scopes: Scope[] }} FrameAuth the token the app's current page load was given
 * @typedef {import('./payment/payment-dialog.js').PaymentContext & {
 *   app(): { app_id: string, name: string, network: string },
 *   user(): PlatformUser,
 *   frameAuth(): FrameAuth | undefined,
 *   setFrameAuth(auth: FrameAuth): void,
 *   refreshNotifications(): unknown,
 *   setStatus(text: string): void,
 * }} FlowContext what the flows need of the page: `app()` and `user()` are set while an app is open (its requests come only then)
 */

/** @type {Record<Scope, string>} */
export const SCOPE_TEXT = {
  username: 'Your username',
  payments: 'Ask you for payments and show you ads',
  wallet_address: 'Your wallet address (so that the app can pay you)',
  roles: 'Your roles on the platform',
  in_app_notifications: 'Send you notifications',
  platform: 'Information about your platform account',
  preferred_language: 'Your preferred language',
}
/** @typedef {'rewarded' | 'interstitial'} AdType */
/** @type {string[]} */
const AD_TYPES = ['rewarded', 'interstitial']

/**
 * `ctx`: `platform()` (platform.js), `app()` and `user()` (what is open and who is signed in), `frameAuth()` /
 * `setFrameAuth()` (the token the app's current page load was given), `tuning`
 * (`resendMs`, `pollMs`, `adMs`), `approvalWindowSeconds`, `stepUpAmount` (production), `balance()`, `refreshWallet()`,
 * `refreshNotifications()`, `setStatus(text)`.
 * @param {FlowContext} ctx
 */
export function createFlows(ctx) {
  /** @param {Channel} reply */
  const busy = (reply) => {
    if (!isModalOpen()) return false
    reply.error('busy', 'The sandbox page is showing another dialog; try again once it is closed.')
    return true
  }

  /**
   * @param {{ app_id: string, name: string }} app
   * @param {PlatformUser} user
   * @param {Scope[]} scopes
   * @param {Scope[]} missing
   * @param {Channel} reply
   * @returns {Promise<boolean | undefined>} undefined when the app's page went away
   */
  const consent = (app, user, scopes, missing, reply) =>
    new Promise((resolve) => {
      /** @param {boolean} allowed */
      const answer = (allowed) => {
        close()
        resolve(allowed)
      }
      const close = openModal({
        label: `${app.name} asks you to sign in`,
        className: 'consent',
        onDismiss: () => answer(false),
        render: () => [
          h('p', {}, 'Share with ', h('strong', {}, app.name), ' as ', h('strong', {}, user.username), ':'),
          h(
            'ul',
            { class: 'scopes' },
            scopes.map((scope) =>
              h(
                'li',
                { class: missing.includes(scope) ? 'new' : undefined },
                SCOPE_TEXT[scope],
                h('span', { class: 'muted' }, ` (${scope})`),
              ),
            ),
          ),
          h('p', { class: 'muted' }, `App id ${app.app_id}. Scopes in bold are new for this app.`),
          h(
            'div',
            { class: 'actions' },
            h('button', { type: 'button', onclick: () => answer(false) }, 'Deny'),
            h('button', { type: 'button', class: 'primary', onclick: () => answer(true) }, 'Allow'),
          ),
        ],
      })
      reply.onAbort(() => {
        close()
        resolve(undefined)
      })
    })

  // One authenticate at a time: a second request (an SDK without its own sharing, another scope
  // set) waits for the first's dialog instead of replacing it, and finds its scopes granted.
  /** @type {Promise<unknown>} */
  let authenticating = Promise.resolve()
  /** @type {import('./bridge.js').Handler} */
  function authenticate(params, reply) {
    const run = authenticating.then(() => authenticateOne(params, reply))
    authenticating = run.catch(() => {})
    return run
  }

  /** @type {import('./bridge.js').Handler} */
  async function authenticateOne(params, reply) {
    if (!reply.active()) return
    const asked = params.scopes
    if (!Array.isArray(asked) || asked.length > 16 || !asked.every((s) => typeof s === 'string')) {
      return reply.error('invalid_arguments', 'scopes must be an array of scope names.')
    }
    const unknown = asked.filter((s) => !Object.hasOwn(SCOPE_TEXT, s))
    if (unknown.length > 0) {
      return reply.error('invalid_arguments', `Unknown scopes: ${unknown.join(', ')}. Known: ${Object.keys(SCOPE_TEXT).join(', ')}.`)
    }
    // Each one is a key of SCOPE_TEXT (just checked).
    const scopes = /** @type {Scope[]} */ (asked)
    if (busy(reply)) return
    const app = ctx.app()
    const user = ctx.user()
    const granted = (await ctx.platform().userApps(user)).find((a) => a.app_id === app.app_id)?.scopes ?? []
    const missing = scopes.filter((s) => !granted.includes(s))
    if (missing.length > 0) {
      const allowed = await consent(app, user, scopes, missing, reply)
      if (allowed === undefined) return
      if (!allowed) {
        ctx.setStatus(`You denied ${app.name} access.`)
        return reply.error('consent_denied', `The user declined to share ${missing.join(', ')} with ${app.name}.`)
      }
    }
    if (!reply.active()) return
    const auth = await ctx.platform().authenticate(app.app_id, user, scopes)
    // Only a token with the payments scope may read the user's payments (docs/errors.md, Scopes).
    const { payment } = scopes.includes('payments')
      ? await call('/v2/client/payments/incomplete', { token: auth.accessToken })
      : { payment: null }
    ctx.setFrameAuth({ token: auth.accessToken, user: auth.user, scopes })
    // The only message that carries the access token, posted to the app's origin only.
    reply.result({ accessToken: auth.accessToken, user: auth.user, incompletePayment: payment })
    ctx.setStatus(`Signed in to ${app.name} as ${user.username}: ${scopes.join(', ') || 'no scopes'}`)
    ctx.refreshNotifications()
  }

  /** @type {import('./bridge.js').Handler} */
  async function createPayment(params, reply) {
    const auth = ctx.frameAuth()
    if (auth === undefined) return reply.error('not_authenticated', 'Call Pi.authenticate before Pi.createPayment.')
    if (busy(reply)) return
    await runPaymentDialog(ctx, auth, params, reply)
  }

  /**
   * @param {string} type
   * @param {Channel} reply
   * @returns {Promise<'watched' | 'skipped' | undefined>} undefined when the app's page went away
   */
  const adPlayer = (type, reply) =>
    new Promise((resolve) => {
      const duration = ctx.tuning.adMs
      const started = Date.now()
      const progress = h('progress', { max: String(Math.max(duration, 1)), value: '0' })
      const remaining = h('span', { class: 'muted' }, '')
      /** @type {ReturnType<typeof setInterval> | undefined} */
      let timer
      /** @param {'watched' | 'skipped'} action */
      const end = (action) => {
        clearInterval(timer)
        close()
        resolve(action)
      }
      const close = openModal({
        label: type === 'rewarded' ? 'Rewarded ad' : 'Ad',
        className: 'ad',
        onDismiss: () => end('skipped'),
        render: () => [
          h('div', { class: 'ad-creative' }, 'Your ad here'),
          progress,
          h(
            'div',
            { class: 'actions' },
            remaining,
            h('button', { type: 'button', onclick: () => end('skipped') }, type === 'rewarded' ? 'Skip ad (no reward)' : 'Skip ad'),
          ),
        ],
      })
      const tick = () => {
        const elapsed = Date.now() - started
        progress.value = Math.min(elapsed, duration)
        remaining.textContent = `${Math.max(0, Math.ceil((duration - elapsed) / 1000))} s`
        if (elapsed >= duration) end('watched')
      }
      timer = setInterval(tick, 100)
      tick()
      reply.onAbort(() => {
        clearInterval(timer)
        close()
        resolve(undefined)
      })
    })

  /** @type {import('./bridge.js').Handler} */
  async function showAd(params, reply) {
    const type = /** @type {AdType} */ (params.type)
    if (!AD_TYPES.includes(type)) return reply.error('invalid_arguments', 'The ad type must be "rewarded" or "interstitial".')
    const auth = ctx.frameAuth()
    if (auth === undefined) return reply.result({ type, result: 'USER_UNAUTHENTICATED' })
    if (busy(reply)) return
    try {
      const { ready } = await call(`/v2/client/ads/${type}/ready`, { token: auth.token })
      // An ad that is not available is not played; the mediator's answer says why.
      const action = ready ? await adPlayer(type, reply) : 'watched'
      if (action === undefined) return
      reply.result(await call(`/v2/client/ads/${type}/show`, { method: 'POST', token: auth.token, body: { user_action: action } }))
    } catch (error) {
      reply.result({
        type,
        result: /** @type {import('./api.js').ApiError} */ (error).status === 401 ? 'USER_UNAUTHENTICATED' : 'AD_NETWORK_ERROR',
      })
    }
  }

  /** @type {import('./bridge.js').Handler} */
  async function isAdReady(params, reply) {
    const type = /** @type {AdType} */ (params.type)
    if (!AD_TYPES.includes(type)) return reply.error('invalid_arguments', 'The ad type must be "rewarded" or "interstitial".')
    const auth = ctx.frameAuth()
    if (auth === undefined) return reply.result({ type, ready: false })
    const { ready } = await call(`/v2/client/ads/${type}/ready`, { token: auth.token })
    reply.result({ type, ready })
  }

  /** @type {import('./bridge.js').Handler} */
  function openShareDialog(params, reply) {
    const { title, message } = params
    if (typeof title !== 'string' || typeof message !== 'string')
      return reply.error('invalid_arguments', 'title and message must be strings.')
    if (busy(reply)) return
    const close = openModal({
      label: 'Share',
      onDismiss: () => close(),
      render: () => [
        h('p', {}, h('strong', {}, title.slice(0, 200))),
        h('p', {}, message.slice(0, 2000)),
        h('p', { class: 'muted' }, `Shared from ${ctx.app().name}. The sandbox has no share targets: copy the text instead.`),
        h(
          'div',
          { class: 'actions' },
          h(
            'button',
            {
              type: 'button',
              onclick: () =>
                navigator.clipboard?.writeText(`${title}\n${message}`).then(
                  () => toast('Copied'),
                  () => toast('Could not copy'),
                ),
            },
            'Copy',
          ),
          h('button', { type: 'button', class: 'primary', onclick: () => close() }, 'Close'),
        ),
      ],
    })
    reply.onAbort(close)
    reply.result(null)
  }

  /** @type {import('./bridge.js').Handler} */
  function openUrl(params, reply) {
    /** @type {URL | undefined} */
    let url
    try {
      url = new URL(/** @type {string} */ (params.url))
    } catch {
      url = undefined
    }
    if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
      return reply.error('invalid_arguments', 'The URL must be an http or https URL.')
    }
    if (busy(reply)) return
    const href = url.href
    /** @param {boolean} opened */
    const answer = (opened) => {
      close()
      if (opened) reply.result(null)
      else reply.error('user_cancelled', 'The user did not open the URL.')
    }
    // The user opens it with a click of their own: a link, never window.open from a message.
    const close = openModal({
      label: 'Open in your browser?',
      onDismiss: () => answer(false),
      render: () => [
        h('p', {}, `${ctx.app().name} wants to open a page outside the sandbox:`),
        h('p', { class: 'mono' }, href),
        h(
          'div',
          { class: 'actions' },
          h('button', { type: 'button', onclick: () => answer(false) }, 'Cancel'),
          h('a', { class: 'button primary', href, target: '_blank', rel: 'noopener noreferrer', onclick: () => answer(true) }, 'Open'),
        ),
      ],
    })
    reply.onAbort(close)
  }

  return { authenticate, createPayment, showAd, isAdReady, openShareDialog, openUrl }
}
