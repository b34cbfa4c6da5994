import { type Kysely, type SelectQueryBuilder, sql } from 'kysely'
import { type CursorPosition, containsPattern } from '../core/cursors.js'
import type { DB } from '../db/schema.js'
import type { PaymentState } from '../payments/payment-advice.js'

/**
 * The SQL of the sandbox's payment views (payment-views-service.ts): an app's payments searched
 * and paged, one payment's ledger transaction and timeline, a user's open payments, and the
 * dates the setup checklist derives from.
 */

/** Which rows a state names (as the DTO's status flags map). */
function stateWhere(state: PaymentState) {
  const open = sql<boolean>`(not p.developer_completed and not p.cancelled and not p.user_cancelled)`
  switch (state) {
    case 'created':
      return sql<boolean>`(${open} and p.txid is null and not p.developer_approved)`
    case 'approved':
      return sql<boolean>`(${open} and p.txid is null and p.developer_approved)`
    case 'transaction_linked':
      return sql<boolean>`(${open} and p.txid is not null and not coalesce(p.tx_verified, false))`
    case 'verified':
      return sql<boolean>`(${open} and p.tx_verified)`
    case 'completed':
      return sql<boolean>`p.developer_completed`
    default:
      return sql<boolean>`(not p.developer_completed and (p.cancelled or p.user_cancelled))`
  }
}

/** A row's created_at in microseconds since 1970, exactly (JavaScript dates keep milliseconds only). */
const createdUs = sql<number>`(extract(epoch from p.created_at) * 1000000)::bigint`

export interface PaymentFilter {
  /** A payment's identifier or txid, its user (id, uid, or username regardless of case), or a part of its memo. */
  q?: string | undefined
  state?: PaymentState | undefined
  direction?: 'user_to_app' | 'app_to_user' | undefined
  /**
   * `app`: `q` names a user by their uid in the app only, never by the platform's id or username
   * (the developer portal: a developer sees what the app was given). `platform` when absent.
   */
  usersBy?: 'platform' | 'app' | undefined
}

/** How many timeline events one payment shows. */
const MAX_EVENTS = 100
/** A user has at most one open payment each way; this only bounds the read. */
const MAX_OPEN_PAYMENTS = 10

/** The app's payments that match the filter (of a query over `payments as p` joined to `users as u`). */
function matching<Q extends SelectQueryBuilder<PaymentsJoin, 'p' | 'u', object>>(query: Q, appId: string, filter: PaymentFilter): Q {
  const { q, state, direction } = filter
  let out = query.where('p.app_id', '=', appId)
  if (q !== undefined) {
    const byPlatform = filter.usersBy !== 'app'
    out = out.where((eb) =>
      eb.or([
        eb('p.identifier', '=', q),
        eb('p.txid', '=', q),
        eb('p.user_uid', '=', q),
        eb(sql`lower(p.memo)`, 'like', containsPattern(q)),
        ...(byPlatform ? [eb('p.user_id', '=', q), eb('u.username_key', '=', q.toLowerCase())] : []),
      ]),
    )
  }
  if (state !== undefined) out = out.where(stateWhere(state))
  if (direction !== undefined) out = out.where('p.direction', '=', direction)
  return out as Q
}

type PaymentsJoin = DB & { p: DB['payments']; u: DB['users'] }

export function paymentViewsRepo(db: Kysely<DB>) {
  const selectPayments = () =>
    db
      .selectFrom('payments as p')
      .innerJoin('users as u', 'u.id', 'p.user_id')
      .selectAll('p')
      .select(['u.username', createdUs.as('created_us')])

  return {
    /** `limit + 1` of the app's matching payments older than `before`, newest first, each with its user's name and sort key. */
    listPayments(appId: string, filter: PaymentFilter, limit: number, before: CursorPosition | undefined) {
      let query = matching(selectPayments(), appId, filter)
      if (before !== undefined) {
        query = query.where(sql<boolean>`(${createdUs}, p.identifier) < (${before.n}::bigint, ${before.id ?? ''}::text)`)
      }
      return query
        .orderBy(createdUs, 'desc')
        .orderBy('p.identifier', 'desc')
        .limit(limit + 1)
        .execute()
    },

    /** How many of the app's payments match, on every page. */
    async countPayments(appId: string, filter: PaymentFilter): Promise<number> {
      const base = db.selectFrom('payments as p').innerJoin('users as u', 'u.id', 'p.user_id').select(sql<number>`count(*)::int`.as('n'))
      const row = await matching(base, appId, filter).executeTakeFirstOrThrow()
      return row.n
    },

    findPayment(appId: string, paymentId: string) {
      return selectPayments().where('p.app_id', '=', appId).where('p.identifier', '=', paymentId).executeTakeFirst()
    },

    findPaymentTxid(appId: string, paymentId: string) {
      return db.selectFrom('payments').select('txid').where('app_id', '=', appId).where('identifier', '=', paymentId).executeTakeFirst()
    },

    findLedgerTransaction(hash: string) {
      return db
        .selectFrom('ledger_transactions')
        .select([
          'hash',
          sql<string>`ledger::text`.as('ledger'),
          'created_at',
          'source_account',
          sql<string>`fee_charged::text`.as('fee'),
          'memo',
        ])
        .where('hash', '=', hash)
        .executeTakeFirst()
    },

    /** The payment's first events, oldest first. */
    listEvents(appId: string, paymentId: string) {
      return db
        .selectFrom('payment_events')
        .selectAll()
        .where('payment_id', '=', paymentId)
        .where('app_id', '=', appId)
        .orderBy('id')
        .limit(MAX_EVENTS)
        .execute()
    },

    findMembership(appId: string, userId: string) {
      return db.selectFrom('app_users').select('uid').where('app_id', '=', appId).where('user_id', '=', userId).executeTakeFirst()
    },

    /** The user's payments with the app that are neither completed nor cancelled, oldest first. */
    listOpenPayments(appId: string, userId: string) {
      return db
        .selectFrom('payments')
        .selectAll()
        .where('app_id', '=', appId)
        .where('user_id', '=', userId)
        .where('developer_completed', '=', false)
        .where('cancelled', '=', false)
        .where('user_cancelled', '=', false)
        .orderBy('created_at')
        .limit(MAX_OPEN_PAYMENTS)
        .execute()
    },

    /** The first moments of the setup checklist: oldest active key, first successful GET /v2/me, first approve and complete. */
    async checklistDates(appId: string) {
      const [key, me, pay] = await Promise.all([
        db
          .selectFrom('api_keys')
          .select(sql<Date | null>`min(created_at)`.as('at'))
          .where('app_id', '=', appId)
          .where('revoked_at', 'is', null)
          .executeTakeFirst(),
        db
          .selectFrom('request_log')
          .select(sql<Date | null>`min(at)`.as('at'))
          .where('app_id', '=', appId)
          .where('operation_id', '=', 'getMe')
          .where('status', '=', 200)
          .executeTakeFirst(),
        db
          .selectFrom('payments')
          .select([sql<Date | null>`min(approved_at)`.as('approved'), sql<Date | null>`min(completed_at)`.as('completed')])
          .where('app_id', '=', appId)
          .executeTakeFirst(),
      ])
      return { keyMade: key?.at, firstMe: me?.at, firstApprove: pay?.approved, firstComplete: pay?.completed }
    },
  }
}
