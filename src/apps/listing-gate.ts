import type { Kysely } from 'kysely'
import { ApiError } from '../core/errors.js'
import type { DB } from '../db/schema.js'
import { listingHolds } from './listing-rules.js'

/** The other party of a payment being created: a user by id (U2A), or by the app's uid for them (A2U). */
export type PaymentParty = { userId: string } | { uid: string }

/**
 * The listing gate on payment creation (docs/portal.md, "Listing"): a production Mainnet app that
 * is not approved pays and is paid by its own members (owner and members) only; anyone else is
 * refused with 403 app_not_listed before anything is written. One query: the app's state and
 * whether the party is a member. Built in production only (sandbox mode lists nothing).
 */
export function listingGate(db: Kysely<DB>) {
  return async (appId: string, party: PaymentParty): Promise<void> => {
    const row = await db
      .selectFrom('apps as a')
      .select((eb) => [
        'a.network',
        'a.listing',
        eb
          .exists(
            eb
              .selectFrom('app_members as m')
              .select('m.user_id')
              .whereRef('m.app_id', '=', 'a.id')
              .where((w) =>
                'userId' in party
                  ? w('m.user_id', '=', party.userId)
                  : w(
                      'm.user_id',
                      'in',
                      w
                        .selectFrom('app_users as au')
                        .select('au.user_id')
                        .whereRef('au.app_id', '=', 'a.id')
                        .where('au.uid', '=', party.uid),
                    ),
              ),
          )
          .as('member'),
      ])
      .where('a.id', '=', appId)
      .executeTakeFirst()
    if (row === undefined || !listingHolds(row) || row.member) return
    throw new ApiError(
      'app_not_listed',
      row.listing === 'rejected'
        ? "This app's Mainnet listing was rejected: only its own members pay it or are paid by it."
        : "This app's Mainnet listing waits for the platform's review: only its own members pay it or are paid by it until then.",
    )
  }
}
