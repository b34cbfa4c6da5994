import { Type } from 'typebox'
import type { OperationFilter } from '../ledger-repo.js'
import { collectionRoute } from './collections.js'
import type { HorizonContext } from './context.js'
import { EffectRecord, effectRecord } from './effect-record.js'
import { AccountId, LedgerSequence, OperationId, TxHash } from './scopes.js'

/** Effects, derived from the operations (src/ledger/ledger-effects.ts): all, and per account, ledger, transaction, operation. */
export function effectRoutes(ctx: HorizonContext): void {
  const { ledger, links, scopes } = ctx
  const list = async (filter: OperationFilter, page: Parameters<typeof ledger.listEffects>[0]) =>
    (await ledger.listEffects(page, filter)).map((effect) => effectRecord(links, effect))
  const common = { record: EffectRecord, cursor: 'effect' as const }

  collectionRoute(ctx, {
    ...common,
    url: '/effects',
    operationId: 'horizonListEffects',
    summary: 'Every effect (account_credited, account_debited), in ledger order',
    resolve: async () => undefined,
    list: (_scope, page) => list({}, page),
  })
  collectionRoute(ctx, {
    ...common,
    url: '/accounts/:account_id/effects',
    operationId: 'horizonListAccountEffects',
    summary: "An account's effects",
    params: Type.Object({ account_id: AccountId }),
    resolve: (params) => scopes.account(params.account_id),
    list: (account, page) => list({ account: account.address }, page),
  })
  collectionRoute(ctx, {
    ...common,
    url: '/ledgers/:sequence/effects',
    operationId: 'horizonListLedgerEffects',
    summary: "A ledger's effects",
    params: Type.Object({ sequence: LedgerSequence }),
    resolve: (params) => scopes.ledger(params.sequence),
    list: (summary, page) => list({ ledger: summary.sequence }, page),
  })
  collectionRoute(ctx, {
    ...common,
    url: '/transactions/:hash/effects',
    operationId: 'horizonListTransactionEffects',
    summary: "A transaction's effects",
    params: Type.Object({ hash: TxHash }),
    resolve: (params) => scopes.transaction(params.hash),
    list: (tx, page) => list({ transaction: tx.hash }, page),
  })
  collectionRoute(ctx, {
    ...common,
    url: '/operations/:id/effects',
    operationId: 'horizonListOperationEffects',
    summary: "An operation's effects",
    params: Type.Object({ id: OperationId }),
    resolve: (params) => scopes.operation(params.id),
    list: (op, page) => list({ transaction: op.transactionHash, index: op.index }, page),
  })
}
