import { type Kysely, sql } from 'kysely'
import { signinThrottle } from '../accounts/throttle.js'
import { checkAppDescription, checkAppIcon, checkAppName, checkAppUrl } from '../apps/app-rules.js'
import { type AppNetwork, appsServiceFactory, newValidationKey } from '../apps/apps-service.js'
import { listingOnRegistration, listingView } from '../apps/listing-rules.js'
import { auditLog } from '../audit/audit-log.js'
import type { Clock } from '../clock/clock.js'
import type { DeveloperSignup } from '../config.js'
import { ApiError } from '../core/errors.js'
import type { SessionPrincipal } from '../core/principals.js'
import type { DB } from '../db/schema.js'
import { inTransaction } from '../db/transaction.js'
import type { RevokedCredential } from '../identity/credential-events.js'
import { formatAmount, parseStoredAmount } from '../ledger/amounts.js'
import type { Wallets } from '../ledger/wallets.js'
import { sha256Hex } from '../lib/crypto.js'
import type { RequestLogOptIn } from '../request-log/opt-in.js'
import type { DomainCheckResult } from './domain-check.js'
import { type MemberRole, portalRepo } from './portal-repo.js'

/**
 * How many apps one developer may own, members of at most 200; keys and members per app. Each cap
 * is counted and kept in the transaction that adds, under the row lock of the parent (the owner,
 * the app): concurrent requests on any processes wait for each other there, so none passes the
 * cap (docs/portal.md).
 */
const MAX_OWNED_APPS = 50
const MAX_APPS_LISTED = 200
const MAX_ACTIVE_KEYS = 20
const MAX_MEMBERS = 50
/** Domain checks one developer may ask for in an hour. */
const DOMAIN_CHECKS = { attempts: 30, windowSeconds: 3600 }

export interface NewApp {
  name: string
  url: string
  network: AppNetwork
  description?: string | undefined
  icon?: string | null | undefined
}

export interface AppChanges {
  name?: string | undefined
  url?: string | undefined
  description?: string | undefined
  icon?: string | null | undefined
  /** The owner's: keep the app's request log (production's per-app opt-in). */
  request_log?: boolean | undefined
}

type Checked<T> = { ok: true; value: T } | { ok: false; message: string }
const valid = <T>(checked: Checked<T>): T => {
  if (!checked.ok) throw new ApiError('invalid_arguments', checked.message)
  return checked.value
}

/** An icon as the audit log records it: its SHA-256 (the data: URL itself is up to hundreds of kilobytes). */
const iconDigest = (icon: string | null): string | null => (icon === null ? null : `sha256:${sha256Hex(icon)}`)

/** The developer of a request, as the audit log names them. */
export const actorOf = (principal: SessionPrincipal): string => `user:${principal.userId}`

/**
 * The developer portal (docs/portal.md): the apps a signed-in developer is a member of, and what
 * an owner and a member may do with them. Every app-scoped call starts from the caller's
 * membership: no membership is a 404 (another developer's app is not shown to exist), and a
 * member doing an owner's act is a 403. Security-relevant acts write an audit record in the
 * transaction that does them.
 */
export function portalServiceFactory(deps: {
  db: Kysely<DB>
  clock: Clock
  wallets: Wallets
  /** audit-log.ts's auditChainKey(PLINTH_SECRET_KEY). */
  auditKey: Buffer
  publicUrl: string
  developerSignup: DeveloperSignup
  /** The domain check (domain-check.ts), bound to the platform's settings. */
  checkDomain: (appUrl: string, expectedKey: string) => Promise<DomainCheckResult>
  afterRevocation?: (revoked: RevokedCredential) => void
  /**
   * Whose request log is kept: each app's owner decides (the opt-in set, told of a change once it
   * committed), or the operator set PLINTH_REQUEST_LOG for every app (`all`, `off`).
   */
  requestLog: RequestLogOptIn | 'all' | 'off'
}) {
  const { db, clock, wallets, publicUrl } = deps
  const repo = portalRepo(db)
  const audit = auditLog(db, deps.auditKey)
  const throttle = signinThrottle(db)
  const appsIn = (trx: Kysely<DB>) => appsServiceFactory({ db: trx, clock, wallets })

  /** The app and the caller's role, or 404 when the caller is no member; 403 when `need` is owner and the caller is a member. */
  async function requireMember(principal: SessionPrincipal, appId: string, need: MemberRole = 'member') {
    const found = await repo.membership(appId, principal.userId)
    if (found === undefined) throw new ApiError('app_not_found', `No app with id ${appId} of yours.`)
    if (need === 'owner' && found.role !== 'owner') throw new ApiError('forbidden', "Only the app's owner may do this.")
    return found
  }

  /**
   * Takes the app's row lock in `trx` and checks again that the caller owns the app: a hand-over
   * takes the same lock, so one that committed since requireMember is seen here (403 forbidden),
   * and none can commit before this transaction does.
   */
  async function lockAsOwner(trx: Kysely<DB>, principal: SessionPrincipal, appId: string) {
    const txRepo = portalRepo(trx)
    await txRepo.lockApp(appId)
    if ((await txRepo.membership(appId, principal.userId))?.role !== 'owner') {
      throw new ApiError('forbidden', "Only the app's owner may do this.")
    }
    return txRepo
  }

  type Membership = Awaited<ReturnType<typeof requireMember>>
  const view = (row: Membership) => ({
    app_id: row.id,
    name: row.name,
    network: row.network,
    url: row.url,
    description: row.description,
    icon: row.icon,
    wallet_address: row.wallet_address,
    created_at: row.created_at.toISOString(),
    role: row.role,
    validation_key: row.validation_key,
    verified: row.verified_at !== null,
    verified_at: row.verified_at?.toISOString() ?? null,
    verified_by: row.verified_by,
    suspended: row.suspended_at !== null,
    listing: listingView(row),
    request_log: deps.requestLog === 'all' || (deps.requestLog !== 'off' && row.request_log),
  })

  return {
    requireMember,
    lockAsOwner,
    view,

    /** `open` sign-up: a signed-in user makes themselves a developer (audited). */
    async becomeDeveloper(principal: SessionPrincipal) {
      if (deps.developerSignup !== 'open') {
        throw new ApiError(
          'forbidden',
          "This platform's operator grants the developer role: ask them (PLINTH_DEVELOPER_SIGNUP is not open).",
        )
      }
      if (principal.roles.includes('developer')) return { developer: true, already: true }
      await inTransaction(db, async (trx) => {
        await portalRepo(trx).grantRole(principal.userId, 'developer')
        await audit.append(trx, {
          actor: actorOf(principal),
          action: 'grant-developer',
          target: principal.username,
          details: { policy: 'open' },
        })
      })
      return { developer: true, already: false }
    },

    /** Registers an app owned by the caller, unverified, with its validation key and first server API key (shown once). */
    async registerApp(principal: SessionPrincipal, input: NewApp, requestId: string) {
      const name = valid(checkAppName(input.name))
      const url = valid(checkAppUrl(input.url, publicUrl))
      const description = valid(checkAppDescription(input.description ?? ''))
      const icon = input.icon === undefined || input.icon === null ? null : valid(checkAppIcon(input.icon))
      return inTransaction(db, async (trx) => {
        const txRepo = portalRepo(trx)
        await txRepo.lockUser(principal.userId)
        if ((await txRepo.countAppsOwned(principal.userId)) >= MAX_OWNED_APPS) {
          throw new ApiError('too_many_apps', `A developer owns at most ${MAX_OWNED_APPS} apps: hand one over first.`)
        }
        const created = await appsIn(trx).createApp({
          name,
          url,
          network: input.network,
          description,
          icon,
          ownerUserId: principal.userId,
          validationKey: newValidationKey(),
          listing: listingOnRegistration(input.network),
        })
        await audit.append(trx, {
          actor: actorOf(principal),
          action: 'register-app',
          target: created.app.id,
          details: {
            name,
            url,
            network: input.network,
            ...(created.app.listing === null ? {} : { listing: created.app.listing }),
            key_id: created.keyId,
            wallet: created.wallet.address,
            request_id: requestId,
          },
        })
        return {
          app: view({ ...created.app, role: 'owner' }),
          apiKey: created.apiKey,
          keyId: created.keyId,
          walletSeed: created.wallet.seed,
        }
      })
    },

    async listApps(principal: SessionPrincipal) {
      return (await repo.appsOf(principal.userId, MAX_APPS_LISTED)).map(view)
    },

    async getApp(principal: SessionPrincipal, appId: string) {
      return view(await requireMember(principal, appId))
    },

    /** A member edits the app; a new URL must be verified again (audited, with the old and new URL). */
    async updateApp(principal: SessionPrincipal, appId: string, changes: AppChanges, requestId: string) {
      const before = await requireMember(principal, appId, changes.request_log === undefined ? 'member' : 'owner')
      const optIn = deps.requestLog
      if (changes.request_log !== undefined && typeof optIn === 'string') {
        throw new ApiError(
          'invalid_arguments',
          `The platform's operator keeps ${optIn === 'all' ? "every app's" : "no app's"} request log (PLINTH_REQUEST_LOG): it is not set per app here.`,
        )
      }
      const set = {
        ...(changes.name === undefined ? {} : { name: valid(checkAppName(changes.name)) }),
        ...(changes.url === undefined ? {} : { url: valid(checkAppUrl(changes.url, publicUrl)) }),
        ...(changes.description === undefined ? {} : { description: valid(checkAppDescription(changes.description)) }),
        ...(changes.icon === undefined ? {} : { icon: changes.icon === null ? null : valid(checkAppIcon(changes.icon)) }),
        ...(changes.request_log === undefined ? {} : { request_log: changes.request_log }),
      }
      await inTransaction(db, async (trx) => {
        await portalRepo(trx).updateApp(appId, set)
        if (set.request_log !== undefined && set.request_log !== before.request_log) {
          await audit.append(trx, {
            actor: actorOf(principal),
            action: set.request_log ? 'enable-request-log' : 'disable-request-log',
            target: appId,
            details: { request_id: requestId },
          })
        }
        // What people see of the app (its name in the directory and the payment dialog, its description, its icon): a member's change is recorded, the icon by its SHA-256.
        const shown = {
          ...(set.name === undefined || set.name === before.name ? {} : { name: { from: before.name, to: set.name } }),
          ...(set.description === undefined || set.description === before.description
            ? {}
            : { description: { from: before.description, to: set.description } }),
          ...(set.icon === undefined || set.icon === before.icon
            ? {}
            : { icon: { from: iconDigest(before.icon), to: iconDigest(set.icon) } }),
        }
        if (Object.keys(shown).length > 0) {
          await audit.append(trx, {
            actor: actorOf(principal),
            action: 'update-app',
            target: appId,
            details: { ...shown, request_id: requestId },
          })
        }
        if (set.url !== undefined && set.url !== before.url) {
          await audit.append(trx, {
            actor: actorOf(principal),
            action: 'change-app-url',
            target: appId,
            details: { from: before.url, to: set.url, request_id: requestId },
          })
        }
      })
      if (set.request_log !== undefined && typeof optIn === 'object') optIn.set(appId, set.request_log)
      return view(await requireMember(principal, appId))
    },

    /**
     * Fetches `<app origin>/validation-key.txt` (domain-check.ts: SSRF-safe) and marks the app
     * verified when it holds the app's key; otherwise 409 domain_check_failed with the reason.
     */
    async verifyDomain(principal: SessionPrincipal, appId: string, requestId: string) {
      const app = await requireMember(principal, appId)
      if (app.url === null || app.validation_key === null) throw new ApiError('invalid_arguments', 'The app has no URL to verify.')
      // Each check is a request the platform makes for the developer: counted, so it cannot be turned into a crawler.
      const verdict = await throttle.attempt(`domain-check:${principal.userId}`, DOMAIN_CHECKS)
      if (!verdict.allowed) {
        throw new ApiError('too_many_attempts', `Too many domain checks; try again in ${verdict.retryAfterSeconds} s.`).retryAfter(
          verdict.retryAfterSeconds,
        )
      }
      const result = await deps.checkDomain(app.url, app.validation_key)
      if (!result.ok) {
        throw new ApiError('domain_check_failed', result.message, { reason: result.reason, checked_url: result.url })
      }
      const url = app.url
      const marked = await inTransaction(db, async (trx) => {
        const ok = await portalRepo(trx).markVerified(appId, url)
        if (ok) {
          await audit.append(trx, {
            actor: actorOf(principal),
            action: 'verify-app-domain',
            target: appId,
            details: { url, checked_url: result.url, address: result.address, request_id: requestId },
          })
        }
        return ok
      })
      if (!marked)
        throw new ApiError('domain_check_failed', "The app's URL changed during the check: verify again.", { reason: 'url_changed' })
      return view(await requireMember(principal, appId))
    },

    /**
     * What records a member's move of one of the app's payments (the portal's cancel), in the
     * transaction that makes it: the payments service calls it with the payment it moved.
     */
    paymentMoveAudit(principal: SessionPrincipal, appId: string, requestId: string) {
      return (trx: Kysely<DB>, payment: { identifier: string; amount: string; direction: string }) =>
        audit.append(trx, {
          actor: actorOf(principal),
          action: 'cancel-payment',
          target: appId,
          details: {
            payment_id: payment.identifier,
            amount: formatAmount(parseStoredAmount(payment.amount)),
            direction: payment.direction,
            request_id: requestId,
          },
        })
    },

    /** The platform's user behind one of the app's uids (for the views that take a user), or 404 user_not_found. */
    async userOfUid(principal: SessionPrincipal, appId: string, uid: string): Promise<string> {
      await requireMember(principal, appId)
      const userId = await repo.userOfUid(appId, uid)
      if (userId === undefined) throw new ApiError('user_not_found', `No user with uid ${uid.slice(0, 64)} has signed in to this app.`)
      return userId
    },

    /** The app wallet's balance, and where its history is (the ledger's public Horizon API). */
    async wallet(principal: SessionPrincipal, appId: string) {
      const app = await requireMember(principal, appId)
      const account = await db
        .selectFrom('ledger_accounts')
        .select(sql<string>`balance::text`.as('balance'))
        // The app's money is on its network's ledger.
        .where('network', '=', app.network)
        .where('address', '=', app.wallet_address)
        .executeTakeFirst()
      return {
        address: app.wallet_address,
        balance: formatAmount(parseStoredAmount(account?.balance ?? '0')),
        payments_url: `${publicUrl}/ledger/accounts/${app.wallet_address}/payments?order=desc`,
      }
    },

    async keys(principal: SessionPrincipal, appId: string) {
      await requireMember(principal, appId)
      return (await repo.keys(appId)).map((key) => ({
        key_id: key.id,
        name: key.name,
        prefix: key.key_prefix,
        created_at: key.created_at.toISOString(),
        last_used_at: key.last_used_at?.toISOString() ?? null,
        revoked_at: key.revoked_at?.toISOString() ?? null,
      }))
    },

    /** An owner makes a server API key: answered once, kept only as its hash (audited, without the key). */
    async createKey(principal: SessionPrincipal, appId: string, name: string, requestId: string) {
      await requireMember(principal, appId, 'owner')
      return inTransaction(db, async (trx) => {
        const txRepo = await lockAsOwner(trx, principal, appId)
        if ((await txRepo.countActiveKeys(appId)) >= MAX_ACTIVE_KEYS) {
          throw new ApiError('too_many_keys', `An app has at most ${MAX_ACTIVE_KEYS} active keys: revoke one first.`)
        }
        const key = await appsIn(trx).createKey(appId, name)
        await audit.append(trx, {
          actor: actorOf(principal),
          action: 'create-key',
          target: appId,
          details: { key_id: key.keyId, name, request_id: requestId },
        })
        return key
      })
    },

    async revokeKey(principal: SessionPrincipal, appId: string, keyId: string, requestId: string) {
      await requireMember(principal, appId, 'owner')
      // The cache forgets the key once the revocation (and its audit record) committed, not before.
      const done = await inTransaction(db, async (trx) => {
        const revoked = await appsIn(trx).revokeKey(appId, keyId)
        await audit.append(trx, {
          actor: actorOf(principal),
          action: 'revoke-key',
          target: appId,
          details: { key_id: keyId, request_id: requestId },
        })
        return revoked
      })
      deps.afterRevocation?.(done.revoked)
      return { keyId: done.keyId, revokedAt: done.revokedAt }
    },

    async members(principal: SessionPrincipal, appId: string) {
      await requireMember(principal, appId)
      return (await repo.members(appId)).map((m) => ({ username: m.username, role: m.role, added_at: m.added_at.toISOString() }))
    },

    /**
     * An owner adds a user by username. The user must be a developer, or, under the `invite`
     * sign-up policy, becomes one by this (audited either way).
     */
    async addMember(principal: SessionPrincipal, appId: string, username: string, requestId: string) {
      await requireMember(principal, appId, 'owner')
      const user = await repo.findUserByName(username)
      if (user === undefined || user.suspended_at !== null)
        throw new ApiError('user_not_found', `No user named "${username.slice(0, 64)}".`)
      const isDeveloper = user.roles.includes('developer')
      if (!isDeveloper && deps.developerSignup !== 'invite') {
        throw new ApiError('not_a_developer', `${user.username} is not a developer: an operator grants the role first.`)
      }
      return inTransaction(db, async (trx) => {
        const txRepo = await lockAsOwner(trx, principal, appId)
        if ((await txRepo.countMembers(appId)) >= MAX_MEMBERS) {
          throw new ApiError('too_many_members', `An app has at most ${MAX_MEMBERS} members, its owner included.`)
        }
        if (!(await txRepo.addMember(appId, user.id))) throw new ApiError('member_exists', `${user.username} is a member already.`)
        if (!isDeveloper) await txRepo.grantRole(user.id, 'developer')
        await audit.append(trx, {
          actor: actorOf(principal),
          action: 'add-member',
          target: appId,
          details: { username: user.username, user_id: user.id, developer_granted: !isDeveloper, request_id: requestId },
        })
        return { username: user.username, role: 'member' as const }
      })
    },

    /** An owner removes a member; a member may remove themselves (leave). The owner is not removed: hand over first. */
    async removeMember(principal: SessionPrincipal, appId: string, username: string, requestId: string) {
      const self = username.toLowerCase() === principal.username.toLowerCase()
      await requireMember(principal, appId, self ? 'member' : 'owner')
      const user = await repo.findUserByName(username)
      if (user === undefined) throw new ApiError('user_not_found', `No member named "${username.slice(0, 64)}".`)
      await inTransaction(db, async (trx) => {
        if (!(await portalRepo(trx).removeMember(appId, user.id))) {
          throw new ApiError('user_not_found', `${user.username} is not a member of the app (an owner hands the app over before leaving).`)
        }
        await audit.append(trx, {
          actor: actorOf(principal),
          action: 'remove-member',
          target: appId,
          details: { username: user.username, user_id: user.id, request_id: requestId },
        })
      })
      return { removed: true }
    },

    /**
     * The owner hands the app to a member, and stays a member. Hand-overs of one app wait for each
     * other on the app's row lock; one that finds the caller no longer the owner (another came
     * first) is 409 ownership_changed, and changes nothing.
     */
    async transferOwnership(principal: SessionPrincipal, appId: string, username: string, requestId: string) {
      await requireMember(principal, appId, 'owner')
      const user = await repo.findUserByName(username)
      if (user === undefined || user.id === principal.userId) {
        throw new ApiError('user_not_found', `"${username.slice(0, 64)}" is not another member of the app.`)
      }
      await inTransaction(db, async (trx) => {
        const txRepo = portalRepo(trx)
        await txRepo.lockApp(appId)
        const outcome = await txRepo.transferOwnership(appId, principal.userId, user.id)
        if (outcome === 'not_owner') {
          throw new ApiError('ownership_changed', 'The app changed hands while this request ran: you no longer own it.')
        }
        if (outcome === 'not_member') {
          throw new ApiError('user_not_found', `${user.username} is not a member of the app: add them first.`)
        }
        await audit.append(trx, {
          actor: actorOf(principal),
          action: 'transfer-app',
          target: appId,
          details: { from: principal.username, to: user.username, request_id: requestId },
        })
      })
      return { owner: user.username }
    },
  }
}

export type PortalService = ReturnType<typeof portalServiceFactory>
