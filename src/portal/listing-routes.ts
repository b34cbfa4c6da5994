import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { ListingSchema } from '../apps/listing-schema.js'
import { AppParams } from '../core/schemas.js'
import { sessionPrincipal } from '../http/auth.js'
import { errorResponses } from '../http/errors.js'
import { SESSION_SECURITY } from '../http/openapi.js'
import type { PortalListing } from './listing-service.js'
import { AppView } from './portal-app-routes.js'

/**
 * The owner's listing acts in the portal (docs/portal.md, "Listing", "Changing an app's network"):
 * ask for a Mainnet review again after a rejection, move the app to the other network. The app's
 * listing state itself is in every app view (`listing`).
 */
export function portalListingRoutes(app: FastifyInstance, deps: { listing: PortalListing }): void {
  const { listing } = deps
  const r = app.withTypeProvider<TypeBoxTypeProvider>()
  const common = { tags: ['Portal'], security: SESSION_SECURITY }
  const config = { auth: 'session', role: 'developer' } as const

  r.post(
    '/portal/apps/:app_id/listing/request',
    {
      config,
      schema: {
        ...common,
        operationId: 'portalRequestListing',
        summary: "Ask again for a rejected Mainnet app's listing review (the owner's): it is pending again",
        params: AppParams(),
        response: { 200: Type.Object({ app_id: Type.String(), listing: ListingSchema }), ...errorResponses(401, 403, 404, 409) },
      },
    },
    async (request) => listing.requestReview(sessionPrincipal(request), request.params.app_id, request.id),
  )

  r.post(
    '/portal/apps/:app_id/network',
    {
      config,
      schema: {
        ...common,
        operationId: 'portalChangeNetwork',
        summary: "Move the app to the other network (the owner's): to Mainnet it waits for a listing review",
        description:
          'Refused with 409 payments_open while any payment of the app is open (a payment stays on the network it was created on). ' +
          'The same network again changes nothing.',
        params: AppParams(),
        body: Type.Object(
          { network: Type.Union([Type.Literal('Pi Network'), Type.Literal('Pi Testnet')]) },
          { additionalProperties: false },
        ),
        response: { 200: AppView, ...errorResponses(401, 403, 404, 409, 415) },
      },
    },
    async (request) => listing.changeNetwork(sessionPrincipal(request), request.params.app_id, request.body.network, request.id),
  )
}
