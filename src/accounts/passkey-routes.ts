import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { Timestamp } from '../core/schemas.js'
import { sessionPrincipal } from '../http/auth.js'
import { errorResponses } from '../http/errors.js'
import { SESSION_SECURITY } from '../http/openapi.js'
import { sessionToken, setSessionCookie } from '../http/session-cookie.js'
import { hostName } from '../http/site-guard.js'
import { Reauthenticated } from './account-routes.js'
import { PASSKEY_NAME_MAX, passkeyName } from './passkey-name.js'
import type { PasskeysService, RelyingParty } from './passkeys.js'

/** A WebAuthn response as @simplewebauthn/browser sends it; the library checks the rest. */
const WebAuthnResponse = Type.Object(
  {
    id: Type.String({ minLength: 1, maxLength: 1400 }),
    rawId: Type.String({ minLength: 1, maxLength: 1400 }),
    type: Type.Literal('public-key'),
    response: Type.Object({}, { additionalProperties: true, maxProperties: 16 }),
  },
  { additionalProperties: true, maxProperties: 16 },
)
const Options = Type.Object({}, { additionalProperties: true, description: 'WebAuthn options for @simplewebauthn/browser' })
const PasskeyView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  created_at: Timestamp(),
  last_used_at: Type.Union([Timestamp(), Type.Null()]),
})
const PasskeyParams = Type.Object({ passkey_id: Type.String({ minLength: 1, maxLength: 1400 }) })
/** A passkey's name as typed: normalised or refused by passkey-name.ts (at most PASSKEY_NAME_MAX characters once normalised). */
const PasskeyName = Type.String({
  minLength: 1,
  maxLength: 200,
  description: `1 to ${PASSKEY_NAME_MAX} characters once normalised (NFC, runs of spaces one space, trimmed); control, format and invisible characters are refused (400 invalid_arguments)`,
})
const WEBAUTHN_BODY_LIMIT = 64 * 1024

/**
 * The relying party of this request (passkeys.ts): the host the browser loaded the page from,
 * which the host check has already limited to the names this server is known by.
 */
function relyingParty(request: FastifyRequest, publicUrl: string): RelyingParty {
  const host = request.headers.host ?? new URL(publicUrl).host
  const name = hostName(host) ?? new URL(publicUrl).hostname
  return { rpID: name, origins: [new URL(publicUrl).origin, `http://${host}`, `https://${host}`] }
}

/** Passkeys: register one while signed in; sign in with one (docs/accounts.md, "Passkeys"). */
export function passkeyRoutes(app: FastifyInstance, deps: { passkeys: PasskeysService; publicUrl: string }): void {
  const { passkeys, publicUrl } = deps
  const r = app.withTypeProvider<TypeBoxTypeProvider>()
  const open = { tags: ['Account'] }
  const signedIn = { tags: ['Account'], security: SESSION_SECURITY }
  const session = { auth: 'session' } as const

  r.post(
    '/account/passkeys/options',
    {
      config: session,
      // No body at all is no name (it is given with the authenticator's response, or left out).
      preValidation: async (request) => {
        request.body ??= {}
      },
      schema: {
        ...signedIn,
        operationId: 'accountPasskeyOptions',
        summary: 'Begin registering a passkey: the options for navigator.credentials.create (startRegistration)',
        description:
          'Needs a re-authentication of this session within five minutes (a sign-in, POST /account/reauthenticate or its passkey form): otherwise 403 reauthentication_required. ' +
          'The name the passkey will get may be sent here too, to be refused before the authenticator makes a credential (it is sent again with the response).',
        body: Type.Object({ name: Type.Optional(PasskeyName) }, { additionalProperties: false }),
        response: { 200: Options, ...errorResponses(400, 401, 403, 415) },
      },
    },
    async (request) => {
      passkeyName(request.body.name)
      return passkeys.registrationOptions(sessionPrincipal(request), relyingParty(request, publicUrl))
    },
  )

  r.post(
    '/account/passkeys/verify',
    {
      config: session,
      bodyLimit: WEBAUTHN_BODY_LIMIT,
      schema: {
        ...signedIn,
        operationId: 'accountPasskeyRegister',
        summary: 'Finish registering a passkey: the authenticator’s response to the options',
        description: 'Needs the re-authentication the options needed, still within its five minutes (403 reauthentication_required).',
        body: Type.Object({ response: WebAuthnResponse, name: Type.Optional(PasskeyName) }),
        response: { 201: PasskeyView, ...errorResponses(400, 401, 403, 415) },
      },
    },
    async (request, reply) => {
      const created = await passkeys.register(
        sessionPrincipal(request),
        request.body.response as unknown as RegistrationResponseJSON,
        passkeyName(request.body.name),
        relyingParty(request, publicUrl),
      )
      return reply.code(201).send({ ...created, last_used_at: null })
    },
  )

  r.get(
    '/account/passkeys',
    {
      config: session,
      schema: {
        ...signedIn,
        operationId: 'accountPasskeys',
        summary: "The account's passkeys: each one's name, when it was added and when it last signed in or confirmed",
        response: { 200: Type.Object({ passkeys: Type.Array(PasskeyView) }), ...errorResponses(401) },
      },
    },
    async (request) => ({ passkeys: await passkeys.list(sessionPrincipal(request).userId) }),
  )

  r.patch(
    '/account/passkeys/:passkey_id',
    {
      config: session,
      schema: {
        ...signedIn,
        operationId: 'accountRenamePasskey',
        summary: 'Rename a passkey (1 to 60 characters once normalised)',
        params: PasskeyParams,
        body: Type.Object({ name: PasskeyName }, { additionalProperties: false }),
        response: { 200: PasskeyView, ...errorResponses(400, 401, 403, 404, 415) },
      },
    },
    async (request) => passkeys.rename(sessionPrincipal(request), request.params.passkey_id, request.body.name),
  )

  r.delete(
    '/account/passkeys/:passkey_id',
    {
      config: session,
      schema: {
        ...signedIn,
        operationId: 'accountRemovePasskey',
        summary: 'Remove a passkey: it signs in no more',
        description:
          'A live session is enough: removing a credential gives nobody access, and a person who finds a passkey they do not know removes it at once.',
        params: PasskeyParams,
        response: { 200: Type.Object({ removed: Type.Boolean() }), ...errorResponses(401, 403, 404, 415) },
      },
    },
    async (request) => {
      await passkeys.remove(sessionPrincipal(request).userId, request.params.passkey_id)
      return { removed: true }
    },
  )

  r.post(
    '/account/reauthenticate/passkey/options',
    {
      config: session,
      schema: {
        ...signedIn,
        operationId: 'accountReauthenticatePasskeyOptions',
        summary: 'Begin confirming it is you with one of the account’s passkeys: options for startAuthentication',
        description: 'Only the account’s own passkeys are allowed; an account with none is 400 invalid_arguments.',
        response: { 200: Options, ...errorResponses(400, 401, 403, 415) },
      },
    },
    async (request) => passkeys.reauthenticationOptions(sessionPrincipal(request), relyingParty(request, publicUrl)),
  )

  r.post(
    '/account/reauthenticate/passkey/verify',
    {
      config: session,
      bodyLimit: WEBAUTHN_BODY_LIMIT,
      schema: {
        ...signedIn,
        operationId: 'accountReauthenticatePasskey',
        summary: 'Confirm it is you with a passkey: adding a passkey is allowed for the next five minutes',
        description:
          'The assertion must answer a re-authentication challenge of this session’s account with one of its passkeys; anything else is 401 invalid_credentials.',
        body: Type.Object({ response: WebAuthnResponse }),
        response: { 200: Reauthenticated, ...errorResponses(401, 403, 415) },
      },
    },
    async (request) => {
      const until = await passkeys.reauthenticate(
        sessionPrincipal(request),
        request.body.response as unknown as AuthenticationResponseJSON,
        relyingParty(request, publicUrl),
      )
      return { reauthenticated_until: until.toISOString() }
    },
  )

  r.post(
    '/account/signin/passkey/options',
    {
      schema: {
        ...open,
        operationId: 'accountPasskeySigninOptions',
        summary: 'Begin signing in with a passkey: the options for navigator.credentials.get (startAuthentication)',
        description: 'Counted against the address’s sign-in attempts (429 too_many_attempts).',
        response: { 200: Options, ...errorResponses(403, 415, 429) },
      },
    },
    async (request) => passkeys.signinOptions(request.ip, relyingParty(request, publicUrl)),
  )

  r.post(
    '/account/signin/passkey/verify',
    {
      bodyLimit: WEBAUTHN_BODY_LIMIT,
      schema: {
        ...open,
        operationId: 'accountPasskeySignin',
        summary: 'Sign in with a passkey: the authenticator’s response; a new session, as a password sign-in gives',
        body: Type.Object({ response: WebAuthnResponse }),
        response: {
          200: Type.Object({ user_id: Type.String(), username: Type.String(), session_expires_at: Timestamp() }),
          ...errorResponses(401, 403, 415),
        },
      },
    },
    async (request, reply) => {
      const begun = await passkeys.signin(
        request.body.response as unknown as AuthenticationResponseJSON,
        relyingParty(request, publicUrl),
        sessionToken(request),
      )
      setSessionCookie(reply, begun.token, (begun.expiresAt.getTime() - Date.now()) / 1000)
      return { user_id: begun.userId, username: begun.username, session_expires_at: begun.expiresAt.toISOString() }
    },
  )
}
