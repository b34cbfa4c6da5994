// @ts-check
/**
 * The developer portal (production, a person with the developer role; docs/portal.md): the apps
 * they are a member of; registering one; proving its domain; its server API keys, members,
 * wallet, and what it did (payments, request log, notifications, ads: portal-activity.js).
 * Everything goes through the portal API with the session cookie. An owner's acts (keys,
 * members, handing over, the request log's switch) are not offered to a member; the platform
 * refuses them anyway (403).
 */

import { byId, h } from '../../../web/ui/dom.js'
import { formatPi } from '../../../web/ui/format.js'
import { toast } from '../../../web/ui/toast.js'
import { ApiError, account } from '../api.js'
import { listingLine } from '../listing-ui.js'
import { focusAfterAct } from '../page-focus.js'
import { alertLine, attempter, confirmAct, facts, isIcon, onceBox, secretField, when } from '../widgets.js'
import { iconField } from './icon-field.js'
import { keysSection } from './keys-section.js'
import { membersSection } from './members-section.js'
import { createActivity } from './portal-activity.js'
import { createTools } from './portal-tools.js'

const enc = encodeURIComponent
/** Pi Testnet first, and chosen unless the developer picks Pi Network: developers build on Testnet first, as the console's default (docs/portal.md). */
const NETWORKS = ['Pi Testnet', 'Pi Network']
/** @typedef {import('../types').PortalApp} PortalApp */

/**
 * The origin of an app URL, or the URL itself when it is none.
 * @param {string} url
 */
const originOf = (url) => {
  try {
    return new URL(url).origin
  } catch {
    return url
  }
}

/**
 * `ctx`: `user()` (who is signed in), `signedOut()` (the session is over: back to sign-in), `selected(appId)` (the app
 * shown, for the page's URL).
 * @param {import('./types').PortalContext} ctx
 */
export function createPortal(ctx) {
  const root = byId('portal-view')
  const error = alertLine('portal-error')
  const list = h('ul', { class: 'list app-picker', 'aria-label': 'Your apps' })
  const detail = h('div', { class: 'portal-detail', 'data-testid': 'portal-detail' })
  let built = false
  /** @type {PortalApp[]} */
  let apps = []
  /** The app shown, by id; 'new' for the registration form. @type {string | undefined} */
  let selected
  /** Secrets answered once, until the person hides them: `{appId, title, note, entries}`. @type {import('../types').ShownOnce | undefined} */
  let secret

  const build = () => {
    if (built) return
    built = true
    root.replaceChildren(
      h('h1', { id: 'portal-title' }, 'Developer portal'),
      error.element,
      h(
        'div',
        { class: 'split' },
        h(
          'nav',
          { class: 'split-side', 'aria-labelledby': 'portal-apps-title' },
          h('h2', { id: 'portal-apps-title' }, 'Your apps'),
          list,
          h('button', { type: 'button', class: 'primary', onclick: () => select('new') }, 'Register an app'),
        ),
        detail,
      ),
    )
  }

  /** Runs one call; a failure goes to the panel's alert line (or back to sign-in when the session is over). */
  const attempt = attempter(error, ctx.signedOut)
  /** The selected app's payments, request log, notifications and ads. */
  const activity = createActivity({ attempt, refresh: () => renderDetail() })
  const tools = createTools({ attempt })

  /**
   * A section of the app's page, titled.
   * @param {string} id
   * @param {string} title
   * @param {...import('../../ui/types').Child} children
   */
  const section = (id, title, ...children) =>
    h(
      'section',
      { class: 'panel-section', 'aria-labelledby': `portal-${id}-title` },
      h('h3', { id: `portal-${id}-title` }, title),
      children,
    )

  // The list of apps

  /** @param {PortalApp} app */
  const statusTags = (app) => [
    app.suspended ? h('span', { class: 'tag bad' }, 'Suspended') : '',
    app.verified ? h('span', { class: 'tag ok' }, 'Verified') : h('span', { class: 'tag' }, 'Not verified'),
    app.role === 'member' ? h('span', { class: 'tag' }, 'Member') : '',
  ]

  /** @param {PortalApp} app */
  const iconOf = (app, size = 28) =>
    isIcon(app.icon)
      ? h('img', { class: 'app-icon', src: app.icon, alt: '', width: String(size), height: String(size) })
      : h('span', { class: 'app-icon placeholder', 'aria-hidden': 'true' }, app.name.slice(0, 1).toUpperCase())

  function renderList() {
    list.replaceChildren(
      ...(apps.length === 0
        ? [h('li', { class: 'muted' }, 'No apps yet: register one.')]
        : apps.map((app) =>
            h(
              'li',
              {},
              h(
                'button',
                {
                  type: 'button',
                  class: 'app-choice',
                  'aria-current': app.app_id === selected ? 'true' : undefined,
                  onclick: () => select(app.app_id),
                },
                iconOf(app),
                h('span', { class: 'grow' }, h('strong', {}, app.name), h('span', { class: 'tags' }, statusTags(app))),
              ),
            ),
          )),
    )
  }

  async function loadList() {
    const done = await attempt(() => account('/portal/apps'))
    if (!done.ok) return
    apps = done.value.apps
    renderList()
  }

  /** @param {string | undefined} appId */
  async function select(appId) {
    selected = appId
    ctx.selected(appId === 'new' ? undefined : appId)
    if (secret !== undefined && secret.appId !== appId) secret = undefined
    activity.forget()
    renderList()
    await renderDetail()
  }

  // Registering an app

  function registerForm() {
    const problem = alertLine('register-error')
    const name = h('input', { id: 'register-name', required: true, maxlength: '60', autocomplete: 'off' })
    const url = h('input', { id: 'register-url', type: 'url', required: true, maxlength: '500', placeholder: 'https://app.example/' })
    const network = h(
      'select',
      { id: 'register-network' },
      NETWORKS.map((n) => h('option', { value: n, selected: n === 'Pi Testnet' }, n)),
    )
    const description = h('textarea', { id: 'register-description', maxlength: '500', rows: '3' })
    const icon = iconField(null, problem)
    return h(
      'form',
      {
        class: 'stack',
        'aria-labelledby': 'register-title',
        onsubmit: async (/** @type {SubmitEvent} */ event) => {
          event.preventDefault()
          /** @type {import('../../api/routes').Body<'/portal/apps', 'POST'>} */
          const body = {
            name: name.value,
            url: url.value.trim(),
            // One of NETWORKS: the select offers no other.
            network: /** @type {'Pi Network' | 'Pi Testnet'} */ (network.value),
            description: description.value,
          }
          if (typeof icon.value() === 'string') body.icon = icon.value()
          const done = await attempt(() => account('/portal/apps', { method: 'POST', body }), problem)
          if (!done.ok) return
          const created = done.value
          secret = {
            appId: created.app.app_id,
            title: `${created.app.name}: its server API key and wallet seed`,
            note: 'The key lets its server call the platform; the seed signs its wallet’s payments. Plinth keeps neither in readable form.',
            entries: [
              { label: 'Server API key', value: created.api_key, testid: 'secret-api-key' },
              { label: 'Wallet seed', value: created.wallet_seed, testid: 'secret-wallet-seed' },
            ],
          }
          toast(`${created.app.name} registered: prove its domain next.`)
          await loadList()
          await select(created.app.app_id)
          focusAfterAct('#portal-view [data-testid="secret-api-key"]')
        },
      },
      h('h2', { id: 'register-title' }, 'Register an app'),
      h('p', { class: 'muted' }, 'The app is yours, unverified: it is in no directory and receives no tokens until its domain is proven.'),
      h('label', { for: 'register-name' }, 'Name'),
      name,
      h('label', { for: 'register-url' }, 'Frontend URL (http or https)'),
      url,
      h('label', { for: 'register-network' }, 'Network'),
      network,
      h('label', { for: 'register-description' }, 'Description (at most 500 characters)'),
      description,
      icon.nodes,
      problem.element,
      h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Register')),
    )
  }

  // One app

  async function renderDetail() {
    if (selected === undefined) {
      detail.replaceChildren(h('p', { class: 'muted' }, 'Choose one of your apps, or register one.'))
      return
    }
    if (selected === 'new') {
      detail.replaceChildren(registerForm())
      detail.querySelector('input')?.focus()
      return
    }
    const appId = selected
    detail.replaceChildren(h('p', { class: 'muted' }, 'Loading…'))
    const path = /** @type {const} */ (`/portal/apps/${enc(appId)}`)
    const done = await attempt(() =>
      Promise.all([account(path), account(`${path}/keys`), account(`${path}/members`), account(`${path}/wallet`)]),
    )
    if (selected !== appId) return
    if (!done.ok) {
      detail.replaceChildren()
      if (done.error instanceof ApiError && done.error.code === 'app_not_found') {
        selected = undefined
        await loadList()
        await renderDetail()
      }
      return
    }
    const [app, { keys }, { members }, wallet] = done.value
    // The list shows what the app is now (verified, suspended, its name).
    apps = apps.map((a) => (a.app_id === app.app_id ? app : a))
    renderList()
    const owner = app.role === 'owner'
    detail.replaceChildren(
      h(
        'header',
        { class: 'app-head' },
        iconOf(app, 48),
        h(
          'div',
          {},
          h('h2', { id: 'portal-app-title' }, app.name),
          h(
            'p',
            { class: 'muted' },
            h('span', { class: 'mono', 'data-testid': 'portal-app-id' }, app.app_id),
            ` · ${app.network} · `,
            owner ? 'You own it' : 'You are a member',
          ),
          h('p', { class: 'tags' }, statusTags(app)),
        ),
      ),
      app.suspended
        ? h(
            'p',
            { class: 'status-line bad' },
            'Suspended by the platform’s operator: its keys and its users’ tokens are refused and it is not in the directory.',
          )
        : '',
      listingLine(app, renderDetail),
      secret !== undefined && secret.appId === app.app_id
        ? onceBox({
            ...secret,
            onDone: () => {
              secret = undefined
              detail.querySelector('[data-testid="shown-once"]')?.remove()
            },
          })
        : '',
      domainSection(app),
      keysSection(sectionView, app, keys, owner),
      membersSection(sectionView, app, members, owner),
      walletSection(wallet),
      tools.section(app),
      activity.section(app),
      detailsSection(app),
    )
  }

  /** Reloads the app shown (and the list, whose tags may change). */
  const reload = async () => {
    await loadList()
    await renderDetail()
  }

  /** What the sections of the app's page use of it (keys-section.js, members-section.js). */
  const sectionView = {
    attempt,
    section,
    renderDetail,
    reload,
    user: ctx.user,
    showSecret: (/** @type {import('../types').ShownOnce} */ shown) => {
      secret = shown
    },
    // A revoked key is no longer offered to copy (#41 U10); the box's other secrets (a wallet seed) stay.
    forgetKey: (/** @type {string} */ prefix) => {
      if (secret === undefined) return
      const entries = secret.entries.filter((entry) => entry.testid !== 'secret-api-key' || !entry.value.startsWith(prefix))
      secret = entries.length === 0 ? undefined : { ...secret, entries }
    },
    deselect: () => {
      selected = undefined
    },
  }

  /** @param {PortalApp} app */
  function domainSection(app) {
    const problem = alertLine('verify-error')
    const origin = app.url === null ? undefined : originOf(app.url)
    const verify = h(
      'button',
      {
        type: 'button',
        class: app.verified ? undefined : 'primary',
        onclick: async () => {
          verify.disabled = true
          const done = await attempt(() => account(`/portal/apps/${enc(app.app_id)}/verify`, { method: 'POST' }), problem)
          verify.disabled = false
          if (!done.ok) {
            const reason = done.error instanceof ApiError ? done.error.body?.reason : undefined
            if (reason !== undefined) problem.element.append(` (${reason})`)
            return
          }
          toast(`${app.name}: domain verified.`)
          await reload()
        },
      },
      app.verified ? 'Check the domain again' : 'Verify the domain',
    )
    return section(
      'domain',
      'Domain',
      app.verified
        ? h(
            'p',
            { class: 'status-line ok', 'data-testid': 'verified-line' },
            `Verified ${app.verified_by === 'operator' ? 'by the operator' : `at ${origin}`} on ${when(app.verified_at)}.`,
          )
        : h(
            'p',
            { class: 'status-line', 'data-testid': 'verified-line' },
            'Not verified yet: the app is in no directory and gets no tokens.',
          ),
      app.validation_key === null || origin === undefined
        ? ''
        : [
            h(
              'p',
              {},
              app.verified ? 'Keep this key published at ' : 'Publish this key at ',
              h('code', { 'data-testid': 'validation-url' }, `${origin}/validation-key.txt`),
              app.verified ? ': a new URL is checked again.' : ' (the file holds the key alone), then verify.',
            ),
            secretField('Validation key', app.validation_key, 'validation-key'),
          ],
      problem.element,
      h('div', { class: 'actions' }, verify),
    )
  }

  /** @param {import('./types').PortalWallet} wallet */
  function walletSection(wallet) {
    return section(
      'wallet',
      'Wallet',
      facts(
        [
          ['Balance', h('span', { 'data-testid': 'app-balance' }, formatPi(wallet.balance))],
          ['Address', h('span', { class: 'mono' }, wallet.address)],
          ['On the ledger', h('a', { href: wallet.payments_url, target: '_blank', rel: 'noopener' }, 'Its payments')],
        ],
        'Wallet',
      ),
    )
  }

  /** @param {PortalApp} app */
  function detailsSection(app) {
    const problem = alertLine('details-error')
    const name = h('input', { id: 'edit-name', required: true, maxlength: '60', value: app.name })
    const url = h('input', { id: 'edit-url', type: 'url', required: true, maxlength: '500', value: app.url ?? '' })
    const description = h('textarea', { id: 'edit-description', maxlength: '500', rows: '3' }, app.description)
    const icon = iconField(app.icon, problem)
    return section(
      'details',
      'Details',
      h(
        'form',
        {
          class: 'stack',
          onsubmit: async (/** @type {SubmitEvent} */ event) => {
            event.preventDefault()
            /** @type {import('../../api/routes').Body<`/portal/apps/${string}`, 'PATCH'>} */
            const body = {}
            if (name.value !== app.name) body.name = name.value
            if (url.value.trim() !== (app.url ?? '')) body.url = url.value.trim()
            if (description.value !== app.description) body.description = description.value
            if (icon.value() !== undefined) body.icon = icon.value()
            if (Object.keys(body).length === 0) return toast('Nothing changed.')
            if (body.url !== undefined && app.verified) {
              const sure = await confirmAct({
                title: 'Change the URL?',
                text: 'A new URL must be verified again: until then the app is in no directory and gets no tokens.',
                action: 'Change it',
              })
              if (!sure) return
            }
            const done = await attempt(() => account(`/portal/apps/${enc(app.app_id)}`, { method: 'PATCH', body }), problem)
            if (!done.ok) return
            toast('Saved.')
            await reload()
          },
        },
        h('label', { for: 'edit-name' }, 'Name'),
        name,
        h('label', { for: 'edit-url' }, 'Frontend URL (a new one must be verified again)'),
        url,
        h('label', { for: 'edit-description' }, 'Description'),
        description,
        icon.nodes,
        problem.element,
        h('div', { class: 'actions' }, h('button', { type: 'submit' }, 'Save')),
      ),
    )
  }

  return {
    /**
     * Shows the portal: the apps, and the one chosen before (or `appId`).
     * @param {string} [appId]
     */
    async show(appId) {
      build()
      if (appId !== undefined) selected = appId
      await loadList()
      if (selected === undefined && apps.length > 0) selected = apps[0].app_id
      if (selected !== undefined && selected !== 'new') ctx.selected(selected)
      renderList()
      await renderDetail()
    },
    /** Forgets everything shown (signing out): no secret stays in the page. */
    reset() {
      built = false
      apps = []
      selected = undefined
      secret = undefined
      activity.reset()
      root.replaceChildren()
    },
  }
}
