import type { PaymentDTO } from '../payments/payment-dto.js'

/**
 * A payments export's CSV (the console's, GET /sandbox/apps/{app_id}/payments/export, and the
 * portal's, GET /portal/apps/{app_id}/payments/export): one row a payment, its status flags as
 * columns and its metadata as JSON. The JSON export has the payments as the list answers them.
 */

/** The CSV columns of a payments export; the portal's leaves out the platform's user id and username. */
export const PAYMENT_COLUMNS = [
  'identifier',
  'direction',
  'state',
  'amount',
  'memo',
  'metadata',
  'user_id',
  'username',
  'user_uid',
  'from_address',
  'to_address',
  'txid',
  'created_at',
  'network',
  'developer_approved',
  'transaction_verified',
  'developer_completed',
  'cancelled',
  'user_cancelled',
] as const

/** Columns of identifiers the platform made: written verbatim (src/lib/csv.ts). */
export const PAYMENT_IDS: ReadonlySet<string> = new Set([
  'identifier',
  'user_id',
  'user_uid',
  'txid',
  'from_address',
  'to_address',
  'wallet_address',
])

/** One payment of a list as its CSV row. */
export function flatPayment(p: PaymentDTO & { state: string; user_id?: string; username?: string }): Record<string, unknown> {
  return {
    identifier: p.identifier,
    direction: p.direction,
    state: p.state,
    amount: p.amount,
    memo: p.memo,
    metadata: p.metadata,
    user_id: p.user_id,
    username: p.username,
    user_uid: p.user_uid,
    from_address: p.from_address,
    to_address: p.to_address,
    txid: p.transaction?.txid ?? null,
    created_at: p.created_at,
    network: p.network,
    ...p.status,
  }
}
