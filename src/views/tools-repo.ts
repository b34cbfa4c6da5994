import { type Kysely, sql } from 'kysely'
import { platformNow } from '../clock/platform-now.js'
import { containsPattern } from '../core/cursors.js'
import type { DB } from '../db/schema.js'
import type { PaymentState } from '../payments/payment-advice.js'

/**
 * The SQL of the console's data tools (src/sandbox/views/tools-routes.ts): the search box across
 * the platform, an app's overview (payments by state, the error rate of its last hour, the size of
 * each list) and the rows of the exports.
 */

/** A payment's state as one SQL expression: the same reading of the flags as payment-views-repo.ts's filters. */
const STATE = sql<PaymentState>`case
  when p.developer_completed then 'completed'
  when p.cancelled or p.user_cancelled then 'cancelled'
  when p.txid is not null and p.tx_verified then 'verified'
  when p.txid is not null then 'transaction_linked'
  when p.developer_approved then 'approved'
  else 'created' end`

/** How many hits of each kind the search answers, at most. */
export const SEARCH_LIMIT = 10

export function toolsRepo(db: Kysely<DB>) {
  return {
    /** The app's payments by state: how many, and their amounts summed exactly (numeric, as text). */
    paymentsByState(appId: string) {
      return db
        .selectFrom('payments as p')
        .select([STATE.as('state'), sql<number>`count(*)::int`.as('count'), sql<string>`coalesce(sum(p.amount), 0)::text`.as('volume')])
        .where('p.app_id', '=', appId)
        .groupBy(sql`1`)
        .execute()
    },

    /** The app's calls in the last `seconds` of platform time: how many, and how many answered 4xx and 5xx. */
    recentCalls(appId: string, seconds: number) {
      return db
        .selectFrom('request_log')
        .select([
          sql<number>`count(*)::int`.as('total'),
          sql<number>`(count(*) filter (where status >= 400 and status < 500))::int`.as('client_errors'),
          sql<number>`(count(*) filter (where status >= 500))::int`.as('server_errors'),
        ])
        .where('app_id', '=', appId)
        .where('at', '>', sql<Date>`${platformNow} - make_interval(secs => ${seconds})`)
        .executeTakeFirstOrThrow()
    },

    /** The size of each of the app's lists. */
    async counts(appId: string) {
      const count = (table: 'app_users' | 'request_log' | 'ads' | 'notifications') =>
        db.selectFrom(table).select(sql<number>`count(*)::int`.as('n')).where('app_id', '=', appId).executeTakeFirstOrThrow()
      const [users, requests, ads, notifications, keys] = await Promise.all([
        count('app_users'),
        count('request_log'),
        count('ads'),
        count('notifications'),
        db
          .selectFrom('api_keys')
          .select(sql<number>`count(*)::int`.as('n'))
          .where('app_id', '=', appId)
          .where('revoked_at', 'is', null)
          .executeTakeFirstOrThrow(),
      ])
      return { users: users.n, requests: requests.n, ads: ads.n, notifications: notifications.n, active_keys: keys.n }
    },

    searchApps(q: string) {
      return db
        .selectFrom('apps')
        .select(['id', 'name', 'network'])
        .where((eb) => eb.or([eb('id', '=', q), eb(sql`lower(name)`, 'like', containsPattern(q))]))
        .orderBy('created_at', 'desc')
        .limit(SEARCH_LIMIT + 1)
        .execute()
    },

    /** Users by id, part of their name, wallet address, or their uid in an app. */
    searchUsers(q: string) {
      return db
        .selectFrom('users as u')
        .leftJoin('app_users as au', (join) => join.onRef('au.user_id', '=', 'u.id').on('au.uid', '=', q))
        .leftJoin('apps as a', 'a.id', 'au.app_id')
        .select(['u.id', 'u.username', 'u.wallet_address', 'au.app_id', 'a.name as app_name'])
        .where((eb) =>
          eb.or([
            eb('u.id', '=', q),
            eb('u.username_key', 'like', containsPattern(q)),
            eb('u.wallet_address', '=', q),
            eb('au.uid', 'is not', null),
          ]),
        )
        .orderBy('u.created_at', 'desc')
        .limit(SEARCH_LIMIT + 1)
        .execute()
    },

    /** Payments by identifier or txid (any app), or part of their memo. */
    searchPayments(q: string, memo: boolean) {
      return db
        .selectFrom('payments as p')
        .innerJoin('apps as a', 'a.id', 'p.app_id')
        .innerJoin('users as u', 'u.id', 'p.user_id')
        .select(['p.identifier', 'p.app_id', 'a.name as app_name', 'p.amount', 'p.memo', 'p.txid', 'u.username', STATE.as('state')])
        .where((eb) =>
          eb.or([
            eb('p.identifier', '=', q),
            eb('p.txid', '=', q.toLowerCase()),
            ...(memo ? [eb(sql`lower(p.memo)`, 'like', containsPattern(q))] : []),
          ]),
        )
        .orderBy('p.created_at', 'desc')
        .limit(SEARCH_LIMIT + 1)
        .execute()
    },

    findTransaction(hash: string) {
      return db
        .selectFrom('ledger_transactions')
        .select(['hash', sql<string>`ledger::text`.as('ledger'), 'source_account', 'memo'])
        .where('hash', '=', hash)
        .executeTakeFirst()
    },

    searchRequests(requestId: string) {
      return db
        .selectFrom('request_log as r')
        .innerJoin('apps as a', 'a.id', 'r.app_id')
        .select(['r.id', 'r.app_id', 'a.name as app_name', 'r.method', 'r.path', 'r.status'])
        .where('r.request_id', '=', requestId)
        .orderBy('r.id', 'desc')
        .limit(SEARCH_LIMIT + 1)
        .execute()
    },

    /** The newest `limit` users that match (`q`: part of a username), for an export. */
    exportUsers(q: string | undefined, limit: number) {
      let query = db.selectFrom('users').select(['id', 'username', 'wallet_address', 'created_at'])
      if (q !== undefined) query = query.where('username_key', 'like', containsPattern(q))
      return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute()
    },

    countUsers(q: string | undefined) {
      let query = db.selectFrom('users').select(sql<number>`count(*)::int`.as('n'))
      if (q !== undefined) query = query.where('username_key', 'like', containsPattern(q))
      return query.executeTakeFirstOrThrow()
    },
  }
}
