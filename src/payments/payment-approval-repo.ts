import { type Kysely, sql } from 'kysely'
import { platformNowPlus } from '../clock/platform-now.js'
import type { DB } from '../db/schema.js'
import { APPROVAL_WINDOW, EVENT_COLUMNS, eventsOf, OPEN } from './payment-events-sql.js'

/** The approval window's statements: user-to-app payments not approved in time (payments-service.ts, clock-reset.ts). */
export function paymentApprovalRepo(db: Kysely<DB>) {
  const update = () => db.updateTable('payments')
  return {
    /**
     * The platform's cancel of user-to-app payments whose approval window passed, dated when the
     * window closed: one payment, every due payment of an app, or every due payment (before a
     * clock reset). Due on the platform clock as stored.
     */
    async expireApproval(which: { identifier: string } | { appId: string } | 'all', windowMs: number): Promise<void> {
      const due = update()
        .set({ cancelled: true, cancelled_at: sql<Date>`created_at + make_interval(secs => ${windowMs / 1000})` })
        .where('direction', '=', 'user_to_app')
        .where('developer_approved', '=', false)
        .where(OPEN)
        // A payment with a transaction was paid (before the rule that refuses it): never cancel it here.
        .where('txid', 'is', null)
        .where('created_at', '<=', platformNowPlus(-windowMs))
      const moved = (
        which === 'all'
          ? due
          : 'identifier' in which
            ? due.where('identifier', '=', which.identifier)
            : due.where('app_id', '=', which.appId)
      ).returningAll()
      const detail = sql`${`not approved within ${windowMs / 1000} s`}::text`
      await db
        .with('moved', () => moved)
        .with('ev', (qb) =>
          qb
            .insertInto('payment_events')
            .columns(EVENT_COLUMNS)
            .expression(eventsOf('expired', APPROVAL_WINDOW, sql`cancelled_at`, detail)),
        )
        .selectFrom('moved')
        .select('identifier')
        .execute()
    },

    /**
     * Before a clock reset (sandbox/world/clock-reset.ts): every user-to-app payment still waiting for
     * approval keeps the window it had left, so its `created_at` moves back by the offset.
     */
    async shiftPendingApprovals(offsetMs: number): Promise<void> {
      await update()
        .set({ created_at: sql<Date>`created_at - make_interval(secs => ${offsetMs / 1000})` })
        .where('direction', '=', 'user_to_app')
        .where('developer_approved', '=', false)
        .where(OPEN)
        .where('txid', 'is', null)
        .execute()
    },
  }
}
