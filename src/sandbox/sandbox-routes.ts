import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { checkAppName, checkAppUrl, MAX_APP_NAME } from '../apps/app-rules.js'
import type { AppsService } from '../apps/apps-service.js'
import { MAX_ADVANCE_SECONDS, MAX_OFFSET_SECONDS, type PlatformClock } from '../clock/clock.js'
import { ApiError } from '../core/errors.js'
import { Id, Timestamp, Username } from '../core/schemas.js'
import { SCOPES } from '../core/scopes.js'
import { errorResponses } from '../http/errors.js'
import { ADMIN_SECURITY } from '../http/openapi.js'
import type { IdentityService } from '../identity/identity-service.js'
import { appView } from '../views/views-service.js'

const WalletSchema = Type.Object({
  address: Type.String({ description: 'Public key (G…), the ledger account' }),
  seed: Type.String({ description: 'Secret seed (S…); shown once' }),
})
const NetworkSchema = Type.Union([Type.Literal('Pi Testnet'), Type.Literal('Pi Network')])
export const AppUrl = Type.String({
  maxLength: 500,
  pattern: '^https?://[^\\s]+$',
  description: "The app's frontend URL (http or https), opened by the sandbox browser",
})
const AccessTokenString = Type.String({ minLength: 1, maxLength: 512 })
const ClockSchema = Type.Object({
  now: Type.String({ description: 'Platform time, ISO 8601 UTC' }),
  timestamp: Type.Number({ description: 'Platform time, Unix time in seconds' }),
  offset_seconds: Type.Number({ description: 'How far the platform clock is ahead of the wall clock' }),
})

export interface SandboxDeps {
  apps: AppsService
  identity: IdentityService
  clock: PlatformClock
  /** Puts the clock back on real time (clock-reset.ts); answers the platform time after. */
  resetClock: () => Promise<Date>
  maxTokenTtlSeconds: number
  /** Plinth's own origin, which an app's URL may not be on (app-rules.ts). */
  publicUrl: string
}

const AppName = Type.String({
  minLength: 1,
  maxLength: MAX_APP_NAME,
  'x-hint': `1 to ${MAX_APP_NAME} characters, shown in the sandbox and the console`,
})

function checked(result: { ok: true; value: string } | { ok: false; message: string }): string {
  if (!result.ok) throw new ApiError('invalid_arguments', result.message)
  return result.value
}

/** The platform side for developers and tests: act as the platform and as the user. Absent in production mode. */
export function sandboxRoutes(app: FastifyInstance, deps: SandboxDeps): void {
  const { apps, identity, clock } = deps
  const r = app.withTypeProvider<TypeBoxTypeProvider>()
  const common = { tags: ['Sandbox'], security: ADMIN_SECURITY }
  const config = { auth: 'admin' as const }

  r.post(
    '/sandbox/apps',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxCreateApp',
        summary: 'Create an app with a funded wallet and a first server API key',
        body: Type.Object({
          name: AppName,
          network: Type.Optional(NetworkSchema),
          url: Type.Optional(AppUrl),
        }),
        response: {
          201: Type.Object({
            app_id: Type.String(),
            name: Type.String(),
            network: NetworkSchema,
            url: Type.Union([Type.String(), Type.Null()]),
            api_key: Type.String({ description: 'Server API key; shown once' }),
            key_id: Type.String(),
            wallet: WalletSchema,
          }),
          ...errorResponses(401),
        },
      },
    },
    async (request, reply) => {
      const created = await apps.createApp({
        name: checked(checkAppName(request.body.name)),
        network: request.body.network ?? 'Pi Testnet',
        url: request.body.url === undefined ? undefined : checked(checkAppUrl(request.body.url, deps.publicUrl)),
      })
      return reply.code(201).send({
        app_id: created.app.id,
        name: created.app.name,
        network: created.app.network,
        url: created.app.url,
        api_key: created.apiKey,
        key_id: created.keyId,
        wallet: created.wallet,
      })
    },
  )

  r.patch(
    '/sandbox/apps/:app_id',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxUpdateApp',
        summary: "Edit an app's name or frontend URL (url: null removes it)",
        description:
          `The rules of creation: a name of 1 to ${MAX_APP_NAME} characters (not blank, no control characters); an absolute ` +
          "http(s) URL that is not on Plinth's own origin (localhost, 127.0.0.1 and [::1] count as one host).",
        params: Type.Object({ app_id: Id({ description: 'The app' }) }),
        body: Type.Object({ name: Type.Optional(AppName), url: Type.Optional(Type.Union([AppUrl, Type.Null()])) }),
        response: {
          200: Type.Object({
            app_id: Type.String(),
            name: Type.String(),
            network: NetworkSchema,
            url: Type.Union([Type.String(), Type.Null()]),
            wallet_address: Type.String(),
            created_at: Type.String(),
          }),
          ...errorResponses(401, 404),
        },
      },
    },
    async (request) => {
      const { name, url } = request.body
      if (name === undefined && url === undefined) throw new ApiError('invalid_arguments', 'Send name, url or both.')
      const changes: { name?: string; url?: string | null } = {}
      if (name !== undefined) changes.name = checked(checkAppName(name))
      if (url !== undefined) changes.url = url === null ? null : checked(checkAppUrl(url, deps.publicUrl))
      return appView(await apps.updateApp(request.params.app_id, changes))
    },
  )

  r.post(
    '/sandbox/apps/:app_id/keys',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxCreateKey',
        summary: 'Issue another server API key for an app (for rotation)',
        params: Type.Object({ app_id: Id({ description: 'App id' }) }),
        response: {
          201: Type.Object({ key_id: Type.String(), api_key: Type.String({ description: 'Shown once' }) }),
          ...errorResponses(401, 404),
        },
      },
    },
    async (request, reply) => {
      const { keyId, apiKey } = await apps.createKey(request.params.app_id)
      return reply.code(201).send({ key_id: keyId, api_key: apiKey })
    },
  )

  r.delete(
    '/sandbox/apps/:app_id/keys/:key_id',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxRevokeKey',
        summary: 'Revoke a server API key (idempotent)',
        params: Type.Object({ app_id: Id({ description: 'App id' }), key_id: Id({ description: 'Key id' }) }),
        response: {
          200: Type.Object({ key_id: Type.String(), revoked_at: Timestamp() }),
          ...errorResponses(401, 404),
        },
      },
    },
    async (request) => {
      const { keyId, revokedAt } = await apps.revokeKey(request.params.app_id, request.params.key_id)
      return { key_id: keyId, revoked_at: revokedAt.toISOString() }
    },
  )

  r.post(
    '/sandbox/users',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxCreateUser',
        summary: 'Create a platform user with a wallet',
        body: Type.Object({ username: Username() }),
        response: {
          201: Type.Object({ user_id: Type.String(), username: Type.String(), wallet: WalletSchema }),
          ...errorResponses(401, 409),
        },
      },
    },
    async (request, reply) => {
      const user = await identity.createUser(request.body.username)
      return reply.code(201).send({ user_id: user.userId, username: user.username, wallet: user.wallet })
    },
  )

  r.post(
    '/sandbox/apps/:app_id/authenticate',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxAuthenticate',
        summary: 'Act as the user accepting the consent dialog: record consent and issue an access token',
        params: Type.Object({ app_id: Id({ description: 'App id' }) }),
        body: Type.Object({
          user_id: Id({ description: 'Platform user id' }),
          scopes: Type.Array(Type.Union(SCOPES.map((s) => Type.Literal(s))), { maxItems: 16 }),
          expires_in: Type.Optional(
            Type.Integer({ minimum: 1, maximum: deps.maxTokenTtlSeconds, description: 'Token lifetime in seconds' }),
          ),
        }),
        response: {
          200: Type.Object({
            accessToken: Type.String(),
            user: Type.Object({ uid: Type.String(), username: Type.Optional(Type.String()) }),
            expires_at: Timestamp(),
          }),
          ...errorResponses(401, 404),
        },
      },
    },
    async (request) => {
      await apps.requireApp(request.params.app_id)
      const result = await identity.authenticate({
        appId: request.params.app_id,
        userId: request.body.user_id,
        scopes: request.body.scopes,
        expiresInSeconds: request.body.expires_in,
      })
      return { accessToken: result.accessToken, user: result.user, expires_at: result.expiresAt.toISOString() }
    },
  )

  r.post(
    '/sandbox/tokens/revoke',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxRevokeToken',
        summary: 'Revoke an access token (idempotent)',
        body: Type.Object({ accessToken: AccessTokenString }),
        response: { 200: Type.Object({ revoked: Type.Boolean() }), ...errorResponses(401, 404) },
      },
    },
    async (request) => {
      await identity.revokeAccessToken(request.body.accessToken)
      return { revoked: true }
    },
  )

  r.delete(
    '/sandbox/apps/:app_id/users/:user_id/consent',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxWithdrawConsent',
        summary: 'Act as the user withdrawing consent from an app: no scopes left, every token of the user for the app revoked',
        params: Type.Object({ app_id: Id({ description: 'App id' }), user_id: Id({ description: 'Platform user id' }) }),
        response: { 200: Type.Object({ withdrawn: Type.Boolean() }), ...errorResponses(401, 404) },
      },
    },
    async (request) => {
      await identity.withdrawConsent(request.params.app_id, request.params.user_id)
      return { withdrawn: true }
    },
  )

  const clockBody = () => {
    const now = clock.now()
    return { now: now.toISOString(), timestamp: now.getTime() / 1000, offset_seconds: clock.offsetMs() / 1000 }
  }

  r.get(
    '/sandbox/clock',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxGetClock',
        summary: 'Read the platform clock',
        response: { 200: ClockSchema, ...errorResponses(401) },
      },
    },
    async () => {
      await clock.refresh()
      return clockBody()
    },
  )

  r.post(
    '/sandbox/clock',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxAdvanceClock',
        summary: 'Move the platform clock forward for everything time-based',
        description: `At most ${MAX_ADVANCE_SECONDS} s (ten years) a move and ${MAX_OFFSET_SECONDS} s (a hundred years) ahead of the wall clock in all; never back (POST /sandbox/clock/reset returns to real time).`,
        body: Type.Object({
          advance_seconds: Type.Number({
            exclusiveMinimum: 0,
            maximum: MAX_ADVANCE_SECONDS,
            'x-hint': `in seconds: an hour is 3,600, a day 86,400; at most ${MAX_ADVANCE_SECONDS / 86_400} days (ten years) a move`,
          }),
        }),
        response: { 200: ClockSchema, ...errorResponses(400, 401) },
      },
    },
    async (request) => {
      if ((await clock.advance(request.body.advance_seconds)) === undefined) {
        await clock.refresh()
        const left = Math.max(0, MAX_OFFSET_SECONDS - clock.offsetMs() / 1000)
        throw new ApiError(
          'clock_out_of_range',
          `The platform clock may be at most ${MAX_OFFSET_SECONDS} s (${MAX_OFFSET_SECONDS / 86_400} days, a hundred years) ahead of the wall clock; it can move ${left} s (${Math.floor(left / 86_400)} days) more, or reset to real time.`,
        )
      }
      return clockBody()
    },
  )

  r.post(
    '/sandbox/clock/reset',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxResetClock',
        summary: 'Put the platform clock back on real time (offset 0)',
        description:
          'Everything the moved time decided stays decided: approvals past their window are cancelled, due ad verdicts are taken, and tokens, pending approvals and pending verdicts keep the time they had left. Idempotent.',
        response: { 200: ClockSchema, ...errorResponses(401) },
      },
    },
    async () => {
      await deps.resetClock()
      return clockBody()
    },
  )
}
