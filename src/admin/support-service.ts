import type { Kysely } from 'kysely'
import { type AuditEntry, auditLog } from '../audit/audit-log.js'
import type { CursorPosition } from '../core/cursors.js'
import { ApiError } from '../core/errors.js'
import type { SessionPrincipal } from '../core/principals.js'
import type { DB } from '../db/schema.js'
import { inTransaction } from '../db/transaction.js'
import { formatAmount, parseStoredAmount } from '../ledger/amounts.js'
import { paymentState } from '../payments/payment-advice.js'
import type { PaymentsService } from '../payments/payments-service.js'
import { paymentViewsRepo } from '../views/payment-views-repo.js'
import { paymentViewsServiceFactory } from '../views/payment-views-service.js'
import { viewsRepo } from '../views/views-repo.js'
import { viewsServiceFactory } from '../views/views-service.js'
import { supportRepo } from './support-repo.js'

/** A lookup as its audit record names it: what was asked, by which request. */
interface Asked {
  principal: SessionPrincipal
  requestId: string
}

/**
 * The operator's support lookup (docs/operators.md, "Support lookup"): find the payments, users
 * and apps a support request is about anywhere on the platform, and open a payment's timeline
 * with the request behind each step. Each lookup shows other people's data, so each answer is
 * recorded in the audit log first (`lookup-payments`, `lookup-users`, `lookup-apps`,
 * `view-payment`, with the ids of the people and apps it showed): if the record cannot be
 * written, nothing is shown.
 */
export function supportServiceFactory(deps: {
  db: Kysely<DB>
  auditKey: Buffer
  publicUrl: string
  payments: Pick<PaymentsService, 'complete' | 'cancel' | 'expireDueApprovals'>
}) {
  const { db, publicUrl } = deps
  const repo = supportRepo(db)
  const audit = auditLog(db, deps.auditKey)
  const paymentViews = paymentViewsServiceFactory({
    repo: paymentViewsRepo(db),
    views: viewsServiceFactory({ repo: viewsRepo(db) }),
    payments: deps.payments,
    publicUrl,
    requestLog: undefined,
  })

  /** Writes the lookup's audit record in a transaction of its own; the answer leaves only once it is committed. */
  const record = (asked: Asked, entry: Omit<AuditEntry, 'actor'>) =>
    inTransaction(db, async (trx) => {
      await audit.append(trx, {
        ...entry,
        actor: `user:${asked.principal.userId}`,
        details: { ...entry.details, request_id: asked.requestId },
      })
    })
  const distinct = (ids: string[]) => [...new Set(ids)]

  return {
    /** `limit + 1` payments, newest first (support-repo.ts, `payments`), recorded as `lookup-payments`. */
    async payments(asked: Asked, filter: { q?: string | undefined; appId?: string | undefined }, limit: number, before?: CursorPosition) {
      const rows = await repo.payments(filter, limit, before)
      const shown = rows.slice(0, limit)
      await record(asked, {
        action: 'lookup-payments',
        target: filter.q ?? filter.appId ?? null,
        details: {
          q: filter.q ?? null,
          app_id: filter.appId ?? null,
          shown: shown.length,
          payment_ids: shown.map((row) => row.identifier),
          user_ids: distinct(shown.map((row) => row.user_id)),
        },
      })
      return rows.map((row) => ({
        view: {
          payment_id: row.identifier,
          app_id: row.app_id,
          app_name: row.app_name,
          user_id: row.user_id,
          username: row.username,
          uid: row.user_uid,
          direction: row.direction,
          amount: formatAmount(parseStoredAmount(String(row.amount))),
          memo: row.memo,
          state: paymentState(row),
          txid: row.txid,
          network: row.network,
          created_at: row.created_at.toISOString(),
        },
        position: { n: Number(row.created_us), id: row.identifier },
      }))
    },

    /** `limit + 1` users by name, recorded as `lookup-users`. */
    async users(asked: Asked, q: string | undefined, limit: number, after?: string) {
      const rows = await repo.users(q, after, limit)
      const shown = rows.slice(0, limit)
      await record(asked, {
        action: 'lookup-users',
        target: q ?? null,
        details: { q: q ?? null, shown: shown.length, user_ids: shown.map((row) => row.id) },
      })
      return rows.map((row) => ({
        view: {
          user_id: row.id,
          username: row.username,
          roles: row.roles,
          suspended: row.suspended_at !== null,
          wallet_address: row.wallet_address,
          created_at: row.created_at.toISOString(),
        },
        key: row.username_key,
      }))
    },

    /** `limit + 1` apps, newest first, recorded as `lookup-apps`. */
    async apps(asked: Asked, q: string | undefined, limit: number, before?: CursorPosition) {
      const rows = await repo.apps(q, limit, before)
      const shown = rows.slice(0, limit)
      await record(asked, {
        action: 'lookup-apps',
        target: q ?? null,
        details: { q: q ?? null, shown: shown.length, app_ids: shown.map((row) => row.id) },
      })
      return rows.map((row) => ({
        view: {
          app_id: row.id,
          name: row.name,
          url: row.url,
          network: row.network,
          owner: row.owner,
          wallet_address: row.wallet_address,
          verified: row.verified_at !== null,
          suspended: row.suspended_at !== null,
          created_at: row.created_at.toISOString(),
        },
        position: { n: Number(row.created_us), id: row.id },
      }))
    },

    /**
     * One payment of any app with its ledger transaction, what it waits for, and its timeline, each
     * step with the request of the app's request log that made it (null where the log holds none:
     * the log was off, the entry aged out, or the step was not an app's call). Recorded as `view-payment`.
     */
    async payment(asked: Asked, paymentId: string) {
      const parties = await repo.paymentParties(paymentId)
      if (parties === undefined) throw new ApiError('payment_not_found', `No payment ${paymentId}.`)
      const detail = await paymentViews.detail(parties.app_id, paymentId)
      const ids = distinct(detail.timeline.flatMap((step) => (step.request_id === null ? [] : [step.request_id])))
      const logged = await repo.requests(parties.app_id, ids)
      const byRequest = new Map<string, (typeof logged)[number]>()
      // Newest first: the first entry of a request id is kept.
      for (const entry of logged) if (!byRequest.has(entry.request_id)) byRequest.set(entry.request_id, entry)
      await record(asked, {
        action: 'view-payment',
        target: paymentId,
        details: { app_id: parties.app_id, user_id: detail.user.user_id },
      })
      return {
        payment: detail.payment,
        state: detail.state,
        app: { app_id: parties.app_id, name: parties.app_name, suspended: parties.app_suspended_at !== null },
        user: {
          user_id: detail.user.user_id,
          username: detail.user.username,
          uid: detail.user.uid,
          wallet_address: parties.user_wallet,
          suspended: parties.user_suspended_at !== null,
        },
        ledger_transaction: detail.ledger_transaction,
        advice: {
          waiting_for: detail.advice.waiting_for,
          next_call: detail.advice.next_call,
          blocks_new_payment: detail.advice.blocks_new_payment,
        },
        timeline: detail.timeline.map((step) => {
          const entry = step.request_id === null ? undefined : byRequest.get(step.request_id)
          return {
            ...step,
            request:
              entry === undefined
                ? null
                : {
                    id: String(entry.id),
                    at: entry.at.toISOString(),
                    method: entry.method,
                    path: entry.path,
                    status: entry.status,
                    error_code: entry.error_code,
                    latency_ms: Number(entry.latency_ms),
                    request_body: entry.request_body,
                    response_body: entry.response_body,
                  },
          }
        }),
      }
    },
  }
}

export type SupportService = ReturnType<typeof supportServiceFactory>
