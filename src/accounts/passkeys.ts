import type { AuthenticationResponseJSON, AuthenticatorTransportFuture, RegistrationResponseJSON } from '@simplewebauthn/server'
import { type Kysely, sql } from 'kysely'
import { ApiError } from '../core/errors.js'
import type { SessionPrincipal } from '../core/principals.js'
import type { DB } from '../db/schema.js'
import { inTransaction } from '../db/transaction.js'
import { type AccountsService, type StartedSession, suspendedUser } from './accounts-service.js'
import { passkeyName } from './passkey-name.js'

/**
 * Passkeys (docs/accounts.md, "Passkeys"): WebAuthn registration and sign-in with
 * @simplewebauthn/server. Each ceremony's challenge is stored and used once, within five minutes.
 * Sign-in is usernameless (discoverable credentials): the credential names its account.
 *
 * The relying party is the host the page was loaded from: `rpID` its name, the expected origins
 * the platform's public origin and that host over http and https. The host check (site-guard.ts)
 * has already refused every name this server is not known by, so no other site's name can enter.
 */
export interface RelyingParty {
  rpID: string
  origins: string[]
}

const CHALLENGE_SECONDS = 300
const MAX_PASSKEYS = 20
const TRANSPORTS = new Set(['ble', 'cable', 'hybrid', 'internal', 'nfc', 'smart-card', 'usb'])

/** Loaded at first use: a second of module loading that a sandbox process never needs. */
let library: Promise<typeof import('@simplewebauthn/server')> | undefined
const webauthn = () => {
  library ??= import('@simplewebauthn/server')
  return library
}

const tooManyPasskeys = () => new ApiError('too_many_passkeys', `An account has at most ${MAX_PASSKEYS} passkeys; remove one first.`)
const unverified = () => new ApiError('invalid_credentials', 'The passkey could not be verified.')
type Purpose = 'register' | 'signin' | 'reauthenticate'
/** A stored passkey, as an assertion is checked against it. */
interface StoredPasskey {
  id: string
  public_key: string
  counter: string | number | bigint
  transports: string[]
}

export function passkeysServiceFactory(deps: { db: Kysely<DB>; accounts: AccountsService }) {
  const { db, accounts } = deps

  const storeChallenge = async (challenge: string, purpose: Purpose, userId: string | null) => {
    await db.deleteFrom('webauthn_challenges').where('expires_at', '<', sql<Date>`now()`).execute()
    await db
      .insertInto('webauthn_challenges')
      .values({ challenge, purpose, user_id: userId, expires_at: sql<Date>`now() + make_interval(secs => ${CHALLENGE_SECONDS})` })
      .execute()
  }

  /** Deletes the challenge and answers whether it was live and issued for this purpose and user: a challenge is used once. */
  const consume = (purpose: Purpose, userId: string | null) => async (challenge: string) => {
    const row = await db
      .deleteFrom('webauthn_challenges')
      .where('challenge', '=', challenge)
      .returning(['purpose', 'user_id', sql<boolean>`expires_at > now()`.as('live')])
      .executeTakeFirst()
    return row?.live === true && row.purpose === purpose && row.user_id === userId
  }

  const transports = (list: readonly string[] | undefined): AuthenticatorTransportFuture[] =>
    (list ?? []).filter((t) => TRANSPORTS.has(t)) as AuthenticatorTransportFuture[]

  /**
   * Checks an assertion against a stored passkey and a challenge issued for `purpose` (and this
   * user, for a re-authentication); records the new counter and the use. Any failure is 401.
   */
  const verifyAssertion = async (
    found: StoredPasskey,
    response: AuthenticationResponseJSON,
    rp: RelyingParty,
    purpose: Purpose,
    userId: string | null,
  ) => {
    const { verifyAuthenticationResponse } = await webauthn()
    let result: Awaited<ReturnType<typeof verifyAuthenticationResponse>>
    try {
      result = await verifyAuthenticationResponse({
        response,
        expectedChallenge: consume(purpose, userId),
        expectedOrigin: rp.origins,
        expectedRPID: rp.rpID,
        credential: {
          id: found.id,
          publicKey: new Uint8Array(Buffer.from(found.public_key, 'base64url')),
          counter: Number(found.counter),
          transports: transports(found.transports),
        },
        requireUserVerification: false,
      })
    } catch {
      throw unverified()
    }
    if (!result.verified) throw unverified()
    // A counter that did not move forward (when the authenticator keeps one) is a cloned key: refused above by the library.
    await db
      .updateTable('account_passkeys')
      .set({ counter: result.authenticationInfo.newCounter, last_used_at: sql<Date>`now()` })
      .where('id', '=', found.id)
      .execute()
  }

  return {
    async registrationOptions(principal: SessionPrincipal, rp: RelyingParty) {
      await accounts.requireRecentReauthentication(principal)
      const existing = await db
        .selectFrom('account_passkeys')
        .select(['id', 'transports'])
        .where('user_id', '=', principal.userId)
        .execute()
      if (existing.length >= MAX_PASSKEYS) throw tooManyPasskeys()
      const options = await (await webauthn()).generateRegistrationOptions({
        rpName: 'Plinth',
        rpID: rp.rpID,
        userName: principal.username,
        userID: new TextEncoder().encode(principal.userId),
        attestationType: 'none',
        excludeCredentials: existing.map((row) => ({ id: row.id, transports: transports(row.transports) })),
        authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' },
      })
      await storeChallenge(options.challenge, 'register', principal.userId)
      return options
    },

    /** Registers a passkey; the session must have re-authenticated recently, when the options were asked and now. */
    async register(principal: SessionPrincipal, response: RegistrationResponseJSON, name: string, rp: RelyingParty) {
      await accounts.requireRecentReauthentication(principal)
      const { verifyRegistrationResponse } = await webauthn()
      let verified: Awaited<ReturnType<typeof verifyRegistrationResponse>>
      try {
        verified = await verifyRegistrationResponse({
          response,
          expectedChallenge: consume('register', principal.userId),
          expectedOrigin: rp.origins,
          expectedRPID: rp.rpID,
          requireUserVerification: false,
        })
      } catch (error) {
        throw new ApiError(
          'invalid_arguments',
          `The passkey was not registered: ${error instanceof Error ? error.message : 'not a registration'}`,
        )
      }
      if (!verified.verified) throw new ApiError('invalid_arguments', 'The passkey was not registered: the response did not verify.')
      const { credential } = verified.registrationInfo
      return inTransaction(db, async (trx) => {
        // Counted under the account's row lock, where the passkey is written: ceremonies finished at once cannot pass the cap together.
        await trx.selectFrom('users').select('id').where('id', '=', principal.userId).forNoKeyUpdate().execute()
        const { count } = await trx
          .selectFrom('account_passkeys')
          .select((eb) => eb.fn.countAll<string>().as('count'))
          .where('user_id', '=', principal.userId)
          .executeTakeFirstOrThrow()
        if (Number(count) >= MAX_PASSKEYS) throw tooManyPasskeys()
        const inserted = await trx
          .insertInto('account_passkeys')
          .values({
            id: credential.id,
            user_id: principal.userId,
            public_key: Buffer.from(credential.publicKey).toString('base64url'),
            counter: credential.counter,
            transports: transports(credential.transports),
            name,
          })
          .onConflict((oc) => oc.column('id').doNothing())
          .returning(['id', 'name', 'created_at'])
          .executeTakeFirst()
        if (inserted === undefined) throw new ApiError('invalid_arguments', 'This passkey is registered already.')
        await accounts.audit(trx, {
          actor: `user:${principal.userId}`,
          action: 'add-passkey',
          target: principal.username,
          details: { passkey_id: inserted.id, name: inserted.name },
        })
        return { id: inserted.id, name: inserted.name, created_at: inserted.created_at.toISOString() }
      })
    },

    async list(userId: string) {
      const rows = await db
        .selectFrom('account_passkeys')
        .select(['id', 'name', 'created_at', 'last_used_at'])
        .where('user_id', '=', userId)
        .orderBy('created_at')
        .execute()
      return rows.map((row) => ({
        id: row.id,
        name: row.name,
        created_at: row.created_at.toISOString(),
        last_used_at: row.last_used_at?.toISOString() ?? null,
      }))
    },

    async remove(userId: string, passkeyId: string): Promise<void> {
      await inTransaction(db, async (trx) => {
        const removed = await trx
          .deleteFrom('account_passkeys')
          .where('id', '=', passkeyId)
          .where('user_id', '=', userId)
          .returning('name')
          .executeTakeFirst()
        if (removed === undefined) throw new ApiError('not_found', 'No passkey of yours has that id.')
        await accounts.audit(trx, {
          actor: `user:${userId}`,
          action: 'remove-passkey',
          target: null,
          details: { passkey_id: passkeyId, name: removed.name },
        })
      })
    },

    /** Renames one of the user's passkeys (audited); the name is normalised or refused as passkey-name.ts says. */
    async rename(principal: SessionPrincipal, passkeyId: string, requested: string) {
      const name = passkeyName(requested)
      return inTransaction(db, async (trx) => {
        const renamed = await trx
          .updateTable('account_passkeys')
          .set({ name })
          .where('id', '=', passkeyId)
          .where('user_id', '=', principal.userId)
          .returning(['id', 'name', 'created_at', 'last_used_at'])
          .executeTakeFirst()
        if (renamed === undefined) throw new ApiError('not_found', 'No passkey of yours has that id.')
        await accounts.audit(trx, {
          actor: `user:${principal.userId}`,
          action: 'rename-passkey',
          target: principal.username,
          details: { passkey_id: renamed.id, name },
        })
        return {
          id: renamed.id,
          name: renamed.name,
          created_at: renamed.created_at.toISOString(),
          last_used_at: renamed.last_used_at?.toISOString() ?? null,
        }
      })
    },

    /** Options to re-authenticate with one of the account's own passkeys (400 when it has none). */
    async reauthenticationOptions(principal: SessionPrincipal, rp: RelyingParty) {
      const own = await db.selectFrom('account_passkeys').select(['id', 'transports']).where('user_id', '=', principal.userId).execute()
      if (own.length === 0) throw new ApiError('invalid_arguments', 'This account has no passkey: confirm with the password.')
      const options = await (await webauthn()).generateAuthenticationOptions({
        rpID: rp.rpID,
        userVerification: 'preferred',
        allowCredentials: own.map((row) => ({ id: row.id, transports: transports(row.transports) })),
      })
      await storeChallenge(options.challenge, 'reauthenticate', principal.userId)
      return options
    },

    /** Re-authenticates the session with one of its account's passkeys; answers until when it counts. Any failure is 401. */
    async reauthenticate(principal: SessionPrincipal, response: AuthenticationResponseJSON, rp: RelyingParty): Promise<Date> {
      const found = await db
        .selectFrom('account_passkeys')
        .select(['id', 'public_key', 'counter', 'transports'])
        .where('id', '=', response.id)
        .where('user_id', '=', principal.userId)
        .executeTakeFirst()
      if (found === undefined) throw unverified()
      await verifyAssertion(found, response, rp, 'reauthenticate', principal.userId)
      return accounts.stampReauthentication(principal)
    },

    /** Options for a usernameless sign-in; counted against the address's sign-in attempts. */
    async signinOptions(address: string, rp: RelyingParty) {
      await accounts.refuseIfOver(`signin-address:${address}`, accounts.limits.signinPerAddress)
      const options = await (await webauthn()).generateAuthenticationOptions({ rpID: rp.rpID, userVerification: 'preferred' })
      await storeChallenge(options.challenge, 'signin', null)
      return options
    },

    /** Signs in with a passkey: its account's new session, the browser's old one ended. Any failure is 401 invalid_credentials. */
    async signin(response: AuthenticationResponseJSON, rp: RelyingParty, replacing: string | undefined): Promise<StartedSession> {
      const found = await db
        .selectFrom('account_passkeys as p')
        .innerJoin('users as u', 'u.id', 'p.user_id')
        .select(['p.id', 'p.public_key', 'p.counter', 'p.transports', 'u.id as user_id', 'u.username', 'u.suspended_at'])
        .where('p.id', '=', response.id)
        .executeTakeFirst()
      if (found === undefined) throw unverified()
      await verifyAssertion(found, response, rp, 'signin', null)
      if (found.suspended_at !== null) throw suspendedUser()
      return { ...(await accounts.beginSession(found.user_id, replacing)), userId: found.user_id, username: found.username }
    },
  }
}

export type PasskeysService = ReturnType<typeof passkeysServiceFactory>
