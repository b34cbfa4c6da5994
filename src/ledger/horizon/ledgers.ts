import { Type } from 'typebox'
import { collectionRoute } from './collections.js'
import type { HorizonContext } from './context.js'
import { LedgerRecord, ledgerRecord } from './ledger-record.js'
import { problems } from './problems.js'
import { LedgerSequence } from './scopes.js'

export function ledgerRoutes(ctx: HorizonContext): void {
  const { r, ledger, links, scopes, tags } = ctx

  collectionRoute(ctx, {
    url: '/ledgers',
    operationId: 'horizonListLedgers',
    summary: 'Closed ledgers, each with the transactions closed together; ?order=desc&limit=1 is the latest',
    record: LedgerRecord,
    resolve: async () => undefined,
    list: async (_scope, page) =>
      (await ledger.listLedgers(page)).map((summary) => ledgerRecord(links, summary, ledger.maxTransactionsPerLedger)),
  })

  r.get(
    '/ledgers/:sequence',
    {
      schema: {
        tags,
        operationId: 'horizonGetLedger',
        summary: 'One closed ledger',
        params: Type.Object({ sequence: LedgerSequence }),
        response: { 200: LedgerRecord, ...problems(404) },
      },
    },
    async (request) => ledgerRecord(links, await scopes.ledger(request.params.sequence), ledger.maxTransactionsPerLedger),
  )
}
