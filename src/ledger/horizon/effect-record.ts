import { type Static, Type } from 'typebox'
import { EFFECT_TYPE_I, effectId, effectPagingToken, type LedgerEffect } from '../ledger-effects.js'
import { type HorizonLinks, isoSeconds, Links } from './links.js'
import { Amount } from './operation-record.js'

export const EffectRecord = Type.Object({
  id: Type.String({ description: 'Operation TOID (19 digits) - order (10 digits)' }),
  paging_token: Type.String({ description: '<operation TOID>-<order>' }),
  account: Type.String(),
  type: Type.Union([Type.Literal('account_credited'), Type.Literal('account_debited')]),
  type_i: Type.Integer(),
  created_at: Type.String(),
  asset_type: Type.Literal('native'),
  amount: Amount,
  _links: Links('operation', 'succeeds', 'precedes'),
})
export type EffectRecordType = Static<typeof EffectRecord>

export function effectRecord(links: HorizonLinks, effect: LedgerEffect): EffectRecordType {
  const token = effectPagingToken(effect)
  return {
    id: effectId(effect),
    paging_token: token,
    account: effect.account,
    type: effect.type,
    type_i: EFFECT_TYPE_I[effect.type],
    created_at: isoSeconds(effect.operation.createdAt),
    asset_type: 'native',
    amount: effect.amount,
    _links: {
      operation: links.link(`/operations/${effect.operationId}`),
      succeeds: links.link(`/effects?order=desc&cursor=${token}`),
      precedes: links.link(`/effects?order=asc&cursor=${token}`),
    },
  }
}
