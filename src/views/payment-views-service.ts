import type { Kysely } from 'kysely'
import type { CursorPosition } from '../core/cursors.js'
import { ApiError } from '../core/errors.js'
import type { DB } from '../db/schema.js'
import { adviceFor, paymentState } from '../payments/payment-advice.js'
import { toPaymentDTO } from '../payments/payment-dto.js'
import type { MoveBy } from '../payments/payments-repo.js'
import type { PaymentsService } from '../payments/payments-service.js'
import type { PaymentFilter, paymentViewsRepo } from './payment-views-repo.js'
import type { ViewsService } from './views-service.js'

/** What a route group that builds the payment views is given (the sandbox console's, the portal's). */
export interface PaymentViewsDeps {
  db: Kysely<DB>
  publicUrl: string
  payments: Pick<PaymentsService, 'complete' | 'cancel' | 'expireDueApprovals'>
  /** This process's request log, flushed before the checklist, the overview and the search read it (undefined when off). */
  requestLog: { flush(): Promise<void> } | undefined
}

/**
 * The sandbox's payment views (payment-views-routes.ts). Every view of an app's payments first
 * persists the platform's cancel of approvals whose window passed, so a listing shows what the
 * payments API would answer.
 */
export function paymentViewsServiceFactory(
  deps: Omit<PaymentViewsDeps, 'db'> & {
    repo: ReturnType<typeof paymentViewsRepo>
    views: Pick<ViewsService, 'requireApp' | 'requireUser'>
  },
) {
  const { repo, views, payments, publicUrl } = deps

  return {
    /** `limit + 1` rows, newest first, so the caller can tell whether another page follows. */
    async list(appId: string, filter: PaymentFilter, limit: number, before: CursorPosition | undefined) {
      await views.requireApp(appId)
      await payments.expireDueApprovals(appId)
      const rows = await repo.listPayments(appId, filter, limit, before)
      return rows.map((row) => ({
        payment: { ...toPaymentDTO(row, publicUrl), user_id: row.user_id, username: row.username, state: paymentState(row) },
        position: { n: Number(row.created_us), id: row.identifier },
      }))
    },

    /** How many of the app's payments match the filter, on every page (read after `list`, which expires due approvals). */
    count(appId: string, filter: PaymentFilter) {
      return repo.countPayments(appId, filter)
    },

    async detail(appId: string, paymentId: string) {
      await views.requireApp(appId)
      await payments.expireDueApprovals(appId)
      const row = await repo.findPayment(appId, paymentId)
      if (row === undefined) throw new ApiError('payment_not_found', `No payment ${paymentId} in app ${appId}.`)
      const tx = row.txid === null ? undefined : await repo.findLedgerTransaction(row.txid)
      const events = await repo.listEvents(appId, paymentId)
      return {
        payment: toPaymentDTO(row, publicUrl),
        state: paymentState(row),
        user: { user_id: row.user_id, username: row.username, uid: row.user_uid },
        from_address: row.from_address,
        to_address: row.to_address,
        ledger_transaction:
          tx === undefined
            ? null
            : {
                hash: tx.hash,
                ledger: tx.ledger,
                created_at: tx.created_at.toISOString(),
                source_account: tx.source_account,
                fee_charged: tx.fee,
                memo: tx.memo,
                _link: `${publicUrl}/ledger/transactions/${tx.hash}`,
              },
        timeline: events.map((e) => ({
          kind: e.kind,
          at: e.at.toISOString(),
          actor: e.actor,
          actor_id: e.actor_id,
          request_id: e.request_id,
          detail: e.detail,
        })),
        advice: adviceFor(row),
      }
    },

    /** The user's open payments with the app, and whether each direction refuses a new payment. */
    async blocking(appId: string, userId: string) {
      await views.requireApp(appId)
      await views.requireUser(userId)
      await payments.expireDueApprovals(appId)
      const member = await repo.findMembership(appId, userId)
      const open = await repo.listOpenPayments(appId, userId)
      const listed = open.map((row) => ({ payment: toPaymentDTO(row, publicUrl), advice: adviceFor(row) }))
      const blocks = (direction: string) => listed.some((p) => p.payment.direction === direction && p.advice.blocks_new_payment)
      return {
        user_id: userId,
        uid: member?.uid ?? null,
        blocked: { user_to_app: blocks('user_to_app'), app_to_user: blocks('app_to_user') },
        open_payments: listed,
      }
    },

    /** Completes as the app would, with the payment's linked txid when none is given. */
    async complete(appId: string, paymentId: string, txid: string | undefined, by: MoveBy) {
      await views.requireApp(appId)
      if (txid === undefined) {
        const row = await repo.findPaymentTxid(appId, paymentId)
        if (row === undefined) throw new ApiError('payment_not_found', `No payment ${paymentId}.`)
        if (row.txid === null) throw new ApiError('missing_txid', 'The payment has no transaction yet: the user must pay first.')
        return payments.complete(appId, paymentId, row.txid, by)
      }
      return payments.complete(appId, paymentId, txid, by)
    },

    async cancel(appId: string, paymentId: string, by: MoveBy, recorded?: Parameters<PaymentsService['cancel']>[3]) {
      await views.requireApp(appId)
      return payments.cancel(appId, paymentId, by, recorded)
    },

    async checklist(appId: string) {
      const app = await views.requireApp(appId)
      await deps.requestLog?.flush()
      const dates = await repo.checklistDates(app.id)
      const step = (at: Date | null | undefined) => ({
        done: at !== null && at !== undefined,
        at: at === null || at === undefined ? null : new Date(at).toISOString(),
      })
      return {
        key_made: step(dates.keyMade),
        url_set: { done: app.url !== null, at: null },
        first_me: step(dates.firstMe),
        first_approve: step(dates.firstApprove),
        first_complete: step(dates.firstComplete),
      }
    },
  }
}

export type PaymentViewsService = ReturnType<typeof paymentViewsServiceFactory>
