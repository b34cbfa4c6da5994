import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { type AckStatus, type AdResult, type AdType, decideAdMove, showResult, type UserAction } from '../../src/ads/ad-rules.js'

describe('ad rules', () => {
  const shows: Array<[AdType, AdResult | undefined, UserAction, AdResult]> = [
    ['rewarded', undefined, 'watched', 'AD_REWARDED'],
    ['rewarded', undefined, 'skipped', 'AD_CLOSED'],
    ['interstitial', undefined, 'watched', 'AD_CLOSED'],
    ['rewarded', 'AD_REWARDED', 'watched', 'AD_REWARDED'],
    ['rewarded', 'AD_REWARDED', 'skipped', 'AD_CLOSED'],
    ['interstitial', 'AD_REWARDED', 'watched', 'AD_CLOSED'],
    ['rewarded', 'AD_CLOSED', 'watched', 'AD_CLOSED'],
    ['rewarded', 'AD_NOT_AVAILABLE', 'watched', 'AD_NOT_AVAILABLE'],
    ['rewarded', 'AD_DISPLAY_ERROR', 'skipped', 'AD_DISPLAY_ERROR'],
    ['interstitial', 'AD_NETWORK_ERROR', 'watched', 'AD_NETWORK_ERROR'],
    ['rewarded', 'ADS_NOT_SUPPORTED', 'watched', 'ADS_NOT_SUPPORTED'],
  ]
  for (const [type, scripted, action, expected] of shows) {
    it(`shows a ${type} ad, scripted ${scripted ?? 'nothing'}, ${action} → ${expected}`, () => {
      assert.equal(showResult(type, scripted, action), expected)
    })
  }

  const moves: Array<[AckStatus | null, AckStatus, 'apply' | 'replay' | 'refuse']> = [
    [null, 'granted', 'apply'],
    [null, 'failed', 'apply'],
    [null, 'revoked', 'refuse'],
    ['granted', 'revoked', 'apply'],
    ['granted', 'granted', 'replay'],
    ['granted', 'failed', 'refuse'],
    ['failed', 'failed', 'replay'],
    ['failed', 'granted', 'refuse'],
    ['failed', 'revoked', 'refuse'],
    ['revoked', 'revoked', 'replay'],
    ['revoked', 'granted', 'refuse'],
    ['revoked', 'failed', 'refuse'],
  ]
  for (const [from, to, expected] of moves) {
    it(`moves ${from ?? 'pending'} → ${to}: ${expected}`, () => {
      const decision = decideAdMove(from, to)
      assert.equal(decision.kind, expected)
      if (decision.kind === 'refuse') assert.match(decision.message, /cannot move/)
    })
  }
})
