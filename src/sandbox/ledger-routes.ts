import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { ApiError } from '../core/errors.js'
import { errorResponses } from '../http/errors.js'
import { ADMIN_SECURITY } from '../http/openapi.js'
import { formatAmount, parseAmountInput, STROOPS_PER_PI } from '../ledger/amounts.js'
import { isAccountId } from '../ledger/ledger-rules.js'
import type { NetworkLedgers } from '../ledger/network-ledgers.js'
import { LEDGER_NETWORKS, TESTNET } from '../ledger/networks.js'

/** The most test Pi one funding call grants: enough for any test, small enough that sums stay far from numeric(20,7)'s range. */
export const MAX_FUNDING_PI = 1_000_000n

/** The sandbox's hand on the ledger: grant test Pi and audit the books. Sandbox mode only. */
export function ledgerSandboxRoutes(app: FastifyInstance, deps: { ledgers: NetworkLedgers }): void {
  const { ledgers } = deps
  const Network = Type.Union([Type.Literal('Pi Testnet'), Type.Literal('Pi Network')], { description: 'Pi Testnet when absent' })
  const r = app.withTypeProvider<TypeBoxTypeProvider>()
  const common = { tags: ['Sandbox'], security: ADMIN_SECURITY }
  const config = { auth: 'admin' as const }

  r.post(
    '/sandbox/ledger/fund',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxFundAccount',
        summary: 'Grant test Pi to a ledger account on a network, creating the account if it does not exist',
        body: Type.Object({
          network: Type.Optional(Network),
          address: Type.String({ minLength: 1, maxLength: 100, description: 'A G… account id' }),
          amount: Type.Union([Type.String({ minLength: 1, maxLength: 40 }), Type.Number()], {
            description: `More than 0 and at most ${MAX_FUNDING_PI} Pi, at most 7 decimal places ("12.5" or 12.5)`,
          }),
        }),
        response: {
          200: Type.Object({ address: Type.String(), balance: Type.String({ description: 'The new balance, Pi with 7 places' }) }),
          ...errorResponses(401),
        },
      },
    },
    async (request) => {
      const { address, amount } = request.body
      if (!isAccountId(address)) throw new ApiError('invalid_arguments', 'body/address must be a ledger account id (G…, 56 characters).')
      const stroops = parseAmountInput(amount)
      if (stroops === undefined || stroops <= 0n || stroops > MAX_FUNDING_PI * STROOPS_PER_PI) {
        throw new ApiError(
          'invalid_arguments',
          `body/amount must be more than 0 and at most ${MAX_FUNDING_PI}, with at most 7 decimal places.`,
        )
      }
      return ledgers[request.body.network ?? TESTNET].fund(address, formatAmount(stroops))
    },
  )

  r.get(
    '/sandbox/ledger/accounts/:address',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxAccountBalances',
        summary: "An address's balance on each network's ledger (a wallet has an account on each)",
        description:
          "`/ledger` is Pi Testnet's Horizon, so the console and the sandbox page read a Pi Network wallet's balance here " +
          '(docs/ledger.md, "Two networks"). `balance` is null on a network where the address has no account.',
        params: Type.Object({ address: Type.String({ minLength: 1, maxLength: 100, description: 'A G… account id' }) }),
        response: {
          200: Type.Object({
            address: Type.String(),
            balances: Type.Array(
              Type.Object({
                network: Network,
                balance: Type.Union([Type.String({ description: 'Pi with 7 places' }), Type.Null()]),
              }),
            ),
          }),
          ...errorResponses(400, 401),
        },
      },
    },
    async (request) => {
      const { address } = request.params
      if (!isAccountId(address)) throw new ApiError('invalid_arguments', 'params/address must be a ledger account id (G…, 56 characters).')
      const balances = await Promise.all(
        LEDGER_NETWORKS.map(async (network) => ({ network, balance: (await ledgers[network].getAccount(address))?.balance ?? null })),
      )
      return { address, balances }
    },
  )

  r.get(
    '/sandbox/ledger/accounts/:address/transactions',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxAccountTransactions',
        summary: "An address's ledger transactions on one network, newest first (at most 15)",
        description:
          "What the sandbox page's wallet lists on the open app's network: `/ledger` lists Pi Testnet's only (the account API's " +
          '`/account/wallet/transactions` is the same list in production).',
        params: Type.Object({ address: Type.String({ minLength: 1, maxLength: 100, description: 'A G… account id' }) }),
        querystring: Type.Object({ network: Type.Optional(Network) }),
        response: {
          200: Type.Object({
            transactions: Type.Array(
              Type.Object({ hash: Type.String(), memo: Type.Union([Type.String(), Type.Null()]), created_at: Type.String() }),
            ),
          }),
          ...errorResponses(400, 401),
        },
      },
    },
    async (request) => {
      const { address } = request.params
      if (!isAccountId(address)) throw new ApiError('invalid_arguments', 'params/address must be a ledger account id (G…, 56 characters).')
      const list = await ledgers[request.query.network ?? TESTNET].listAccountTransactions(address, { order: 'desc', limit: 15 })
      return { transactions: list.map((tx) => ({ hash: tx.hash, memo: tx.memo, created_at: tx.createdAt.toISOString() })) }
    },
  )

  r.get(
    '/sandbox/ledger/check',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxCheckLedger',
        summary: "Check a network's ledger invariants: balances = funded - fees burned, none negative",
        querystring: Type.Object({ network: Type.Optional(Network) }),
        response: {
          200: Type.Object({
            total_balances: Type.String(),
            total_funded: Type.String(),
            total_fees: Type.String(),
            negative_balances: Type.Integer(),
            mismatched_accounts: Type.Integer({
              description: 'Accounts whose balance differs from their fundings + payments received - payments sent - fees paid',
            }),
            ok: Type.Boolean(),
          }),
          ...errorResponses(401),
        },
      },
    },
    async (request) => {
      const check = await ledgers[request.query.network ?? TESTNET].checkInvariants()
      return {
        total_balances: check.totalBalances,
        total_funded: check.totalFunded,
        total_fees: check.totalFees,
        negative_balances: check.negativeBalances,
        mismatched_accounts: check.mismatchedAccounts,
        ok: check.ok,
      }
    },
  )
}
