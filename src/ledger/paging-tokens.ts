/**
 * Horizon's paging tokens are TOIDs: ledger << 32 | transaction order << 12 | operation
 * order. Every ledger here holds one transaction (order 1), so the tokens of a transaction
 * and its operations follow from its ledger number alone, and stay stable forever.
 */
const LEDGER_SHIFT = 2n ** 32n
const TRANSACTION_ORDER = 1n << 12n

export function ledgerPagingToken(ledger: bigint): string {
  return (ledger * LEDGER_SHIFT).toString()
}

export function transactionPagingToken(ledger: bigint): string {
  return (ledger * LEDGER_SHIFT + TRANSACTION_ORDER).toString()
}

/** Operations count from 1 in a TOID; `index` counts from 0. */
export function operationPagingToken(ledger: bigint, index: number): string {
  return (ledger * LEDGER_SHIFT + TRANSACTION_ORDER + BigInt(index) + 1n).toString()
}

function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b
  return a % b !== 0n && a < 0n !== b < 0n ? q - 1n : q
}

/**
 * The first ledger (ascending) or last ledger (descending) whose record comes strictly
 * after, or before, the record with paging token `cursor`. `kind` says which records are
 * paged: transactions (and their tokens) or ledgers.
 */
export function ledgerBound(cursor: bigint, order: 'asc' | 'desc', kind: 'transaction' | 'ledger'): bigint {
  const offset = kind === 'transaction' ? TRANSACTION_ORDER : 0n
  const relative = cursor - offset
  if (order === 'asc') return floorDiv(relative, LEDGER_SHIFT) + 1n
  return -floorDiv(-relative, LEDGER_SHIFT) - 1n
}

/** Horizon's `cursor=now`: the largest TOID of the latest ledger (toid.AfterLedger), so an ascending page starts after everything. */
export function afterLedgerToken(ledger: bigint): string {
  return (ledger * LEDGER_SHIFT + LEDGER_SHIFT - 1n).toString()
}

/**
 * The (ledger, index) bound of the operations strictly after (or before) the TOID `cursor`:
 * an operation's TOID is ledger << 32 | 1 << 12 | index + 1, so comparing TOIDs is comparing
 * (ledger, index) with (cursor's ledger, cursor's low bits − 4097). Any TOID works as a
 * cursor, a transaction's or a ledger's too.
 */
export function operationBound(cursor: bigint): readonly [ledger: bigint, index: bigint] {
  return [cursor / LEDGER_SHIFT, (cursor % LEDGER_SHIFT) - TRANSACTION_ORDER - 1n]
}

/** The ledger a paging token points into (a TOID's, or an effect token's "TOID-n"); undefined for anything else. */
export function cursorLedger(cursor: string): bigint | undefined {
  const toid = /^([0-9]{1,19})(?:-[0-9]{1,10})?$/.exec(cursor)?.[1]
  return toid === undefined ? undefined : BigInt(toid) / LEDGER_SHIFT
}
