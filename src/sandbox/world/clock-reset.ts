import { type Kysely, sql } from 'kysely'
import { adsRepo } from '../../ads/ads-repo.js'
import type { PlatformClock } from '../../clock/clock.js'
import { clockResetRepo } from '../../clock/clock-repo.js'
import type { DB } from '../../db/schema.js'
import { paymentApprovalRepo } from '../../payments/payment-approval-repo.js'

export interface ClockResetDeps {
  db: Kysely<DB>
  clock: PlatformClock
  approvalWindowMs: number
}

/**
 * Puts the platform clock back on real time (offset 0, a new epoch), in one transaction that
 * first records what the moved time decided, so that nothing un-expires (docs/api.md, "Sandbox
 * clock"): approvals past their window are cancelled, due ad verdicts are taken, and every
 * deadline still ahead keeps the time it had left (tokens' `expires_at`, pending approvals'
 * `created_at`, pending verdicts' `settles_at` move back by the offset, so a token expired at
 * the moved time stays expired). Notifications stamped after real now are restamped at real now
 * (their quota state recomputed from the rows), so they count toward the quota as sent at the
 * reset. A process's credential cache uses no token it cached in an older epoch than its clock's
 * (credential-cache.ts): until a process takes the new epoch it judges on the moved clock, as
 * before the reset; from then on, on the database's new expiries.
 */
export function clockResetFactory(deps: ClockResetDeps) {
  const { db, clock } = deps
  return async function resetClock(): Promise<Date> {
    const reading = await db.transaction().execute(async (trx) => {
      const offsetMs = await clockResetRepo(trx).lockOffsetMs()
      if (offsetMs === 0) return clockResetRepo(trx).reset()
      const payments = paymentApprovalRepo(trx)
      await payments.expireApproval('all', deps.approvalWindowMs)
      await payments.shiftPendingApprovals(offsetMs)
      await adsRepo(trx).settleDueAndShift(offsetMs)
      await trx
        .updateTable('access_tokens')
        .set({ expires_at: sql<Date>`expires_at - make_interval(secs => ${offsetMs / 1000})` })
        .where('expires_at', '>', sql<Date>`now()`)
        .execute()
      await trx
        .updateTable('notifications')
        .set({ created_at: sql<Date>`now()`, recent_deliveries: null })
        .where('created_at', '>', sql<Date>`now()`)
        .execute()
      return clockResetRepo(trx).reset()
    })
    clock.observe(reading)
    return clock.now()
  }
}
