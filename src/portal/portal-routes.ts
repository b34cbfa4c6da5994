import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Kysely } from 'kysely'
import { Type } from 'typebox'
import { ListingSchema } from '../apps/listing-schema.js'
import { decodeCursor, encodeCursor, page } from '../core/cursors.js'
import { Cursor, Id, PageLimit, SearchText, Timestamp, Username } from '../core/schemas.js'
import type { DB } from '../db/schema.js'
import { sessionPrincipal } from '../http/auth.js'
import { errorResponses } from '../http/errors.js'
import { SESSION_SECURITY } from '../http/openapi.js'
import { PaymentDTOSchema, PaymentStateSchema } from '../payments/payment-dto.js'
import type { MoveBy } from '../payments/payments-repo.js'
import type { PaymentsService } from '../payments/payments-service.js'
import type { RequestLog } from '../request-log/request-log.js'
import { requestLogRepo } from '../request-log/request-log-repo.js'
import { getRequest, listRequests, RequestLogEntry, RequestLogPage, RequestLogQuery } from '../request-log/request-log-routes.js'
import { paymentViewsRepo } from '../views/payment-views-repo.js'
import { paymentViewsServiceFactory } from '../views/payment-views-service.js'
import { viewsRepo } from '../views/views-repo.js'
import { viewsServiceFactory } from '../views/views-service.js'
import type { PortalService } from './portal-service.js'

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()])
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
const Params = Type.Object({ app_id: Id() })
const KeyParams = Type.Object({ app_id: Id(), key_id: Id() })
const MemberParams = Type.Object({ app_id: Id(), username: Type.String({ minLength: 1, maxLength: 64 }) })
const PaymentParams = Type.Object({ app_id: Id(), payment_id: Id() })
const StateSchema = PaymentStateSchema
const Key = Type.Object({
  key_id: Type.String(),
  name: Type.String(),
  prefix: Type.String({ description: 'The first 8 characters, to tell keys apart' }),
  created_at: Timestamp(),
  last_used_at: Nullable(Timestamp('To the minute')),
  revoked_at: Nullable(Timestamp()),
})
const Member = Type.Object({
  username: Type.String(),
  role: Type.Union([Type.Literal('owner'), Type.Literal('member')]),
  added_at: Timestamp(),
})

export interface PortalRoutesDeps {
  portal: PortalService
  db: Kysely<DB>
  publicUrl: string
  payments: Pick<PaymentsService, 'complete' | 'cancel' | 'expireDueApprovals'>
  /** This process's request log writer (undefined when PLINTH_REQUEST_LOG=off). */
  requestLog: RequestLog | undefined
}

/**
 * The developer portal's API (docs/portal.md): a signed-in developer's apps. Every route needs a
 * session with the developer role (403 forbidden without); an app's routes need membership (404
 * app_not_found for anyone else's app), and an owner's acts the owner (403 forbidden). Same-origin
 * JSON only, as the account API (src/http/site-guard.ts).
 */
export function portalRoutes(app: FastifyInstance, deps: PortalRoutesDeps): void {
  const { portal } = deps
  const r = app.withTypeProvider<TypeBoxTypeProvider>()
  const common = { tags: ['Portal'], security: SESSION_SECURITY }
  const config = { auth: 'session', role: 'developer' } as const
  const viewRepo = viewsRepo(deps.db)
  const views = viewsServiceFactory({ repo: viewRepo })
  const paymentViews = paymentViewsServiceFactory({
    repo: paymentViewsRepo(deps.db),
    views,
    payments: deps.payments,
    publicUrl: deps.publicUrl,
    requestLog: undefined,
  })
  const byPortal = (request: FastifyRequest): MoveBy => ({
    actor: 'portal',
    actorId: sessionPrincipal(request).username,
    requestId: request.id,
  })
  const member = (request: FastifyRequest & { params: { app_id: string } }, need: 'member' | 'owner' = 'member') =>
    portal.requireMember(sessionPrincipal(request), request.params.app_id, need)

  r.post(
    '/portal/developer',
    {
      config: { auth: 'session' },
      schema: {
        ...common,
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
      config,
      schema: {
        ...common,
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
      config,
      schema: {
        ...common,
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
      config,
      schema: {
        ...common,
        operationId: 'portalGetApp',
        summary: "One of the caller's apps (another developer's is a 404)",
        params: Params,
        response: { 200: AppView, ...errorResponses(401, 403, 404) },
      },
    },
    async (request) => portal.getApp(sessionPrincipal(request), request.params.app_id),
  )

  r.patch(
    '/portal/apps/:app_id',
    {
      config,
      schema: {
        ...common,
        operationId: 'portalUpdateApp',
        summary:
          "Edit the app's name, URL, description or icon (a member), or turn its request log on or off (the owner); a new URL must be verified again",
        params: Params,
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
      config,
      schema: {
        ...common,
        operationId: 'portalVerifyApp',
        summary: "Fetch <app origin>/validation-key.txt and mark the app verified when it holds the app's key",
        description:
          'The fetch resolves the name itself and refuses private, loopback, link-local and metadata addresses (unless ' +
          'PLINTH_ALLOW_PRIVATE_APP_URLS=1), connects to the address it checked, sends no credentials, waits at most 5 s, ' +
          'reads at most 4 KB and follows no redirect to another origin. A refusal is 409 domain_check_failed with `reason`. ' +
          'A developer asks for at most 30 checks an hour (429 too_many_attempts, with Retry-After).',
        params: Params,
        response: { 200: AppView, ...errorResponses(401, 403, 404, 409, 415, 429) },
      },
    },
    async (request) => portal.verifyDomain(sessionPrincipal(request), request.params.app_id, request.id),
  )

  r.get(
    '/portal/apps/:app_id/wallet',
    {
      config,
      schema: {
        ...common,
        operationId: 'portalAppWallet',
        summary: "The app wallet's balance, and the ledger's list of its payments (public, Horizon-style)",
        params: Params,
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

  r.get(
    '/portal/apps/:app_id/keys',
    {
      config,
      schema: {
        ...common,
        operationId: 'portalListKeys',
        summary: "The app's server API keys (never the keys themselves), newest first",
        params: Params,
        response: { 200: Type.Object({ keys: Type.Array(Key) }), ...errorResponses(401, 403, 404) },
      },
    },
    async (request) => ({ keys: await portal.keys(sessionPrincipal(request), request.params.app_id) }),
  )

  r.post(
    '/portal/apps/:app_id/keys',
    {
      config,
      schema: {
        ...common,
        operationId: 'portalCreateKey',
        summary: 'Make a server API key (the owner): answered once, kept as its hash',
        description: 'An app has at most 20 active keys (409 too_many_keys).',
        params: Params,
        body: Type.Object({ name: Type.Optional(Type.String({ maxLength: 60 })) }, { additionalProperties: false }),
        response: {
          201: Type.Object({ key_id: Type.String(), api_key: Type.String({ description: 'Shown once' }), name: Type.String() }),
          ...errorResponses(401, 403, 404, 409, 415),
        },
      },
    },
    async (request, reply) => {
      const name = request.body.name ?? ''
      const key = await portal.createKey(sessionPrincipal(request), request.params.app_id, name, request.id)
      reply.header('cache-control', 'no-store')
      return reply.code(201).send({ key_id: key.keyId, api_key: key.apiKey, name })
    },
  )

  r.delete(
    '/portal/apps/:app_id/keys/:key_id',
    {
      config,
      schema: {
        ...common,
        operationId: 'portalRevokeKey',
        summary: 'Revoke a server API key (the owner): refused on every process within a second',
        params: KeyParams,
        response: { 200: Type.Object({ key_id: Type.String(), revoked_at: Timestamp() }), ...errorResponses(401, 403, 404, 415) },
      },
    },
    async (request) => {
      const done = await portal.revokeKey(sessionPrincipal(request), request.params.app_id, request.params.key_id, request.id)
      return { key_id: done.keyId, revoked_at: done.revokedAt.toISOString() }
    },
  )

  r.get(
    '/portal/apps/:app_id/members',
    {
      config,
      schema: {
        ...common,
        operationId: 'portalListMembers',
        summary: "The app's owner and members",
        params: Params,
        response: { 200: Type.Object({ members: Type.Array(Member) }), ...errorResponses(401, 403, 404) },
      },
    },
    async (request) => ({ members: await portal.members(sessionPrincipal(request), request.params.app_id) }),
  )

  r.post(
    '/portal/apps/:app_id/members',
    {
      config,
      schema: {
        ...common,
        operationId: 'portalAddMember',
        summary: 'Add a member by username (the owner)',
        description:
          'The user must be a developer (409 not_a_developer), unless PLINTH_DEVELOPER_SIGNUP=invite, where this makes them one. ' +
          'An app has at most 50 members, its owner included (409 too_many_members).',
        params: Params,
        body: Type.Object({ username: Username() }, { additionalProperties: false }),
        response: {
          201: Type.Object({ username: Type.String(), role: Type.Literal('member') }),
          ...errorResponses(401, 403, 404, 409, 415),
        },
      },
    },
    async (request, reply) => {
      const added = await portal.addMember(sessionPrincipal(request), request.params.app_id, request.body.username, request.id)
      return reply.code(201).send(added)
    },
  )

  r.delete(
    '/portal/apps/:app_id/members/:username',
    {
      config,
      schema: {
        ...common,
        operationId: 'portalRemoveMember',
        summary: 'Remove a member (the owner), or leave the app (a member, naming themselves)',
        params: MemberParams,
        response: { 200: Type.Object({ removed: Type.Boolean() }), ...errorResponses(401, 403, 404, 415) },
      },
    },
    async (request) => portal.removeMember(sessionPrincipal(request), request.params.app_id, request.params.username, request.id),
  )

  r.post(
    '/portal/apps/:app_id/owner',
    {
      config,
      schema: {
        ...common,
        operationId: 'portalTransferApp',
        summary: 'Hand the app over to a member (the owner), who becomes its owner; the caller stays a member',
        description: 'A hand-over that finds the caller no longer the owner (another hand-over came first) is 409 ownership_changed.',
        params: Params,
        body: Type.Object({ username: Username() }, { additionalProperties: false }),
        response: { 200: Type.Object({ owner: Type.String() }), ...errorResponses(401, 403, 404, 409, 415) },
      },
    },
    async (request) => portal.transferOwnership(sessionPrincipal(request), request.params.app_id, request.body.username, request.id),
  )

  const iso = (at: Date | null) => at?.toISOString() ?? null
  r.get(
    '/portal/apps/:app_id/users/:uid/blocking',
    {
      config,
      schema: {
        ...common,
        operationId: 'portalUserBlocking',
        summary: "Why a user cannot pay the app now: the user's open payments with it, each with what it waits for",
        params: Type.Object({ app_id: Id(), uid: Id({ description: "The user's uid in the app" }) }),
        response: {
          200: Type.Object({
            uid: Type.String(),
            blocked: Type.Object({ user_to_app: Type.Boolean(), app_to_user: Type.Boolean() }),
            open_payments: Type.Array(Type.Object({ payment: PaymentDTOSchema, advice: Type.Object({}, { additionalProperties: true }) })),
          }),
          ...errorResponses(401, 403, 404),
        },
      },
    },
    async (request) => {
      const userId = await portal.userOfUid(sessionPrincipal(request), request.params.app_id, request.params.uid)
      const found = await paymentViews.blocking(request.params.app_id, userId)
      return { uid: request.params.uid, blocked: found.blocked, open_payments: found.open_payments }
    },
  )

  r.get(
    '/portal/apps/:app_id/ads',
    {
      config,
      schema: {
        ...common,
        operationId: 'portalListAds',
        summary: "The app's rewarded ads, newest first, with the mediator's verdicts as GET /v2/ads_network/status/{adId} answers them",
        params: Params,
        querystring: Type.Object({ limit: Type.Optional(PageLimit()) }),
        response: {
          200: Type.Object({
            ads: Type.Array(
              Type.Object({
                identifier: Type.String(),
                uid: Nullable(Type.String()),
                mediator_ack_status: Nullable(Type.String()),
                mediator_granted_at: Nullable(Timestamp()),
                mediator_revoked_at: Nullable(Timestamp()),
                created_at: Timestamp(),
              }),
            ),
          }),
          ...errorResponses(401, 403, 404),
        },
      },
    },
    async (request) => {
      await member(request)
      const rows = await viewRepo.listAds(request.params.app_id, request.query.limit ?? 50)
      return {
        ads: rows.map((a) => ({
          identifier: a.id,
          uid: a.uid,
          mediator_ack_status: a.mediator_ack_status,
          mediator_granted_at: iso(a.mediator_granted_at),
          mediator_revoked_at: iso(a.mediator_revoked_at),
          created_at: a.created_at.toISOString(),
        })),
      }
    },
  )

  r.get(
    '/portal/apps/:app_id/notifications',
    {
      config,
      schema: {
        ...common,
        operationId: 'portalListNotifications',
        summary: 'The notifications the app sent, newest first, and whether each was seen or dismissed',
        params: Params,
        querystring: Type.Object({ limit: Type.Optional(PageLimit()) }),
        response: {
          200: Type.Object({
            notifications: Type.Array(
              Type.Object({
                id: Type.String(),
                uid: Type.String(),
                title: Type.String(),
                body: Type.String(),
                subroute: Nullable(Type.String()),
                created_at: Timestamp(),
                seen_at: Nullable(Timestamp()),
                dismissed_at: Nullable(Timestamp()),
              }),
            ),
          }),
          ...errorResponses(401, 403, 404),
        },
      },
    },
    async (request) => {
      await member(request)
      const rows = await viewRepo.listNotifications(request.params.app_id, request.query.limit ?? 50)
      return {
        notifications: rows.map((n) => ({
          id: n.id,
          uid: n.user_uid,
          title: n.title,
          body: n.body,
          subroute: n.subroute,
          created_at: n.created_at.toISOString(),
          seen_at: iso(n.seen_at),
          dismissed_at: iso(n.dismissed_at),
        })),
      }
    },
  )

  const requests = requestLogRepo(deps.db)
  r.get(
    '/portal/apps/:app_id/requests',
    {
      config,
      schema: {
        ...common,
        operationId: 'portalListRequests',
        summary: "The app's request log: the /v2 calls its keys and its users' tokens made, while the log is on",
        description:
          "As the sandbox's (`GET /sandbox/apps/{app_id}/requests`): newest first, `before` pages back, `after` tails. " +
          'Bodies redacted by shape; kept 7 days, at most 10,000 entries an app (docs/portal.md, "Request log").',
        params: Params,
        querystring: RequestLogQuery,
        response: { 200: RequestLogPage, ...errorResponses(401, 403, 404) },
      },
    },
    async (request) => {
      await member(request)
      return listRequests(requests, deps.requestLog, request.params.app_id, request.query)
    },
  )

  r.get(
    '/portal/apps/:app_id/requests/:id',
    {
      config,
      schema: {
        ...common,
        operationId: 'portalGetRequest',
        summary: "One entry of the app's request log",
        params: Type.Object({ app_id: Id(), id: Type.String({ minLength: 1, maxLength: 20 }) }),
        response: { 200: RequestLogEntry, ...errorResponses(401, 403, 404) },
      },
    },
    async (request) => {
      await member(request)
      return getRequest(requests, deps.requestLog, request.params.app_id, request.params.id)
    },
  )

  const ListedPayment = Type.Object({ ...PaymentDTOSchema.properties, state: StateSchema })
  r.get(
    '/portal/apps/:app_id/payments',
    {
      config,
      schema: {
        ...common,
        operationId: 'portalListPayments',
        summary: "The app's payments, newest first: search, filter and page",
        description:
          '`q` finds a payment by its identifier or txid, its user by uid (never by username: the portal shows what the app ' +
          'was given), or a part of its memo. `before=<next_cursor>` pages back.',
        params: Params,
        querystring: Type.Object({
          q: Type.Optional(SearchText()),
          state: Type.Optional(StateSchema),
          direction: Type.Optional(Type.Union([Type.Literal('user_to_app'), Type.Literal('app_to_user')])),
          before: Type.Optional(Cursor()),
          limit: Type.Optional(PageLimit()),
        }),
        response: {
          200: Type.Object({ payments: Type.Array(ListedPayment), next_cursor: Nullable(Type.String()) }),
          ...errorResponses(401, 403, 404),
        },
      },
    },
    async (request) => {
      await member(request)
      const { app_id: appId } = request.params
      const { q, state, direction } = request.query
      const limit = request.query.limit ?? 50
      const cursor = request.query.before === undefined ? undefined : decodeCursor('before', request.query.before, 'payments', appId)
      const rows = await paymentViews.list(appId, { q, state, direction, usersBy: 'app' }, limit, cursor)
      const listed = page(rows, limit, (last) => encodeCursor('payments', appId, last.position))
      // The portal shows the app's view of its users: the uid, not the platform's id or username.
      const payments = listed.rows.map(({ payment }) => {
        const { user_id: _id, username: _name, ...shown } = payment
        return shown
      })
      return { payments, next_cursor: listed.next }
    },
  )

  r.get(
    '/portal/apps/:app_id/payments/:payment_id',
    {
      config,
      schema: {
        ...common,
        operationId: 'portalGetPayment',
        summary: 'One payment with its ledger transaction, its timeline and what it waits for',
        params: PaymentParams,
        response: {
          200: Type.Object({
            payment: PaymentDTOSchema,
            state: StateSchema,
            uid: Type.String(),
            ledger_transaction: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()]),
            timeline: Type.Array(Type.Object({}, { additionalProperties: true })),
            advice: Type.Object({}, { additionalProperties: true }),
          }),
          ...errorResponses(401, 403, 404),
        },
      },
    },
    async (request) => {
      await member(request)
      const detail = await paymentViews.detail(request.params.app_id, request.params.payment_id)
      return {
        payment: detail.payment,
        state: detail.state,
        uid: detail.user.uid,
        ledger_transaction: detail.ledger_transaction,
        timeline: detail.timeline,
        advice: detail.advice,
      }
    },
  )

  r.post(
    '/portal/apps/:app_id/payments/:payment_id/cancel',
    {
      config,
      schema: {
        ...common,
        operationId: 'portalCancelPayment',
        summary: 'Cancel a payment as the app (POST /v2/payments/{id}/cancel)',
        params: PaymentParams,
        response: { 200: PaymentDTOSchema, ...errorResponses(401, 403, 404, 409, 415) },
      },
    },
    async (request) => {
      await member(request)
      const recorded = portal.paymentMoveAudit(sessionPrincipal(request), request.params.app_id, request.id)
      return paymentViews.cancel(request.params.app_id, request.params.payment_id, byPortal(request), recorded)
    },
  )

  r.post(
    '/portal/apps/:app_id/payments/:payment_id/complete',
    {
      config,
      schema: {
        ...common,
        operationId: 'portalCompletePayment',
        summary: 'Complete a payment as the app with its txid (POST /v2/payments/{id}/complete): the ledger transaction is verified',
        params: PaymentParams,
        body: Type.Object(
          { txid: Type.String({ pattern: '^[0-9a-f]{64}$', description: 'The ledger transaction hash: 64 hex digits' }) },
          { additionalProperties: false },
        ),
        response: { 200: PaymentDTOSchema, ...errorResponses(401, 403, 404, 409, 415) },
      },
    },
    async (request) => {
      await member(request)
      return paymentViews.complete(request.params.app_id, request.params.payment_id, request.body.txid, byPortal(request))
    },
  )
}
