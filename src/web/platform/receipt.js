// @ts-check
/**
 * A transaction's receipt (#41 U13): a view of the platform page at `?view=receipt&tx=<hash>`
 * that reads the transaction from the ledger (`/ledger/transactions/{hash}`, which finds either
 * network's) and shows it readably: its hash, network, ledger, time, who paid whom how much, the
 * fee and the memo, and the payment it belongs to when the page can know it, with a link to the
 * raw Horizon JSON. Every transaction link of the page (the wallet, the payment dialog, the
 * portal, the operator's console) opens it in a new tab, so the place the person came from stays.
 *
 * Nothing on it comes from the link but the hash (and where to look for its payment): a receipt
 * shows only what the ledger and the platform answer. The network is the passphrase the
 * transaction's hash binds (checked here from its envelope); the payment is the signed-in
 * person's own one with that transaction, or, from the portal, the app's (`app` and `payment` in
 * the link, shown only when the platform's payment has that very transaction).
 */
import { byId, h } from '../../web/ui/dom.js'
import { formatLocalTime, formatPi, formatUtcTime } from '../../web/ui/format.js'
import { account, call } from './api.js'
import { params } from './page-url.js'

const enc = encodeURIComponent
const NETWORKS = /** @type {const} */ (['Pi Network', 'Pi Testnet'])

/**
 * The link to a transaction's receipt, on this page (production's `/`, the sandbox's `/sandbox/`).
 * `known`: the app and payment the portal shows it from, for the receipt to read that payment.
 * @param {string} hash
 * @param {{ app?: string, payment?: string }} [known]
 */
export const receiptUrl = (hash, known = {}) => `${location.pathname}?${new URLSearchParams({ view: 'receipt', tx: hash, ...known })}`

/**
 * A link to a transaction's receipt, opening in a new tab.
 * @param {string} hash
 * @param {string} text
 * @param {{ app?: string, payment?: string }} [known]
 */
export const receiptLink = (hash, text, known) =>
  h('a', { href: receiptUrl(hash, known), target: '_blank', rel: 'noopener', title: `Receipt of transaction ${hash}` }, text)

/** @param {string} base64 */
const bytesOf = (base64) => Uint8Array.from(atob(base64), (c) => c.charCodeAt(0))

/** @param {ArrayBuffer} buffer */
const hex = (buffer) => [...new Uint8Array(buffer)].map((b) => b.toString(16).padStart(2, '0')).join('')

/**
 * The network a transaction was signed under: the passphrase whose network id, with the envelope's
 * transaction, hashes to its hash (a hash binds one passphrase). A v1 envelope (type 2, what every
 * current Stellar SDK builds): its transaction is what lies between the type and the signatures
 * (each 72 bytes: a 4-byte hint, a 4-byte length, 64 bytes). Undefined when it cannot be told
 * (another envelope type, or no Web Crypto on a page that is not a secure context).
 * @param {{ hash: string, envelope_xdr: string, signatures: string[] }} tx
 * @returns {Promise<string | undefined>}
 */
async function networkOf(tx) {
  const subtle = globalThis.crypto?.subtle
  if (subtle === undefined) return undefined
  const envelope = bytesOf(tx.envelope_xdr)
  const type = new DataView(envelope.buffer).getUint32(0)
  if (type !== 2) return undefined
  const body = envelope.subarray(4, envelope.length - 4 - 72 * tx.signatures.length)
  for (const network of NETWORKS) {
    const id = new Uint8Array(await subtle.digest('SHA-256', new TextEncoder().encode(network)))
    const payload = new Uint8Array(32 + 4 + body.length)
    payload.set(id, 0)
    payload.set([0, 0, 0, 2], 32)
    payload.set(body, 36)
    if (hex(await subtle.digest('SHA-256', payload)) === tx.hash) return network
  }
  return undefined
}

/**
 * The payment the transaction belongs to, when the page can know it: the signed-in person's own
 * (production), or the portal's app's named in the link; only one whose transaction is this one.
 * @param {string} hash
 * @returns {Promise<{ app: string, identifier: string, memo: string, amount: string | number } | undefined>}
 */
async function paymentOf(hash) {
  const app = params.get('app')
  const payment = params.get('payment')
  if (app !== null && payment !== null) {
    try {
      const found = await account(`/portal/apps/${enc(app)}/payments/${enc(payment)}`)
      if (found.payment.transaction?.txid === hash) return { app, ...found.payment }
    } catch {
      // Not a member of the app (any more): the receipt shows the ledger's facts alone.
    }
  }
  try {
    const mine = (await account('/account/payments?limit=100')).payments.find((p) => p.payment.transaction?.txid === hash)
    if (mine !== undefined) return { app: mine.app_name, ...mine.payment }
  } catch {
    // Signed out, or the sandbox: no payments of the person's to look in.
  }
  return undefined
}

/**
 * `12345` stroops → `0.0012345` Pi, exact.
 * @param {string} stroops
 */
const piOf = (stroops) => {
  const digits = stroops.padStart(8, '0')
  return `${digits.slice(0, -7)}.${digits.slice(-7)}`
}

/**
 * Shows the receipt of the transaction the page's URL names in `#receipt-view`; `production`: the
 * account API is there to find the payment it belongs to.
 * @param {(id: string) => void} showView
 * @param {boolean} production
 */
export async function showReceipt(showView, production) {
  const view = byId('receipt-view')
  showView('receipt-view')
  document.title = 'Transaction receipt'
  const hash = params.get('tx') ?? ''
  const raw = h('a', { href: `/ledger/transactions/${enc(hash)}`, 'data-testid': 'receipt-raw' }, 'The raw record (Horizon JSON)')
  view.replaceChildren(h('h1', {}, 'Transaction receipt'), h('p', { class: 'muted', role: 'status' }, 'Reading the ledger…'))
  if (!/^[0-9a-f]{64}$/.test(hash)) {
    view.replaceChildren(
      h('h1', {}, 'Transaction receipt'),
      h('p', { class: 'error', role: 'alert' }, 'This link names no transaction: a transaction hash is 64 hexadecimal characters.'),
    )
    return
  }
  try {
    const read = call(`/ledger/transactions/${enc(hash)}`)
    const [tx, ops, network, payment] = await Promise.all([
      read,
      call(`/ledger/transactions/${enc(hash)}/operations?limit=20`),
      read.then(networkOf),
      production ? paymentOf(hash) : undefined,
    ])
    const payments = ops._embedded.records.filter((op) => op.type === 'payment')
    /** @type {[string, import('../ui/dom.js').Child][]} */
    const rows = [
      ['Hash', h('span', { class: 'mono', 'data-testid': 'receipt-hash' }, tx.hash)],
      ['Network', network ?? 'Not known here'],
      ['Ledger', String(tx.ledger)],
      ['Time', h('span', { title: formatUtcTime(tx.created_at) }, formatLocalTime(tx.created_at))],
      ...payments.flatMap((op, i) => {
        const n = payments.length > 1 ? ` (${i + 1})` : ''
        return /** @type {[string, import('../ui/dom.js').Child][]} */ ([
          [`From${n}`, h('span', { class: 'mono' }, op.from)],
          [`To${n}`, h('span', { class: 'mono' }, op.to)],
          [`Amount${n}`, h('strong', {}, formatPi(op.amount))],
        ])
      }),
      ['Fee', formatPi(piOf(tx.fee_charged))],
      ['Memo', tx.memo ?? 'None'],
    ]
    if (payment !== undefined) {
      rows.push([
        'Payment',
        h(
          'span',
          { 'data-testid': 'receipt-payment' },
          `${payment.app}: ${payment.memo} (${formatPi(payment.amount)}), `,
          h('span', { class: 'mono' }, payment.identifier),
        ),
      ])
    }
    view.replaceChildren(
      h('h1', {}, 'Transaction receipt'),
      h(
        'dl',
        { class: 'facts receipt', 'aria-label': 'Transaction', 'data-testid': 'receipt' },
        rows.map(([term, value]) => [h('dt', {}, term), h('dd', {}, value)]),
      ),
      h('p', {}, raw),
    )
  } catch (error) {
    const message = /** @type {{ status?: number, message: string }} */ (error)
    view.replaceChildren(
      h('h1', {}, 'Transaction receipt'),
      h('p', { class: 'error', role: 'alert' }, message.status === 404 ? 'No transaction on the ledger has this hash.' : message.message),
      h('p', {}, raw),
    )
  }
}
