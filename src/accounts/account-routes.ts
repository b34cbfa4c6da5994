import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { Id, Timestamp, Username } from '../core/schemas.js'
import { SCOPES } from '../core/scopes.js'
import { sessionPrincipal } from '../http/auth.js'
import { errorResponses } from '../http/errors.js'
import { SESSION_SECURITY } from '../http/openapi.js'
import { clearSessionCookie, sessionToken, setSessionCookie } from '../http/session-cookie.js'
import type { IdentityService } from '../identity/identity-service.js'
import { PaymentDTOSchema } from '../payments/payment-dto.js'
import type { PaymentsService } from '../payments/payments-service.js'
import type { AccountsService, NewSession, StartedSession } from './accounts-service.js'
import type { PaymentStepUp } from './payment-step-up.js'

/** What a password field takes at most, in UTF-16 units: the rules (passwords.ts) then count characters. */
const Password = (description: string) => Type.String({ minLength: 1, maxLength: 512, description })
/** The passkeys a password change or sign-out everywhere keeps: every other one of the account is removed. */
const KeepPasskeys = Type.Optional(
  Type.Array(Type.String({ minLength: 1, maxLength: 1400 }), {
    maxItems: 20,
    description:
      "Ids of the account's passkeys to keep; every other passkey is removed (an id of another account keeps nothing). Omitted: every passkey is removed.",
  }),
)
export const Reauthenticated = Type.Object({
  reauthenticated_until: Timestamp('Until when this session may add a passkey without confirming again'),
})
const SignedIn = Type.Object({
  user_id: Type.String(),
  username: Type.String(),
  session_expires_at: Timestamp('When the session ends at the latest (its absolute lifetime)'),
})
const AccountView = Type.Object({
  user_id: Type.String(),
  username: Type.String(),
  roles: Type.Array(Type.String()),
  created_at: Timestamp(),
  has_password: Type.Boolean(),
  wallet: Type.Object({
    address: Type.String(),
    balance: Type.String({ description: 'π on Pi Network (Mainnet), 7 decimals' }),
    testnet_balance: Type.String({ description: 'test-π on Pi Testnet (the faucet pays it), 7 decimals' }),
  }),
  consents: Type.Array(
    Type.Object({
      app_id: Type.String(),
      name: Type.String({ description: "The app's name" }),
      uid: Type.String({ description: "The user's id in that app" }),
      scopes: Type.Array(Type.String(), { description: 'Empty once the consent is withdrawn' }),
      notifications_enabled: Type.Boolean(),
      updated_at: Timestamp(),
    }),
  ),
})

export interface AccountRoutesDeps {
  accounts: AccountsService
  identity: IdentityService
  payments: PaymentsService
  stepUp: PaymentStepUp
}

/**
 * Production's account API (docs/accounts.md): what the platform's own pages call for a person.
 * Every route is same-origin JSON only (src/http/site-guard.ts): a state-changing one refuses a
 * cross-site request and any body type but application/json, so no other page can drive it.
 */
export function accountRoutes(app: FastifyInstance, deps: AccountRoutesDeps): void {
  const { accounts, identity, payments, stepUp } = deps
  const r = app.withTypeProvider<TypeBoxTypeProvider>()
  const open = { tags: ['Account'] }
  const signedIn = { tags: ['Account'], security: SESSION_SECURITY }
  const session = { auth: 'session' } as const
  const address = (request: FastifyRequest) => request.ip
  const started = (begun: StartedSession) => ({
    user_id: begun.userId,
    username: begun.username,
    session_expires_at: begun.expiresAt.toISOString(),
  })
  const maxAge = (begun: NewSession) => (begun.expiresAt.getTime() - Date.now()) / 1000

  r.post(
    '/account/signup',
    {
      schema: {
        ...open,
        operationId: 'accountSignup',
        summary: 'Create an account with a username and a password, and sign in',
        description:
          'The password: 8 to 128 characters, not easy to guess (400 weak_password). The wallet is created with the account, empty.',
        body: Type.Object({ username: Username(), password: Password('8 to 128 characters') }, { additionalProperties: false }),
        response: { 201: SignedIn, ...errorResponses(403, 409, 415, 429) },
      },
    },
    async (request, reply) => {
      const begun = await accounts.signup(request.body, address(request), sessionToken(request))
      setSessionCookie(reply, begun.token, maxAge(begun))
      return reply.code(201).send(started(begun))
    },
  )

  r.post(
    '/account/signin',
    {
      schema: {
        ...open,
        operationId: 'accountSignin',
        summary: 'Sign in with a username and a password',
        description:
          'An unknown user and a wrong password both answer 401 invalid_credentials. Attempts are limited per account and per address (429 too_many_attempts, with Retry-After). A session the browser held ends: the cookie is always a new one.',
        body: Type.Object(
          { username: Type.String({ minLength: 1, maxLength: 64 }), password: Password('The password') },
          { additionalProperties: false },
        ),
        response: { 200: SignedIn, ...errorResponses(401, 403, 415, 429) },
      },
    },
    async (request, reply) => {
      const begun = await accounts.signin(request.body, address(request), sessionToken(request))
      setSessionCookie(reply, begun.token, maxAge(begun))
      return started(begun)
    },
  )

  r.post(
    '/account/signout',
    {
      schema: {
        ...open,
        operationId: 'accountSignout',
        summary: 'End this session (answers the same with no session)',
        response: { 200: Type.Object({ signed_out: Type.Boolean() }), ...errorResponses(403, 415) },
      },
    },
    async (request, reply) => {
      const token = sessionToken(request)
      if (token !== undefined) await accounts.signout(token)
      clearSessionCookie(reply)
      return { signed_out: true }
    },
  )

  r.post(
    '/account/signout-everywhere',
    {
      config: session,
      // No body (the panic button needs none) is an empty one: it keeps no passkey.
      preValidation: async (request) => {
        request.body ??= {}
      },
      schema: {
        ...signedIn,
        operationId: 'accountSignoutEverywhere',
        summary: 'End every session of the account, this one included, and remove every passkey not kept',
        description:
          'What a person does who fears someone else is in the account: every session ends and every passkey not named in keep_passkeys is removed, so nothing an intruder added signs in again. No body keeps no passkey.',
        body: Type.Object({ keep_passkeys: KeepPasskeys }, { additionalProperties: false }),
        response: {
          200: Type.Object({ sessions_ended: Type.Integer(), passkeys_removed: Type.Integer() }),
          ...errorResponses(401, 403, 415),
        },
      },
    },
    async (request, reply) => {
      const ended = await accounts.signoutEverywhere(sessionPrincipal(request).userId, request.body.keep_passkeys ?? [])
      clearSessionCookie(reply)
      return { sessions_ended: ended.sessions, passkeys_removed: ended.passkeys }
    },
  )

  r.get(
    '/account',
    {
      config: session,
      schema: {
        ...signedIn,
        operationId: 'accountGet',
        summary: 'The signed-in account: username, roles, wallet and balance, consents',
        response: { 200: AccountView, ...errorResponses(401) },
      },
    },
    async (request, reply) => {
      reply.header('cache-control', 'no-store')
      return accounts.account(sessionPrincipal(request))
    },
  )

  r.get(
    '/account/apps',
    {
      config: session,
      schema: {
        ...signedIn,
        operationId: 'accountAppDirectory',
        summary: 'The directory of apps people can open (a frontend URL, verified, not suspended), newest first, at most 500',
        response: {
          200: Type.Object({
            apps: Type.Array(
              Type.Object({
                app_id: Type.String(),
                name: Type.String(),
                url: Type.String(),
                description: Type.String(),
                icon: Type.Union([Type.String({ description: 'A data: URL (PNG, JPEG or WebP)' }), Type.Null()]),
                network: Type.Union([Type.Literal('Pi Network'), Type.Literal('Pi Testnet')], {
                  description: "The app's network: its payments, and the balance the platform page shows while it is open",
                }),
                created_at: Timestamp(),
              }),
            ),
          }),
          ...errorResponses(401),
        },
      },
    },
    async () => ({ apps: await accounts.directory() }),
  )

  r.get(
    '/account/sessions',
    {
      config: session,
      schema: {
        ...signedIn,
        operationId: 'accountSessions',
        summary: 'The live sessions of the account, newest first',
        response: {
          200: Type.Object({
            sessions: Type.Array(
              Type.Object({
                id: Type.String(),
                current: Type.Boolean(),
                created_at: Timestamp(),
                last_seen_at: Timestamp(),
                expires_at: Timestamp(),
              }),
            ),
          }),
          ...errorResponses(401),
        },
      },
    },
    async (request) => {
      const principal = sessionPrincipal(request)
      const rows = await accounts.sessions(principal.userId)
      return {
        sessions: rows.map((row) => ({
          id: row.id,
          current: row.id === principal.sessionId,
          created_at: row.created_at.toISOString(),
          last_seen_at: row.last_seen_at.toISOString(),
          expires_at: row.expires_at.toISOString(),
        })),
      }
    },
  )

  r.delete(
    '/account/sessions/:session_id',
    {
      config: session,
      schema: {
        ...signedIn,
        operationId: 'accountEndSession',
        summary: 'End one session of the account',
        params: Type.Object({ session_id: Id() }),
        response: { 200: Type.Object({ ended: Type.Boolean() }), ...errorResponses(401, 403, 404, 415) },
      },
    },
    async (request) => {
      await accounts.endSession(sessionPrincipal(request).userId, request.params.session_id)
      return { ended: true }
    },
  )

  r.post(
    '/account/password',
    {
      config: session,
      schema: {
        ...signedIn,
        operationId: 'accountChangePassword',
        summary:
          'Change the password: every other session ends, every passkey not kept is removed, every reset link ends, and this session is replaced',
        description:
          'The current password is the re-authentication this needs (wrong: 401 invalid_credentials, counted as a sign-in attempt). Passkeys not named in keep_passkeys are removed.',
        body: Type.Object(
          {
            current_password: Password('The password now'),
            new_password: Password('8 to 128 characters'),
            keep_passkeys: KeepPasskeys,
          },
          { additionalProperties: false },
        ),
        response: { 200: SignedIn, ...errorResponses(401, 403, 415, 429) },
      },
    },
    async (request, reply) => {
      const principal = sessionPrincipal(request)
      const token = sessionToken(request)
      if (token === undefined) throw new Error('a session route ran without its cookie')
      const begun = await accounts.changePassword(
        principal,
        { current: request.body.current_password, next: request.body.new_password, keep: request.body.keep_passkeys ?? [] },
        address(request),
        token,
      )
      setSessionCookie(reply, begun.token, maxAge(begun))
      return started({ ...begun, userId: principal.userId, username: principal.username })
    },
  )

  r.post(
    '/account/reauthenticate',
    {
      config: session,
      schema: {
        ...signedIn,
        operationId: 'accountReauthenticate',
        summary: 'Confirm it is you with the password: adding a passkey is allowed for the next five minutes',
        description:
          'Stamps this session as re-authenticated (a sign-in does too). A wrong password is 401 invalid_credentials and counts as a sign-in attempt of the account (429). POST /account/reauthenticate/passkey/options does the same with a passkey.',
        body: Type.Object({ password: Password('The password') }, { additionalProperties: false }),
        response: { 200: Reauthenticated, ...errorResponses(401, 403, 415, 429) },
      },
    },
    async (request) => {
      const until = await accounts.reauthenticate(sessionPrincipal(request), request.body.password, address(request))
      return { reauthenticated_until: until.toISOString() }
    },
  )

  r.post(
    '/account/password-reset',
    {
      schema: {
        ...open,
        operationId: 'accountResetPassword',
        summary: 'Set a new password with a one-time link an operator issued, and sign in',
        description:
          'The token is the part of the link after `#/reset/`. A link works once, until it expires or a newer link, a password change or another reset ends it (400 invalid_reset_link). Account recovery trusts nothing the account had: every session ends, every passkey is removed, every other link ends. Attempts count per address as sign-ins do (429).',
        body: Type.Object(
          { token: Type.String({ minLength: 1, maxLength: 128 }), new_password: Password('8 to 128 characters') },
          { additionalProperties: false },
        ),
        response: { 200: SignedIn, ...errorResponses(400, 403, 415, 429) },
      },
    },
    async (request, reply) => {
      const begun = await accounts.resetPassword(
        { token: request.body.token, password: request.body.new_password },
        address(request),
        sessionToken(request),
      )
      setSessionCookie(reply, begun.token, maxAge(begun))
      return started(begun)
    },
  )

  r.post(
    '/account/apps/:app_id/authenticate',
    {
      config: session,
      schema: {
        ...signedIn,
        operationId: 'accountAuthenticate',
        summary: "The user allows an app (the consent dialog): records the consent and answers the app's access token",
        description: "What the platform's page hands the app's frame, by postMessage to the app's registered origin only.",
        params: Type.Object({ app_id: Id({ description: 'The app' }) }),
        body: Type.Object({ scopes: Type.Array(Type.Union(SCOPES.map((s) => Type.Literal(s))), { maxItems: 16 }) }),
        response: {
          200: Type.Object({
            accessToken: Type.String(),
            user: Type.Object({ uid: Type.String(), username: Type.Optional(Type.String()) }),
            expires_at: Timestamp(),
          }),
          ...errorResponses(401, 403, 404, 415),
        },
      },
    },
    async (request, reply) => {
      reply.header('cache-control', 'no-store')
      await accounts.requireOpenable(request.params.app_id)
      const result = await identity.authenticate({
        appId: request.params.app_id,
        userId: sessionPrincipal(request).userId,
        scopes: request.body.scopes,
      })
      return { accessToken: result.accessToken, user: result.user, expires_at: result.expiresAt.toISOString() }
    },
  )

  r.delete(
    '/account/apps/:app_id/consent',
    {
      config: session,
      schema: {
        ...signedIn,
        operationId: 'accountWithdrawConsent',
        summary: 'Withdraw the consent given to an app: every access token of the user for it stops working',
        params: Type.Object({ app_id: Id({ description: 'The app' }) }),
        response: { 200: Type.Object({ withdrawn: Type.Boolean() }), ...errorResponses(401, 403, 404, 415) },
      },
    },
    async (request) => {
      await identity.withdrawConsent(request.params.app_id, sessionPrincipal(request).userId)
      return { withdrawn: true }
    },
  )

  const PaymentParams = Type.Object({ payment_id: Id({ description: 'The payment' }) })

  r.get(
    '/account/payments',
    {
      config: session,
      schema: {
        ...signedIn,
        operationId: 'accountPayments',
        summary: "The user's payments in every app, newest first (at most 100), each with its app's name",
        querystring: Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50 })) }),
        response: {
          200: Type.Object({ payments: Type.Array(Type.Object({ app_name: Type.String(), payment: PaymentDTOSchema })) }),
          ...errorResponses(401),
        },
      },
    },
    async (request, reply) => {
      reply.header('cache-control', 'no-store')
      const listed = await payments.listForAccount(sessionPrincipal(request).userId, request.query.limit ?? 50)
      return { payments: listed.map((entry) => ({ app_name: entry.appName, payment: entry.payment })) }
    },
  )

  r.get(
    '/account/payments/:payment_id',
    {
      config: session,
      schema: {
        ...signedIn,
        operationId: 'accountGetPayment',
        summary: "One of the user's payments, in any app, with the app's name (what the payment dialog shows)",
        params: PaymentParams,
        response: { 200: Type.Object({ app_name: Type.String(), payment: PaymentDTOSchema }), ...errorResponses(401, 404) },
      },
    },
    async (request) => {
      const found = await payments.getForAccount(sessionPrincipal(request).userId, request.params.payment_id)
      return { app_name: found.appName, payment: found.payment }
    },
  )

  r.post(
    '/account/payments/:payment_id/pay',
    {
      config: session,
      // No body at all is no password (a payment at or below the step-up amount needs none).
      preValidation: async (request) => {
        request.body ??= {}
      },
      schema: {
        ...signedIn,
        operationId: 'accountPay',
        summary: "The user confirms a payment: the platform signs it with the user's wallet and submits it to the ledger",
        description:
          'Answers the payment once its ledger transaction is applied. The only way money leaves a user in production. ' +
          'A payment above the step-up amount (PLINTH_PAYMENT_STEP_UP_AMOUNT) needs the password in this request: ' +
          'without it 403 step_up_required, wrong 403 step_up_failed (counted as a sign-in attempt); nothing is paid.',
        params: PaymentParams,
        body: Type.Object(
          { password: Type.Optional(Password("The user's password: required above the step-up amount")) },
          { additionalProperties: false },
        ),
        response: { 200: PaymentDTOSchema, ...errorResponses(401, 403, 404, 409, 415, 429, 503) },
      },
    },
    async (request) => {
      const principal = sessionPrincipal(request)
      const { userId } = principal
      await accounts.refusePayingSuspended(userId, request.params.payment_id)
      await stepUp.check(principal, request.params.payment_id, request.body.password, address(request))
      return payments.payForAccount(userId, request.params.payment_id)
    },
  )
}
