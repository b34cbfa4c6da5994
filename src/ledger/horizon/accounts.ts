import { Type } from 'typebox'
import { AccountRecord, accountRecord } from './account-record.js'
import type { HorizonContext } from './context.js'
import { problems } from './problems.js'
import { AccountId } from './scopes.js'

export function accountRoutes(ctx: HorizonContext): void {
  const { r, ledger, links, scopes, tags } = ctx
  r.get(
    '/accounts/:account_id',
    {
      schema: {
        tags,
        operationId: 'horizonGetAccount',
        summary: 'An account: balance and sequence number (what stellar-sdk loadAccount reads)',
        params: Type.Object({ account_id: AccountId }),
        response: { 200: AccountRecord, ...problems(404) },
      },
    },
    async (request) => {
      const account = await scopes.account(request.params.account_id)
      const modified = account.lastModifiedLedger === '0' ? undefined : await ledger.getLedger(account.lastModifiedLedger)
      return accountRecord(links, account, modified?.closedAt ?? account.createdAt)
    },
  )
}
