import { Type } from 'typebox'
import type { OperationFilter } from '../ledger-repo.js'
import { collectionRoute } from './collections.js'
import type { HorizonContext } from './context.js'
import { OperationRecord, operationRecord } from './operation-record.js'
import { problems } from './problems.js'
import { AccountId, LedgerSequence, OperationId, TxHash } from './scopes.js'

/**
 * Operations and payments. Every operation the ledger applies is a native payment, so
 * /payments and /operations list the same records (Horizon's payments are the payment-like
 * operations).
 */
export function operationRoutes(ctx: HorizonContext): void {
  const { r, ledger, links, scopes, tags } = ctx
  const list = async (filter: OperationFilter, page: Parameters<typeof ledger.listOperations>[0]) =>
    (await ledger.listOperations(page, filter)).map((op) => operationRecord(links, op))

  for (const [resource, name] of [
    ['operations', 'Operations'],
    ['payments', 'Payments'],
  ] as const) {
    collectionRoute(ctx, {
      url: `/${resource}`,
      operationId: `horizonList${name}`,
      summary: `Every ${resource === 'payments' ? 'payment' : 'operation (all are payments)'}, in ledger order`,
      record: OperationRecord,
      resolve: async () => undefined,
      list: (_scope, page) => list({}, page),
    })
    collectionRoute(ctx, {
      url: `/accounts/:account_id/${resource}`,
      operationId: `horizonListAccount${name}`,
      summary: `The ${resource} an account sent or received`,
      params: Type.Object({ account_id: AccountId }),
      record: OperationRecord,
      resolve: (params) => scopes.account(params.account_id),
      list: (account, page) => list({ account: account.address }, page),
    })
    collectionRoute(ctx, {
      url: `/ledgers/:sequence/${resource}`,
      operationId: `horizonListLedger${name}`,
      summary: `The ${resource} of one ledger`,
      params: Type.Object({ sequence: LedgerSequence }),
      record: OperationRecord,
      resolve: (params) => scopes.ledger(params.sequence),
      list: (summary, page) => list({ ledger: summary.sequence }, page),
    })
    collectionRoute(ctx, {
      url: `/transactions/:hash/${resource}`,
      operationId: `horizonListTransaction${name}`,
      summary: `A transaction's ${resource}`,
      params: Type.Object({ hash: TxHash }),
      record: OperationRecord,
      resolve: (params) => scopes.transaction(params.hash),
      list: (tx, page) => list({ transaction: tx.hash }, page),
    })
  }

  r.get(
    '/operations/:id',
    {
      schema: {
        tags,
        operationId: 'horizonGetOperation',
        summary: 'One operation by id (its paging token)',
        params: Type.Object({ id: OperationId }),
        response: { 200: OperationRecord, ...problems(404) },
      },
    },
    async (request) => operationRecord(links, await scopes.operation(request.params.id)),
  )
}
