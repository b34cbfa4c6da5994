import type { AppRow } from './apps-repo.js'

/**
 * Mainnet listing (docs/portal.md, "Listing"): the pure rules. A production app on Mainnet ("Pi
 * Network") waits for an operator's review: until it is approved it is not in the directory, and
 * only its own members pay it or are paid by it. A Testnet app needs no review; in sandbox mode
 * listing does not apply at all (nothing is gated there).
 */
export type ListingState = 'pending' | 'approved' | 'rejected'

/** The network listing applies to. */
export const LISTED_NETWORK = 'Pi Network'

/** The listing state of a newly registered app: pending on Mainnet, none on Testnet. */
export function listingOnRegistration(network: AppRow['network']): 'pending' | undefined {
  return network === LISTED_NETWORK ? 'pending' : undefined
}

/** Whether an app is held back from people who are not its members: on Mainnet and not approved. */
export function listingHolds(app: Pick<AppRow, 'network' | 'listing'>): boolean {
  return app.network === LISTED_NETWORK && (app.listing === 'pending' || app.listing === 'rejected')
}

/** The moves an operator or the app's owner makes, from the states each may start from. */
export const LISTING_MOVES = {
  approve: { from: ['pending'], to: 'approved' },
  reject: { from: ['pending'], to: 'rejected' },
  /** The owner asks again after a rejection. */
  request: { from: ['rejected'], to: 'pending' },
} as const satisfies Record<string, { from: readonly ListingState[]; to: ListingState }>

export type ListingMove = keyof typeof LISTING_MOVES

/** An app's listing as the portal and the console show it; null where listing does not apply. */
export function listingView(app: Pick<AppRow, 'network' | 'listing' | 'listing_reason' | 'listing_changed_at'>) {
  if (app.network !== LISTED_NETWORK || app.listing === null) return null
  return { state: app.listing, reason: app.listing_reason, changed_at: app.listing_changed_at?.toISOString() ?? null }
}
