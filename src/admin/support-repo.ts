import { type Kysely, sql } from 'kysely'
import { appsWithOwner } from '../apps/apps-repo.js'
import { type CursorPosition, containsPattern } from '../core/cursors.js'
import type { DB } from '../db/schema.js'

/**
 * The SQL of the operator's support lookup (support-service.ts): payments, users and apps found
 * across the whole platform by what a person who writes to support can tell (a payment's id, a
 * transaction hash, a username, a uid an app showed them, a wallet address, an app), each list
 * keyset-paged; and the requests of an app's request log a payment's timeline names.
 */

/** A row's created_at in microseconds since 1970, exactly (JavaScript dates keep milliseconds only). */
const createdUs = (column: string) => sql<string>`(extract(epoch from ${sql.ref(column)}) * 1000000)::bigint`
/** The requests one timeline looks up (a payment has at most 100 events shown). */
const MAX_REQUESTS = 100

/** The users `q` names exactly: their id, their username regardless of case, their wallet address, or a uid an app gave them. */
const usersNamedBy = (db: Kysely<DB>, q: string) =>
  db
    .selectFrom('users')
    .select('id')
    .where((eb) =>
      eb.or([
        eb('id', '=', q),
        eb('username_key', '=', q.toLowerCase()),
        eb('wallet_address', '=', q),
        eb('id', 'in', db.selectFrom('app_users').select('user_id').where('uid', '=', q)),
      ]),
    )

export function supportRepo(db: Kysely<DB>) {
  return {
    /**
     * `limit + 1` payments of any app, newest first, older than `before`: `q` is a payment's
     * identifier or transaction hash, an app's id, a user (usersNamedBy), or an address the payment
     * was from or to; `appId` keeps one app's.
     */
    payments(filter: { q?: string | undefined; appId?: string | undefined }, limit: number, before: CursorPosition | undefined) {
      let query = db
        .selectFrom('payments as p')
        .innerJoin('users as u', 'u.id', 'p.user_id')
        .innerJoin('apps as a', 'a.id', 'p.app_id')
        .selectAll('p')
        .select(['u.username', 'a.name as app_name', createdUs('p.created_at').as('created_us')])
      const { q, appId } = filter
      if (q !== undefined) {
        query = query.where((eb) =>
          eb.or([
            eb('p.identifier', '=', q),
            eb('p.txid', '=', q),
            eb('p.app_id', '=', q),
            eb('p.user_uid', '=', q),
            eb('p.from_address', '=', q),
            eb('p.to_address', '=', q),
            eb('p.user_id', 'in', usersNamedBy(db, q)),
          ]),
        )
      }
      if (appId !== undefined) query = query.where('p.app_id', '=', appId)
      if (before !== undefined) {
        query = query.where(sql<boolean>`(${createdUs('p.created_at')}, p.identifier) < (${before.n}::bigint, ${before.id ?? ''}::text)`)
      }
      return query
        .orderBy('p.created_at', 'desc')
        .orderBy('p.identifier', 'desc')
        .limit(limit + 1)
        .execute()
    },

    /** `limit + 1` users by name after `after` (a username_key): `q` is a part of the name, or names them exactly (usersNamedBy). */
    users(q: string | undefined, after: string | undefined, limit: number) {
      let query = db
        .selectFrom('users as u')
        .select(['u.id', 'u.username', 'u.username_key', 'u.roles', 'u.suspended_at', 'u.wallet_address', 'u.created_at'])
      if (q !== undefined) {
        query = query.where((eb) => eb.or([eb('u.username_key', 'like', containsPattern(q)), eb('u.id', 'in', usersNamedBy(db, q))]))
      }
      if (after !== undefined) query = query.where('u.username_key', '>', after)
      return query
        .orderBy('u.username_key')
        .limit(limit + 1)
        .execute()
    },

    /** `limit + 1` apps, newest first, older than `before`: `q` is a part of the name, the id, the wallet address or the owner's username. */
    apps(q: string | undefined, limit: number, before: CursorPosition | undefined) {
      let query = appsWithOwner(db).select([
        'a.id',
        'a.name',
        'a.url',
        'a.network',
        'a.wallet_address',
        'a.verified_at',
        'a.suspended_at',
        'a.created_at',
        'u.username as owner',
        createdUs('a.created_at').as('created_us'),
      ])
      if (q !== undefined) {
        query = query.where((eb) =>
          eb.or([
            eb(sql`lower(a.name)`, 'like', containsPattern(q)),
            eb('a.id', '=', q),
            eb('a.wallet_address', '=', q),
            eb('u.username_key', '=', q.toLowerCase()),
          ]),
        )
      }
      if (before !== undefined) {
        query = query.where(sql<boolean>`(${createdUs('a.created_at')}, a.id) < (${before.n}::bigint, ${before.id ?? ''}::text)`)
      }
      return query
        .orderBy('a.created_at', 'desc')
        .orderBy('a.id', 'desc')
        .limit(limit + 1)
        .execute()
    },

    /** The payment's app and user, as support names them. */
    paymentParties(paymentId: string) {
      return db
        .selectFrom('payments as p')
        .innerJoin('apps as a', 'a.id', 'p.app_id')
        .innerJoin('users as u', 'u.id', 'p.user_id')
        .select([
          'p.app_id',
          'a.name as app_name',
          'a.suspended_at as app_suspended_at',
          'u.suspended_at as user_suspended_at',
          'u.wallet_address as user_wallet',
        ])
        .where('p.identifier', '=', paymentId)
        .executeTakeFirst()
    },

    /** The app's request-log entries with these request ids (the newest of each, a replay aside). */
    async requests(appId: string, requestIds: string[]) {
      if (requestIds.length === 0) return []
      return db
        .selectFrom('request_log')
        .select([
          'id',
          'request_id',
          'at',
          'method',
          'path',
          'status',
          'error_code',
          'latency_ms',
          'request_body',
          'response_body',
          'replay_of',
        ])
        .where('app_id', '=', appId)
        .where('request_id', 'in', requestIds.slice(0, MAX_REQUESTS))
        .where('replay_of', 'is', null)
        .orderBy('id', 'desc')
        .limit(MAX_REQUESTS)
        .execute()
    },
  }
}
