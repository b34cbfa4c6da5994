import { parseInt64Id } from '../lib/integers.js'
import { effectsOf, isPast, type LedgerEffect, parseEffectCursor } from './ledger-effects.js'
import { badParameter } from './ledger-errors.js'
import type { LedgerRepo, OperationFilter, OperationPage } from './ledger-repo.js'
import { toOperation } from './ledger-rows.js'
import type { LedgerOperation, PageQuery } from './ledger-types.js'
import { decodeToid, MAX_OPERATION_INDEX, operationPosition } from './paging-tokens.js'

const badCursor = () => badParameter('cursor', 'a paging token (an integer from 0 to 2^63 − 1)')

/** The ledger's history read as operations and effects, paged by Horizon's tokens (TOIDs; "<TOID>-<order>" for effects). */
export function ledgerHistory(repo: LedgerRepo) {
  async function operations(query: PageQuery, filter: OperationFilter, after?: OperationPage['after']): Promise<LedgerOperation[]> {
    const rows = await repo.listOperations({ order: query.order, limit: query.limit, after }, filter)
    return rows.map(toOperation)
  }

  return {
    /** Operations (payments), in TOID order, strictly after (or before) the cursor. */
    async listOperations(query: PageQuery, filter: OperationFilter = {}): Promise<LedgerOperation[]> {
      if (query.cursor === undefined) return operations(query, filter)
      const cursor = parseInt64Id(query.cursor)
      if (cursor === undefined) throw badCursor()
      return operations(query, filter, operationPosition(cursor))
    },

    async getOperation(id: string): Promise<LedgerOperation | undefined> {
      const toid = parseInt64Id(id)
      if (toid === undefined) return undefined
      const { ledger, order, operation } = decodeToid(toid)
      // The TOID of an operation, not of a transaction or ledger: its order and its operation bits are set.
      if (order === 0n || operation === 0n || operation > BigInt(MAX_OPERATION_INDEX) + 1n) return undefined
      const [op] = await operations({ order: 'asc', limit: 1 }, { ledger: ledger.toString() }, [ledger, order, operation - 1n])
      return op === undefined || BigInt(op.applicationOrder) !== order || BigInt(op.index) + 1n !== operation ? undefined : op
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
      const start = cursor === undefined ? undefined : operationPosition(cursor.operationId)
      const after = start === undefined ? undefined : ([start[0], start[1], query.order === 'asc' ? start[2] - 1n : start[2] + 1n] as const)
      const ops = await operations({ ...query, limit: query.limit + 1 }, filter, after)
      const effects = ops
        .flatMap((op) => (query.order === 'asc' ? effectsOf(op) : effectsOf(op).reverse()))
        .filter((effect) => filter.account === undefined || effect.account === filter.account)
        .filter((effect) => cursor === undefined || isPast(effect, cursor, query.order))
      return effects.slice(0, query.limit)
    },
  }
}
