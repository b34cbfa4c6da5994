/**
 * What the platform page asks of the platform, in its two modes (one page, not a copy):
 *
 * - sandbox: the developer acts as any test user through the sandbox API;
 * - production: a person signed in to their own account, through the account API (the session
 *   cookie). Payments are paid by the account API, never by the app's access token.
 */
import { ApiError, account, call, sandbox } from './api.js'

const enc = encodeURIComponent

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
          if (error.code === 'session_required') return undefined
          throw error
        }
      },
      /** The apps the user signed in to: `{app_id, name, scopes, notifications_enabled}`; `background` for a poll. */
      userApps: async (_user, { background = false } = {}) => (await account('/account', { background })).consents,
      listApps: directory,
      async getApp(appId) {
        const found = (await directory()).find((app) => app.app_id === appId)
        if (found === undefined) throw new ApiError(404, { error: 'app_not_found', error_message: `No app ${appId} in the directory.` })
        return found
      },
      authenticate: (appId, _user, scopes, _expiresIn, { background = false } = {}) =>
        account(`/account/apps/${enc(appId)}/authenticate`, { method: 'POST', body: { scopes }, background }),
      clockOffsetMs: async () => 0,
      /** The user confirms: the platform pays from their wallet; above the step-up amount with their password. */
      pay: (paymentId, _token, password) =>
        account(`/account/payments/${enc(paymentId)}/pay`, { method: 'POST', body: password === undefined ? undefined : { password } }),
      /** The user's payments, for naming the wallet's transactions by app and memo. */
      payments: async (_user, { background = false } = {}) => (await account('/account/payments?limit=50', { background })).payments,
      /** Where the wallet's ledger links go: the ledger API (production has no console). */
      ledgerUrl: (kind, id) => `/ledger/${kind}/${enc(id)}`,
    }
  }
  return {
    mode,
    currentUser: async () => undefined,
    userApps: async (user) => (await sandbox(`/sandbox/users/${enc(user.user_id)}`)).apps,
    listApps: async () => (await sandbox('/sandbox/apps?limit=50')).apps,
    getApp: (appId) => sandbox(`/sandbox/apps/${enc(appId)}`),
    authenticate: (appId, user, scopes, expiresIn) =>
      sandbox(`/sandbox/apps/${enc(appId)}/authenticate`, {
        method: 'POST',
        body: { user_id: user.user_id, scopes, ...(expiresIn === undefined ? {} : { expires_in: expiresIn }) },
      }),
    clockOffsetMs: async () => (await sandbox('/sandbox/clock')).offset_seconds * 1000,
    pay: (paymentId, token) => call(`/v2/client/payments/${enc(paymentId)}/submit`, { method: 'POST', token }),
    /** The user's payments in each app they signed in to (`{app_name, payment}`), for the wallet's memos. */
    async payments(user) {
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
    ledgerUrl: (kind, id) => `/console/#/ledger/${kind}/${enc(id)}`,
  }
}
