// @ts-check
// Pieces several pages show: secrets shown once, wallets and their balances, payment states.

import { h } from '../../../web/ui/dom.js'
import { shortId } from '../../../web/ui/format.js'
import { action, form } from '../../../web/ui/forms.js'
import { toast } from '../../../web/ui/toast.js'
import { get, post, seg } from './api.js'
import { badge, code, field, select } from './parts.js'

/** @typedef {import('./types').PaymentItem} PaymentItem */
/** @typedef {import('./types').PaymentState} PaymentState */

/**
 * Secrets shown once: kept in memory until dismissed or the page is left.
 * @type {{ current: import('./types').Reveal | null }}
 */
export const reveal = { current: null }

/**
 * Copies `value` to the clipboard, and says so.
 * @param {string} value
 */
export async function copy(value) {
  try {
    await navigator.clipboard.writeText(value)
    toast('Copied')
  } catch {
    toast('Copy failed: select the text and copy it by hand', 'error')
  }
}

/**
 * The secrets to show once on the page `route`, with a button that dismisses them (then `rerender()`).
 * @param {string} route
 * @param {() => unknown} rerender
 */
export function revealPanel(route, rerender) {
  if (reveal.current === null || reveal.current.owner !== route) return null
  const secret = reveal.current
  return h(
    'section',
    { class: 'card reveal', 'data-testid': 'reveal' },
    h('div', { class: 'card-head' }, h('h2', {}, secret.title)),
    h('p', { class: 'warning' }, 'Shown once. Plinth keeps only a hash of keys and the public half of wallets: save these now.'),
    h(
      'dl',
      { class: 'secrets' },
      secret.items.map(({ label, value, testid }) => [
        h('dt', {}, label),
        h(
          'dd',
          {},
          h('code', { class: 'secret', 'data-testid': testid }, value),
          action('Copy', () => copy(value), { kind: 'small' }),
        ),
      ]),
    ),
    h(
      'div',
      { class: 'actions' },
      action(
        'I have saved them',
        () => {
          reveal.current = null
          rerender()
        },
        { kind: 'primary', testid: 'dismiss-reveal' },
      ),
    ),
  )
}

/** @param {string} address */
export function accountLink(address) {
  return h('a', { href: `#/ledger/accounts/${seg(address)}`, title: address }, code(shortId(address, 12), address))
}

/** @param {string} hash */
export function txLink(hash) {
  return h('a', { href: `#/ledger/transactions/${seg(hash)}`, title: hash }, code(shortId(hash, 12), hash))
}

/**
 * @typedef {'Pi Testnet' | 'Pi Network'} Network
 * @typedef {Record<Network, string | null>} Balances a wallet's balance on each network; null where it has no account
 */

/** The two networks, Pi Testnet first (docs/ledger.md, "Two networks"). @type {readonly Network[]} */
export const NETWORKS = ['Pi Testnet', 'Pi Network']

/**
 * The Pi a wallet holds on each network (a wallet has an account on each), read from the sandbox
 * API: `/ledger` is Pi Testnet's only. Nulls when the platform did not answer.
 * @param {string} address
 * @returns {Promise<Balances>}
 */
export async function walletBalances(address) {
  /** @type {Balances} */
  const found = { 'Pi Testnet': null, 'Pi Network': null }
  try {
    const { balances } = await get(`/sandbox/ledger/accounts/${seg(address)}`)
    for (const { network, balance } of balances) found[network] = balance
  } catch {
    // Unknown: the page shows no balance rather than a wrong one.
  }
  return found
}

/**
 * A network's name as the API spells it, as a Network (Pi Testnet for anything else).
 * @param {string} name
 * @returns {Network}
 */
export const asNetwork = (name) => (name === 'Pi Network' ? 'Pi Network' : 'Pi Testnet')

/**
 * What Pi is called on a network: test Pi on Pi Testnet, Pi on Pi Network.
 * @param {Network} network
 */
export const piOn = (network) => (network === 'Pi Testnet' ? 'test Pi' : 'Pi')

/**
 * A wallet's balances, each labelled with its network, `first` (an app's own network) first.
 * @param {Balances} balances
 * @param {Network} [first]
 */
export function balancesLine(balances, first = 'Pi Testnet') {
  const order = [first, ...NETWORKS.filter((network) => network !== first)]
  return order
    .filter((network) => balances[network] !== null)
    .map((network) =>
      h(
        'span',
        { class: network === first ? 'balance' : 'balance muted', 'data-network': network },
        ` ${balances[network]} ${piOn(network)} on ${network}`,
      ),
    )
}

/**
 * Amounts as the platform takes them: up to 7 decimals, positive, at most 1e12 (checked before sending).
 * @param {string} text
 */
export function checkAmount(text) {
  if (!/^\d+(\.\d+)?$/.test(text)) return `Type an amount such as 100 or 2.5 (got "${text}").`
  if ((text.split('.')[1] ?? '').length > 7) return `An amount has at most 7 decimals (got ${text}).`
  if (Number(text) <= 0) return 'The amount must be more than 0.'
  return null
}

/**
 * A form that funds `address` (or the address typed, when it is '') on a network, then
 * `rerender()`s: on `network` when given (an app's wallet, on the app's network), else on the
 * network chosen in the form (Pi Testnet first).
 * @param {string} address
 * @param {() => unknown} rerender
 * @param {{ testid?: string, label?: string, network?: Network }} [options]
 */
export function fundForm(address, rerender, { testid = 'fund', label = 'Fund', network } = {}) {
  return form(
    { class: 'inline-form', 'data-testid': testid },
    [
      address === ''
        ? field('Address', h('input', { name: 'address', required: true, maxlength: 100, placeholder: 'G…', class: 'wide' }))
        : h('input', { type: 'hidden', name: 'address', value: address }),
      network === undefined
        ? field('Network', select('network', [...NETWORKS], 'Pi Testnet'))
        : h('input', { type: 'hidden', name: 'network', value: network }),
      field(
        network === undefined ? 'Amount' : `Amount (${piOn(network)})`,
        h('input', { name: 'amount', required: true, maxlength: 40, value: '100', inputmode: 'decimal' }),
      ),
      h('button', { type: 'submit', class: 'primary' }, label),
    ],
    /** @param {{ address: string, amount: string, network: Network }} values */
    async (values) => {
      const amount = values.amount.trim()
      const wrong = checkAmount(amount)
      if (wrong !== null) throw new Error(wrong)
      const on = values.network === 'Pi Network' ? 'Pi Network' : 'Pi Testnet'
      const funded = await post('/sandbox/ledger/fund', { address: values.address.trim(), amount, network: on })
      toast(`${shortId(funded.address, 8)} now holds ${funded.balance} ${piOn(on)} on ${on}`)
      await rerender()
    },
  )
}

/** @type {Record<PaymentState, [text: string, kind: string]>} */
const STATES = {
  created: ['created', 'info'],
  approved: ['approved', 'info'],
  transaction_linked: ['paid, unverified', 'warn'],
  verified: ['paid', 'warn'],
  completed: ['completed', 'ok'],
  cancelled: ['cancelled', 'off'],
}

/**
 * A payment's state in words, and its badge's kind: `state` when the API gives it (but a cancelled
 * one says by whom), else read from the status flags.
 * @param {{ state?: PaymentState, status: PaymentItem['status'], transaction: { verified: boolean } | null }} payment
 * @returns {[text: string, kind: string]}
 */
export function paymentState(payment) {
  const s = payment.status
  if (payment.state !== undefined && payment.state !== 'cancelled') return STATES[payment.state] ?? [payment.state, 'info']
  if (s.developer_completed) return ['completed', 'ok']
  if (s.cancelled) return ['cancelled', 'off']
  if (s.user_cancelled) return ['user cancelled', 'off']
  if (payment.transaction !== null) return [payment.transaction.verified ? 'paid' : 'paid, unverified', 'warn']
  if (s.developer_approved) return ['approved', 'info']
  return ['created', 'info']
}

/** @type {(keyof PaymentItem['status'])[]} */
const FLAGS = ['developer_approved', 'transaction_verified', 'developer_completed', 'cancelled', 'user_cancelled']

/**
 * The five status flags in words, for a tooltip: the state pill says which of them matters.
 * @param {PaymentItem['status'] | undefined} status
 */
export function flagsText(status) {
  return FLAGS.map((flag) => `${flag}: ${status?.[flag] ? 'yes' : 'no'}`).join('\n')
}

/**
 * One pill: the state that holds now; the status flags behind it are in its tooltip.
 * @param {Parameters<typeof paymentState>[0]} payment
 */
export const stateBadge = (payment) => {
  const [text, kind] = paymentState(payment)
  const el = badge(text, kind)
  if (payment.status !== undefined) {
    el.title = flagsText(payment.status)
    el.dataset.testid = 'payment-state-pill'
  }
  return el
}
