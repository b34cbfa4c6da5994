import { type Kysely, sql } from 'kysely'
import type { DB } from '../db/schema.js'
import { type AppRow, appsWithOwner } from './apps-repo.js'
import { LISTED_NETWORK, LISTING_MOVES, type ListingMove, listingOnRegistration } from './listing-rules.js'

/**
 * The SQL of Mainnet listing (docs/portal.md, "Listing"), shared by the operator's console and the
 * portal: each move is one guarded UPDATE, so two operators deciding at once, or an owner asking
 * again while an operator decides, leave exactly one winner; the loser's move changes nothing.
 */
export function listingRepo(db: Kysely<DB>) {
  return {
    /** Applies `move` if the app is in one of its starting states; answers the app's row after it, or undefined. */
    async move(appId: string, move: ListingMove, reason: string | null) {
      const { from, to } = LISTING_MOVES[move]
      return db
        .updateTable('apps')
        .set({ listing: to, listing_reason: reason, listing_changed_at: sql<Date>`now()` })
        .where('id', '=', appId)
        .where('network', '=', LISTED_NETWORK)
        .where('listing', 'in', [...from])
        .returning(['id', 'name', 'network', 'listing', 'listing_reason', 'listing_changed_at'])
        .executeTakeFirst()
    },

    /** The apps waiting for review, oldest request first, with their owner's username. */
    async pending(limit: number) {
      return appsWithOwner(db)
        .select([
          'a.id',
          'a.name',
          'a.url',
          'a.network',
          'a.description',
          'a.verified_at',
          'a.suspended_at',
          'a.listing',
          'a.listing_reason',
          'a.listing_changed_at',
          'u.username as owner',
        ])
        .where('a.listing', '=', 'pending')
        .orderBy('a.listing_changed_at')
        .orderBy('a.id')
        .limit(limit)
        .execute()
    },

    /** Whether any payment of the app is open (neither completed nor cancelled). */
    async hasOpenPayments(appId: string): Promise<boolean> {
      const row = await db
        .selectFrom('payments')
        .select('identifier')
        .where('app_id', '=', appId)
        .where(sql<boolean>`not developer_completed and not cancelled and not user_cancelled`)
        .limit(1)
        .executeTakeFirst()
      return row !== undefined
    },

    /** Moves the app to `network`: to Mainnet it waits for review (pending), to Testnet listing no longer applies. */
    async setNetwork(appId: string, network: AppRow['network']) {
      const listing = listingOnRegistration(network) ?? null
      return db
        .updateTable('apps')
        .set({ network, listing, listing_reason: null, listing_changed_at: listing === null ? null : sql<Date>`now()` })
        .where('id', '=', appId)
        .returning(['id', 'network', 'listing', 'listing_reason', 'listing_changed_at'])
        .executeTakeFirst()
    },
  }
}
