import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { Timestamp } from '../core/schemas.js'
import { sessionPrincipal } from '../http/auth.js'
import { errorResponses } from '../http/errors.js'
import { SESSION_SECURITY } from '../http/openapi.js'
import type { NetworkLedgers } from '../ledger/network-ledgers.js'
import type { AccountsService } from './accounts-service.js'

/**
 * The platform page's wallet on either network (docs/ledger.md, "Two networks"): `/ledger` is Pi
 * Testnet's Horizon, so the signed-in person's own Pi Network transactions are read here. Only
 * their own wallet's; each one's operations are read by hash under `/ledger`, which finds either
 * network's.
 */
export function walletRoutes(app: FastifyInstance, deps: { accounts: AccountsService; ledgers: NetworkLedgers }): void {
  const { accounts, ledgers } = deps
  const r = app.withTypeProvider<TypeBoxTypeProvider>()

  r.get(
    '/account/wallet/transactions',
    {
      config: { auth: 'session' },
      schema: {
        tags: ['Account'],
        security: SESSION_SECURITY,
        operationId: 'accountWalletTransactions',
        summary: "Your wallet's ledger transactions on one network, newest first (at most 15)",
        querystring: Type.Object({
          network: Type.Optional(
            Type.Union([Type.Literal('Pi Network'), Type.Literal('Pi Testnet')], {
              description: "The network whose ledger is read; Pi Network (where a person's π is) when left out",
            }),
          ),
        }),
        response: {
          200: Type.Object({
            transactions: Type.Array(
              Type.Object({ hash: Type.String(), memo: Type.Union([Type.String(), Type.Null()]), created_at: Timestamp() }),
            ),
          }),
          ...errorResponses(400, 401),
        },
      },
    },
    async (request, reply) => {
      reply.header('cache-control', 'no-store')
      const { wallet } = await accounts.account(sessionPrincipal(request))
      const list = await ledgers[request.query.network ?? 'Pi Network'].listAccountTransactions(wallet.address, {
        order: 'desc',
        limit: 15,
      })
      return { transactions: list.map((tx) => ({ hash: tx.hash, memo: tx.memo, created_at: tx.createdAt.toISOString() })) }
    },
  )
}
