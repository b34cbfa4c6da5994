import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { ListingSchema } from '../apps/listing-schema.js'
import { AppParams, Nullable, Timestamp } from '../core/schemas.js'
import { sessionPrincipal } from '../http/auth.js'
import { errorResponses } from '../http/errors.js'
import { DEVELOPER_ROUTE, PORTAL_SCHEMA } from './portal-route-shared.js'
import type { PortalService } from './portal-service.js'

export const AppView = Type.Object({
  app_id: Type.String(),
  name: Type.String(),
  network: Type.String(),
  url: Nullable(Type.String()),
  description: Type.String(),
  icon: Nullable(Type.String({ description: 'A data: URL (PNG, JPEG or WebP)' })),
  wallet_address: Type.String(),
  created_at: Timestamp(),
  role: Type.Union([Type.Literal('owner'), Type.Literal('member')]),
  validation_key: Nullable(Type.String({ description: 'Publish it at <app origin>/validation-key.txt, then verify' })),
  verified: Type.Boolean(),
  verified_at: Nullable(Timestamp()),
  verified_by: Nullable(Type.Union([Type.Literal('domain'), Type.Literal('operator')])),
  suspended: Type.Boolean({ description: "Suspended by the platform's operator: keys and tokens refused, not in the directory" }),
  listing: ListingSchema,
  request_log: Type.Boolean({ description: "Whether the app's /v2 calls are kept in its request log" }),
})
const Network = Type.Union([Type.Literal('Pi Network'), Type.Literal('Pi Testnet')])
const Icon = Type.Union([Type.String({ maxLength: 49_152, description: 'A data:image/png, image/jpeg or image/webp URL' }), Type.Null()])
const AppUrl = Type.String({
  minLength: 1,
  maxLength: 500,
  description: "The app's frontend, http(s); its origin's /validation-key.txt proves it",
})
// The schema bounds UTF-16 units; the rules (src/apps/app-rules.ts) count characters, as the descriptions say.
const AppName = Type.String({ minLength: 1, maxLength: 240, description: '1 to 60 characters, not blank, no control characters' })
const Description = Type.String({
  maxLength: 2000,
  description: 'At most 500 characters; line breaks allowed, other control characters not',
})

/**
 * An app's life in the portal: a developer registers it, lists, reads and edits it, proves its
 * domain, and reads its wallet; and a signed-in user takes the developer role where signup is open.
 */
export function portalAppRoutes(app: FastifyInstance, portal: PortalService): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>()

  r.post(
    '/portal/developer',
    {
      config: { auth: 'session' },
      schema: {
        ...PORTAL_SCHEMA,
        operationId: 'portalBecomeDeveloper',
        summary: 'Take the developer role yourself: only where PLINTH_DEVELOPER_SIGNUP=open (403 forbidden otherwise)',
        response: { 200: Type.Object({ developer: Type.Boolean(), already: Type.Boolean() }), ...errorResponses(401, 403, 415) },
      },
    },
    async (request) => portal.becomeDeveloper(sessionPrincipal(request)),
  )

  r.post(
    '/portal/apps',
    {
      config: DEVELOPER_ROUTE,
      schema: {
        ...PORTAL_SCHEMA,
        operationId: 'portalRegisterApp',
        summary: 'Register an app: owned by the caller, unverified until its domain is proven',
        description:
          'Answers the app with its validation key, its first server API key and its wallet seed, both shown once. ' +
          'The app is not in the directory and receives no tokens until POST /portal/apps/{app_id}/verify succeeds. ' +
          'A developer owns at most 50 apps (409 too_many_apps).',
        body: Type.Object(
          {
            name: AppName,
            url: AppUrl,
            network: Type.Optional(Network),
            description: Type.Optional(Description),
            icon: Type.Optional(Icon),
          },
          { additionalProperties: false },
        ),
        response: {
          201: Type.Object({
            app: AppView,
            api_key: Type.String({ description: 'Shown once' }),
            key_id: Type.String(),
            wallet_seed: Type.String({ description: "The app wallet's secret seed, shown once (A2U payments sign with it)" }),
          }),
          ...errorResponses(401, 403, 409, 415),
        },
      },
    },
    async (request, reply) => {
      const { network, ...rest } = request.body
      const created = await portal.registerApp(sessionPrincipal(request), { ...rest, network: network ?? 'Pi Network' }, request.id)
      reply.header('cache-control', 'no-store')
      return reply.code(201).send({ app: created.app, api_key: created.apiKey, key_id: created.keyId, wallet_seed: created.walletSeed })
    },
  )

  r.get(
    '/portal/apps',
    {
      config: DEVELOPER_ROUTE,
      schema: {
        ...PORTAL_SCHEMA,
        operationId: 'portalListApps',
        summary: 'The apps the caller is a member of, newest first',
        response: { 200: Type.Object({ apps: Type.Array(AppView) }), ...errorResponses(401, 403) },
      },
    },
    async (request) => ({ apps: await portal.listApps(sessionPrincipal(request)) }),
  )

  r.get(
    '/portal/apps/:app_id',
    {
      config: DEVELOPER_ROUTE,
      schema: {
        ...PORTAL_SCHEMA,
        operationId: 'portalGetApp',
        summary: "One of the caller's apps (another developer's is a 404)",
        params: AppParams(),
        response: { 200: AppView, ...errorResponses(401, 403, 404) },
      },
    },
    async (request) => portal.getApp(sessionPrincipal(request), request.params.app_id),
  )

  r.patch(
    '/portal/apps/:app_id',
    {
      config: DEVELOPER_ROUTE,
      schema: {
        ...PORTAL_SCHEMA,
        operationId: 'portalUpdateApp',
        summary:
          "Edit the app's name, URL, description or icon (a member), or turn its request log on or off (the owner); a new URL must be verified again",
        params: AppParams(),
        body: Type.Object(
          {
            name: Type.Optional(AppName),
            url: Type.Optional(AppUrl),
            description: Type.Optional(Description),
            icon: Type.Optional(Icon),
            request_log: Type.Optional(Type.Boolean({ description: "The owner's: keep the app's request log (docs/portal.md)" })),
          },
          { additionalProperties: false, minProperties: 1 },
        ),
        response: { 200: AppView, ...errorResponses(401, 403, 404, 415) },
      },
    },
    async (request) => portal.updateApp(sessionPrincipal(request), request.params.app_id, request.body, request.id),
  )

  r.post(
    '/portal/apps/:app_id/verify',
    {
      config: DEVELOPER_ROUTE,
      schema: {
        ...PORTAL_SCHEMA,
        operationId: 'portalVerifyApp',
        summary: "Fetch <app origin>/validation-key.txt and mark the app verified when it holds the app's key",
        description:
          'The fetch resolves the name itself and refuses private, loopback, link-local and metadata addresses (unless ' +
          'PLINTH_ALLOW_PRIVATE_APP_URLS=1), connects to the address it checked, sends no credentials, waits at most 5 s, ' +
          'reads at most 4 KB and follows no redirect to another origin. A refusal is 409 domain_check_failed with `reason`. ' +
          'A developer asks for at most 30 checks an hour (429 too_many_attempts, with Retry-After).',
        params: AppParams(),
        response: { 200: AppView, ...errorResponses(401, 403, 404, 409, 415, 429) },
      },
    },
    async (request) => portal.verifyDomain(sessionPrincipal(request), request.params.app_id, request.id),
  )

  r.get(
    '/portal/apps/:app_id/wallet',
    {
      config: DEVELOPER_ROUTE,
      schema: {
        ...PORTAL_SCHEMA,
        operationId: 'portalAppWallet',
        summary: "The app wallet's balance, and the ledger's list of its payments (public, Horizon-style)",
        params: AppParams(),
        response: {
          200: Type.Object({
            address: Type.String(),
            balance: Type.String({ description: 'Pi, 7 decimals' }),
            payments_url: Type.String(),
          }),
          ...errorResponses(401, 403, 404),
        },
      },
    },
    async (request) => portal.wallet(sessionPrincipal(request), request.params.app_id),
  )
}
