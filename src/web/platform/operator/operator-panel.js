// @ts-check
/**
 * The operator's console (production, a person with the operator role; docs/operators.md): users
 * (roles, suspension, password reset links), apps (suspension), issuing money, the requests for a
 * second operator and the ledger's books (operator-money.js), and the audit log. Every act asks what the platform needs (a reason for a suspension or an
 * issue) and lands in the audit log; the page keeps nothing.
 */

import { byId, h } from '../../../web/ui/dom.js'
import { formatPi, shortMiddle } from '../../../web/ui/format.js'
import { filterForm, inlineForm } from '../../../web/ui/forms.js'
import { grid, pagedRows } from '../../../web/ui/tables.js'
import { toast } from '../../../web/ui/toast.js'
import { account } from '../api.js'
import { listingQueueSection } from '../listing-ui.js'
import { focusAfterAct } from '../page-focus.js'
import { alertLine, askReason, attempter, confirmAct, detailsToggle, facts, onceBox, query, subTabs, when } from '../widgets.js'
import { approvalsSection, issueSection, ledgerSection } from './operator-money.js'
import { supportSection } from './support-lookup.js'

const enc = encodeURIComponent
const SECTIONS = /** @type {const} */ ([
  ['support', 'Support'],
  ['users', 'Users'],
  ['apps', 'Apps'],
  ['issue', 'Issue money'],
  ['approvals', 'Approvals'],
  ['listings', 'Listings'],
  ['ledger', 'Ledger'],
  ['audit', 'Audit log'],
])

/**
 * `ctx`: `user()` (who is signed in), `signedOut()` (the session is over: back to sign-in).
 * @param {import('./types').OperatorContext} ctx
 */
export function createOperatorConsole(ctx) {
  const root = byId('operator-view')
  const error = alertLine('operator-error')
  const attempt = attempter(error, ctx.signedOut)
  /** The sections' tabs, once built. @type {ReturnType<typeof subTabs> | undefined} */
  let tabs

  /** Builds the console once; answers its tabs. */
  function build() {
    if (tabs !== undefined) return tabs
    /** @type {import('./types').MoneyContext} */
    const money = { attempt, section, user: ctx.user, onRequested: () => approvals?.reload() }
    /** @type {ReturnType<typeof approvalsSection> | undefined} */
    let approvals
    const makers = {
      support: () => supportSection({ signedOut: ctx.signedOut, section }),
      users: usersSection,
      apps: appsSection,
      issue: () => issueSection(money),
      approvals: () => {
        approvals = approvalsSection(money)
        return approvals
      },
      listings: () => listingQueueSection(money),
      ledger: () => ledgerSection(money),
      audit: auditSection,
    }
    const sections = SECTIONS.map(([id, label]) => ({ id, label, ...makers[id]() }))
    tabs = subTabs('Console sections', sections, () => error.set(undefined))
    root.replaceChildren(
      h('h1', { id: 'operator-title' }, 'Operator console'),
      tabs.nav,
      error.element,
      ...sections.map((section) => section.element),
    )
    return tabs
  }

  /**
   * @param {string} id
   * @param {string} title
   * @param {...import('../../ui/types').Child} children
   */
  const section = (id, title, ...children) =>
    h(
      'section',
      { class: 'panel-section', 'aria-labelledby': `operator-${id}-title` },
      h('h2', { id: `operator-${id}-title` }, title),
      children,
    )

  /**
   * A search form over a list that pages (users, apps): `path(filter, cursor)` is the page's
   * address; the first page is read when the section is first shown.
   * @template T
   * @param {{ label: string, input: HTMLInputElement, list: HTMLElement, key: string, path: (filter: string, cursor: string | undefined) => string, row: (item: T) => Node, empty: () => Node }} options
   */
  function searchList({ label, input, list, key, path, row, empty }) {
    let filter = ''
    const rows = pagedRows({ container: list, key, load: (cursor) => account(path(filter, cursor)), row, empty, attempt })
    const form = inlineForm({
      label,
      input,
      action: 'Search',
      search: true,
      onSubmit: () => {
        filter = input.value.trim()
        rows.reload()
      },
    })
    let loaded = false
    return {
      nodes: [form, list, rows.more],
      reload: rows.reload,
      shown() {
        if (loaded) return
        loaded = true
        rows.reload()
      },
    }
  }

  /**
   * A Details button for a row, showing `entries` (facts) of what `path` answers.
   * @template {string} P
   * @param {string} name
   * @param {P} path
   * @param {(found: import('../../api/routes').Answer<P>) => Array<[string, import('../../ui/types').Child]>} entries
   */
  const aboutToggle = (name, path, entries) =>
    detailsToggle(`Details about ${name}`, async () => {
      const done = await attempt(() => account(path))
      return done.ok ? facts(entries(done.value), `About ${name}`) : undefined
    })

  // Users

  /** @returns {import('./types').ConsoleSection} */
  function usersSection() {
    const secretSlot = h('div')

    /**
     * @param {import('./types').OperatorUser} user
     * @param {'developer' | 'operator'} role
     * @param {boolean} grant
     */
    const setRole = async (user, role, grant) => {
      /** @type {string | undefined} */
      let reason
      if (role === 'operator' && grant) {
        // A second operator approves it (unless the platform runs with one): the reason goes with the request.
        reason = await askReason({
          title: `Make ${user.username} an operator?`,
          text: 'An operator sees every user and app, suspends them and issues money. Another operator approves it.',
          action: 'Ask',
        })
        if (reason === undefined) return
      }
      const body = { role, grant, ...(reason === undefined ? {} : { reason }) }
      const done = await attempt(() => account(`/operator/users/${enc(user.username)}/roles`, { method: 'POST', body }))
      if (!done.ok) return
      if ('approval' in done.value) {
        toast(`Making ${user.username} an operator waits for another operator (Approvals).`)
        return
      }
      toast(`${user.username}: ${done.value.roles.length === 0 ? 'no roles' : done.value.roles.join(', ')}.`)
      await users.reload()
      // The same person's button for the same role, now saying the opposite act.
      const label = `${grant ? 'Withdraw' : 'Grant'} the ${role} role ${grant ? 'from' : 'to'} ${user.username}`
      focusAfterAct(`#operator-view button[aria-label="${CSS.escape(label)}"]`)
    }

    /**
     * @param {import('./types').OperatorUser} user
     * @param {'suspend' | 'restore'} act
     */
    const suspend = async (user, act) => {
      const reason = await askReason({
        title: act === 'suspend' ? `Suspend ${user.username}?` : `Restore ${user.username}?`,
        text:
          act === 'suspend'
            ? 'Their sessions end and every token they gave an app is refused.'
            : 'They may sign in again; the sessions that ended stay ended.',
        action: act === 'suspend' ? 'Suspend' : 'Restore',
      })
      if (reason === undefined) return
      const path = /** @type {const} */ (`/operator/users/${enc(user.username)}`)
      // One call an act, each typed by its own route.
      const done = await attempt(() =>
        act === 'suspend'
          ? account(`${path}/suspend`, { method: 'POST', body: { reason } })
          : account(`${path}/restore`, { method: 'POST', body: { reason } }),
      )
      if (!done.ok) return
      toast(done.value.changed ? `${user.username} ${act === 'suspend' ? 'suspended' : 'restored'}.` : 'It already was so.')
      await users.reload()
    }

    /** @param {import('./types').OperatorUser} user */
    const resetLink = async (user) => {
      const sure = await confirmAct({
        title: `A password reset link for ${user.username}?`,
        text: 'The link sets a new password once. Hand it to them yourself, by a channel you trust.',
        action: 'Issue the link',
      })
      if (!sure) return
      const done = await attempt(() => account(`/operator/users/${enc(user.username)}/password-reset`, { method: 'POST' }))
      if (!done.ok) return
      secretSlot.replaceChildren(
        onceBox({
          title: `Password reset link for ${done.value.username}`,
          note: `It works once, until ${when(done.value.expires_at)}.`,
          entries: [{ label: 'Reset link', value: done.value.url, testid: 'secret-reset-url' }],
          onDone: () => secretSlot.replaceChildren(),
        }),
      )
    }

    /** @param {import('./types').OperatorUser} user */
    const row = (user) => {
      /** @param {string} role */
      const has = (role) => user.roles.includes(role)
      const about = aboutToggle(user.username, `/operator/users/${enc(user.username)}`, (found) => [
        ['User id', h('span', { class: 'mono' }, found.user_id)],
        ['Balance', formatPi(found.balance)],
        ['Wallet', h('span', { class: 'mono' }, found.wallet_address)],
        ['Signed up', when(found.created_at)],
        ['Password', found.has_password ? 'set' : 'none (passkeys only)'],
        ['Suspended', found.suspended ? when(found.suspended_at) : undefined],
        ['Apps', found.apps.length === 0 ? 'none' : found.apps.map((a) => `${a.name} (${a.role})`).join(', ')],
      ])
      const me = ctx.user()?.username === user.username
      return h(
        'li',
        { class: 'wrap', 'data-username': user.username },
        h(
          'span',
          { class: 'grow' },
          h('strong', {}, user.username),
          h('span', { class: 'muted' }, ` ${user.roles.length === 0 ? 'no roles' : user.roles.join(', ')}`),
          user.suspended ? h('span', { class: 'tag bad' }, 'Suspended') : '',
        ),
        h(
          'span',
          { class: 'row-actions' },
          about.button,
          h(
            'button',
            {
              type: 'button',
              'aria-label': `${has('developer') ? 'Withdraw the developer role from' : 'Grant the developer role to'} ${user.username}`,
              onclick: () => setRole(user, 'developer', !has('developer')),
            },
            has('developer') ? 'Withdraw the developer role' : 'Grant the developer role',
          ),
          me
            ? ''
            : h(
                'button',
                {
                  type: 'button',
                  'aria-label': `${has('operator') ? 'Withdraw the operator role from' : 'Grant the operator role to'} ${user.username}`,
                  onclick: () => setRole(user, 'operator', !has('operator')),
                },
                has('operator') ? 'Withdraw the operator role' : 'Grant the operator role',
              ),
          h(
            'button',
            { type: 'button', 'aria-label': `Issue a password reset link for ${user.username}`, onclick: () => resetLink(user) },
            'Reset link',
          ),
          me
            ? ''
            : h(
                'button',
                {
                  type: 'button',
                  class: user.suspended ? undefined : 'danger',
                  'aria-label': `${user.suspended ? 'Restore' : 'Suspend'} ${user.username}`,
                  onclick: () => suspend(user, user.suspended ? 'restore' : 'suspend'),
                },
                user.suspended ? 'Restore' : 'Suspend',
              ),
        ),
        about.slot,
      )
    }

    const users = searchList({
      label: 'Find users by name',
      input: h('input', { id: 'operator-user-q', type: 'search', maxlength: '64', placeholder: 'part of a username' }),
      list: h('ul', { class: 'list tall', 'aria-label': 'Users' }),
      key: 'users',
      path: (q, cursor) => `/operator/users${query({ q, after: cursor })}`,
      row,
      empty: () => h('li', { class: 'muted' }, 'No user matches.'),
    })
    const [form, ...listed] = users.nodes
    return { element: section('users', 'Users', form, secretSlot, listed), shown: users.shown }
  }

  // Apps

  /** @returns {import('./types').ConsoleSection} */
  function appsSection() {
    /**
     * @param {import('./types').OperatorApp} app
     * @param {'suspend' | 'restore'} act
     */
    const suspend = async (app, act) => {
      const reason = await askReason({
        title: act === 'suspend' ? `Suspend ${app.name}?` : `Restore ${app.name}?`,
        text:
          act === 'suspend'
            ? 'Its keys and its users’ tokens are refused and it leaves the directory.'
            : 'Its keys and tokens work again and it is back in the directory.',
        action: act === 'suspend' ? 'Suspend' : 'Restore',
      })
      if (reason === undefined) return
      const path = /** @type {const} */ (`/operator/apps/${enc(app.app_id)}`)
      // One call an act, each typed by its own route.
      const done = await attempt(() =>
        act === 'suspend'
          ? account(`${path}/suspend`, { method: 'POST', body: { reason } })
          : account(`${path}/restore`, { method: 'POST', body: { reason } }),
      )
      if (!done.ok) return
      toast(done.value.changed ? `${app.name} ${act === 'suspend' ? 'suspended' : 'restored'}.` : 'It already was so.')
      await apps.reload()
    }

    /** @param {import('./types').OperatorApp} app */
    const row = (app) => {
      const about = aboutToggle(app.name, `/operator/apps/${enc(app.app_id)}`, (found) => [
        ['URL', found.url ?? 'none'],
        ['Description', found.description],
        ['Network', found.network],
        ['Wallet', h('span', { class: 'mono' }, found.wallet_address)],
        ['Registered', when(found.created_at)],
        ['Verified', found.verified ? `${when(found.verified_at)} (${found.verified_by})` : 'no'],
        ['Suspended', found.suspended ? when(found.suspended_at) : undefined],
        ['Active keys', String(found.active_keys)],
        ['Members', found.members.map((m) => `${m.username} (${m.role})`).join(', ')],
      ])
      return h(
        'li',
        { class: 'wrap', 'data-app-id': app.app_id },
        h(
          'span',
          { class: 'grow' },
          h('strong', {}, app.name),
          h('span', { class: 'mono muted' }, ` ${app.app_id}`),
          h('span', { class: 'muted' }, ` owner ${app.owner ?? 'none'}`),
          app.verified ? h('span', { class: 'tag ok' }, 'Verified') : h('span', { class: 'tag' }, 'Not verified'),
          app.suspended ? h('span', { class: 'tag bad' }, 'Suspended') : '',
        ),
        h(
          'span',
          { class: 'row-actions' },
          about.button,
          h(
            'button',
            {
              type: 'button',
              class: app.suspended ? undefined : 'danger',
              'aria-label': `${app.suspended ? 'Restore' : 'Suspend'} ${app.name}`,
              onclick: () => suspend(app, app.suspended ? 'restore' : 'suspend'),
            },
            app.suspended ? 'Restore' : 'Suspend',
          ),
        ),
        about.slot,
      )
    }

    const apps = searchList({
      label: 'Find apps by name or id',
      input: h('input', { id: 'operator-app-q', type: 'search', maxlength: '200', placeholder: 'part of a name, or an app id' }),
      list: h('ul', { class: 'list tall', 'aria-label': 'Apps' }),
      key: 'apps',
      path: (q, cursor) => `/operator/apps${query({ q, before: cursor })}`,
      row,
      empty: () => h('li', { class: 'muted' }, 'No app matches.'),
    })
    return { element: section('apps', 'Apps', apps.nodes), shown: apps.shown }
  }

  // The audit log

  /** @returns {import('./types').ConsoleSection} */
  function auditSection() {
    const fields = /** @type {const} */ (['actor', 'action', 'target', 'q'])
    const labels = { actor: 'Actor (user:…, cli:…)', action: 'Action', target: 'Target (username or app id)', q: 'Text in the details' }
    const inputs = Object.fromEntries(
      fields.map((name) => [
        name,
        h('input', { id: `audit-${name}`, maxlength: '200', autocomplete: 'off', type: name === 'q' ? 'search' : 'text' }),
      ]),
    )
    const verdict = h('div', { 'data-testid': 'audit-verify', 'aria-live': 'polite' })
    const exportLink = h('a', { class: 'button', href: '/operator/audit/export', download: 'plinth-audit.jsonl' }, 'Export JSON lines')
    /** @type {Record<string, string>} */
    let filter = {}

    /**
     * A person's actor (`user:<id>`) shows as their username, the raw actor below it (whole in its title).
     * @param {import('./types').AuditRecord} record
     */
    const actor = (record) =>
      record.actor_username === null || record.actor_username === undefined
        ? h('td', { class: 'mono' }, record.actor)
        : h(
            'td',
            { title: record.actor },
            h('span', { class: 'actor-name' }, record.actor_username),
            h('span', { class: 'mono muted small block' }, shortMiddle(record.actor, 12)),
          )

    /** @param {import('./types').AuditRecord} record */
    const row = (record) =>
      h(
        'tr',
        { 'data-action': record.action, 'data-audit-id': record.id },
        h('td', {}, when(record.at)),
        actor(record),
        h('td', {}, record.action),
        h('td', { class: 'mono' }, record.target ?? ''),
        h('td', {}, h('code', { class: 'details' }, JSON.stringify(record.details))),
      )

    const records = pagedRows({
      container: h('tbody'),
      key: 'records',
      load: (cursor) => account(`/operator/audit${query({ ...filter, before: cursor })}`),
      row,
      empty: () => h('tr', {}, h('td', { colspan: '5', class: 'muted' }, 'No record matches.')),
      attempt,
    })

    const verify = async () => {
      const done = await attempt(() => account('/operator/audit/verify'))
      if (!done.ok) return
      const { records, broken_at: broken, problem, head } = done.value
      verdict.replaceChildren(
        h(
          'p',
          { class: `status-line ${broken === null ? 'ok' : 'bad'}` },
          broken === null
            ? `The chain is whole: ${records} records, each linked to the one before.`
            : problem === 'unkeyed'
              ? `The chain is not keyed from record ${broken}: it was written before the chain was keyed (docs/operators.md).`
              : `The chain is broken at record ${broken}: a record was changed, removed or inserted.`,
        ),
        ...(head === null
          ? []
          : [
              h(
                'p',
                { class: 'muted' },
                'Head, to keep outside the database (plinth admin audit verify --head checks it later): ',
                h('code', { 'data-testid': 'audit-head' }, head),
              ),
            ]),
      )
    }

    return {
      element: section(
        'audit',
        'Audit log',
        filterForm(
          fields.map((name) => [labels[name], inputs[name]]),
          () => {
            filter = Object.fromEntries(fields.map((name) => [name, inputs[name].value.trim()]))
            exportLink.href = `/operator/audit/export${query(filter)}`
            records.reload()
          },
        ),
        h('div', { class: 'actions' }, h('button', { type: 'button', onclick: verify }, 'Verify the chain'), exportLink),
        verdict,
        grid('Audit records, newest first', ['When', 'Actor', 'Action', 'Target', 'Details'], records.container),
        records.more,
      ),
      // The log grows with every act: it is read again each time the section is opened.
      shown: () => records.reload(),
    }
  }

  return {
    show() {
      const built = build()
      built.open(built.current() ?? 'users')
    },
    reset() {
      tabs = undefined
      root.replaceChildren()
    },
  }
}
