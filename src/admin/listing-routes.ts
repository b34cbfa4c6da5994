import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { ListingSchema } from '../apps/listing-schema.js'
import { AppParams } from '../core/schemas.js'
import { sessionPrincipal } from '../http/auth.js'
import { errorResponses } from '../http/errors.js'
import { SESSION_SECURITY } from '../http/openapi.js'
import type { ListingReview } from './listing-service.js'

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()])
const Decided = Type.Object({ app_id: Type.String(), listing: ListingSchema, audit_id: Type.String() })

/**
 * The operator's listing queue (docs/operators.md, "The listing queue"): the Mainnet apps waiting
 * for review, approve, reject with a reason. A session with the operator role; every decision is
 * in the audit log.
 */
export function listingReviewRoutes(app: FastifyInstance, deps: { review: ListingReview }): void {
  const { review } = deps
  const r = app.withTypeProvider<TypeBoxTypeProvider>()
  const common = { tags: ['Operator'], security: SESSION_SECURITY }
  const config = { auth: 'session', role: 'operator' } as const

  r.get(
    '/operator/listings',
    {
      config,
      schema: {
        ...common,
        operationId: 'operatorListingQueue',
        summary: 'The Mainnet apps waiting for a listing review, oldest request first (at most 200)',
        response: {
          200: Type.Object({
            apps: Type.Array(
              Type.Object({
                app_id: Type.String(),
                name: Type.String(),
                url: Nullable(Type.String()),
                network: Type.String(),
                description: Type.String(),
                owner: Nullable(Type.String()),
                verified: Type.Boolean(),
                suspended: Type.Boolean(),
                listing: ListingSchema,
              }),
            ),
          }),
          ...errorResponses(401, 403),
        },
      },
    },
    async () => ({ apps: await review.queue() }),
  )

  r.post(
    '/operator/apps/:app_id/listing/approve',
    {
      config,
      schema: {
        ...common,
        operationId: 'operatorApproveListing',
        summary: 'Approve a pending Mainnet app: it enters the directory and anyone may pay it or be paid by it',
        params: AppParams(),
        response: { 200: Decided, ...errorResponses(401, 403, 404, 409) },
      },
    },
    async (request) => review.approve(sessionPrincipal(request), request.params.app_id, request.id),
  )

  r.post(
    '/operator/apps/:app_id/listing/reject',
    {
      config,
      schema: {
        ...common,
        operationId: 'operatorRejectListing',
        summary: "Reject a pending Mainnet app, with a reason the app's developers see; they may ask again",
        params: AppParams(),
        body: Type.Object(
          {
            reason: Type.String({
              minLength: 1,
              maxLength: 500,
              description: "Why: shown to the app's developers, kept in the audit log. At least one visible character",
            }),
          },
          { additionalProperties: false },
        ),
        response: { 200: Decided, ...errorResponses(401, 403, 404, 409, 415) },
      },
    },
    async (request) => review.reject(sessionPrincipal(request), request.params.app_id, request.body.reason, request.id),
  )
}
