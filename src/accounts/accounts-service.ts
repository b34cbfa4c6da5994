import type { Kysely } from 'kysely'
import { type AuditEntry, auditLog } from '../audit/audit-log.js'
import type { AccountLimits, ThrottleLimit } from '../config.js'
import { ApiError } from '../core/errors.js'
import type { SessionEnd, SessionPrincipal } from '../core/principals.js'
import type { DB } from '../db/schema.js'
import { inTransaction } from '../db/transaction.js'
import type { IdentityService } from '../identity/identity-service.js'
import { formatAmount, parseStoredAmount } from '../ledger/amounts.js'
import { hmacSha256Hex, newId, newSecret, sha256Hex, subkey } from '../lib/crypto.js'
import { accountsRepo } from './accounts-repo.js'
import { checkNewPassword, hashPassword, verifyPassword } from './passwords.js'
import { sessionEnd } from './session-end.js'
import { signinThrottle } from './throttle.js'

/** A session just begun: the token goes to the browser (once, in the cookie); only its hash is kept. */
export interface NewSession {
  token: string
  sessionId: string
  expiresAt: Date
}

/** A session begun by a sign-up or a sign-in, and whose it is. */
export interface StartedSession extends NewSession {
  userId: string
  username: string
}

export interface Credentials {
  username: string
  password: string
}

const INVALID = 'The username or the password is wrong.'
/**
 * How long a proof of the person (a sign-in, the password, a passkey) lets a session add a passkey
 * (docs/accounts.md, "Re-authentication"): long enough for one errand, short enough that a session
 * taken over later has to prove itself again.
 */
const REAUTHENTICATION_SECONDS = 300
export const suspendedUser = () =>
  new ApiError('user_suspended', "The platform's operator has suspended this account: it cannot sign in until they restore it.")

export function accountsServiceFactory(deps: {
  db: Kysely<DB>
  identity: IdentityService
  limits: AccountLimits
  /** passwords.ts's passwordPepper(PLINTH_SECRET_KEY). */
  pepper: Buffer
  /** audit-log.ts's auditChainKey(PLINTH_SECRET_KEY). */
  auditKey: Buffer
}) {
  const { db, identity, limits, pepper } = deps
  const repo = accountsRepo(db)
  const throttle = signinThrottle(db)
  const audit = auditLog(db, deps.auditKey)
  const throttledNameKey = subkey(deps.auditKey, 'plinth audit throttled name v1')

  /**
   * What the audit log names a throttled key by (`<kind>:<account or address>`). The account part is
   * whatever an anonymous caller typed: it enters the log as given only when it could be a username
   * or an address (a few safe characters, bounded); anything else (control characters, escapes, a
   * BOM, 10,000 characters) enters as `#` and a keyed hash of it, with its length.
   */
  const throttledTarget = (key: string): { target: string; given?: { hashed: true; length: number } } => {
    const at = key.indexOf(':')
    const value = key.slice(at + 1)
    if (/^[a-z0-9_]{1,32}$/.test(value) || /^[0-9a-f:.]{2,45}$/.test(value)) return { target: key }
    return {
      target: `${key.slice(0, at)}:#${hmacSha256Hex(throttledNameKey, value).slice(0, 32)}`,
      given: { hashed: true, length: [...value].length },
    }
  }

  /** Counts an attempt; the first refused in a window is written to the audit log (key: an account or an address). */
  const refuseIfOver = async (key: string, limit: ThrottleLimit): Promise<void> => {
    const verdict = await throttle.attempt(key, limit)
    if (!verdict.allowed) {
      if (verdict.first) {
        const { target, given } = throttledTarget(key)
        await inTransaction(db, (trx) =>
          audit.append(trx, {
            actor: 'platform',
            action: 'throttle-signin',
            target,
            details: { attempts: limit.attempts, window_seconds: limit.windowSeconds, ...(given === undefined ? {} : { given }) },
          }),
        )
      }
      throw new ApiError('too_many_attempts', `Too many attempts; try again in ${verdict.retryAfterSeconds} s.`).retryAfter(
        verdict.retryAfterSeconds,
      )
    }
  }

  /** Begins a session, ending the one the browser held (`replacing`, its token): a session id is never carried across a sign-in. */
  const beginSession = async (userId: string, replacing: string | undefined): Promise<NewSession> => {
    if (replacing !== undefined) await repo.revokeSessionByHash(sha256Hex(replacing))
    const token = newSecret()
    const sessionId = newId('ses')
    const expiresAt = await repo.insertSession({ id: sessionId, token_hash: sha256Hex(token), user_id: userId }, limits.sessionMaxSeconds)
    return { token, sessionId, expiresAt }
  }

  /** Stamps the session as re-authenticated now; answers until when it counts. */
  const stampReauthentication = async (principal: SessionPrincipal): Promise<Date> => {
    const at = await repo.stampReauthentication(principal.sessionId)
    if (at === undefined) throw new ApiError('session_required', 'Your session has ended; sign in again.')
    return new Date(at.getTime() + REAUTHENTICATION_SECONDS * 1000)
  }

  /**
   * Whether `password` is the signed-in person's own, counted as a sign-in attempt of the account
   * and of the address (429 too_many_attempts past either limit); a right one clears the account's
   * count. Re-authentication and a large payment's step-up (payment-step-up.ts) confirm with it.
   */
  const confirmPassword = async (principal: SessionPrincipal, password: string, address: string): Promise<boolean> => {
    const accountKey = `signin-account:${principal.username.toLowerCase()}`
    await refuseIfOver(`signin-address:${address}`, limits.signinPerAddress)
    await refuseIfOver(accountKey, limits.signinPerAccount)
    const user = await repo.findUser(principal.userId)
    if (user === undefined || !(await verifyPassword(user.password_hash, password, pepper))) return false
    await throttle.clear(accountKey)
    return true
  }

  return {
    limits,
    beginSession,
    refuseIfOver,

    /** Appends an account's act to the audit log, in the transaction that does it (passkeys.ts). */
    audit: (trx: Kysely<DB>, entry: AuditEntry) => audit.append(trx, entry),

    /** A new user with a password and a wallet (empty in production until money is issued), signed in. */
    async signup(input: Credentials, address: string, replacing: string | undefined): Promise<StartedSession> {
      await refuseIfOver(`signup-address:${address}`, limits.signupPerAddress)
      const password = await checkNewPassword(input.password, input.username)
      const user = await identity.createUser(input.username, { passwordHash: await hashPassword(password, pepper) })
      return { ...(await beginSession(user.userId, replacing)), userId: user.userId, username: user.username }
    },

    /**
     * Signs in: the same answer (401 invalid_credentials) and about the same time for an unknown
     * user, a user without a password and a wrong password. Throttled per address and per account
     * (counted whether the account exists or not) before the password is looked at.
     */
    async signin(input: Credentials, address: string, replacing: string | undefined): Promise<StartedSession> {
      const accountKey = `signin-account:${input.username.toLowerCase()}`
      await refuseIfOver(`signin-address:${address}`, limits.signinPerAddress)
      await refuseIfOver(accountKey, limits.signinPerAccount)
      const user = await repo.findUserByName(input.username)
      const ok = await verifyPassword(user?.password_hash, input.password, pepper)
      if (user === undefined || !ok) throw new ApiError('invalid_credentials', INVALID)
      await throttle.clear(accountKey)
      // Said only to someone who knows the password.
      if (user.suspended_at !== null) throw suspendedUser()
      return { ...(await beginSession(user.id, replacing)), userId: user.id, username: user.username }
    },

    /**
     * Sets a new password with a one-time link an operator issued (docs/operators.md, "Password
     * resets"): the link is used up, every session of the account ends, every passkey is removed,
     * every other link ends, and this browser is signed in. A link unknown, used or expired is 400 invalid_reset_link; attempts count per address.
     */
    async resetPassword(
      input: { token: string; password: string },
      address: string,
      replacing: string | undefined,
    ): Promise<StartedSession> {
      await refuseIfOver(`reset-address:${address}`, limits.signinPerAddress)
      const tokenHash = sha256Hex(input.token)
      const link = await repo.findResetLink(tokenHash)
      if (link === undefined)
        throw new ApiError('invalid_reset_link', 'This reset link is unknown, used or expired: ask the operator for a new one.')
      if (link.suspended_at !== null) throw suspendedUser()
      const password = await checkNewPassword(input.password, link.username)
      const passwordHash = await hashPassword(password, pepper)
      await inTransaction(db, async (trx) => {
        const txRepo = accountsRepo(trx)
        if (!(await txRepo.useResetLink(tokenHash))) {
          throw new ApiError('invalid_reset_link', 'This reset link is unknown, used or expired: ask the operator for a new one.')
        }
        await txRepo.setPasswordHash(link.user_id, passwordHash)
        await txRepo.revokeSessions(link.user_id)
        // Recovery trusts no credential the account had: whoever held it may have added a passkey, or another link.
        const passkeysRemoved = await txRepo.removePasskeys(link.user_id)
        const tokensRevoked = await txRepo.revokePersonalTokens(link.user_id)
        await txRepo.endResetLinks(link.user_id)
        await audit.append(trx, {
          actor: `user:${link.user_id}`,
          action: 'reset-password',
          target: link.username,
          details: { issued_by: link.created_by, passkeys_removed: passkeysRemoved, tokens_revoked: tokensRevoked },
        })
      })
      await throttle.clear(`signin-account:${link.username.toLowerCase()}`)
      return { ...(await beginSession(link.user_id, replacing)), userId: link.user_id, username: link.username }
    },

    /**
     * The session of a cookie's token, if it is live: a user's own request records its use (the
     * idle timeout starts again), a background one (`background`: the page's polls) does not.
     * A token of a session that is over answers why (session-end.ts); an unknown one, undefined.
     */
    async verifySession(token: string, background = false): Promise<SessionPrincipal | SessionEnd | undefined> {
      const tokenHash = sha256Hex(token)
      const row = await repo.touchSession(tokenHash, limits.sessionIdleSeconds, !background)
      if (row !== undefined) return { kind: 'session', sessionId: row.id, userId: row.user_id, username: row.username, roles: row.roles }
      const ended = await repo.endedSession(tokenHash)
      return ended === undefined ? undefined : sessionEnd(ended, limits.sessionIdleSeconds)
    },

    async signout(token: string): Promise<void> {
      await repo.revokeSessionByHash(sha256Hex(token))
    },

    /**
     * Ends every session of the account, this one included, and removes every passkey but those
     * the person named in `keep` (docs/accounts.md, "Recovery"): the panic button leaves no
     * credential behind that the person did not vouch for. Answers how many of each.
     */
    async signoutEverywhere(userId: string, keep: readonly string[] = []): Promise<{ sessions: number; passkeys: number }> {
      return inTransaction(db, async (trx) => {
        const txRepo = accountsRepo(trx)
        const ended = { sessions: await txRepo.revokeSessions(userId), passkeys: await txRepo.removePasskeys(userId, keep) }
        // The panic button: a personal access token is a credential that outlives every session.
        const tokensRevoked = await txRepo.revokePersonalTokens(userId)
        await audit.append(trx, {
          actor: `user:${userId}`,
          action: 'signout-everywhere',
          target: null,
          details: { sessions_ended: ended.sessions, passkeys_removed: ended.passkeys, tokens_revoked: tokensRevoked },
        })
        return ended
      })
    },

    /** Refuses (403 reauthentication_required) a session that has not proved its person within REAUTHENTICATION_SECONDS. */
    async requireRecentReauthentication(principal: SessionPrincipal): Promise<void> {
      if (!(await repo.reauthenticatedWithin(principal.sessionId, REAUTHENTICATION_SECONDS))) {
        throw new ApiError(
          'reauthentication_required',
          `Confirm it is you: enter your password or use a passkey (POST /account/reauthenticate), then try again within ${REAUTHENTICATION_SECONDS / 60} minutes.`,
        )
      }
    },

    stampReauthentication,

    /** Re-authenticates the session with the account's password, counted as a sign-in attempt of the account. */
    async reauthenticate(principal: SessionPrincipal, password: string, address: string): Promise<Date> {
      if (!(await confirmPassword(principal, password, address))) throw new ApiError('invalid_credentials', 'The password is wrong.')
      return stampReauthentication(principal)
    },

    confirmPassword,

    /** Ends one session of the account (audited). */
    async endSession(userId: string, sessionId: string): Promise<void> {
      await inTransaction(db, async (trx) => {
        if ((await accountsRepo(trx).revokeSessions(userId, { sessionId })) === 0) {
          throw new ApiError('not_found', 'No live session of yours has that id.')
        }
        await audit.append(trx, { actor: `user:${userId}`, action: 'end-session', target: sessionId, details: {} })
      })
    },

    sessions(userId: string) {
      return repo.liveSessions(userId, limits.sessionIdleSeconds)
    },

    /**
     * Changes the password after checking the current one (throttled as a sign-in is; the current
     * password is the re-authentication): every other session ends, every passkey but those in
     * `keep` is removed, every reset link ends, and this session is replaced by a new one.
     */
    async changePassword(
      principal: SessionPrincipal,
      input: { current: string; next: string; keep: readonly string[] },
      address: string,
      token: string,
    ): Promise<NewSession> {
      const accountKey = `signin-account:${principal.username.toLowerCase()}`
      await refuseIfOver(`signin-address:${address}`, limits.signinPerAddress)
      await refuseIfOver(accountKey, limits.signinPerAccount)
      const user = await repo.findUser(principal.userId)
      if (user === undefined || !(await verifyPassword(user.password_hash, input.current, pepper))) {
        throw new ApiError('invalid_credentials', 'The current password is wrong.')
      }
      await throttle.clear(accountKey)
      const password = await checkNewPassword(input.next, principal.username)
      const passwordHash = await hashPassword(password, pepper)
      await inTransaction(db, async (trx) => {
        const txRepo = accountsRepo(trx)
        await txRepo.setPasswordHash(principal.userId, passwordHash)
        const ended = await txRepo.revokeSessions(principal.userId, { except: principal.sessionId })
        const passkeysRemoved = await txRepo.removePasskeys(principal.userId, input.keep)
        await txRepo.endResetLinks(principal.userId)
        await audit.append(trx, {
          actor: `user:${principal.userId}`,
          action: 'change-password',
          target: principal.username,
          details: { other_sessions_ended: ended, passkeys_removed: passkeysRemoved },
        })
      })
      return beginSession(principal.userId, token)
    },

    /** The apps people can open: those with a frontend URL, verified and not suspended. */
    async directory() {
      const rows = await repo.directory(500)
      return rows.map((row) => ({
        app_id: row.id,
        name: row.name,
        url: row.url ?? '',
        description: row.description,
        icon: row.icon,
        network: row.network,
        created_at: row.created_at.toISOString(),
      }))
    },

    /** Refuses paying an app the operator suspended (403 app_suspended): no money goes to it from the page. */
    async refusePayingSuspended(userId: string, paymentId: string): Promise<void> {
      if ((await repo.paymentAppSuspended(userId, paymentId)) === true) {
        throw new ApiError('app_suspended', "The platform's operator has suspended this app: it cannot be paid.")
      }
    },

    /** Refuses an app people may not open or give tokens to: unknown (404), unverified or suspended (403). */
    async requireOpenable(appId: string): Promise<void> {
      const app = await repo.openable(appId)
      if (app === undefined) throw new ApiError('app_not_found', `No app with id ${appId}.`)
      if (app.suspended_at !== null) throw new ApiError('app_suspended', "The platform's operator has suspended this app.")
      if (app.verified_at === null) {
        throw new ApiError('app_not_verified', "The app's domain is not verified yet: its developer verifies it in the portal first.")
      }
    },

    /** The account as its owner sees it. */
    async account(principal: SessionPrincipal) {
      const user = await repo.findUser(principal.userId)
      if (user === undefined) throw new ApiError('session_required', 'Your account is gone; sign in again.')
      const consents = await repo.consents(principal.userId)
      return {
        user_id: user.id,
        username: user.username,
        roles: user.roles,
        created_at: user.created_at.toISOString(),
        has_password: user.password_hash !== null,
        wallet: {
          address: user.wallet_address,
          balance: formatAmount(parseStoredAmount(user.balance ?? '0')),
          testnet_balance: formatAmount(parseStoredAmount(user.testnet_balance ?? '0')),
        },
        consents: consents.map((c) => ({
          app_id: c.app_id,
          name: c.name,
          uid: c.uid,
          scopes: c.scopes,
          notifications_enabled: c.notifications_enabled,
          updated_at: c.updated_at.toISOString(),
        })),
      }
    },
  }
}

export type AccountsService = ReturnType<typeof accountsServiceFactory>
