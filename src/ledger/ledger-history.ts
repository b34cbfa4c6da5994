import { parseInt64Id } from '../lib/integers.js'
import { effectsOf, isPast, type LedgerEffect, parseEffectCursor } from './ledger-effects.js'
import { badParameter } from './ledger-errors.js'
import type { LedgerRepo, OperationFilter } from './ledger-repo.js'
import { toOperation } from './ledger-rows.js'
import type { LedgerOperation, PageQuery } from './ledger-types.js'
import { operationBound } from './paging-tokens.js'

const badCursor = () => badParameter('cursor', 'a paging token (an integer from 0 to 2^63 − 1)')

/** The ledger's history read as operations and effects, paged by Horizon's tokens (TOIDs; "<TOID>-<order>" for effects). */
export function ledgerHistory(repo: LedgerRepo) {
  async function operations(query: PageQuery, filter: OperationFilter, after?: readonly [bigint, bigint]): Promise<LedgerOperation[]> {
    const rows = await repo.listOperations({ order: query.order, limit: query.limit, after }, filter)
    return rows.map(toOperation)
  }

  return {
    /** Operations (payments), in TOID order, strictly after (or before) the cursor. */
    async listOperations(query: PageQuery, filter: OperationFilter = {}): Promise<LedgerOperation[]> {
      if (query.cursor === undefined) return operations(query, filter)
      const cursor = parseInt64Id(query.cursor)
      if (cursor === undefined) throw badCursor()
      return operations(query, filter, operationBound(cursor))
    },

    async getOperation(id: string): Promise<LedgerOperation | undefined> {
      const toid = parseInt64Id(id)
      if (toid === undefined) return undefined
      const [ledger, index] = operationBound(toid)
      // The TOID of an operation, not of a transaction or ledger: its low bits are 4096 + index + 1.
      if (index < 0n || index > 4094n) return undefined
      const [op] = await repo.listOperations({ order: 'asc', limit: 1, after: [ledger, index - 1n] }, { ledger: ledger.toString() })
      return op === undefined || BigInt(op.index) !== index ? undefined : toOperation(op)
    },

    /**
     * Effects, in (operation TOID, order) order, past the cursor; with `account`, only that
     * account's effects. Every operation has at least one effect of each of its accounts, so
     * limit + 1 operations (the cursor's own among them) always hold a full page.
     */
    async listEffects(query: PageQuery, filter: OperationFilter = {}): Promise<LedgerEffect[]> {
      const cursor = query.cursor === undefined ? undefined : parseEffectCursor(query.cursor)
      if (query.cursor !== undefined && cursor === undefined) throw badCursor()
      // Start at the cursor's operation itself: some of its effects may still follow the cursor.
      const start = cursor === undefined ? undefined : operationBound(cursor.operationId)
      const after = start === undefined ? undefined : ([start[0], query.order === 'asc' ? start[1] - 1n : start[1] + 1n] as const)
      const ops = await operations({ ...query, limit: query.limit + 1 }, filter, after)
      const effects = ops
        .flatMap((op) => (query.order === 'asc' ? effectsOf(op) : effectsOf(op).reverse()))
        .filter((effect) => filter.account === undefined || effect.account === filter.account)
        .filter((effect) => cursor === undefined || isPast(effect, cursor, query.order))
      return effects.slice(0, query.limit)
    },
  }
}
