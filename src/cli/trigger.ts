/**
 * `plinth trigger <fixture>` and `plinth seed <file.json>` (docs/testing.md, "Fixtures"): payments
 * in a chosen state, users with a balance and notifications, made the way an app and its users
 * make them, over the API a backend and the client SDK call (and the sandbox API for users,
 * sign-in and the clock). Nothing here writes the database: every state is one the platform
 * reached by its own rules.
 */

import { randomBytes } from 'node:crypto'
import { Account, Asset, Keypair, Memo, Operation, TransactionBuilder } from '@stellar/stellar-base'
import { type SandboxClient, SandboxError } from '../client/sandbox-client.js'

/** Thrown for bad input: the CLI prints its message and exits 2. */
export class FixtureUsageError extends Error {}

export const PAYMENT_STATES = [
  'created',
  'approved',
  'paid-not-completed',
  'completed',
  'cancelled-by-user',
  'expired',
  'a2u-submitted',
] as const
export type PaymentState = (typeof PAYMENT_STATES)[number]
export const FIXTURES = [...PAYMENT_STATES, 'user-with-balance', 'notification'] as const
export type Fixture = (typeof FIXTURES)[number]

/** The most fixtures one trigger makes, and the most entries of each list of a seed file. */
export const MAX_COUNT = 1000
/** States that leave the user's one open payment with the app taken: one such payment per user. */
const OPEN_STATES: ReadonlySet<PaymentState> = new Set(['created', 'approved', 'paid-not-completed', 'a2u-submitted'])
const STROOPS = 10_000_000n
const FEE_STROOPS = 100n
const AMOUNT = /^\d{1,9}(\.\d{1,7})?$/
const USERNAME = /^[A-Za-z0-9_]{3,32}$/

export interface Made {
  /** The fixture made; `user` for a seed file's user. */
  fixture: Fixture | 'user'
  user_id: string
  username: string
  /** The user's uid in the app (absent for user-with-balance). */
  uid?: string
  /** The user's wallet seed, for users this command created (shown once). */
  wallet_seed?: string
  payment_id?: string
  txid?: string
  balance?: string
  notification_id?: string
}

interface User {
  user_id: string
  username: string
  address: string
  seed?: string
}

const toStroops = (amount: string): bigint => {
  const [whole = '0', fraction = ''] = amount.split('.')
  return BigInt(whole) * STROOPS + BigInt(fraction.padEnd(7, '0'))
}
const fromStroops = (stroops: bigint): string => `${stroops / STROOPS}.${(stroops % STROOPS).toString().padStart(7, '0')}`

/** The app the fixtures are for, with a key minted for this run (revoked by `close`). */
export async function openApp(api: SandboxClient, appId: string | undefined, givenSeed: string | undefined) {
  let id = appId
  let appSeed = givenSeed
  if (id === undefined) {
    // The demo app's seed is kept by the sandbox (GET /sandbox/demo): its fixtures need no --app-seed.
    const demo = await api.demo()
    id = demo.app_id
    appSeed ??= demo.app_wallet_seed ?? undefined
  }
  const key = await api.keys.create(id)
  const app = (await api.call<{ wallet_address: string; network: string }>('GET', `/sandbox/apps/${encodeURIComponent(id)}`)) as {
    wallet_address: string
    network: string
  }
  if (appSeed !== undefined) {
    let address: string
    try {
      address = Keypair.fromSecret(appSeed).publicKey()
    } catch {
      throw new FixtureUsageError('--app-seed is not a wallet seed (S…, 56 characters)')
    }
    if (address !== app.wallet_address) throw new FixtureUsageError(`--app-seed is not the seed of ${id}'s wallet ${app.wallet_address}`)
  }
  let approvalWindow: number | undefined
  return {
    appId: id,
    key: `Key ${key.api_key}`,
    wallet: app.wallet_address,
    network: app.network,
    appSeed,
    /** The platform's approval window, from what the sandbox page reads. */
    async approvalWindowSeconds(): Promise<number> {
      approvalWindow ??= (await api.call<{ approval_window_seconds: number }>('GET', '/sandbox/ui/platform.json')).approval_window_seconds
      return approvalWindow
    },
    close: () => api.keys.revoke(id, key.key_id).then(() => undefined),
  }
}
type OpenedApp = Awaited<ReturnType<typeof openApp>>

/** The platform's payment DTO, as far as fixtures read it. */
interface Payment {
  identifier: string
  network: string
  from_address: string
  to_address: string
  amount: number
  transaction: { txid: string } | null
}

export function fixtures(api: SandboxClient, app: OpenedApp) {
  const asApp = { authorization: app.key }
  const newUser = async (): Promise<User> => {
    const created = await api.users.create(`fx_${randomBytes(6).toString('hex')}`)
    return { user_id: created.user_id, username: created.username, address: created.wallet.address, seed: created.wallet.seed }
  }
  const signIn = async (user: User, scopes: string[]) => {
    const signed = await api.authenticate(app.appId, user.user_id, scopes)
    return { token: `Bearer ${signed.accessToken}`, uid: signed.user.uid }
  }
  const ledgerSequence = async (address: string) =>
    await api.call<{ sequence: string; balances: Array<{ asset_type: string; balance: string }> }>('GET', `/ledger/accounts/${address}`)
  /** Signs and submits a payment transaction the way an app's backend does (stellar-base), no time bound: the platform clock may be ahead. */
  const submitPayment = async (seed: string, to: string, amount: string, memo: string | undefined, network: string): Promise<string> => {
    const keypair = Keypair.fromSecret(seed)
    const account = await ledgerSequence(keypair.publicKey())
    let builder = new TransactionBuilder(new Account(keypair.publicKey(), account.sequence), {
      fee: String(FEE_STROOPS),
      networkPassphrase: network,
    })
      .addOperation(Operation.payment({ destination: to, asset: Asset.native(), amount }))
      .setTimeout(0)
    if (memo !== undefined) builder = builder.addMemo(Memo.text(memo))
    const tx = builder.build()
    tx.sign(keypair)
    const form = new URLSearchParams({ tx: tx.toEnvelope().toXDR('base64') }).toString()
    const applied = await api.call<{ hash: string }>('POST', '/ledger/transactions', form, {
      contentType: 'application/x-www-form-urlencoded',
    })
    return applied.hash
  }
  const balanceOf = async (address: string): Promise<string> =>
    (await ledgerSequence(address)).balances.find((b) => b.asset_type === 'native')?.balance ?? '0'

  /** A U2A payment of `user`, created through the client API, then moved to `state`. */
  async function payment(state: PaymentState, user: User, options: { amount: string; memo: string; metadata: object }): Promise<Made> {
    const base = {
      fixture: state,
      user_id: user.user_id,
      username: user.username,
      ...(user.seed === undefined ? {} : { wallet_seed: user.seed }),
    }
    if (state === 'a2u-submitted') {
      if (app.appSeed === undefined) {
        throw new FixtureUsageError(
          "a2u-submitted signs the app's ledger transaction with its wallet seed: pass --app-seed S… (printed once by plinth apps create)",
        )
      }
      const { uid } = await signIn(user, ['username', 'payments', 'wallet_address'])
      const created = await api.call<Payment>('POST', '/v2/payments', { payment: { ...options, uid } }, asApp)
      const txid = await submitPayment(app.appSeed, created.to_address, created.amount.toFixed(7), created.identifier, created.network)
      return { ...base, uid, payment_id: created.identifier, txid }
    }
    const { token, uid } = await signIn(user, ['username', 'payments'])
    const asUser = { authorization: token }
    const created = await api.call<Payment>('POST', '/v2/client/payments', options, asUser)
    const id = encodeURIComponent(created.identifier)
    const made: Made = { ...base, uid, payment_id: created.identifier }
    if (state === 'cancelled-by-user') {
      await api.call('POST', `/v2/client/payments/${id}/cancel`, undefined, asUser)
      return made
    }
    if (state === 'created' || state === 'expired') return made
    await api.call('POST', `/v2/payments/${id}/approve`, undefined, asApp)
    if (state === 'approved') return made
    const paid = await api.call<Payment>('POST', `/v2/client/payments/${id}/submit`, undefined, asUser)
    const txid = paid.transaction?.txid
    if (state === 'completed' && txid !== undefined) await api.call('POST', `/v2/payments/${id}/complete`, { txid }, asApp)
    return { ...made, ...(txid === undefined ? {} : { txid }) }
  }

  return {
    newUser,
    payment,

    /** Moves the platform clock past the approval window of every payment created so far (once, for all of them). */
    async expire(): Promise<number> {
      const seconds = (await app.approvalWindowSeconds()) + 1
      await api.clock.advance(seconds)
      return seconds
    },

    /** Reads a payment back with the app's key: its expiry is recorded by the read. */
    read: (paymentId: string) => api.call<Payment>('GET', `/v2/payments/${encodeURIComponent(paymentId)}`, undefined, asApp),

    /** Sets the user's balance exactly: funds the difference, or pays the excess to the app's wallet (then the user needs its seed). */
    async setBalance(user: User, target: string): Promise<string> {
      let current = toStroops(await balanceOf(user.address))
      const wanted = toStroops(target)
      if (wanted > current) {
        await api.ledger.fund(user.address, fromStroops(wanted - current))
      } else if (wanted < current) {
        if (user.seed === undefined)
          throw new FixtureUsageError(
            `a balance below ${user.username}'s current ${fromStroops(current)} needs a user this command creates`,
          )
        // A payment of the excess less its fee; an excess no larger than the fee is topped up first.
        if (current - wanted <= FEE_STROOPS) {
          await api.ledger.fund(user.address, '1')
          current += STROOPS
        }
        await submitPayment(user.seed, app.wallet, fromStroops(current - wanted - FEE_STROOPS), undefined, app.network)
      }
      return balanceOf(user.address)
    },

    async notify(user: User, notice: { title: string; body: string; subroute: string }): Promise<Made> {
      const { uid } = await signIn(user, ['username', 'in_app_notifications'])
      const sent = await api.call<{ delivered_notifications: Array<{ id: string }> }>(
        'POST',
        '/v2/in_app_notifications/notify',
        { notifications: [{ ...notice, user_uid: uid }] },
        asApp,
      )
      const id = sent.delivered_notifications[0]?.id
      if (id === undefined) throw new SandboxError(403, 'not_delivered', `The notification to ${user.username} was not delivered.`)
      return {
        fixture: 'notification',
        user_id: user.user_id,
        username: user.username,
        uid,
        ...(user.seed === undefined ? {} : { wallet_seed: user.seed }),
        notification_id: id,
      }
    },
  }
}

/** Runs `work` for 0…n-1, `width` at a time, answering in order. */
async function pooled<T>(n: number, width: number, work: (i: number) => Promise<T>): Promise<T[]> {
  const results: T[] = new Array(n)
  let next = 0
  const worker = async () => {
    while (next < n) {
      const i = next++
      results[i] = await work(i)
    }
  }
  await Promise.all(Array.from({ length: Math.min(width, n) }, worker))
  return results
}

export function checkAmount(text: string, what: string): string {
  if (!AMOUNT.test(text) || toStroops(text) === 0n)
    throw new FixtureUsageError(`${what} must be a positive amount with at most 7 decimal places, got "${text}"`)
  return text
}

export function checkCount(text: string | undefined): number {
  if (text === undefined) return 1
  if (!/^\d+$/.test(text) || Number(text) < 1 || Number(text) > MAX_COUNT)
    throw new FixtureUsageError(`--count takes 1 to ${MAX_COUNT}, got "${text}"`)
  return Number(text)
}

export interface TriggerOptions {
  app?: string | undefined
  appSeed?: string | undefined
  count: number
  user?: string | undefined
  amount: string
  balance: string
}

/** `plinth trigger <fixture>`: what it made, one record a fixture, and a note for the reader. */
export async function trigger(api: SandboxClient, fixture: string, options: TriggerOptions): Promise<{ made: Made[]; note?: string }> {
  if (!(FIXTURES as readonly string[]).includes(fixture)) {
    throw new FixtureUsageError(`unknown fixture "${fixture}": one of ${FIXTURES.join(', ')}`)
  }
  const chosen = fixture as Fixture
  if (chosen === 'a2u-submitted' && options.appSeed === undefined && options.app !== undefined) {
    throw new FixtureUsageError(
      "a2u-submitted signs the app's ledger transaction: pass --app-seed S… (the app's wallet seed, printed once by plinth apps create; the demo app's is kept by the sandbox)",
    )
  }
  if (
    options.user !== undefined &&
    options.count > 1 &&
    (OPEN_STATES.has(chosen as PaymentState) || chosen === 'expired' || chosen === 'user-with-balance')
  ) {
    throw new FixtureUsageError(`${chosen} with --user makes one (a user has one open payment with an app): leave out --user or --count`)
  }
  const app = await openApp(api, options.app, options.appSeed)
  try {
    const fx = fixtures(api, app)
    let existing: User | undefined
    if (options.user !== undefined) {
      const found = (await api.users.find(options.user)).users[0]
      if (found === undefined) throw new SandboxError(404, 'user_not_found', `No user named ${options.user}.`)
      const full = await api.call<{ wallet_address: string }>('GET', `/sandbox/users/${encodeURIComponent(found.user_id)}`)
      existing = { user_id: found.user_id, username: found.username, address: full.wallet_address }
    }
    const user = async () => existing ?? (await fx.newUser())
    const order = { amount: options.amount, memo: `plinth trigger ${chosen}`, metadata: { fixture: chosen } }
    // A2U transactions come from the app's one wallet: one at a time keeps its sequence numbers apart.
    const width = chosen === 'a2u-submitted' || existing !== undefined ? 1 : 4
    if (chosen === 'user-with-balance') {
      const made = await pooled(options.count, width, async () => {
        const u = await user()
        const balance = await fx.setBalance(u, options.balance)
        return {
          fixture: chosen,
          user_id: u.user_id,
          username: u.username,
          ...(u.seed === undefined ? {} : { wallet_seed: u.seed }),
          balance,
        }
      })
      return { made }
    }
    if (chosen === 'notification') {
      const notice = { title: 'Hello from plinth trigger', body: 'A notification made by plinth trigger.', subroute: '/' }
      return { made: await pooled(options.count, width, async () => fx.notify(await user(), notice)) }
    }
    const made = await pooled(options.count, width, async () => fx.payment(chosen, await user(), order))
    if (chosen !== 'expired') return { made }
    const seconds = await fx.expire()
    // Read back: the read records the platform's cancellation.
    for (const m of made) if (m.payment_id !== undefined) await fx.read(m.payment_id)
    return { made, note: `the platform clock moved ${seconds} s ahead (past the approval window); plinth clock reset puts it back` }
  } finally {
    await app.close()
  }
}

/** What a seed file holds (docs/testing.md, "Fixtures"). */
export interface SeedFile {
  app?: string
  app_seed?: string
  users: Array<{ username: string; balance?: string }>
  payments: Array<{ user: string; state: PaymentState; amount: string; memo: string; metadata: object }>
  notifications: Array<{ user: string; title: string; body: string; subroute: string }>
}

/** Checks a seed file's JSON value; the first problem is thrown as a FixtureUsageError naming where it is. */
export function checkSeedFile(value: unknown): SeedFile {
  const bad = (where: string, message: string): never => {
    throw new FixtureUsageError(`${where}: ${message}`)
  }
  const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
  const only = (where: string, v: Record<string, unknown>, keys: string[]) => {
    for (const key of Object.keys(v)) if (!keys.includes(key)) bad(where, `unknown field "${key}" (fields: ${keys.join(', ')})`)
  }
  const list = (key: string): unknown[] => {
    const v = (value as Record<string, unknown>)[key]
    if (v === undefined) return []
    if (!Array.isArray(v)) return bad(key, 'must be an array')
    if (v.length > MAX_COUNT) bad(key, `at most ${MAX_COUNT} entries`)
    return v
  }
  const text = (where: string, v: unknown, max: number, optional = false): string | undefined => {
    if (v === undefined && optional) return undefined
    if (typeof v !== 'string' || v.length > max) return bad(where, `must be a string of at most ${max} characters`)
    return v
  }
  const amount = (where: string, v: unknown): string => {
    const t = typeof v === 'number' ? String(v) : v
    if (typeof t !== 'string') return bad(where, 'must be an amount ("12.5" or 12.5)')
    try {
      return checkAmount(t, where)
    } catch (error) {
      return bad(where, (error as Error).message.replace(`${where} `, ''))
    }
  }

  if (!isObject(value)) bad('the file', 'must hold a JSON object with users, payments and notifications')
  const root = value as Record<string, unknown>
  only('the file', root, ['app', 'app_seed', 'users', 'payments', 'notifications'])
  const app = text('app', root.app, 64, true)
  const appSeed = text('app_seed', root.app_seed, 56, true)
  const names = new Set<string>()
  const users = list('users').map((u, i) => {
    const where = `users[${i}]`
    if (!isObject(u)) return bad(where, 'must be an object { "username", "balance"? }')
    only(where, u, ['username', 'balance'])
    const username = text(`${where}.username`, u.username, 32) as string
    if (!USERNAME.test(username)) bad(`${where}.username`, '3 to 32 letters, digits or underscores')
    if (names.has(username.toLowerCase())) bad(`${where}.username`, `${username} is listed twice`)
    names.add(username.toLowerCase())
    return { username, ...(u.balance === undefined ? {} : { balance: amount(`${where}.balance`, u.balance) }) }
  })
  const userOf = (where: string, v: unknown): string => {
    const name = text(where, v, 32) as string
    if (!names.has(name.toLowerCase())) bad(where, `"${name}" is not one of the file's users`)
    return name
  }
  const open = new Set<string>()
  const payments = list('payments').map((p, i) => {
    const where = `payments[${i}]`
    if (!isObject(p)) return bad(where, 'must be an object { "user", "state", "amount"?, "memo"?, "metadata"? }')
    only(where, p, ['user', 'state', 'amount', 'memo', 'metadata'])
    const user = userOf(`${where}.user`, p.user)
    if (typeof p.state !== 'string' || !(PAYMENT_STATES as readonly string[]).includes(p.state)) {
      return bad(`${where}.state`, `one of ${PAYMENT_STATES.join(', ')}`)
    }
    const state = p.state as PaymentState
    if (state === 'a2u-submitted' && appSeed === undefined) bad(`${where}.state`, 'a2u-submitted needs "app_seed", the app\'s wallet seed')
    // One open payment per user and app, each way: a second would cancel the first or be refused.
    const direction = state === 'a2u-submitted' ? 'a2u' : 'u2a'
    if (OPEN_STATES.has(state) || state === 'expired') {
      const slot = `${user.toLowerCase()} ${direction}`
      if (open.has(slot) && state !== 'expired')
        bad(where, `${user} has another open ${direction.toUpperCase()} payment in the file (one per user and app)`)
      if (state !== 'expired') open.add(slot)
    }
    if (p.metadata !== undefined && !isObject(p.metadata)) bad(`${where}.metadata`, 'must be an object')
    return {
      user,
      state,
      amount: p.amount === undefined ? '1' : amount(`${where}.amount`, p.amount),
      memo: text(`${where}.memo`, p.memo, 1000, true) ?? `plinth seed ${state}`,
      metadata: (p.metadata as object | undefined) ?? {},
    }
  })
  const notifications = list('notifications').map((n, i) => {
    const where = `notifications[${i}]`
    if (!isObject(n)) return bad(where, 'must be an object { "user", "title", "body"?, "subroute"? }')
    only(where, n, ['user', 'title', 'body', 'subroute'])
    const subroute = text(`${where}.subroute`, n.subroute, 300, true) ?? '/'
    if (!subroute.startsWith('/')) bad(`${where}.subroute`, 'must start with /')
    const title = text(`${where}.title`, n.title, 50) as string
    if (title.length === 0) bad(`${where}.title`, 'must not be empty')
    return { user: userOf(`${where}.user`, n.user), title, body: text(`${where}.body`, n.body, 500, true) ?? '', subroute }
  })
  return {
    ...(app === undefined ? {} : { app }),
    ...(appSeed === undefined ? {} : { app_seed: appSeed }),
    users,
    payments,
    notifications,
  }
}

/**
 * `plinth seed <file.json>`: the file's users (with their balances), then its payments (the
 * expired ones first, the clock moved once past their window, then those that end closed, then
 * the open ones, so none cancels another), then its notifications.
 */
export async function seed(api: SandboxClient, file: SeedFile, appId: string | undefined): Promise<{ made: Made[]; note?: string }> {
  const app = await openApp(api, appId ?? file.app, file.app_seed)
  try {
    const fx = fixtures(api, app)
    const users = new Map<string, User>()
    const made: Made[] = []
    for (const entry of file.users) {
      const created = await api.users.create(entry.username)
      const user = { user_id: created.user_id, username: created.username, address: created.wallet.address, seed: created.wallet.seed }
      users.set(entry.username.toLowerCase(), user)
      const balance = entry.balance === undefined ? undefined : await fx.setBalance(user, entry.balance)
      made.push({
        fixture: 'user',
        user_id: user.user_id,
        username: user.username,
        wallet_seed: user.seed,
        ...(balance === undefined ? {} : { balance }),
      })
    }
    const userOf = (name: string) => users.get(name.toLowerCase()) as User
    const rank = (state: PaymentState) => (state === 'expired' ? 0 : OPEN_STATES.has(state) ? 2 : 1)
    const payments = [...file.payments].sort((a, b) => rank(a.state) - rank(b.state))
    let note: string | undefined
    for (const [i, p] of payments.entries()) {
      if (p.state !== 'expired' && i > 0 && payments[i - 1]?.state === 'expired') {
        note = `the platform clock moved ${await fx.expire()} s ahead (past the approval window)`
      }
      const { wallet_seed: _shownWithTheUser, ...rest } = await fx.payment(p.state, userOf(p.user), p)
      made.push(rest)
    }
    if (payments.length > 0 && payments.at(-1)?.state === 'expired')
      note = `the platform clock moved ${await fx.expire()} s ahead (past the approval window)`
    for (const m of made) if (m.fixture === 'expired' && m.payment_id !== undefined) await fx.read(m.payment_id)
    for (const n of file.notifications) {
      const { wallet_seed: _shown, ...rest } = await fx.notify(userOf(n.user), n)
      made.push(rest)
    }
    return note === undefined ? { made } : { made, note }
  } finally {
    await app.close()
  }
}
