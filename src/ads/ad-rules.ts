/**
 * Rewarded ads as pure rules: what a show yields, and which mediator status moves are allowed.
 * docs/ads.md carries the same tables; test/unit/ad-rules.test.ts has a test a row.
 */
import type { Scope } from '../core/scopes.js'

export const AD_TYPES = ['rewarded', 'interstitial'] as const
export type AdType = (typeof AD_TYPES)[number]

/**
 * The scope an access token needs to show ads or ask whether one is ready. The live platform names
 * none; a rewarded ad is a value exchange with the app, and `payments` is part of the minimum every
 * app asks for (`username` and `payments`), so no app that follows the platform's docs loses ads,
 * while a token granted only `username` reads the username and nothing more.
 */
export const ADS_SCOPE = 'payments' satisfies Scope

/** The client SDK's result values that the platform's mediator can produce. */
export const AD_RESULTS = [
  'AD_REWARDED',
  'AD_CLOSED',
  'AD_DISPLAY_ERROR',
  'AD_NETWORK_ERROR',
  'AD_NOT_AVAILABLE',
  'ADS_NOT_SUPPORTED',
] as const
export type AdResult = (typeof AD_RESULTS)[number]

export type AckStatus = 'granted' | 'revoked' | 'failed'
/** What the mediator says of a watched rewarded ad: settles granted or failed after the delay, or stays pending. */
export type MediatorVerdict = 'granted' | 'failed' | 'pending'
export type UserAction = 'watched' | 'skipped'

/**
 * The result of showing an ad. A script (set through the sandbox) decides whether an ad is
 * available at all; when one is, the user decides whether to watch it to the end. Only a
 * rewarded ad watched to the end is AD_REWARDED and gets an adId.
 */
export function showResult(type: AdType, scripted: AdResult | undefined, action: UserAction): AdResult {
  if (scripted !== undefined && scripted !== 'AD_REWARDED' && scripted !== 'AD_CLOSED') return scripted
  if (scripted === 'AD_CLOSED' || action === 'skipped') return 'AD_CLOSED'
  return type === 'rewarded' ? 'AD_REWARDED' : 'AD_CLOSED'
}

export type AdMoveDecision = { kind: 'apply' } | { kind: 'replay' } | { kind: 'refuse'; message: string }

/** null (pending) → granted or failed; granted → revoked; failed and revoked are final. */
export function decideAdMove(current: AckStatus | null, target: AckStatus): AdMoveDecision {
  if (current === target) return { kind: 'replay' }
  if (current === null && (target === 'granted' || target === 'failed')) return { kind: 'apply' }
  if (current === 'granted' && target === 'revoked') return { kind: 'apply' }
  const from = current ?? 'pending'
  return {
    kind: 'refuse',
    message: `An ad cannot move from ${from} to ${target}: pending → granted or failed, granted → revoked; failed and revoked are final.`,
  }
}
