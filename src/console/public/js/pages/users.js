// @ts-check
// Users: search by name with paging and "sign in as" in the sandbox browser; one user's page.

import { h } from '../../../../web/ui/dom.js'
import { formatUtcTime, shortId } from '../../../../web/ui/format.js'
import { action, form, searchBox } from '../../../../web/ui/forms.js'
import { pagedTable, table } from '../../../../web/ui/tables.js'
import { toast } from '../../../../web/ui/toast.js'
import { del, get, post, query, seg } from '../api.js'
import { exportButtons } from '../export.js'
import { badge, card, code, facts, field, pageTitle } from '../parts.js'
import { currentRoute, render } from '../router.js'
import { accountLink, balancesLine, fundForm, reveal, revealPanel, walletBalances } from '../shared.js'

const PAGE = 50

export async function usersPage() {
  const create = form(
    { class: 'inline-form', 'data-testid': 'create-user' },
    [
      field(
        'Username (3 to 32 letters, digits, _)',
        h('input', { name: 'username', required: true, minlength: 3, maxlength: 32, pattern: '[A-Za-z0-9_]+', placeholder: 'alice_01' }),
      ),
      h('button', { type: 'submit', class: 'primary' }, 'Create user'),
    ],
    /** @param {{ username: string }} values */
    async (values) => {
      const user = await post('/sandbox/users', { username: values.username.trim() })
      reveal.current = {
        owner: `users/${seg(user.user_id)}`,
        title: `${user.username} is created`,
        items: [{ label: `Wallet seed (${user.wallet.address})`, value: user.wallet.seed, testid: 'revealed-seed' }],
      }
      location.hash = `#/users/${seg(user.user_id)}`
    },
  )
  let q = ''
  const list = pagedTable({
    headers: ['Username', 'User id', 'Wallet', 'Created', ''],
    emptyText: 'No user matches.',
    testid: 'users',
    load: async (before) => {
      const { users, next_cursor, total } = await get(`/sandbox/users${query({ q, before, limit: PAGE })}`)
      const rows = users.map((user) =>
        h(
          'tr',
          { 'data-testid': 'user-row' },
          h('td', { class: 'clip' }, h('a', { href: `#/users/${seg(user.user_id)}` }, user.username)),
          h('td', {}, code(user.user_id)),
          h('td', {}, accountLink(user.wallet_address)),
          h('td', {}, formatUtcTime(user.created_at)),
          h(
            'td',
            {},
            h(
              'a',
              { href: `${location.origin}/sandbox/?user=${seg(user.user_id)}`, 'data-testid': 'sign-in-as' },
              `Sign in as ${user.username}`,
            ),
          ),
        ),
      )
      return { rows, next: next_cursor, total, size: PAGE }
    },
  })
  const search = searchBox({
    label: 'Search users by name',
    placeholder: 'part of a username',
    maxlength: 32,
    testid: 'user-search',
    onSearch: (text) => {
      q = text
      list.reload()
    },
  })
  return [
    pageTitle('Users', 'Test users of the platform, newest first. The sandbox browser signs in as one of them.'),
    card('Create a user', null, create),
    card(
      'Users',
      [
        action('Refresh', list.reload, { kind: 'small' }),
        ' ',
        // The export takes the search in force when it is clicked.
        exportButtons(() => `/sandbox/users/export${query({ q })}`, 'export-users'),
      ],
      search,
      list.el,
    ),
  ]
}

/** @param {{ userId: string }} params */
export async function userPage({ userId }) {
  const [user, { notifications }] = await Promise.all([
    get(`/sandbox/users/${seg(userId)}`),
    get(`/sandbox/users/${seg(userId)}/notifications?limit=50`),
  ])
  const balances = await walletBalances(user.wallet_address)
  const apps = user.apps.map((app) =>
    h(
      'tr',
      { 'data-testid': 'consent-row' },
      h('td', { class: 'clip' }, h('a', { href: `#/apps/${seg(app.app_id)}` }, app.name)),
      h('td', {}, code(app.uid)),
      h(
        'td',
        {},
        app.scopes.map((scope) => badge(scope, 'info')),
      ),
      h('td', {}, app.notifications_enabled ? badge('on', 'ok') : badge('off', 'off')),
      h(
        'td',
        { class: 'buttons' },
        h('a', { href: `#/apps/${seg(app.app_id)}/users/${seg(user.user_id)}/blocking`, class: 'small' }, 'Blocked?'),
        ' ',
        action(
          'Withdraw consent',
          async () => {
            await del(`/sandbox/apps/${seg(app.app_id)}/users/${seg(user.user_id)}/consent`)
            toast(`Consent to ${app.name} withdrawn: the next sign-in asks again`)
            await render()
          },
          { kind: 'small danger', confirm: 'Click again to withdraw', testid: 'withdraw-consent' },
        ),
      ),
    ),
  )
  const received = notifications.map((n) =>
    h(
      'tr',
      {},
      h('td', { class: 'clip' }, h('strong', {}, n.title), h('div', { class: 'muted small' }, n.body)),
      h('td', {}, code(shortId(n.app_id), n.app_id)),
      h('td', {}, formatUtcTime(n.created_at)),
      h('td', {}, n.dismissed_at ? badge('dismissed', 'off') : n.seen_at ? badge('seen', 'ok') : badge('unseen', 'info')),
    ),
  )
  return [
    pageTitle(user.username, null, ['#/users', 'Users']),
    revealPanel(currentRoute(), render),
    card(
      'User',
      action('Refresh', render, { kind: 'small' }),
      facts([
        ['User id', code(user.user_id)],
        // One wallet key, a balance on each network.
        ['Wallet', [accountLink(user.wallet_address), balancesLine(balances)], 'user-balance'],
        ['Created', formatUtcTime(user.created_at)],
      ]),
      h(
        'p',
        {},
        h('a', { href: `${location.origin}/sandbox/?user=${seg(user.user_id)}` }, `Sign in as ${user.username} in the sandbox browser`),
      ),
      fundForm(user.wallet_address, render),
    ),
    card(
      'Apps and consent',
      null,
      table(['App', 'uid in the app', 'Scopes granted', 'Notifications', ''], apps, 'Not signed in to any app yet.'),
    ),
    card('Notification centre', null, table(['Notification', 'From app', 'Received', 'State'], received, 'No notifications.')),
  ]
}
