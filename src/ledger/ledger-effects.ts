import type { LedgerOperation } from './ledger-types.js'
import { operationPagingToken } from './paging-tokens.js'

/**
 * Effects, as Horizon derives them from operations. A payment has two, in Horizon's order:
 * 1 account_credited (the receiver), 2 account_debited (the sender). A funding (test Pi from
 * the sandbox, a wallet's starting balance) is not a transaction here: it has no operation,
 * so no TOID, and makes no effect (docs/ledger.md, "Effects").
 */
export type EffectType = 'account_credited' | 'account_debited'

export const EFFECT_TYPE_I: Record<EffectType, number> = { account_credited: 2, account_debited: 3 }

export interface LedgerEffect {
  operation: LedgerOperation
  /** The operation's TOID. */
  operationId: bigint
  /** From 1, in the operation. */
  order: number
  type: EffectType
  account: string
  amount: string
}

/** Horizon's effect cursor: "<operation TOID>-<order>", or a TOID alone (after every effect of that TOID). */
export interface EffectCursor {
  operationId: bigint
  order: bigint
}

const INT64_MAX = 2n ** 63n - 1n

export function effectsOf(op: LedgerOperation): LedgerEffect[] {
  const operationId = BigInt(operationPagingToken(BigInt(op.ledger), op.applicationOrder, op.index))
  return [
    { operation: op, operationId, order: 1, type: 'account_credited', account: op.to, amount: op.amount },
    { operation: op, operationId, order: 2, type: 'account_debited', account: op.from, amount: op.amount },
  ]
}

/** Horizon's effect id: the operation's TOID on 19 digits, '-', the order on 10. */
export const effectId = (effect: LedgerEffect): string =>
  `${effect.operationId.toString().padStart(19, '0')}-${effect.order.toString().padStart(10, '0')}`

export const effectPagingToken = (effect: LedgerEffect): string => `${effect.operationId}-${effect.order}`

/** Parses an effect cursor; undefined when malformed or out of int64 (Horizon's 400 on `cursor`). */
export function parseEffectCursor(cursor: string): EffectCursor | undefined {
  const match = /^([0-9]{1,20})(?:-([0-9]{1,20}))?$/.exec(cursor)
  if (match === null) return undefined
  const operationId = BigInt(match[1] ?? '')
  // As Horizon's CursorInt64Pair: a TOID alone skips every effect of that TOID.
  const order = match[2] === undefined ? INT64_MAX : BigInt(match[2])
  if (operationId > INT64_MAX || order > INT64_MAX) return undefined
  return { operationId, order }
}

/** Whether `effect` comes strictly after (ascending) or before (descending) the cursor. */
export function isPast(effect: LedgerEffect, cursor: EffectCursor, order: 'asc' | 'desc'): boolean {
  const cmp =
    effect.operationId === cursor.operationId
      ? Math.sign(Number(BigInt(effect.order) - cursor.order))
      : effect.operationId > cursor.operationId
        ? 1
        : -1
  return order === 'asc' ? cmp > 0 : cmp < 0
}
