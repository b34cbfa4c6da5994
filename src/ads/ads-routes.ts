import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import type { AppsService } from '../apps/apps-service.js'
import { Id, Timestamp } from '../core/schemas.js'
import { keyPrincipal, tokenPrincipal } from '../http/auth.js'
import { errorResponses } from '../http/errors.js'
import { ADMIN_SECURITY, KEY_SECURITY } from '../http/openapi.js'
import { AD_RESULTS, AD_TYPES, ADS_SCOPE } from './ad-rules.js'
import type { AdsService } from './ads-service.js'

const ACK_STATUSES = ['granted', 'revoked', 'failed'] as const
const VERDICTS = ['granted', 'failed', 'pending'] as const
const USER_ACTIONS = ['watched', 'skipped'] as const
const AdTypeSchema = Type.Enum(AD_TYPES)
const AckStatusSchema = Type.Enum(ACK_STATUSES)

const RewardedAdStatusSchema = Type.Object(
  {
    identifier: Type.String({ description: 'The adId the client SDK returned' }),
    mediator_ack_status: Type.Union([AckStatusSchema, Type.Null()], { description: 'null while the mediator has not decided' }),
    mediator_granted_at: Type.Union([Timestamp(), Type.Null()]),
    mediator_revoked_at: Type.Union([Timestamp(), Type.Null()]),
  },
  { $id: 'RewardedAdStatusDTO' },
)

const ScriptSchema = Type.Object({
  app_id: Type.String(),
  user_id: Type.Union([Type.String(), Type.Null()], { description: 'null: every user of the app without a script of their own' }),
  result: Type.Enum(AD_RESULTS),
  mediator_ack_status: Type.Enum(VERDICTS),
  remaining: Type.Union([Type.Integer(), Type.Null()], { description: 'Ads left to script; null: until changed' }),
})

export function adsRoutes(app: FastifyInstance, deps: { ads: AdsService }): void {
  const { ads } = deps
  const r = app.withTypeProvider<TypeBoxTypeProvider>()

  r.get(
    '/v2/ads_network/status/:adId',
    {
      config: { auth: 'key' },
      schema: {
        tags: ['Ads'],
        security: KEY_SECURITY,
        operationId: 'getRewardedAdStatus',
        summary: 'Check a rewarded ad before granting its reward',
        params: Type.Object({ adId: Id() }),
        response: { 200: RewardedAdStatusSchema, ...errorResponses(401, 404) },
      },
    },
    async (request) => ads.status(keyPrincipal(request).appId, request.params.adId),
  )

  const client = { tags: ['Client ads'] }
  const config = { auth: 'token', scope: ADS_SCOPE } as const
  r.post(
    '/v2/client/ads/:type/show',
    {
      config,
      preValidation: async (request) => {
        request.body ??= {}
      },
      schema: {
        ...client,
        operationId: 'clientShowAd',
        summary: 'Show an ad to the user (the client SDK’s showAd); a rewarded ad watched to the end yields an adId',
        params: Type.Object({ type: AdTypeSchema }),
        body: Type.Object({
          user_action: Type.Optional(
            Type.Enum(USER_ACTIONS, {
              description: 'What the user did with an available ad (default watched); the sandbox browser sends it',
            }),
          ),
        }),
        response: {
          200: Type.Object({ type: AdTypeSchema, result: Type.Enum(AD_RESULTS), adId: Type.Optional(Type.String()) }),
          ...errorResponses(401),
        },
      },
    },
    async (request) => ads.show(tokenPrincipal(request), request.params.type, request.body.user_action ?? 'watched'),
  )

  r.get(
    '/v2/client/ads/:type/ready',
    {
      config,
      schema: {
        ...client,
        operationId: 'clientIsAdReady',
        summary: 'Whether an ad of this type is available now (the client SDK’s isAdReady)',
        params: Type.Object({ type: AdTypeSchema }),
        response: { 200: Type.Object({ type: AdTypeSchema, ready: Type.Boolean() }), ...errorResponses(401) },
      },
    },
    async (request) => ({ type: request.params.type, ready: await ads.isReady(tokenPrincipal(request), request.params.type) }),
  )
}

export function adsSandboxRoutes(
  app: FastifyInstance,
  deps: {
    ads: AdsService
    apps: AppsService
    /** Refuses a user that does not exist (404 user_not_found). */
    requireUser: (userId: string) => Promise<void>
  },
): void {
  const { ads, apps, requireUser } = deps
  const r = app.withTypeProvider<TypeBoxTypeProvider>()
  const common = { tags: ['Sandbox'], security: ADMIN_SECURITY }
  const config = { auth: 'admin' as const }

  r.post(
    '/sandbox/ads/:adId/status',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxSetAdStatus',
        summary: "Move an ad's mediator status: pending → granted or failed, granted → revoked",
        params: Type.Object({ adId: Id() }),
        body: Type.Object({ mediator_ack_status: AckStatusSchema }),
        response: { 200: RewardedAdStatusSchema, ...errorResponses(401, 404, 409) },
      },
    },
    async (request) => ads.setStatus(request.params.adId, request.body.mediator_ack_status),
  )

  r.get(
    '/sandbox/apps/:app_id/ads/:ad_id',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxGetAdStatus',
        summary: "One ad's status, read as GET /v2/ads_network/status/{adId} reads it (a verdict that fell due is taken)",
        params: Type.Object({ app_id: Id(), ad_id: Id() }),
        response: { 200: RewardedAdStatusSchema, ...errorResponses(401, 404) },
      },
    },
    async (request) => {
      await apps.requireApp(request.params.app_id)
      return ads.status(request.params.app_id, request.params.ad_id)
    },
  )

  const ScriptBody = Type.Object({
    result: Type.Enum(AD_RESULTS),
    mediator_ack_status: Type.Optional(Type.Enum(VERDICTS)),
    count: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000, description: 'How many ads; absent: until changed' })),
  })

  for (const scope of ['app', 'user'] as const) {
    const url = scope === 'app' ? '/sandbox/apps/:app_id/ads/script' : '/sandbox/apps/:app_id/users/:user_id/ads/script'
    const params = scope === 'app' ? Type.Object({ app_id: Id() }) : Type.Object({ app_id: Id(), user_id: Id() })
    r.put(
      url,
      {
        config,
        schema: {
          ...common,
          operationId: scope === 'app' ? 'sandboxScriptAppAds' : 'sandboxScriptUserAds',
          summary: scope === 'app' ? "Choose what the app's next ads yield" : "Choose what one user's next ads in the app yield",
          params,
          body: ScriptBody,
          response: { 200: ScriptSchema, ...errorResponses(401, 404) },
        },
      },
      async (request) => {
        const { app_id, user_id } = request.params as { app_id: string; user_id?: string }
        await apps.requireApp(app_id)
        if (user_id !== undefined) await requireUser(user_id)
        return ads.setScript({
          appId: app_id,
          userId: (request.params as { user_id?: string }).user_id,
          result: request.body.result,
          mediator: request.body.mediator_ack_status ?? 'granted',
          count: request.body.count,
        })
      },
    )
    r.get(
      url,
      {
        config,
        schema: {
          ...common,
          operationId: scope === 'app' ? 'sandboxGetAppAdScript' : 'sandboxGetUserAdScript',
          summary:
            scope === 'app'
              ? "The app's ad script, if one is active (with ads left)"
              : "The ad script that decides this user's next ads: their own, else the app's",
          params,
          response: {
            200: Type.Object({
              script: Type.Union([ScriptSchema, Type.Null()]),
              applies: Type.Union([Type.Literal('user'), Type.Literal('app'), Type.Literal('none')], {
                description: "Whose script decides: the user's, the app's, or none (ads available, the user decides)",
              }),
            }),
            ...errorResponses(401, 404),
          },
        },
      },
      async (request) => {
        const { app_id, user_id } = request.params as { app_id: string; user_id?: string }
        await apps.requireApp(app_id)
        if (user_id !== undefined) await requireUser(user_id)
        return ads.activeScript(app_id, user_id)
      },
    )
    r.delete(
      url,
      {
        config,
        schema: {
          ...common,
          operationId: scope === 'app' ? 'sandboxClearAppAdScript' : 'sandboxClearUserAdScript',
          summary: 'Go back to the default: ads available, the user decides',
          params,
          response: { 200: Type.Object({ cleared: Type.Boolean() }), ...errorResponses(401) },
        },
      },
      async (request) => {
        const p = request.params as { app_id: string; user_id?: string }
        return { cleared: await ads.clearScript(p.app_id, p.user_id) }
      },
    )
  }
}
