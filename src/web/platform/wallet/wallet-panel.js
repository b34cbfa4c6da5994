// @ts-check
/**
 * The wallet panel: the balance and the ledger transactions, each linking to its ledger page.
 */

import { byId, h } from '../../../web/ui/dom.js'
import { formatLocalTime, formatPi, shortMiddle } from '../../../web/ui/format.js'
import { account, call } from '../api.js'
import { faucetButton } from './faucet-button.js'

const enc = encodeURIComponent

/**
 * @typedef {import('../platform.js').PlatformUser} PlatformUser
 * @typedef {import('../platform.js').Quiet} Quiet
 * @typedef {{ hash: string, memo?: string | null, created_at: string }} Transaction
 * @typedef {{ app_name: string, payment: { memo: string, transaction: { txid: string } | null } }} AppPayment a payment of the user's, with its app's name
 */

/**
 * @typedef {'Pi Network' | 'Pi Testnet'} Network
 * @typedef {Partial<Record<Network, string>>} Balances the user's balance on each network the page can read
 */

/**
 * The user's balances on both networks (one wallet key, a balance on each). Production: from the
 * account API (`wallet.balance` is Pi Network's, `wallet.testnet_balance` Pi Testnet's). The
 * sandbox: from the sandbox API's `/sandbox/ledger/accounts/{address}` (`/ledger` is Pi Testnet's
 * only), each network's where the wallet has an account.
 * @param {PlatformUser} user
 * @param {boolean} production
 * @param {Quiet} [quiet]
 * @returns {Promise<Balances>}
 */
export async function userBalances(user, production, { background = false } = {}) {
  if (!production) {
    const { balances } = await call(`/sandbox/ledger/accounts/${enc(user.wallet_address)}`, { admin: true, background })
    /** @type {Balances} */
    const found = {}
    for (const { network, balance } of balances) if (balance !== null) found[network] = balance
    return found
  }
  const { wallet } = await account('/account', { background })
  return { 'Pi Network': wallet.balance, 'Pi Testnet': wallet.testnet_balance }
}

/**
 * The wallet's newest transactions on `network`: Pi Testnet's from `/ledger`; Pi Network's from
 * the account API in production, from the sandbox API in the sandbox (`/ledger` is Pi Testnet's
 * Horizon).
 * @param {Network} network
 * @param {string} address
 * @param {boolean} production
 * @param {Quiet} [quiet]
 * @returns {Promise<Transaction[]>}
 */
async function transactionsOn(network, address, production, { background = false } = {}) {
  if (network === 'Pi Testnet') return (await call(`/ledger/accounts/${enc(address)}/transactions?order=desc&limit=15`))._embedded.records
  if (!production) {
    return (await call(`/sandbox/ledger/accounts/${enc(address)}/transactions?network=${enc(network)}`, { admin: true, background }))
      .transactions
  }
  return (await account(`/account/wallet/transactions?network=${enc(network)}`, { background })).transactions
}

/**
 * The network the page's wallet and payment dialog use: the open app's; with no app open,
 * production's is Pi Network (where π is real) and the sandbox's Pi Testnet.
 * @param {{ network: string } | undefined} app
 * @param {boolean} production
 * @returns {Network}
 */
export function networkInUse(app, production) {
  if (app !== undefined) return app.network === 'Pi Network' ? 'Pi Network' : 'Pi Testnet'
  return production ? 'Pi Network' : 'Pi Testnet'
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
 *   network(): Network,
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
      const balances = await userBalances(user, ctx.production(), { background })
      const network = ctx.network()
      const shown = balances[network]
      button.textContent = shown === undefined ? 'Wallet' : formatPi(shown)
      button.title = shown === undefined ? '' : `Your balance on ${network}`
    } catch {
      button.textContent = 'Wallet'
      // Signed out meanwhile (the session ended): the open panel asks nothing more.
      if (ctx.user() !== user) return
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
      h(
        'a',
        { href: ctx.ledgerUrl('transactions', tx.hash), target: '_blank', rel: 'noopener' },
        `${ctx.production() ? 'Receipt' : 'Ledger'}: ${shortMiddle(tx.hash)}`,
      ),
    )
  }

  /** @param {Quiet} [quiet] */
  async function render({ background = false } = {}) {
    const user = ctx.user()
    if (user === undefined) return
    try {
      const address = user.wallet_address
      const network = ctx.network()
      const [balances, records, payments] = await Promise.all([
        userBalances(user, ctx.production(), { background }),
        transactionsOn(network, address, ctx.production(), { background }),
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
      const rows = await Promise.all(records.map((tx) => transactionRow(address, tx, byTxid)))
      ctx.drawer.fill(
        'wallet',
        h('p', { class: 'muted' }, `Your wallet (${user.username})`),
        balanceRows(balances, network),
        // /ledger is Pi Testnet's: a Pi Network account has no page there.
        h(
          'p',
          {},
          network === 'Pi Testnet'
            ? h('a', { class: 'mono', href: ctx.ledgerUrl('accounts', address), target: '_blank', rel: 'noopener' }, address)
            : h('span', { class: 'mono' }, address),
        ),
        faucetButton({ production: ctx.production(), address, paid: () => refresh() }),
        h('h3', {}, 'Transactions'),
        rows.length === 0 ? h('p', { class: 'muted' }, 'None yet.') : rows,
      )
    } catch (error) {
      ctx.drawer.fill('wallet', h('p', { class: 'error' }, /** @type {Error} */ (error).message))
    }
  }

  /**
   * Each network's balance, labelled with its network; the one in use (the open app's) first.
   * @param {Balances} balances
   * @param {Network} inUse
   */
  const balanceRows = (balances, inUse) =>
    h(
      'div',
      { 'data-testid': 'wallet-balance' },
      /** @type {Network[]} */ ([inUse, inUse === 'Pi Network' ? 'Pi Testnet' : 'Pi Network'])
        .filter((network) => balances[network] !== undefined)
        .map((network) =>
          h(
            'div',
            { class: network === inUse ? 'balance' : 'balance other', 'data-network': network },
            h('span', { class: 'muted network-name' }, network),
            ' ',
            formatPi(/** @type {string} */ (balances[network])),
          ),
        ),
    )

  button.addEventListener('click', () => {
    if (ctx.drawer.toggle('wallet', 'Wallet')) render()
  })

  /** The signed-in user's balance on the network in use: what the open app's payments are paid from. */
  async function balance() {
    const network = ctx.network()
    const found = (await userBalances(/** @type {PlatformUser} */ (ctx.user()), ctx.production()))[network]
    if (found === undefined) throw new Error(`No balance on ${network} here`)
    return found
  }
  return { refresh, balance }
}
