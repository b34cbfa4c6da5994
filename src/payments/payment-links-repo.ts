import { type Kysely, type RawBuilder, sql } from 'kysely'
import type { DB } from '../db/schema.js'
import { EVENT_COLUMNS, LEDGER, OPEN } from './payment-events-sql.js'
import type { PaymentRow } from './payments-repo.js'

/** What deciding a payment's link needs (lockForLinking). */
export interface LinkCandidate {
  identifier: string
  from_address: string
  to_address: string
  /** Pi, 7 places. */
  amount: string
  network: string
  direction: PaymentRow['direction']
  developer_approved: boolean
  txid: string | null
  /** Neither completed nor cancelled. */
  open: boolean
}

/** The statements of the ledger's batch hook (payments-ledger.ts): a payment linked to the transaction that pays it. */
export function paymentLinksRepo(db: Kysely<DB>) {
  return {
    /**
     * Locks the payments the transactions of a ledger batch may link, by identifier (their memos),
     * in identifier order, and reads what linking decides on (src/payments/payments-ledger.ts).
     */
    async lockForLinking(identifiers: readonly string[]): Promise<LinkCandidate[]> {
      const { rows } = await sql<LinkCandidate>`
        select identifier, from_address, to_address, amount::text as amount, network, direction, developer_approved, txid,
          (${OPEN}) as open
        from payments where identifier = any(${[...identifiers]}::text[])
        order by identifier for update`.execute(db)
      return rows
    },

    /**
     * Links each payment to the transaction that pays it, with its timeline events (linked, and
     * verified when it is), as two data-modifying common table expressions for the ledger
     * batch's one write statement. The rows were locked by lockForLinking in the same database
     * transaction; `txid is null` stays as the database's guard.
     */
    linkWrites(
      links: ReadonlyArray<{ identifier: string; txid: string; verified: boolean }>,
      now: Date,
    ): Array<readonly [name: string, body: RawBuilder<unknown>]> {
      if (links.length === 0) return []
      return [
        [
          'payment_links',
          sql`update payments as p set txid = v.txid, tx_verified = v.verified, tx_linked_at = ${now}::timestamptz
            from unnest(${links.map((l) => l.identifier)}::text[], ${links.map((l) => l.txid)}::text[],
              ${links.map((l) => l.verified)}::boolean[]) as v(identifier, txid, verified)
            where p.identifier = v.identifier and p.txid is null
            returning p.identifier, p.app_id, p.txid, p.tx_verified, p.tx_linked_at`,
        ],
        [
          'payment_link_events',
          sql`insert into payment_events (${sql.join(EVENT_COLUMNS.map((column) => sql.ref(column)))})
            select identifier, app_id, 'transaction_linked', ${LEDGER.actor}::text, null::text, tx_linked_at, null::text, 'txid ' || txid
            from payment_links
            union all
            select identifier, app_id, 'transaction_verified', ${LEDGER.actor}::text, null::text, tx_linked_at, null::text, 'txid ' || txid
            from payment_links where tx_verified`,
        ],
      ]
    },
  }
}
