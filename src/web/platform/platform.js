// @ts-check
/**
 * What the platform page asks of the platform, in its two modes (one page, not a copy):
 *
 * - sandbox: the developer acts as any test user through the sandbox API;
 * - production: a person signed in to their own account, through the account API (the session
 *   cookie). Payments are paid by the account API, never by the app's access token.
 */
import { ApiError, account, call, sandbox } from './api.js'
import { receiptUrl } from './receipt.js'

const enc = encodeURIComponent

/**
 * A user as the page acts for them: a sandbox test user, or the signed-in person (with roles).
 * @typedef {{ user_id: string, username: string, wallet_address: string, roles?: string[] }} PlatformUser
 * @typedef {{ background?: boolean }} Quiet `background`: no person asked (a poll): the session's idle time goes on
 * @typedef {ReturnType<typeof createPlatform>} Platform
 * @typedef {NonNullable<import('../api/routes').Body<'/account/apps/{app_id}/authenticate', 'POST'>['scopes']>[number]} Scope
 */

/** @param {'sandbox' | 'production'} mode */
export function createPlatform(mode) {
  if (mode === 'production') {
    /** The apps people can open: `{app_id, name, url, description, icon, created_at}`, icon a data: URL or null. */
    const directory = async () => (await account('/account/apps')).apps
    return {
      mode,
      /** Who is signed in, as the page keeps it (with their roles: developer, operator); undefined when nobody is. */
      async currentUser() {
        try {
          const me = await account('/account')
          return { user_id: me.user_id, username: me.username, wallet_address: me.wallet.address, roles: me.roles }
        } catch (error) {
          if (/** @type {ApiError} */ (error).code === 'session_required') return undefined
          throw error
        }
      },
      /** The apps the user signed in to: `{app_id, name, scopes, notifications_enabled}`; `background` for a poll. */
      userApps: async (/** @type {PlatformUser} */ _user, /** @type {Quiet} */ { background = false } = {}) =>
        (await account('/account', { background })).consents,
      listApps: directory,
      /** @param {string} appId */
      async getApp(appId) {
        const found = (await directory()).find((app) => app.app_id === appId)
        if (found === undefined) throw new ApiError(404, { error: 'app_not_found', error_message: `No app ${appId} in the directory.` })
        return found
      },
      /**
       * @param {string} appId
       * @param {PlatformUser} _user
       * @param {Scope[]} scopes
       * @param {number} [_expiresIn]
       * @param {Quiet} [quiet]
       */
      authenticate: (appId, _user, scopes, _expiresIn, { background = false } = {}) =>
        account(`/account/apps/${enc(appId)}/authenticate`, { method: 'POST', body: { scopes }, background }),
      clockOffsetMs: async () => 0,
      /** The user confirms: the platform pays from their wallet; above the step-up amount with their password. */
      /**
       * @param {string} paymentId
       * @param {string} _token
       * @param {string} [password]
       */
      pay: (paymentId, _token, password) =>
        account(`/account/payments/${enc(paymentId)}/pay`, { method: 'POST', body: password === undefined ? undefined : { password } }),
      /** The user's payments, for naming the wallet's transactions by app and memo. */
      payments: async (/** @type {PlatformUser} */ _user, /** @type {Quiet} */ { background = false } = {}) =>
        (await account('/account/payments?limit=50', { background })).payments,
      /** Where the wallet's ledger links go: a transaction's receipt (receipt.js; production has no console), or the ledger API. */
      ledgerUrl: (/** @type {string} */ kind, /** @type {string} */ id) =>
        kind === 'transactions' ? receiptUrl(id) : `/ledger/${kind}/${enc(id)}`,
    }
  }
  // The same calls as production's (unused parameters named): the page calls either the same way.
  return {
    mode,
    currentUser: async () => undefined,
    /**
     * @param {PlatformUser} user
     * @param {Quiet} [_quiet]
     */
    userApps: async (user, _quiet) => (await sandbox(`/sandbox/users/${enc(user.user_id)}`)).apps,
    listApps: async () => (await sandbox('/sandbox/apps?limit=50')).apps,
    getApp: (/** @type {string} */ appId) => sandbox(`/sandbox/apps/${enc(appId)}`),
    /**
     * @param {string} appId
     * @param {PlatformUser} user
     * @param {Scope[]} scopes
     * @param {number} [expiresIn]
     * @param {Quiet} [_quiet]
     */
    authenticate: (appId, user, scopes, expiresIn, _quiet) =>
      sandbox(`/sandbox/apps/${enc(appId)}/authenticate`, {
        method: 'POST',
        body: { user_id: user.user_id, scopes, ...(expiresIn === undefined ? {} : { expires_in: expiresIn }) },
      }),
    clockOffsetMs: async () => (await sandbox('/sandbox/clock')).offset_seconds * 1000,
    /**
     * @param {string} paymentId
     * @param {string} token
     * @param {string} [_password]
     */
    pay: (paymentId, token, _password) => call(`/v2/client/payments/${enc(paymentId)}/submit`, { method: 'POST', token }),
    /** The user's payments in each app they signed in to (`{app_name, payment}`), for the wallet's memos. */
    /**
     * @param {PlatformUser} user
     * @param {Quiet} [_quiet]
     */
    async payments(user, _quiet) {
      const apps = (await sandbox(`/sandbox/users/${enc(user.user_id)}`)).apps.slice(-20)
      const lists = await Promise.all(
        apps.map(async (app) => {
          const { payments } = await sandbox(`/sandbox/apps/${enc(app.app_id)}/payments?q=${enc(user.user_id)}&limit=50`)
          return payments.filter((p) => p.user_id === user.user_id).map((payment) => ({ app_name: app.name, payment }))
        }),
      )
      return lists.flat()
    },
    /** Where the wallet's ledger links go: the console's ledger pages, readable, not the API's JSON. */
    ledgerUrl: (/** @type {string} */ kind, /** @type {string} */ id) => `/console/#/ledger/${kind}/${enc(id)}`,
  }
}
