/**
 * The platform's own panels: the wallet (balance and ledger transactions, each linking to its
 * ledger page) and the notification centre (every app the user signed in to, unseen count,
 * seen, dismiss, and the per-app switch).
 */
import { call } from './api.js'
import { byId, formatPi, formatTime, h, isModalOpen, refocus, short, toast } from './dom.js'
import { faucetButton } from './faucet-button.js'

const enc = encodeURIComponent

/**
 * The one drawer under the top bar; `open(kind, …)` twice for the same kind closes it. Opening
 * it moves the focus to its title; Escape or Close closes it and gives the focus back to the
 * button that opened it.
 */
export function createDrawer() {
  const drawer = byId('drawer')
  const title = byId('drawer-title')
  const body = byId('drawer-body')
  title.setAttribute('tabindex', '-1')
  let kind
  let opener
  const close = () => {
    const hadFocus = drawer.contains(document.activeElement)
    kind = undefined
    drawer.hidden = true
    body.replaceChildren()
    if (hadFocus && opener?.isConnected) opener.focus()
    opener = undefined
    refocus()
  }
  byId('drawer-close').addEventListener('click', close)
  document.addEventListener('keydown', (event) => {
    if (event.key === 'Escape' && !drawer.hidden && !isModalOpen()) close()
  })
  return {
    kind: () => kind,
    close,
    toggle(nextKind, label) {
      if (kind === nextKind) {
        close()
        return false
      }
      if (kind === undefined) opener = document.activeElement
      kind = nextKind
      title.textContent = label
      body.replaceChildren(h('p', { class: 'muted' }, 'Loading…'))
      drawer.hidden = false
      title.focus()
      return true
    },
    fill(forKind, ...nodes) {
      if (kind === forKind) body.replaceChildren(...nodes.flat())
    },
  }
}

export async function nativeBalance(address) {
  const account = await call(`/ledger/accounts/${enc(address)}`)
  return account.balances.find((b) => b.asset_type === 'native')?.balance ?? '0'
}

/**
 * `ctx`: `user()`, `drawer`, `payments(user)`: the user's payments with their apps' names
 * (`{app_name, payment}`), and `ledgerUrl(kind, id)`: where a transaction's or an account's link goes.
 */
export function createWallet(ctx) {
  const button = byId('wallet-button')
  /** The ledger's stream of the user's transactions: each one refreshes the balance at once (no poll's lag). */
  let stream
  let streamed
  let soon

  const follow = (address) => {
    if (streamed === address) return
    stream?.close()
    stream = undefined
    streamed = address
    if (address === undefined || typeof EventSource !== 'function') return
    stream = new EventSource(`/ledger/accounts/${enc(address)}/transactions?cursor=now`)
    // A transaction arrived: nobody asked, so the refresh is a background one.
    stream.addEventListener('message', () => {
      clearTimeout(soon)
      soon = setTimeout(() => refresh({ background: true }), 50)
    })
  }

  /** `background`: a poll or the stream, not the person (the session's idle time goes on). */
  async function refresh({ background = false } = {}) {
    const user = ctx.user()
    follow(user?.wallet_address)
    if (user === undefined) {
      button.textContent = 'Wallet'
      return
    }
    try {
      button.textContent = formatPi(await nativeBalance(user.wallet_address))
    } catch {
      button.textContent = 'Wallet'
    }
    if (ctx.drawer.kind() === 'wallet') await render({ background })
  }

  /** What a transaction was for: the payment it paid (its app and memo), money issued, or its memo. */
  const describe = (tx, byTxid) => {
    const paid = byTxid?.get(tx.hash)
    if (paid !== undefined) return `${paid.app_name}: ${paid.payment.memo}`
    if (byTxid !== undefined && tx.memo === 'issued') return 'Issued by the platform'
    return tx.memo ? `Memo ${tx.memo}` : 'No memo'
  }

  async function transactionRow(address, tx, byTxid) {
    let amount = ''
    let direction = ''
    try {
      const ops = (await call(`/ledger/transactions/${enc(tx.hash)}/operations?limit=20`))._embedded.records
      const mine = ops.filter((op) => op.to === address || op.from === address)
      if (mine.length === 1) {
        direction = mine[0].to === address ? 'in' : 'out'
        amount = `${direction === 'in' ? '+' : '−'}${formatPi(mine[0].amount)}`
      } else if (mine.length > 1) amount = `${mine.length} payments`
    } catch {
      amount = ''
    }
    return h(
      'div',
      { class: 'tx', 'data-hash': tx.hash },
      h('span', {}, describe(tx, byTxid)),
      h('span', { class: `amount ${direction}` }, amount),
      h('span', { class: 'muted' }, formatTime(tx.created_at)),
      h('a', { href: ctx.ledgerUrl('transactions', tx.hash), target: '_blank', rel: 'noopener' }, `Ledger: ${short(tx.hash)}`),
    )
  }

  async function render({ background = false } = {}) {
    const user = ctx.user()
    if (user === undefined) return
    try {
      const address = user.wallet_address
      const [balance, page, payments] = await Promise.all([
        nativeBalance(address),
        call(`/ledger/accounts/${enc(address)}/transactions?order=desc&limit=15`),
        ctx.payments(user, { background }).catch(() => undefined),
      ])
      // Signed out meanwhile (the session ended): nothing of the wallet is drawn.
      if (ctx.user() !== user) return
      const byTxid =
        payments === undefined
          ? undefined
          : new Map(payments.filter((p) => p.payment.transaction !== null).map((p) => [p.payment.transaction.txid, p]))
      const rows = await Promise.all(page._embedded.records.map((tx) => transactionRow(address, tx, byTxid)))
      ctx.drawer.fill(
        'wallet',
        h('p', { class: 'muted' }, `Your wallet (${user.username})`),
        h('div', { class: 'balance', 'data-testid': 'wallet-balance' }, formatPi(balance)),
        h('p', {}, h('a', { class: 'mono', href: ctx.ledgerUrl('accounts', address), target: '_blank', rel: 'noopener' }, address)),
        faucetButton({ production: ctx.production(), address, paid: () => refresh() }),
        h('h3', {}, 'Transactions'),
        rows.length === 0 ? h('p', { class: 'muted' }, 'None yet.') : rows,
      )
    } catch (error) {
      ctx.drawer.fill('wallet', h('p', { class: 'error' }, error.message))
    }
  }

  button.addEventListener('click', () => {
    if (ctx.drawer.toggle('wallet', 'Wallet')) render()
  })
  return { refresh }
}

/**
 * `ctx`: `user()`, `userApps(user)` (the apps the user signed in to), `drawer`, `tokenFor(appId)`
 * (a token of the platform's own for that app), `openApp(appId, subroute)`.
 */
export function createNotificationCentre(ctx) {
  const bell = byId('bell')
  const badge = byId('badge')
  let sections = []
  let loaded = false
  let loading

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

  const act = async (promise, message) => {
    try {
      await promise
      if (message) toast(message)
    } catch (error) {
      toast(error.message)
    }
    await refresh()
  }

  const item = (section, n) => {
    const unseen = n.seen_at === null
    const path = `/v2/client/notifications/${enc(n.id)}`
    return h(
      'article',
      { class: `notification${unseen ? ' unseen' : ''}`, 'data-id': n.id },
      h('div', { class: 'title' }, n.title),
      h('div', {}, n.body),
      h('div', { class: 'muted' }, `${formatTime(n.created_at)} · ${n.subroute}`),
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
          onchange: (event) =>
            act(
              call('/v2/client/notifications/settings', { method: 'PUT', token: section.token, body: { enabled: event.target.checked } }),
              `${section.app.name}: notifications ${event.target.checked ? 'on' : 'off'}`,
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
