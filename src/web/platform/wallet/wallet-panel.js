// @ts-check
/**
 * The wallet panel: the balance and the ledger transactions, each linking to its ledger page.
 */

import { byId, h } from '../../../web/ui/dom.js'
import { formatLocalTime, formatPi, shortMiddle } from '../../../web/ui/format.js'
import { call } from '../api.js'
import { faucetButton } from './faucet-button.js'

const enc = encodeURIComponent

/**
 * @typedef {import('../platform.js').PlatformUser} PlatformUser
 * @typedef {import('../platform.js').Quiet} Quiet
 * @typedef {import('../../api/routes').Answer<'/ledger/accounts/{account_id}/transactions'>['_embedded']['records'][number]} Transaction
 * @typedef {{ app_name: string, payment: { memo: string, transaction: { txid: string } | null } }} AppPayment a payment of the user's, with its app's name
 */

/** @param {string} address */
export async function nativeBalance(address) {
  const account = await call(`/ledger/accounts/${enc(address)}`)
  return account.balances.find((b) => b.asset_type === 'native')?.balance ?? '0'
}

/**
 * `ctx`: `user()`, `drawer`, `payments(user)`: the user's payments with their apps' names
 * (`{app_name, payment}`), and `ledgerUrl(kind, id)`: where a transaction's or an account's link goes.
 * @param {{
 *   user(): PlatformUser | undefined,
 *   drawer: ReturnType<typeof import('../drawer.js').createDrawer>,
 *   payments(user: PlatformUser, quiet: Quiet): Promise<AppPayment[]>,
 *   ledgerUrl(kind: 'transactions' | 'accounts', id: string): string,
 *   production(): boolean,
 * }} ctx
 */
export function createWallet(ctx) {
  const button = byId('wallet-button')
  /** The ledger's stream of the user's transactions: each one refreshes the balance at once (no poll's lag). */
  /** @type {EventSource | undefined} */
  let stream
  /** @type {string | undefined} */
  let streamed
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let soon

  /** @param {string | undefined} address */
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

  /**
   * `background`: a poll or the stream, not the person (the session's idle time goes on).
   * @param {Quiet} [quiet]
   */
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
  /**
   * @param {Transaction} tx
   * @param {Map<string, AppPayment> | undefined} byTxid
   */
  const describe = (tx, byTxid) => {
    const paid = byTxid?.get(tx.hash)
    if (paid !== undefined) return `${paid.app_name}: ${paid.payment.memo}`
    if (byTxid !== undefined && tx.memo === 'issued') return 'Issued by the platform'
    return tx.memo ? `Memo ${tx.memo}` : 'No memo'
  }

  /**
   * @param {string} address
   * @param {Transaction} tx
   * @param {Map<string, AppPayment> | undefined} byTxid
   */
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
      h('span', { class: 'muted' }, formatLocalTime(tx.created_at)),
      h('a', { href: ctx.ledgerUrl('transactions', tx.hash), target: '_blank', rel: 'noopener' }, `Ledger: ${shortMiddle(tx.hash)}`),
    )
  }

  /** @param {Quiet} [quiet] */
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
          : new Map(
              payments
                .filter((p) => p.payment.transaction !== null)
                // Filtered to the paid ones just above.
                .map((p) => [/** @type {{ txid: string }} */ (p.payment.transaction).txid, p]),
            )
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
      ctx.drawer.fill('wallet', h('p', { class: 'error' }, /** @type {Error} */ (error).message))
    }
  }

  button.addEventListener('click', () => {
    if (ctx.drawer.toggle('wallet', 'Wallet')) render()
  })
  return { refresh }
}
