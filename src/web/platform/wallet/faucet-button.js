// @ts-check
/**
 * The wallet's "Get test-π" (docs/production.md, "Test-π from the faucet"): the faucet pays the
 * wallet on Pi Testnet (in production the signed-in person's, POST /account/faucet, limited per
 * day; in the sandbox the ledger's friendbot, unlimited), and the result or the refusal is said
 * next to the button.
 */
import { h } from '../../../web/ui/dom.js'
import { formatPi } from '../../../web/ui/format.js'
import { account } from '../api.js'

/** One button per wallet: the wallet's drawer is redrawn after a payment, and the result stays said. */
/** @type {Map<string, HTMLElement>} */
const made = new Map()

/**
 * `production`: which faucet to ask; `address`: the wallet; `paid()`: runs after a payment (the balance is redrawn).
 * @param {{ production: boolean, address: string, paid: () => Promise<unknown> }} options
 */
export function faucetButton({ production, address, paid }) {
  const existing = made.get(address)
  if (existing !== undefined) return existing
  const result = h('p', { class: 'muted', role: 'status', 'data-testid': 'faucet-result' })
  const button = h('button', { type: 'button' }, 'Get test-π')
  button.addEventListener('click', async () => {
    button.disabled = true
    result.className = 'muted'
    result.textContent = 'Asking the faucet…'
    try {
      const amount = production ? (await account('/account/faucet', { method: 'POST', body: {} })).amount : await friendbot(address)
      result.textContent = `The faucet paid you ${formatPi(amount).replace(/ π$/, '')} test-π on Pi Testnet.`
      await paid()
    } catch (failure) {
      result.className = 'error'
      result.textContent = /** @type {Error} */ (failure).message
    } finally {
      button.disabled = false
    }
  })
  const element = h('div', { class: 'faucet', 'data-testid': 'faucet' }, button, result)
  made.set(address, element)
  return element
}

/**
 * The sandbox's friendbot: a Horizon problem's detail is its message.
 * @param {string} address
 * @returns {Promise<string>}
 */
async function friendbot(address) {
  const response = await fetch(`/ledger/friendbot?addr=${encodeURIComponent(address)}`)
  /** @type {{ hash?: string, detail?: string }} a transaction, or a Horizon problem */
  const body = await response.json()
  if (!response.ok) throw new Error(body.detail ?? 'The faucet refused.')
  /** @type {{ _embedded?: { records?: Array<{ amount?: string }> } }} */
  const payment = await fetch(`/ledger/transactions/${body.hash}/operations`).then((r) => r.json())
  return payment._embedded?.records?.[0]?.amount ?? '0'
}
