/**
 * Horizon's paging tokens are TOIDs: ledger << 32 | application order << 12 | operation, where
 * the application order is the transaction's place in its ledger (from 1) and the operation
 * its index + 1 (0 for the transaction itself; a ledger's token has order 0 too). Comparing
 * TOIDs is comparing (ledger, order, operation) field by field, so a page compares row tuples
 * in SQL with the fields of its cursor. Any TOID is a cursor for any collection.
 */
const LEDGER_SHIFT = 1n << 32n
const ORDER_SHIFT = 1n << 12n

/** The largest application order and operation index a TOID holds (20 and 12 bits). */
export const MAX_APPLICATION_ORDER = 2 ** 20 - 1
export const MAX_OPERATION_INDEX = 2 ** 12 - 2

export function ledgerPagingToken(ledger: bigint): string {
  return (ledger * LEDGER_SHIFT).toString()
}

export function transactionPagingToken(ledger: bigint, applicationOrder: number): string {
  return (ledger * LEDGER_SHIFT + BigInt(applicationOrder) * ORDER_SHIFT).toString()
}

/** Operations count from 1 in a TOID; `index` counts from 0. */
export function operationPagingToken(ledger: bigint, applicationOrder: number, index: number): string {
  return (ledger * LEDGER_SHIFT + BigInt(applicationOrder) * ORDER_SHIFT + BigInt(index) + 1n).toString()
}

/** A TOID's three fields. */
interface Toid {
  ledger: bigint
  order: bigint
  operation: bigint
}

/** The fields of a TOID (0 … 2^63 − 1). */
export function decodeToid(toid: bigint): Toid {
  const low = toid % LEDGER_SHIFT
  return { ledger: toid / LEDGER_SHIFT, order: low / ORDER_SHIFT, operation: low % ORDER_SHIFT }
}

/**
 * The ledgers of a page after (ascending) or before (descending) the TOID `cursor`: ledger N's
 * token N << 32 is past the cursor exactly when N is strictly past this number (the cursor's
 * ledger, or the next one down when the cursor's low bits are set and the page descends).
 */
export function ledgerPosition(cursor: bigint, order: 'asc' | 'desc'): bigint {
  const { ledger } = decodeToid(cursor)
  return order === 'desc' && cursor % LEDGER_SHIFT !== 0n ? ledger + 1n : ledger
}

/**
 * The (ledger, order) the transactions of a page come strictly after (ascending) or before
 * (descending): a transaction's token has no operation bits, so the cursor's operation bits
 * round its order down (ascending) or up (descending).
 */
export function transactionPosition(cursor: bigint, order: 'asc' | 'desc'): readonly [ledger: bigint, order: bigint] {
  const toid = decodeToid(cursor)
  return [toid.ledger, order === 'desc' && toid.operation !== 0n ? toid.order + 1n : toid.order]
}

/** The (ledger, order, operation) the operations of a page come strictly after or before: the cursor's own fields. */
export function operationPosition(cursor: bigint): readonly [ledger: bigint, order: bigint, operation: bigint] {
  const { ledger, order, operation } = decodeToid(cursor)
  return [ledger, order, operation]
}

/** Horizon's `cursor=now`: the largest TOID of the latest ledger (toid.AfterLedger), so an ascending page starts after everything. */
export function afterLedgerToken(ledger: bigint): string {
  return (ledger * LEDGER_SHIFT + LEDGER_SHIFT - 1n).toString()
}

/** The ledger a paging token points into (a TOID's, or an effect token's "TOID-n"); undefined for anything else. */
export function cursorLedger(cursor: string): bigint | undefined {
  const toid = /^([0-9]{1,19})(?:-[0-9]{1,10})?$/.exec(cursor)?.[1]
  return toid === undefined ? undefined : BigInt(toid) / LEDGER_SHIFT
}
