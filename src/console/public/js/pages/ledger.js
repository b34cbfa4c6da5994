// @ts-check
// A readable ledger: transactions newest first, one transaction with its operations, one
// account with its balances and transactions. Read from the Horizon API at /ledger.

import { h } from '../../../../web/ui/dom.js'
import { formatUtcTime, shortId } from '../../../../web/ui/format.js'
import { pagedTable, table } from '../../../../web/ui/tables.js'
import { ledgerGet, seg } from '../api.js'
import { card, code, external, facts, pageTitle } from '../parts.js'
import { accountLink, txLink } from '../shared.js'

/**
 * The cursor a Horizon page link carries, or null for none.
 * @param {string | undefined} href
 */
const cursorOf = (href) => (href ? (new URL(href, location.href).searchParams.get('cursor') ?? null) : null)

/**
 * The ledger's transactions, or an account's, newest first in pages of 25.
 * @param {'/transactions' | `/accounts/${string}/transactions`} path
 * @param {string} testid
 */
function transactionsTable(path, testid) {
  return pagedTable({
    headers: ['Transaction', 'Ledger', 'At', 'Source', 'Memo', 'Operations'],
    emptyText: 'No transactions.',
    testid,
    load: async (cursor) => {
      const page = await ledgerGet(`${path}?order=desc&limit=25${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
      const records = page?._embedded.records ?? []
      const rows = records.map((tx) =>
        h(
          'tr',
          { 'data-testid': 'ledger-tx-row' },
          h('td', {}, txLink(tx.hash)),
          h('td', {}, String(tx.ledger)),
          h('td', {}, formatUtcTime(tx.created_at)),
          h('td', {}, accountLink(tx.source_account)),
          h('td', { class: 'clip' }, tx.memo ?? '—'),
          h('td', { class: 'num' }, String(tx.operation_count)),
        ),
      )
      return { rows, next: records.length < 25 ? null : cursorOf(page?._links?.next?.href) }
    },
  })
}

export async function ledgerPage() {
  const list = transactionsTable('/transactions', 'ledger-transactions')
  return [
    pageTitle('Ledger', 'Every transaction on the test ledger, newest first.', ['#/platform', 'Clock & ledger']),
    card('Transactions', null, list.el),
  ]
}

/** @param {{ hash: string }} params */
export async function transactionPage({ hash }) {
  const [tx, ops] = await Promise.all([ledgerGet(`/transactions/${seg(hash)}`), ledgerGet(`/transactions/${seg(hash)}/operations`)])
  if (tx === null) throw new Error(`No transaction ${hash} on the ledger.`)
  const operations = (ops?._embedded.records ?? []).map((op) =>
    h(
      'tr',
      {},
      h('td', {}, op.type),
      // The ledger's operations are payments (its schema lists no other type).
      h('td', {}, op.from ? accountLink(op.from) : '—'),
      h('td', {}, op.to ? accountLink(op.to) : '—'),
      h('td', { class: 'num' }, op.amount ?? '—'),
    ),
  )
  return [
    pageTitle(`Transaction ${shortId(tx.hash, 16)}`, null, ['#/ledger', 'Ledger']),
    card(
      'Transaction',
      null,
      facts([
        ['Hash', code(tx.hash)],
        ['Ledger', String(tx.ledger)],
        ['At', formatUtcTime(tx.created_at)],
        ['Source', accountLink(tx.source_account)],
        ['Fee', `${tx.fee_charged} stroops`],
        ['Memo', tx.memo ?? '—', 'tx-memo'],
        ['Succeeded', tx.successful ? 'yes' : 'no'],
        ['Raw record', external(`/ledger/transactions/${seg(tx.hash)}`, 'Horizon JSON')],
      ]),
      tx.memo
        ? h(
            'p',
            { class: 'muted small' },
            'A payment’s transaction carries the payment id as its memo: find it in the app’s payments by this id.',
          )
        : null,
    ),
    card('Operations', null, table(['Type', 'From', 'To', 'Amount'], operations, 'No operations.')),
  ]
}

/** @param {{ address: string }} params */
export async function accountPage({ address }) {
  const account = await ledgerGet(`/accounts/${seg(address)}`)
  if (account === null) throw new Error(`No account ${address} on the ledger.`)
  const balances = account.balances.map((b) =>
    h(
      'tr',
      {},
      // The ledger holds test Pi only: its schema's asset_type is 'native'.
      h('td', {}, b.asset_type === 'native' ? 'test Pi' : '—'),
      h('td', { class: 'num', 'data-testid': 'account-balance' }, b.balance),
    ),
  )
  const list = transactionsTable(`/accounts/${seg(address)}/transactions`, 'account-transactions')
  return [
    pageTitle(`Account ${shortId(address, 12)}`, null, ['#/ledger', 'Ledger']),
    card(
      'Account',
      null,
      facts([
        ['Address', code(address)],
        ['Sequence', String(account.sequence)],
        ['Raw record', external(`/ledger/accounts/${seg(address)}`, 'Horizon JSON')],
      ]),
      table(['Asset', 'Balance'], balances, 'No balances.'),
    ),
    card('Transactions', null, list.el),
  ]
}
