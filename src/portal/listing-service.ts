import type { Kysely } from 'kysely'
import type { AppNetwork } from '../apps/apps-service.js'
import { listingRepo } from '../apps/listing-repo.js'
import { listingView } from '../apps/listing-rules.js'
import { auditLog } from '../audit/audit-log.js'
import { ApiError } from '../core/errors.js'
import type { SessionPrincipal } from '../core/principals.js'
import type { DB } from '../db/schema.js'
import { inTransaction } from '../db/transaction.js'
import { actorOf, type PortalService } from './portal-service.js'

/**
 * The owner's side of Mainnet listing (docs/portal.md, "Listing" and "Changing an app's network"):
 * ask for a review again after a rejection, and move the app to the other network. Both are the
 * owner's, under the app's row lock, and audited in the transaction that does them.
 */
export function portalListingFactory(deps: { db: Kysely<DB>; auditKey: Buffer; portal: PortalService }) {
  const { db, portal } = deps
  const audit = auditLog(db, deps.auditKey)

  return {
    /** A rejected Mainnet app asks for a review again: pending. From any other state: 409 invalid_status_transition. */
    async requestReview(principal: SessionPrincipal, appId: string, requestId: string) {
      await portal.requireMember(principal, appId, 'owner')
      return inTransaction(db, async (trx) => {
        await portal.lockAsOwner(trx, principal, appId)
        const moved = await listingRepo(trx).move(appId, 'request', null)
        if (moved === undefined) {
          throw new ApiError('invalid_status_transition', 'Only a rejected Mainnet app asks for a listing review again.')
        }
        await audit.append(trx, { actor: actorOf(principal), action: 'request-listing', target: appId, details: { request_id: requestId } })
        return { app_id: appId, listing: listingView(moved) }
      })
    },

    /**
     * Moves the app to `network`. Refused (409 payments_open) while any payment of the app is open:
     * a payment stays on the network it was created on. To Mainnet the app waits for review
     * (pending); to Testnet no review applies. The same network again changes nothing.
     */
    async changeNetwork(principal: SessionPrincipal, appId: string, network: AppNetwork, requestId: string) {
      await portal.requireMember(principal, appId, 'owner')
      await inTransaction(db, async (trx) => {
        const repo = listingRepo(trx)
        await portal.lockAsOwner(trx, principal, appId)
        const before = await trx.selectFrom('apps').select('network').where('id', '=', appId).executeTakeFirstOrThrow()
        if (before.network !== network) {
          if (await repo.hasOpenPayments(appId)) {
            throw new ApiError(
              'payments_open',
              'The app has open payments: complete or cancel them before changing its network (a payment stays on its network).',
            )
          }
          const moved = await repo.setNetwork(appId, network)
          await audit.append(trx, {
            actor: actorOf(principal),
            action: 'change-app-network',
            target: appId,
            details: {
              from: before.network,
              to: network,
              ...(moved?.listing == null ? {} : { listing: moved.listing }),
              request_id: requestId,
            },
          })
        }
      })
      return portal.getApp(principal, appId)
    },
  }
}

export type PortalListing = ReturnType<typeof portalListingFactory>
