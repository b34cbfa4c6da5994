// @ts-check
/**
 * The notification centre: every app the user signed in to, unseen count, seen, dismiss, and the per-app switch.
 */

import { byId, h } from '../../web/ui/dom.js'
import { formatLocalTime } from '../../web/ui/format.js'
import { toast } from '../../web/ui/toast.js'
import { call } from './api.js'

const enc = encodeURIComponent

/**
 * @typedef {import('./platform.js').PlatformUser} PlatformUser
 * @typedef {import('./platform.js').Quiet} Quiet
 * @typedef {Awaited<ReturnType<import('./platform.js').Platform['userApps']>>[number]} UserApp
 * @typedef {import('../api/routes').Answer<'/v2/client/notifications?limit=20'>} NotificationList
 * @typedef {{ app: UserApp, token: string, enabled: boolean, list: NotificationList }} Section
 */

/**
 * `ctx`: `user()`, `userApps(user)` (the apps the user signed in to), `drawer`, `tokenFor(appId)`
 * (a token of the platform's own for that app), `openApp(appId, subroute)`.
 * @param {{
 *   user(): PlatformUser | undefined,
 *   userApps(user: PlatformUser, quiet: Quiet): Promise<UserApp[]>,
 *   drawer: ReturnType<typeof import('./drawer.js').createDrawer>,
 *   tokenFor(appId: string, quiet: Quiet): Promise<string>,
 *   openApp(appId: string, subroute: string): void,
 * }} ctx
 */
export function createNotificationCentre(ctx) {
  const bell = byId('bell')
  const badge = byId('badge')
  /** @type {Section[]} */
  let sections = []
  let loaded = false
  /** @type {Promise<void> | undefined} */
  let loading

  /** @param {boolean} background */
  const load = async (background) => {
    const user = ctx.user()
    if (user === undefined) return []
    // Only apps the user allowed to notify: tokenFor asks for in_app_notifications, which must not widen consent.
    const notifying = (await ctx.userApps(user, { background })).filter((app) => app.scopes.includes('in_app_notifications'))
    return Promise.all(
      notifying.slice(0, 20).map(async (app) => {
        const token = await ctx.tokenFor(app.app_id, { background })
        const list = await call('/v2/client/notifications?limit=20', { token })
        return { app, token, enabled: app.notifications_enabled, list }
      }),
    )
  }

  /** `background`: a poll, not the person (the session's idle time goes on). */
  async function refresh({ background = false } = {}) {
    if (loading !== undefined) return loading
    loading = (async () => {
      try {
        sections = await load(background)
        loaded = true
        const unseen = sections.reduce((sum, s) => sum + s.list.unseen_count, 0)
        badge.textContent = String(unseen)
        badge.hidden = unseen === 0
        bell.setAttribute('aria-label', unseen === 0 ? 'Notifications' : `Notifications (${unseen} unread)`)
        if (ctx.drawer.kind() === 'notifications') render()
      } catch (error) {
        console.warn('sandbox: notifications', error)
      } finally {
        loading = undefined
      }
    })()
    return loading
  }

  /**
   * @param {Promise<unknown>} promise
   * @param {string} [message]
   */
  const act = async (promise, message) => {
    try {
      await promise
      if (message) toast(message)
    } catch (error) {
      toast(/** @type {Error} */ (error).message)
    }
    await refresh()
  }

  /**
   * @param {Section} section
   * @param {NotificationList['notifications'][number]} n
   */
  const item = (section, n) => {
    const unseen = n.seen_at === null
    const path = `/v2/client/notifications/${enc(n.id)}`
    return h(
      'article',
      { class: `notification${unseen ? ' unseen' : ''}`, 'data-id': n.id },
      h('div', { class: 'title' }, n.title),
      h('div', {}, n.body),
      h('div', { class: 'muted' }, `${formatLocalTime(n.created_at)} · ${n.subroute}`),
      h(
        'div',
        { class: 'actions' },
        h(
          'button',
          {
            type: 'button',
            onclick: () => {
              ctx.openApp(section.app.app_id, n.subroute)
              act(call(`${path}/seen`, { method: 'POST', token: section.token }))
            },
          },
          'Open',
        ),
        unseen &&
          h('button', { type: 'button', onclick: () => act(call(`${path}/seen`, { method: 'POST', token: section.token })) }, 'Mark seen'),
        h('button', { type: 'button', onclick: () => act(call(`${path}/dismiss`, { method: 'POST', token: section.token })) }, 'Dismiss'),
      ),
    )
  }

  const render = () => {
    if (sections.length === 0) {
      ctx.drawer.fill('notifications', h('p', { class: 'muted' }, 'No apps yet: apps you allow to send you notifications show here.'))
      return
    }
    ctx.drawer.fill(
      'notifications',
      ...sections.map((section) => {
        const toggle = h('input', {
          type: 'checkbox',
          role: 'switch',
          'aria-label': `Notifications from ${section.app.name}`,
          checked: section.enabled,
          onchange: () =>
            act(
              call('/v2/client/notifications/settings', { method: 'PUT', token: section.token, body: { enabled: toggle.checked } }),
              `${section.app.name}: notifications ${toggle.checked ? 'on' : 'off'}`,
            ),
        })
        return h(
          'section',
          { class: 'app-notifications', 'aria-label': `Notifications from ${section.app.name}` },
          h(
            'header',
            {},
            h('strong', {}, section.app.name),
            h(
              'label',
              { class: 'switch' },
              toggle,
              `Notifications from ${section.app.name}`,
              section.list.unseen_count > 0 ? ` (${section.list.unseen_count} unread)` : '',
            ),
          ),
          section.list.notifications.length === 0
            ? h('p', { class: 'muted' }, 'Nothing here.')
            : section.list.notifications.map((n) => item(section, n)),
        )
      }),
    )
  }

  bell.addEventListener('click', () => {
    if (ctx.drawer.toggle('notifications', 'Notifications')) {
      if (loaded) render()
      refresh()
    }
  })
  const reset = () => {
    sections = []
    loaded = false
    badge.hidden = true
  }
  return { refresh, reset }
}
