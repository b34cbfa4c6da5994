import type { Kysely } from 'kysely'
import type { Clock } from '../clock/clock.js'
import { ApiError } from '../core/errors.js'
import type { TokenPrincipal } from '../core/principals.js'
import { coalescingReader } from '../db/coalesce.js'
import type { DB } from '../db/schema.js'
import { randomToken } from '../lib/crypto.js'
import { type AckStatus, type AdResult, type AdType, decideAdMove, type MediatorVerdict, showResult, type UserAction } from './ad-rules.js'
import { type AdRead, type AdRow, type AdScriptRow, adsRepo, WHOLE_APP } from './ads-repo.js'

export interface RewardedAdStatusDTO {
  identifier: string
  mediator_ack_status: AckStatus | null
  mediator_granted_at: string | null
  mediator_revoked_at: string | null
}

export interface ShowResult {
  type: AdType
  result: AdResult
  adId?: string
}

export interface AdScript {
  app_id: string
  user_id: string | null
  result: AdResult
  mediator_ack_status: MediatorVerdict
  remaining: number | null
}

const toDTO = (row: AdRow): RewardedAdStatusDTO => ({
  identifier: row.id,
  mediator_ack_status: row.mediator_ack_status,
  mediator_granted_at: row.mediator_granted_at?.toISOString() ?? null,
  mediator_revoked_at: row.mediator_revoked_at?.toISOString() ?? null,
})

const toScript = (row: AdScriptRow): AdScript => ({
  app_id: row.app_id,
  user_id: row.user_id === WHOLE_APP ? null : row.user_id,
  result: row.result as AdResult,
  mediator_ack_status: row.mediator as MediatorVerdict,
  remaining: row.remaining,
})

const adNotFound = (id: string) => new ApiError('ad_not_found', `No ad ${id}.`)

export function adsServiceFactory(deps: { db: Kysely<DB>; clock: Clock; verdictDelayMs: number }) {
  const { db, clock, verdictDelayMs } = deps
  const repo = adsRepo(db)
  /** `GET /v2/ads_network/status/{adId}`: concurrent reads share one query (batched, never cached). */
  const byId = coalescingReader((ids) => repo.findMany(ids))

  /** An ad as it stands at `now`, without writing: a verdict that fell due is applied to the row read. */
  function settledView(row: AdRow, now: Date): AdRow {
    if (row.mediator_ack_status !== null || row.settles_at === null || row.settles_at > now || row.settles_to === null) return row
    return { ...row, mediator_ack_status: row.settles_to, mediator_granted_at: row.settles_to === 'granted' ? row.settles_at : null }
  }

  /**
   * Reads an ad as it stands now: a verdict that fell due is applied first. Due on the platform
   * time the read took from the database, so every process answers alike.
   */
  async function current(row: AdRead, reread: () => Promise<AdRead | undefined>): Promise<AdRow> {
    if (row.mediator_ack_status !== null || row.settles_at === null || row.settles_at > row.platform_now) return row
    await repo.settle(row.id)
    return (await reread()) ?? row
  }

  return {
    /**
     * The platform's mediator shows an ad to the user (the client SDK's showAd). A script set
     * through the sandbox, for this user or else for the whole app, decides what the next ads
     * yield; without one an ad is available and the user's action decides.
     */
    async show(principal: TokenPrincipal, type: AdType, action: UserAction): Promise<ShowResult> {
      const script = (await repo.takeScript(principal.appId, principal.userId)) ?? (await repo.takeScript(principal.appId, WHOLE_APP))
      const result = showResult(type, script?.result as AdResult | undefined, action)
      if (result !== 'AD_REWARDED') return { type, result }

      const verdict = (script?.mediator as MediatorVerdict | undefined) ?? 'granted'
      const id = randomToken(16)
      await repo.insert(
        { id, app_id: principal.appId, user_id: principal.userId, type, settles_to: verdict === 'pending' ? null : verdict },
        verdictDelayMs,
      )
      return { type, result, adId: id }
    },

    /** Whether the next ad would be available, without using it up (the client SDK's isAdReady). */
    async isReady(principal: TokenPrincipal, type: AdType): Promise<boolean> {
      const script = (await repo.peekScript(principal.appId, principal.userId)) ?? (await repo.peekScript(principal.appId, WHOLE_APP))
      return (
        showResult(type, script?.result as AdResult | undefined, 'watched') !== 'AD_NOT_AVAILABLE' &&
        script?.result !== 'ADS_NOT_SUPPORTED' &&
        script?.result !== 'AD_NETWORK_ERROR'
      )
    },

    /** The app's server checks an ad before granting its reward; another app's ad does not exist for it. */
    async status(appId: string, adId: string): Promise<RewardedAdStatusDTO> {
      const reread = () => repo.findForApp(adId, appId)
      const found = await byId.get(adId)
      // Another app's ad does not exist for this one.
      const row = found?.app_id === appId ? found : undefined
      if (row === undefined) throw adNotFound(adId)
      return toDTO(await current(row, reread))
    },

    /** The sandbox moves an ad's mediator status by hand, within the allowed moves. */
    async setStatus(adId: string, target: AckStatus): Promise<RewardedAdStatusDTO> {
      const reread = () => repo.find(adId)
      for (let attempt = 0; attempt < 3; attempt++) {
        const found = await reread()
        if (found === undefined) throw adNotFound(adId)
        // Decide on the ad as it stands without writing: a refused or replayed move changes nothing.
        const row = settledView(found, found.platform_now)
        const decision = decideAdMove(row.mediator_ack_status, target)
        if (decision.kind === 'replay') return toDTO(row)
        if (decision.kind === 'refuse') throw new ApiError('invalid_status_transition', decision.message)
        if (row !== found) await repo.settle(adId)
        const moved = await repo.move(adId, row.mediator_ack_status, target, clock.now())
        if (moved !== undefined) return toDTO(moved)
        // Someone else moved it in between: decide again on what it is now.
      }
      throw new ApiError('invalid_status_transition', 'The ad kept changing; try again.')
    },

    async setScript(input: {
      appId: string
      userId?: string | undefined
      result: AdResult
      mediator: MediatorVerdict
      count?: number | undefined
    }): Promise<AdScript> {
      const row = await repo.upsertScript({
        app_id: input.appId,
        user_id: input.userId ?? WHOLE_APP,
        result: input.result,
        mediator: input.mediator,
        remaining: input.count ?? null,
        created_at: clock.now(),
      })
      return toScript(row)
    },

    /**
     * The script that decides the next ads of a user (theirs, else the app's) or of the app, as
     * show would take it: one with ads left. `applies` says whose it is.
     */
    async activeScript(appId: string, userId?: string): Promise<{ script: AdScript | null; applies: 'user' | 'app' | 'none' }> {
      const own = userId === undefined ? undefined : await repo.peekScript(appId, userId)
      if (own !== undefined) return { script: toScript(own), applies: 'user' }
      const whole = await repo.peekScript(appId, WHOLE_APP)
      return whole === undefined ? { script: null, applies: 'none' } : { script: toScript(whole), applies: 'app' }
    },

    async clearScript(appId: string, userId?: string): Promise<boolean> {
      return repo.deleteScript(appId, userId ?? WHOLE_APP)
    },
  }
}

export type AdsService = ReturnType<typeof adsServiceFactory>
