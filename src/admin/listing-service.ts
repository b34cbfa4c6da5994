import type { Kysely } from 'kysely'
import { listingRepo } from '../apps/listing-repo.js'
import { type ListingMove, listingView } from '../apps/listing-rules.js'
import { auditChainKey, auditLog } from '../audit/audit-log.js'
import { ApiError } from '../core/errors.js'
import type { SessionPrincipal } from '../core/principals.js'
import type { DB } from '../db/schema.js'
import { inTransaction } from '../db/transaction.js'
import { visibleReason } from './reasons.js'

/** The most apps the review queue shows at once. */
const QUEUE_LIMIT = 200

/**
 * The operator's side of Mainnet listing (docs/operators.md, "The listing queue"): the apps waiting
 * for review, and the two decisions. Each decision is one guarded UPDATE and its audit record in
 * one transaction: deciding an app that is no longer pending (another operator decided first, the
 * owner moved it to Testnet) is 409 listing_not_pending and records nothing.
 */
export function listingReviewFactory(deps: { db: Kysely<DB>; secretKey: Buffer }) {
  const { db } = deps
  const audit = auditLog(db, auditChainKey(deps.secretKey))
  const actorOf = (principal: SessionPrincipal) => `user:${principal.userId}`

  async function decide(
    principal: SessionPrincipal,
    appId: string,
    move: Extract<ListingMove, 'approve' | 'reject'>,
    reason: string | null,
    requestId: string,
  ) {
    return inTransaction(db, async (trx) => {
      const moved = await listingRepo(trx).move(appId, move, reason)
      if (moved === undefined) {
        const exists = await trx.selectFrom('apps').select('id').where('id', '=', appId).executeTakeFirst()
        if (exists === undefined) throw new ApiError('app_not_found', `No app with id ${appId}.`)
        throw new ApiError('listing_not_pending', `App ${appId} is not waiting for a listing review.`)
      }
      const record = await audit.append(trx, {
        actor: actorOf(principal),
        action: move === 'approve' ? 'approve-listing' : 'reject-listing',
        target: appId,
        details: { name: moved.name, ...(reason === null ? {} : { reason }), request_id: requestId },
      })
      return { app_id: moved.id, listing: listingView(moved), audit_id: record.id }
    })
  }

  return {
    /** The review queue: pending Mainnet apps, oldest request first. */
    async queue() {
      const rows = await listingRepo(db).pending(QUEUE_LIMIT)
      return rows.map((row) => ({
        app_id: row.id,
        name: row.name,
        url: row.url,
        network: row.network,
        description: row.description,
        owner: row.owner,
        verified: row.verified_at !== null,
        suspended: row.suspended_at !== null,
        listing: listingView(row),
      }))
    },

    approve: (principal: SessionPrincipal, appId: string, requestId: string) => decide(principal, appId, 'approve', null, requestId),

    reject: (principal: SessionPrincipal, appId: string, reason: string, requestId: string) =>
      decide(principal, appId, 'reject', visibleReason(reason), requestId),
  }
}

export type ListingReview = ReturnType<typeof listingReviewFactory>
