import { Type } from 'typebox'
import { collectionRoute } from './collections.js'
import type { HorizonContext } from './context.js'
import { OperationRecord, operationRecord } from './operation-record.js'
import { pageInMemory } from './paging.js'
import { TxHash } from './scopes.js'

/** Operations (all payments here) and payments. */
export function operationRoutes(ctx: HorizonContext): void {
  const { ledger, links, scopes } = ctx

  collectionRoute(ctx, {
    url: '/transactions/:hash/operations',
    operationId: 'horizonListTransactionOperations',
    summary: "A transaction's operations (payments)",
    params: Type.Object({ hash: TxHash }),
    record: OperationRecord,
    resolve: (params) => scopes.transaction(params.hash),
    // At most 100 operations a transaction: paged in memory.
    list: async (tx, page) =>
      pageInMemory(
        (await ledger.getOperations(tx.hash)).map((op) => operationRecord(links, op)),
        page,
      ),
  })
}
