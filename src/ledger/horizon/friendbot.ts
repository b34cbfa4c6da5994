import { Type } from 'typebox'
import { ApiError } from '../../core/errors.js'
import { type HorizonProblem, LedgerError, problem } from '../ledger-errors.js'
import type { SubmittedTransaction } from '../ledger-types.js'
import type { HorizonContext } from './context.js'
import { problems } from './problems.js'
import { TransactionRecord, transactionRecord } from './transaction-record.js'

/** What pays: the faucet (src/admin/faucet.ts), bound to its network and limits by the app. */
export type Friendbot = (address: string, requestId: string) => Promise<SubmittedTransaction>

/** The faucet's refusals as Horizon problems, as friendbot renders its errors. */
function friendbotProblem(error: ApiError): HorizonProblem {
  switch (error.code) {
    case 'invalid_arguments':
      return problem('bad_request', 'The request you sent was invalid in some way.', { invalid_field: 'addr', reason: error.message })
    case 'faucet_limit_reached':
      return problem('rate_limit_exceeded', error.message)
    case 'faucet_not_on_network':
      return problem('forbidden', error.message)
    default:
      return problem('transaction_failed', error.message)
  }
}

/**
 * Stellar's friendbot (docs/ledger.md, "Friendbot"), as Stellar Quickstart serves it beside
 * Horizon: `GET /friendbot?addr=G…` (or a POST with `addr` in the form) pays the address test-π
 * and answers the funding transaction as POST /transactions answers a submission; a refusal is a
 * Horizon problem (400 for a bad address, 429 past a daily limit, 403 off Testnet) and moves nothing.
 */
export function friendbotRoutes(ctx: HorizonContext, friendbot: Friendbot): void {
  const { r, links, tags } = ctx
  const Addr = Type.String({ maxLength: 100, description: 'The account to pay (G…); an address new to the ledger is opened' })
  for (const method of ['GET', 'POST'] as const) {
    r.route({
      method,
      url: '/friendbot',
      schema: {
        tags,
        operationId: method === 'GET' ? 'horizonFriendbot' : 'horizonFriendbotForm',
        summary: 'Friendbot: pay an address test-π from the faucet (Pi Testnet; limited per day in production)',
        ...(method === 'GET' ? { querystring: Type.Object({ addr: Addr }) } : { body: Type.Object({ addr: Addr }) }),
        response: { 200: TransactionRecord, ...problems(403, 429) },
      },
      handler: async (request) => {
        const addr = (method === 'GET' ? request.query : request.body) as { addr: string }
        try {
          return transactionRecord(links, await friendbot(addr.addr, request.id))
        } catch (error) {
          // The plugin's error handler answers a LedgerError as its problem, with its status.
          throw error instanceof ApiError ? new LedgerError(friendbotProblem(error)) : error
        }
      },
    })
  }
}
