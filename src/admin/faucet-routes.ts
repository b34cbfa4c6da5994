import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import type { Kysely } from 'kysely'
import { Type } from 'typebox'
import type { DB } from '../db/schema.js'
import { sessionPrincipal } from '../http/auth.js'
import { errorResponses } from '../http/errors.js'
import { SESSION_SECURITY } from '../http/openapi.js'
import type { Faucet } from './faucet.js'

/**
 * The platform page's "Get test-π" (docs/production.md, "Test-π from the faucet"): a signed-in
 * person asks the faucet for their own wallet, or for another address of theirs (an app's wallet,
 * a key they test with). Counted per person and per address (PLINTH_FAUCET_DAILY_PER_USER,
 * PLINTH_FAUCET_DAILY_PER_ADDRESS); same-origin JSON only, as the whole account API.
 */
export function faucetAccountRoutes(app: FastifyInstance, deps: { faucet: Faucet; db: Kysely<DB> }): void {
  const { faucet, db } = deps
  const r = app.withTypeProvider<TypeBoxTypeProvider>()

  r.post(
    '/account/faucet',
    {
      config: { auth: 'session' },
      preValidation: async (request) => {
        request.body ??= {}
      },
      schema: {
        tags: ['Account'],
        security: SESSION_SECURITY,
        operationId: 'accountFaucet',
        summary: 'Get test-π from the faucet, on Pi Testnet: into your wallet, or into addr',
        description:
          'One faucet payment of PLINTH_FAUCET_AMOUNT test-π (100 by default), issued and audited. Refused with 429 faucet_limit_reached ' +
          'past a daily limit (per person, per address), 403 faucet_not_on_network for Pi Network; a refused request moves nothing.',
        body: Type.Object(
          {
            addr: Type.Optional(
              Type.String({ minLength: 1, maxLength: 100, description: 'The account to pay (G…); your wallet when absent' }),
            ),
            network: Type.Optional(
              Type.Union([Type.Literal('Pi Testnet'), Type.Literal('Pi Network')], { description: 'Pi Testnet when absent' }),
            ),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({
            address: Type.String(),
            amount: Type.String({ description: 'Test-π paid' }),
            network: Type.String(),
            transaction: Type.String({ description: "The funding transaction's hash" }),
            ledger: Type.Integer(),
            audit_id: Type.String(),
          }),
          ...errorResponses(401, 403, 415, 429),
        },
      },
    },
    async (request) => {
      const principal = sessionPrincipal(request)
      const own = async () =>
        (await db.selectFrom('users').select('wallet_address').where('id', '=', principal.userId).executeTakeFirstOrThrow()).wallet_address
      const network = request.body.network ?? 'Pi Testnet'
      const granted = await faucet.grant({
        network,
        address: request.body.addr ?? (await own()),
        userId: principal.userId,
        requestId: request.id,
      })
      return {
        address: granted.address,
        amount: granted.amount,
        network,
        transaction: granted.transaction.hash,
        ledger: Number(granted.transaction.ledger),
        audit_id: granted.audit_id,
      }
    },
  )
}
