import { Account, Asset, Keypair, Memo, Operation, TransactionBuilder } from '@stellar/stellar-base'
import type { SqlAccess } from '../../helpers/server-process.js'

/**
 * Sustained load on a running Plinth, and what it takes to check it afterwards: workers run
 * A2U and U2A payment lifecycles, plain ledger transfers and notify requests over HTTP, and a
 * journal keeps what every 2xx answered, so that after a crash the answers can be read back.
 */

// ---------------------------------------------------------------------------------------------
// Randomness: seeded, so that a failing run can be replayed with its seed.

export type Random = () => number

/** mulberry32: a small seeded PRNG, uniform in [0, 1). */
export function seededRandom(seed: number): Random {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

// ---------------------------------------------------------------------------------------------
// HTTP, with figures.

export interface Stats {
  sent: number
  ok: number
  refused: number
  serverErrors: number
  /** Requests whose outcome is unknown: the connection failed (the server was killed) or timed out. */
  unknown: number
  /** Connection failures while the server was meant to be up: a crash nobody caused. */
  unexpectedUnknown: number
  rateLimited: number
  inFlight: number
  latencyMsTotal: number
}

export function newStats(): Stats {
  return { sent: 0, ok: 0, refused: 0, serverErrors: 0, unknown: 0, unexpectedUnknown: 0, rateLimited: 0, inFlight: 0, latencyMsTotal: 0 }
}

/** status 0: no answer (connection failed or timed out); `error` says why. */
export interface Reply {
  status: number
  body: unknown
  error?: string
}

export interface CallOptions {
  key?: string
  token?: string
  json?: unknown
  form?: Record<string, string>
}

const MAX_PROBLEMS = 200

/** Problems the run found, kept bounded (the count is exact). */
export class Problems {
  readonly list: string[] = []
  count = 0
  add(problem: string): void {
    this.count += 1
    if (this.list.length < MAX_PROBLEMS) this.list.push(problem)
  }
}

export class Client {
  /** Whether the server is meant to be up: a connection failure then is a problem, not an expected loss. */
  expectUp = true

  constructor(
    public base: string,
    readonly stats: Stats,
    readonly problems: Problems,
    private readonly timeoutMs = 30_000,
  ) {}

  async call(method: 'GET' | 'POST' | 'PUT', path: string, options: CallOptions = {}): Promise<Reply> {
    const headers: Record<string, string> = {}
    let body: string | undefined
    if (options.key !== undefined) headers.authorization = `Key ${options.key}`
    if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`
    if (options.json !== undefined) {
      headers['content-type'] = 'application/json'
      body = JSON.stringify(options.json)
    } else if (options.form !== undefined) {
      headers['content-type'] = 'application/x-www-form-urlencoded'
      body = new URLSearchParams(options.form).toString()
    }
    this.stats.sent += 1
    this.stats.inFlight += 1
    const startedAt = performance.now()
    try {
      const response = await fetch(`${this.base}${path}`, { method, headers, body, signal: AbortSignal.timeout(this.timeoutMs) })
      const text = await response.text()
      let parsed: unknown = text
      try {
        parsed = text.length === 0 ? undefined : JSON.parse(text)
      } catch {
        // Not JSON: keep the text.
      }
      this.stats.latencyMsTotal += performance.now() - startedAt
      if (response.status >= 200 && response.status < 300) this.stats.ok += 1
      else if (response.status >= 500) {
        this.stats.serverErrors += 1
        this.problems.add(`${method} ${path} answered ${response.status}: ${text.slice(0, 300)}`)
      } else {
        this.stats.refused += 1
        if (response.status === 429) this.stats.rateLimited += 1
      }
      return { status: response.status, body: parsed }
    } catch (error) {
      this.stats.unknown += 1
      const message =
        error instanceof Error ? `${error.message}${error.cause instanceof Error ? `: ${error.cause.message}` : ''}` : String(error)
      if (this.expectUp) {
        this.stats.unexpectedUnknown += 1
        this.problems.add(`${method} ${path} failed while the server was up: ${message}`)
      }
      return { status: 0, body: undefined, error: message }
    } finally {
      this.stats.inFlight -= 1
    }
  }
}

function field<T>(body: unknown, name: string): T | undefined {
  return typeof body === 'object' && body !== null ? ((body as Record<string, unknown>)[name] as T | undefined) : undefined
}

// ---------------------------------------------------------------------------------------------
// The gate: workers pass it before each step; the run closes it to kill, restart and verify.

export class Gate {
  #open = true
  #waiters: Array<() => void> = []
  waiting = 0

  get isOpen(): boolean {
    return this.#open
  }

  close(): void {
    this.#open = false
  }

  open(): void {
    this.#open = true
    const waiters = this.#waiters
    this.#waiters = []
    for (const wake of waiters) wake()
  }

  async pass(): Promise<void> {
    if (this.#open) return
    this.waiting += 1
    try {
      await new Promise<void>((wake) => this.#waiters.push(wake))
    } finally {
      this.waiting -= 1
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The journal: what each 2xx answered.

export interface PaymentDTO {
  identifier: string
  user_uid: string
  amount: number
  direction: 'user_to_app' | 'app_to_user'
  from_address: string
  to_address: string
  status: Flags
  transaction: { txid: string; verified: boolean } | null
}

export interface Flags {
  developer_approved: boolean
  transaction_verified: boolean
  developer_completed: boolean
  cancelled: boolean
  user_cancelled: boolean
}

const FLAG_NAMES: Array<keyof Flags> = ['developer_approved', 'transaction_verified', 'developer_completed', 'cancelled', 'user_cancelled']

export function isFinal(p: { status: Flags }): boolean {
  return p.status.developer_completed || p.status.cancelled || p.status.user_cancelled
}

interface PaymentRecord {
  id: string
  apiKey: string
  direction: PaymentDTO['direction']
  amount: number
  uid: string
  from: string
  /** Every flag a 2xx showed true (the flags only ever turn true). */
  flags: Flags
  txid: string | null
}

interface LedgerRecord {
  hash: string
  source: string
  memo: string | null
  to: string
  amount: string
}

interface NotificationRecord {
  id: string
  appId: string
  userId: string
  title: string
  body: string
}

interface UserRecord {
  userId: string
  username: string
  /** app id → uid, from each 2xx of authenticate. */
  memberships: Map<string, string>
}

export interface JournalCounts {
  payments: number
  ledgerTransactions: number
  notifications: number
  users: number
  apps: number
  total: number
}

export class Journal {
  readonly payments = new Map<string, PaymentRecord>()
  readonly ledger = new Map<string, LedgerRecord>()
  readonly notifications = new Map<string, NotificationRecord>()
  readonly users = new Map<string, UserRecord>()
  /** app id → name */
  readonly apps = new Map<string, string>()
  /** 2xx answers recorded (a payment answered five times counts five). */
  acknowledged = 0
  /** What changed since the last verification. */
  readonly dirty = {
    payments: new Set<string>(),
    ledger: new Set<string>(),
    notifications: new Set<string>(),
    users: new Set<string>(),
    apps: new Set<string>(),
  }

  constructor(private readonly problems: Problems) {}

  counts(): JournalCounts {
    const counts = {
      payments: this.payments.size,
      ledgerTransactions: this.ledger.size,
      notifications: this.notifications.size,
      users: this.users.size,
      apps: this.apps.size,
    }
    return { ...counts, total: counts.payments + counts.ledgerTransactions + counts.notifications + counts.users + counts.apps }
  }

  payment(p: PaymentDTO, apiKey: string): void {
    this.acknowledged += 1
    const known = this.payments.get(p.identifier)
    const txid = p.transaction?.txid ?? null
    if (known === undefined) {
      this.payments.set(p.identifier, {
        id: p.identifier,
        apiKey,
        direction: p.direction,
        amount: p.amount,
        uid: p.user_uid,
        from: p.from_address,
        flags: { ...p.status },
        txid,
      })
    } else {
      for (const flag of FLAG_NAMES) {
        if (known.flags[flag] && !p.status[flag])
          this.problems.add(`payment ${p.identifier}: ${flag} was true in an earlier answer, now false`)
        known.flags[flag] ||= p.status[flag]
      }
      if (known.txid !== null && txid !== known.txid)
        this.problems.add(`payment ${p.identifier}: txid ${known.txid} answered before, now ${txid}`)
      known.txid ??= txid
    }
    this.dirty.payments.add(p.identifier)
  }

  ledgerTx(tx: LedgerRecord): void {
    this.acknowledged += 1
    this.ledger.set(tx.hash, tx)
    this.dirty.ledger.add(tx.hash)
  }

  notification(n: NotificationRecord): void {
    this.acknowledged += 1
    this.notifications.set(n.id, n)
    this.dirty.notifications.add(n.id)
  }

  user(userId: string, username: string): void {
    this.acknowledged += 1
    this.users.set(userId, { userId, username, memberships: new Map() })
    this.dirty.users.add(userId)
  }

  membership(userId: string, appId: string, uid: string): void {
    this.acknowledged += 1
    this.users.get(userId)?.memberships.set(appId, uid)
    this.dirty.users.add(userId)
  }

  app(appId: string, name: string): void {
    this.acknowledged += 1
    this.apps.set(appId, name)
    this.dirty.apps.add(appId)
  }
}

// ---------------------------------------------------------------------------------------------
// Workers.

export const ALL_SCOPES = ['username', 'payments', 'wallet_address', 'in_app_notifications']
/** Notifications an app may deliver to one user in 24 hours is 48: keep under it, counting unknown outcomes as delivered. */
const NOTIFICATIONS_PER_RECIPIENT = 44
const STROOPS_PER_PI = 10_000_000

interface Wallet {
  address: string
  seed: string
}

interface Recipient {
  userId: string
  uid: string
  sent: number
}

export interface WorkerContext {
  client: Client
  journal: Journal
  problems: Problems
  random: Random
  /** A prefix unique to the run, for usernames. */
  tag: string
}

/** Figures of what the workers did. */
export interface WorkFigures {
  a2uCompleted: number
  u2aCompleted: number
  cancelled: number
  transfers: number
  notifications: number
  resumed: number
}

export function newWorkFigures(): WorkFigures {
  return { a2uCompleted: 0, u2aCompleted: 0, cancelled: 0, transfers: 0, notifications: 0, resumed: 0 }
}

/**
 * One worker: its own app (so its wallet's sequence numbers are its own) and its own user (so the
 * one-open-payment rules never pit two workers against each other), plus notification recipients.
 * Every step returns as soon as an answer is unknown and remembers to resume, as a careful app
 * backend would: it asks the platform what became of the payment instead of guessing.
 */
export class Worker {
  appId = ''
  apiKey = ''
  appWallet: Wallet = { address: '', seed: '' }
  userId = ''
  userWallet: Wallet = { address: '', seed: '' }
  uid = ''
  token = ''
  readonly recipients: Recipient[] = []
  a2uOpen: string | undefined
  a2uResume = false
  u2aOpen: string | undefined
  u2aResume = false
  #counter = 0

  constructor(
    readonly index: number,
    private readonly ctx: WorkerContext,
    readonly work: WorkFigures,
  ) {}

  private name(what: string): string {
    this.#counter += 1
    return `${this.ctx.tag}_${what}${this.index}_${this.#counter}`.slice(0, 32)
  }

  private unexpected(what: string, reply: Reply): void {
    if (reply.status === 0 || reply.status >= 500 || reply.status === 429) return // counted by the client
    this.ctx.problems.add(`worker ${this.index}: ${what} answered ${reply.status}: ${JSON.stringify(reply.body).slice(0, 300)}`)
  }

  /** Makes the worker's app, user and token; throws if the server does not answer (it is up during setup). */
  async setUp(): Promise<void> {
    const { client, journal } = this.ctx
    const name = this.name('app')
    const app = await client.call('POST', '/sandbox/apps', { json: { name } })
    if (app.status !== 201) throw new Error(`creating an app answered ${JSON.stringify(app)}`)
    this.appId = field<string>(app.body, 'app_id') ?? ''
    this.apiKey = field<string>(app.body, 'api_key') ?? ''
    this.appWallet = field<Wallet>(app.body, 'wallet') ?? this.appWallet
    journal.app(this.appId, name)
    const user = await this.newUser()
    if (user === undefined) throw new Error('could not create the worker user')
    this.userId = user.userId
    this.uid = user.uid
    this.token = user.token
    this.userWallet = user.wallet
  }

  private async newUser(): Promise<{ userId: string; uid: string; token: string; wallet: Wallet } | undefined> {
    const { client, journal } = this.ctx
    const username = this.name('u')
    const user = await client.call('POST', '/sandbox/users', { json: { username } })
    if (user.status !== 201) {
      this.unexpected('POST /sandbox/users', user)
      return undefined
    }
    const userId = field<string>(user.body, 'user_id') ?? ''
    journal.user(userId, username)
    const auth = await client.call('POST', `/sandbox/apps/${this.appId}/authenticate`, { json: { user_id: userId, scopes: ALL_SCOPES } })
    if (auth.status !== 200) {
      this.unexpected('POST /sandbox/apps/:id/authenticate', auth)
      return undefined
    }
    const uid = field<{ uid: string }>(auth.body, 'user')?.uid ?? ''
    journal.membership(userId, this.appId, uid)
    return {
      userId,
      uid,
      token: field<string>(auth.body, 'accessToken') ?? '',
      wallet: field<Wallet>(user.body, 'wallet') ?? { address: '', seed: '' },
    }
  }

  /** One step of load: a payment lifecycle, a transfer or a notify request. */
  async step(): Promise<void> {
    const pick = this.ctx.random()
    if (pick < 0.36) await this.a2u()
    else if (pick < 0.72) await this.u2a()
    else if (pick < 0.9) await this.notify()
    else await this.transfer()
  }

  private amount(maxStroops = STROOPS_PER_PI / 10): string {
    const stroops = 1 + Math.floor(this.ctx.random() * maxStroops)
    return (stroops / STROOPS_PER_PI).toFixed(7)
  }

  private async sequence(address: string): Promise<string | undefined> {
    const reply = await this.ctx.client.call('GET', `/ledger/accounts/${address}`)
    if (reply.status !== 200) {
      this.unexpected('GET /ledger/accounts/:id', reply)
      return undefined
    }
    return field<string>(reply.body, 'sequence')
  }

  /** Signs with the app's seed and submits, as an app backend does with stellar-sdk; answers the hash, 'bad_seq' or undefined. */
  private async submitFromApp(to: string, amount: string, memo: string): Promise<string | 'bad_seq' | undefined> {
    const sequence = await this.sequence(this.appWallet.address)
    if (sequence === undefined) return undefined
    const keypair = Keypair.fromSecret(this.appWallet.seed)
    const tx = new TransactionBuilder(new Account(keypair.publicKey(), sequence), { fee: '100', networkPassphrase: 'Pi Testnet' })
      .addOperation(Operation.payment({ destination: to, asset: Asset.native(), amount }))
      .addMemo(Memo.text(memo))
      .setTimeout(600)
      .build()
    tx.sign(keypair)
    const reply = await this.ctx.client.call('POST', '/ledger/transactions', { form: { tx: tx.toEnvelope().toXDR('base64') } })
    if (reply.status === 200) {
      const hash = field<string>(reply.body, 'hash') ?? ''
      this.ctx.journal.ledgerTx({ hash, source: this.appWallet.address, memo, to, amount })
      return hash
    }
    const codes = field<{ result_codes?: { transaction?: string } }>(reply.body, 'extras')?.result_codes
    if (reply.status === 400 && codes?.transaction === 'tx_bad_seq') return 'bad_seq'
    this.unexpected('POST /ledger/transactions', reply)
    return undefined
  }

  private record(reply: Reply, apiKey = this.apiKey): PaymentDTO | undefined {
    if (reply.status < 200 || reply.status >= 300) return undefined
    const payment = reply.body as PaymentDTO
    this.ctx.journal.payment(payment, apiKey)
    return payment
  }

  /** An app-to-user payment: create, sign and submit its transaction, complete. */
  async a2u(): Promise<void> {
    const { client } = this.ctx
    let payment: PaymentDTO | undefined
    if (this.a2uResume || this.a2uOpen !== undefined) {
      const list = await client.call('GET', '/v2/payments/incomplete_server_payments', { key: this.apiKey })
      if (list.status !== 200) return this.unexpected('GET incomplete_server_payments', list)
      const payments = field<PaymentDTO[]>(list.body, 'incomplete_server_payments') ?? []
      payment = payments.find((p) => p.user_uid === this.uid)
      if (payment !== undefined) this.work.resumed += 1
      if (payment === undefined && this.a2uOpen !== undefined) {
        // Not listed: then it must be finished.
        const read = await client.call('GET', `/v2/payments/${this.a2uOpen}`, { key: this.apiKey })
        if (read.status !== 200) return this.unexpected('GET /v2/payments/:id', read)
        if (!isFinal(read.body as PaymentDTO))
          this.ctx.problems.add(`A2U payment ${this.a2uOpen} is open but not in incomplete_server_payments`)
      }
      this.a2uResume = false
      this.a2uOpen = payment?.identifier
    }
    if (payment === undefined) {
      const amount = this.amount()
      const created = await client.call('POST', '/v2/payments', {
        key: this.apiKey,
        json: { payment: { amount: Number(amount), memo: 'chaos A2U', metadata: { worker: this.index }, uid: this.uid } },
      })
      if (created.status === 0) {
        this.a2uResume = true
        return
      }
      if (created.status === 409 && field<string>(created.body, 'error') === 'ongoing_payment_found') {
        payment = field<PaymentDTO>(created.body, 'payment')
      } else {
        payment = this.record(created)
        if (payment === undefined) return this.unexpected('POST /v2/payments', created)
      }
    }
    if (payment === undefined) return
    this.a2uOpen = payment.identifier
    let txid = payment.transaction?.txid
    if (payment.transaction !== null && !payment.transaction.verified) {
      this.ctx.problems.add(`A2U payment ${payment.identifier} has an unverified transaction`)
      await this.cancel(payment.identifier, 'a2u')
      return
    }
    if (txid === undefined) {
      if (this.ctx.random() < 0.08) return this.cancel(payment.identifier, 'a2u')
      const submitted = await this.submitFromApp(payment.to_address, payment.amount.toFixed(7), payment.identifier)
      if (submitted === undefined || submitted === 'bad_seq') {
        this.a2uResume = true
        return
      }
      txid = submitted
    }
    const completed = await client.call('POST', `/v2/payments/${payment.identifier}/complete`, { key: this.apiKey, json: { txid } })
    if (completed.status === 0) {
      this.a2uResume = true
      return
    }
    if (this.record(completed) === undefined) return this.unexpected('POST /v2/payments/:id/complete', completed)
    this.work.a2uCompleted += 1
    this.a2uOpen = undefined
  }

  private async cancel(id: string, kind: 'a2u' | 'u2a'): Promise<void> {
    const reply = await this.ctx.client.call('POST', `/v2/payments/${id}/cancel`, { key: this.apiKey, json: {} })
    if (reply.status === 0) {
      if (kind === 'a2u') this.a2uResume = true
      else this.u2aResume = true
      return
    }
    if (this.record(reply) === undefined) return this.unexpected('POST /v2/payments/:id/cancel', reply)
    this.work.cancelled += 1
    if (kind === 'a2u') this.a2uOpen = undefined
    else this.u2aOpen = undefined
  }

  /** A user-to-app payment, as the client SDK and the app's server drive it: create, approve, submit, complete. */
  async u2a(): Promise<void> {
    const { client } = this.ctx
    let payment: PaymentDTO | undefined
    if (this.u2aResume) {
      const incomplete = await client.call('GET', '/v2/client/payments/incomplete', { token: this.token })
      if (incomplete.status !== 200) return this.unexpected('GET /v2/client/payments/incomplete', incomplete)
      payment = field<PaymentDTO | null>(incomplete.body, 'payment') ?? undefined
      if (payment === undefined && this.u2aOpen !== undefined) {
        const read = await client.call('GET', `/v2/client/payments/${this.u2aOpen}`, { token: this.token })
        if (read.status !== 200) return this.unexpected('GET /v2/client/payments/:id', read)
        const known = read.body as PaymentDTO
        if (!isFinal(known)) payment = known
      }
      if (payment !== undefined) this.work.resumed += 1
      this.u2aResume = false
    }
    if (payment === undefined) {
      const created = await client.call('POST', '/v2/client/payments', {
        token: this.token,
        json: { amount: Number(this.amount()), memo: 'chaos U2A', metadata: { worker: this.index } },
      })
      if (created.status === 0) {
        this.u2aResume = true
        return
      }
      if (created.status === 409 && field<string>(created.body, 'error') === 'ongoing_payment_found') {
        payment = field<PaymentDTO>(created.body, 'payment')
      } else {
        payment = this.record(created)
        if (payment === undefined) return this.unexpected('POST /v2/client/payments', created)
      }
    }
    if (payment === undefined) return
    const id = payment.identifier
    this.u2aOpen = id
    if (!payment.status.developer_approved && payment.transaction === null) {
      if (this.ctx.random() < 0.06) {
        const cancelled = await client.call('POST', `/v2/client/payments/${id}/cancel`, { token: this.token })
        if (cancelled.status === 0) {
          this.u2aResume = true
          return
        }
        if (this.record(cancelled) === undefined) return this.unexpected('POST /v2/client/payments/:id/cancel', cancelled)
        this.work.cancelled += 1
        this.u2aOpen = undefined
        return
      }
      const approved = await client.call('POST', `/v2/payments/${id}/approve`, { key: this.apiKey, json: {} })
      if (approved.status === 0) {
        this.u2aResume = true
        return
      }
      if (approved.status === 409 && field<string>(approved.body, 'error') === 'cancelled_payment') {
        // The approval window passed while the server was down: the platform cancelled it.
        this.u2aOpen = undefined
        return
      }
      payment = this.record(approved)
      if (payment === undefined) return this.unexpected('POST /v2/payments/:id/approve', approved)
    }
    if (payment.transaction === null) {
      if (this.ctx.random() < 0.04) return this.cancel(id, 'u2a')
      const submitted = await client.call('POST', `/v2/client/payments/${id}/submit`, { token: this.token })
      if (submitted.status === 0) {
        this.u2aResume = true
        return
      }
      payment = this.record(submitted, this.apiKey)
      if (payment === undefined) return this.unexpected('POST /v2/client/payments/:id/submit', submitted)
      if (payment.transaction === null) {
        this.ctx.problems.add(`U2A payment ${id}: submit answered 200 without a transaction`)
        return
      }
      this.ctx.journal.ledgerTx({
        hash: payment.transaction.txid,
        source: payment.from_address,
        memo: id,
        to: payment.to_address,
        amount: payment.amount.toFixed(7),
      })
    }
    if (payment.transaction === null) return
    const completed = await client.call('POST', `/v2/payments/${id}/complete`, {
      key: this.apiKey,
      json: { txid: payment.transaction.txid },
    })
    if (completed.status === 0) {
      this.u2aResume = true
      return
    }
    if (this.record(completed) === undefined) return this.unexpected('POST /v2/payments/:id/complete', completed)
    this.work.u2aCompleted += 1
    this.u2aOpen = undefined
  }

  /** A plain ledger transfer from the app's wallet to its user (a memo that names no payment). */
  async transfer(): Promise<void> {
    this.#counter += 1
    const hash = await this.submitFromApp(this.userWallet.address, this.amount(), `chaos-${this.index}-${this.#counter}`)
    if (hash !== undefined && hash !== 'bad_seq') this.work.transfers += 1
  }

  /** One notify request: 1 to 3 notifications to a recipient under its daily quota. */
  async notify(): Promise<void> {
    let recipient = this.recipients.find((r) => r.sent + 3 <= NOTIFICATIONS_PER_RECIPIENT)
    if (recipient === undefined) {
      const user = await this.newUser()
      if (user === undefined) return
      recipient = { userId: user.userId, uid: user.uid, sent: 0 }
      this.recipients.push(recipient)
    }
    const count = 1 + Math.floor(this.ctx.random() * 3)
    const notifications = Array.from({ length: count }, (_, i) => ({
      title: `chaos ${this.index}.${this.#counter}.${i}`,
      body: `body ${Math.floor(this.ctx.random() * 1e9)}`,
      user_uid: recipient.uid,
      subroute: '/chaos',
    }))
    this.#counter += 1
    recipient.sent += count
    const reply = await this.ctx.client.call('POST', '/v2/in_app_notifications/notify', { key: this.apiKey, json: { notifications } })
    if (reply.status !== 201) return this.unexpected('POST /v2/in_app_notifications/notify', reply)
    const delivered =
      field<Array<{ id: string; title: string; body: string; user_uid: string }>>(reply.body, 'delivered_notifications') ?? []
    if (delivered.length !== count) this.ctx.problems.add(`notify delivered ${delivered.length} of ${count}`)
    for (const n of delivered) {
      this.ctx.journal.notification({ id: n.id, appId: this.appId, userId: recipient.userId, title: n.title, body: n.body })
      this.work.notifications += 1
    }
  }

  /**
   * After the load: the app finishes every payment, as its server would on start. A2U: whatever
   * incomplete_server_payments lists is completed when its transaction is verified, else
   * cancelled. U2A: the paid one is completed, a known open one is cancelled, and a payment the
   * client never heard of is swept by creating one more (which cancels an open payment that has
   * no transaction) and cancelling that. Answers how many payments it finished.
   */
  async finish(): Promise<number> {
    const { client, problems } = this.ctx
    let finished = 0
    const list = await client.call('GET', '/v2/payments/incomplete_server_payments', { key: this.apiKey })
    if (list.status !== 200) {
      problems.add(`finish: incomplete_server_payments answered ${list.status}`)
      return finished
    }
    const incomplete = field<PaymentDTO[]>(list.body, 'incomplete_server_payments') ?? []
    if (this.a2uOpen !== undefined && !incomplete.some((p) => p.identifier === this.a2uOpen)) {
      const read = await client.call('GET', `/v2/payments/${this.a2uOpen}`, { key: this.apiKey })
      if (read.status !== 200 || !isFinal(read.body as PaymentDTO)) {
        problems.add(`finish: A2U payment ${this.a2uOpen} is open but not listed by incomplete_server_payments`)
      }
    }
    for (const p of incomplete) {
      const move =
        p.transaction?.verified === true
          ? await client.call('POST', `/v2/payments/${p.identifier}/complete`, { key: this.apiKey, json: { txid: p.transaction.txid } })
          : await client.call('POST', `/v2/payments/${p.identifier}/cancel`, { key: this.apiKey, json: {} })
      if (this.record(move) === undefined)
        problems.add(`finish: A2U payment ${p.identifier} answered ${move.status}: ${JSON.stringify(move)}`)
      else finished += 1
    }
    const again = await client.call('GET', '/v2/payments/incomplete_server_payments', { key: this.apiKey })
    const left = field<PaymentDTO[]>(again.body, 'incomplete_server_payments')
    if (again.status !== 200 || left === undefined || left.length > 0)
      problems.add(`finish: A2U payments still incomplete: ${JSON.stringify(again)}`)
    this.a2uOpen = undefined

    const paid = await client.call('GET', '/v2/client/payments/incomplete', { token: this.token })
    const paidPayment = field<PaymentDTO | null>(paid.body, 'payment')
    if (paid.status !== 200) problems.add(`finish: client incomplete answered ${paid.status}`)
    else if (paidPayment !== null && paidPayment !== undefined && paidPayment.transaction !== null) {
      const completed = await client.call('POST', `/v2/payments/${paidPayment.identifier}/complete`, {
        key: this.apiKey,
        json: { txid: paidPayment.transaction.txid },
      })
      if (this.record(completed) === undefined) problems.add(`finish: U2A payment ${paidPayment.identifier} answered ${completed.status}`)
      else finished += 1
    }
    if (this.u2aOpen !== undefined) {
      const read = await client.call('GET', `/v2/payments/${this.u2aOpen}`, { key: this.apiKey })
      const known = read.status === 200 ? (read.body as PaymentDTO) : undefined
      if (known === undefined) problems.add(`finish: U2A payment ${this.u2aOpen} answered ${read.status}`)
      else if (!isFinal(known)) {
        const move =
          known.transaction?.verified === true
            ? await client.call('POST', `/v2/payments/${known.identifier}/complete`, {
                key: this.apiKey,
                json: { txid: known.transaction.txid },
              })
            : await client.call('POST', `/v2/payments/${known.identifier}/cancel`, { key: this.apiKey, json: {} })
        if (this.record(move) === undefined) problems.add(`finish: U2A payment ${known.identifier} answered ${move.status}`)
        else finished += 1
      }
      this.u2aOpen = undefined
    }
    // Sweep a payment created by a request whose answer was lost.
    const sweep = await client.call('POST', '/v2/client/payments', {
      token: this.token,
      json: { amount: 0.0000001, memo: 'sweep', metadata: {} },
    })
    const sweeper = this.record(sweep)
    if (sweeper === undefined) problems.add(`finish: the sweeping create answered ${sweep.status}: ${JSON.stringify(sweep)}`)
    else {
      const cancelled = await client.call('POST', `/v2/payments/${sweeper.identifier}/cancel`, { key: this.apiKey, json: {} })
      if (this.record(cancelled) === undefined) problems.add(`finish: cancelling the sweeper answered ${cancelled.status}`)
    }
    const none = await client.call('GET', '/v2/client/payments/incomplete', { token: this.token })
    if (none.status !== 200 || field<unknown>(none.body, 'payment') !== null)
      problems.add(`finish: a U2A payment is still paid and open: ${JSON.stringify(none)}`)
    return finished
  }
}

// ---------------------------------------------------------------------------------------------
// Verification: read back what the journal holds.

export interface VerifyResult {
  checked: number
  reads: number
  ledgerOk: boolean
}

async function inPool<T>(items: T[], concurrency: number, run: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) {
        const item = items[next]
        next += 1
        if (item !== undefined) await run(item)
      }
    }),
  )
}

/**
 * Reads back every 2xx the journal holds (`all`) or those recorded since the last verification
 * (`new`), through the API, and checks the ledger invariants. Adds a problem for anything lost,
 * changed or half-written.
 */
export async function verifyJournal(http: Client, journal: Journal, problems: Problems, scope: 'new' | 'all'): Promise<VerifyResult> {
  // Its own count: the load may go on beside it.
  let reads = 0
  const client = {
    call: (...args: Parameters<Client['call']>) => {
      reads += 1
      return http.call(...args)
    },
  }
  const paymentIds = scope === 'all' ? [...journal.payments.keys()] : [...journal.dirty.payments]
  const hashes = scope === 'all' ? [...journal.ledger.keys()] : [...journal.dirty.ledger]
  const notificationIds = scope === 'all' ? [...journal.notifications.keys()] : [...journal.dirty.notifications]
  const userIds = scope === 'all' ? [...journal.users.keys()] : [...journal.dirty.users]
  const appIds = scope === 'all' ? [...journal.apps.keys()] : [...journal.dirty.apps]
  journal.dirty.payments.clear()
  journal.dirty.ledger.clear()
  journal.dirty.notifications.clear()
  journal.dirty.users.clear()
  journal.dirty.apps.clear()
  let checked = 0

  await inPool(paymentIds, 6, async (id) => {
    const record = journal.payments.get(id)
    if (record === undefined) return
    const reply = await client.call('GET', `/v2/payments/${id}`, { key: record.apiKey })
    if (reply.status !== 200) return problems.add(`payment ${id} answered 2xx before the crash; now GET answers ${reply.status}`)
    const p = reply.body as PaymentDTO
    for (const flag of FLAG_NAMES) {
      if (record.flags[flag] && !p.status[flag]) problems.add(`payment ${id}: ${flag} was answered true before the crash, is false after`)
    }
    if (record.txid !== null && p.transaction?.txid !== record.txid) {
      problems.add(`payment ${id}: txid ${record.txid} before the crash, ${p.transaction?.txid ?? 'none'} after`)
    }
    if (p.amount !== record.amount || p.direction !== record.direction || p.user_uid !== record.uid) {
      problems.add(`payment ${id}: amount, direction or uid changed across the crash`)
    }
    // Whole, not half-written: the flags agree with each other and a linked transaction is on the ledger.
    if (p.status.developer_completed && (!p.status.transaction_verified || p.transaction === null)) {
      problems.add(`payment ${id} is completed without a verified transaction`)
    }
    if (p.status.developer_completed && (p.status.cancelled || p.status.user_cancelled))
      problems.add(`payment ${id} is completed and cancelled`)
    if (p.transaction !== null && (scope === 'new' || record.txid === null)) {
      const tx = await client.call('GET', `/ledger/transactions/${p.transaction.txid}`)
      if (tx.status !== 200) problems.add(`payment ${id} links ${p.transaction.txid}, which the ledger answers ${tx.status}`)
      else if (field<string>(tx.body, 'memo') !== id)
        problems.add(`payment ${id} links ${p.transaction.txid}, whose memo is not the payment`)
    }
    checked += 1
  })

  await inPool(hashes, 6, async (hash) => {
    const record = journal.ledger.get(hash)
    if (record === undefined) return
    const tx = await client.call('GET', `/ledger/transactions/${hash}`)
    if (tx.status !== 200) return problems.add(`ledger transaction ${hash} answered 2xx before the crash; now GET answers ${tx.status}`)
    if (field<string>(tx.body, 'source_account') !== record.source || (field<string>(tx.body, 'memo') ?? null) !== record.memo) {
      problems.add(`ledger transaction ${hash}: source or memo changed across the crash`)
    }
    const ops = await client.call('GET', `/ledger/transactions/${hash}/operations`)
    const records = field<{ records?: Array<{ to: string; amount: string }> }>(ops.body, '_embedded')?.records ?? []
    if (ops.status !== 200 || records.length !== 1 || records[0]?.to !== record.to || records[0]?.amount !== record.amount) {
      problems.add(`ledger transaction ${hash}: its operation is missing or changed (${JSON.stringify(records)})`)
    }
    const linked = record.memo === null ? undefined : journal.payments.get(record.memo)
    if (linked !== undefined) {
      const payment = await client.call('GET', `/v2/payments/${linked.id}`, { key: linked.apiKey })
      if ((payment.body as PaymentDTO | undefined)?.transaction?.txid !== hash) {
        problems.add(`ledger transaction ${hash} pays payment ${linked.id}, which does not link it (half-written)`)
      }
    }
    checked += 1
  })

  // Notifications: read each recipient's centre for the app once.
  const byCentre = new Map<string, NotificationRecord[]>()
  for (const id of notificationIds) {
    const record = journal.notifications.get(id)
    if (record === undefined) continue
    const key = `${record.userId} ${record.appId}`
    byCentre.set(key, [...(byCentre.get(key) ?? []), record])
  }
  await inPool([...byCentre.values()], 6, async (records) => {
    const first = records[0]
    if (first === undefined) return
    const seen = new Map<string, { title: string; body: string }>()
    let cursor: string | null | undefined
    for (let page = 0; page < 20; page++) {
      const query = `app_id=${first.appId}&limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`
      const reply = await client.call('GET', `/sandbox/users/${first.userId}/notifications?${query}`)
      if (reply.status !== 200) return problems.add(`notification centre of ${first.userId} answered ${reply.status}`)
      for (const n of field<Array<{ id: string; title: string; body: string }>>(reply.body, 'notifications') ?? []) seen.set(n.id, n)
      cursor = field<string | null>(reply.body, 'next_cursor')
      if (cursor === null || cursor === undefined) break
    }
    for (const record of records) {
      const found = seen.get(record.id)
      if (found === undefined) problems.add(`notification ${record.id} answered 2xx before the crash; it is not in the centre after`)
      else if (found.title !== record.title || found.body !== record.body)
        problems.add(`notification ${record.id} changed across the crash`)
      else checked += 1
    }
  })

  await inPool(userIds, 6, async (userId) => {
    const record = journal.users.get(userId)
    if (record === undefined) return
    const reply = await client.call('GET', `/sandbox/users/${userId}`)
    if (reply.status !== 200) return problems.add(`user ${userId} answered 2xx before the crash; now GET answers ${reply.status}`)
    if (field<string>(reply.body, 'username') !== record.username) problems.add(`user ${userId}: username changed across the crash`)
    const apps = field<Array<{ app_id: string; uid: string; scopes: string[] }>>(reply.body, 'apps') ?? []
    for (const [appId, uid] of record.memberships) {
      const membership = apps.find((a) => a.app_id === appId)
      if (membership === undefined || membership.uid !== uid)
        problems.add(`user ${userId}: the consent to ${appId} answered before the crash is gone`)
    }
    checked += 1
  })

  await inPool(appIds, 6, async (appId) => {
    const reply = await client.call('GET', `/sandbox/apps/${appId}`)
    if (reply.status !== 200) return problems.add(`app ${appId} answered 2xx before the crash; now GET answers ${reply.status}`)
    if (field<string>(reply.body, 'name') !== journal.apps.get(appId)) problems.add(`app ${appId}: name changed across the crash`)
    checked += 1
  })

  reads += 1
  const ledgerOk = await checkLedger(http, problems)
  return { checked, reads, ledgerOk }
}

/** GET /sandbox/ledger/check: no negative balance, total supply = funding − fees, every account balanced. */
export async function checkLedger(client: Client, problems: Problems): Promise<boolean> {
  const reply = await client.call('GET', '/sandbox/ledger/check')
  if (reply.status === 200 && field<boolean>(reply.body, 'ok') === true) return true
  problems.add(`the ledger check failed: ${reply.status} ${JSON.stringify(reply.status === 0 ? reply.error : reply.body)}`)
  return false
}

// ---------------------------------------------------------------------------------------------
// SQL invariants, against the database itself once the run is over.

export interface SqlCheck {
  name: string
  /** Rows that break the invariant; the check passes when it answers none. */
  sql: string
}

export const SQL_CHECKS: SqlCheck[] = [
  {
    name: 'no payment is left incomplete (neither completed nor cancelled)',
    sql: `select identifier from payments where not developer_completed and not cancelled and not user_cancelled`,
  },
  {
    name: 'every completed payment has a verified transaction on the ledger',
    sql: `select p.identifier from payments p left join ledger_transactions t on t.hash = p.txid
          where p.developer_completed and (p.txid is null or p.tx_verified is not true or t.hash is null)`,
  },
  {
    name: "the verified transaction pays exactly the payment's amount from payer to payee, in one operation",
    sql: `select p.identifier from payments p
          where p.tx_verified and not exists (
            select 1 from ledger_transactions t join ledger_operations o on o.transaction_hash = t.hash
            where t.hash = p.txid and t.operation_count = 1 and o."from" = p.from_address and o."to" = p.to_address and o.amount = p.amount)`,
  },
  {
    name: 'no payment is cancelled with its transaction verified (the money moved for it: it must be completable)',
    sql: `select identifier from payments where (cancelled or user_cancelled) and txid is not null and tx_verified`,
  },
  {
    name: 'no transaction is linked to two payments',
    sql: `select txid from payments where txid is not null group by txid having count(*) > 1`,
  },
  {
    name: "a linked transaction is the payer's and carries the payment's identifier",
    sql: `select p.identifier from payments p join ledger_transactions t on t.hash = p.txid
          where t.memo is distinct from p.identifier or t.source_account <> p.from_address`,
  },
  {
    name: "no payer's transaction for an open-at-the-time payment went unlinked (a link commits with its transaction)",
    sql: `select p.identifier from payments p where p.txid is null and exists (
            select 1 from ledger_transactions t where t.memo_type = 'text' and t.memo = p.identifier and t.source_account = p.from_address
              and (p.cancelled_at is null or t.created_at < p.cancelled_at))`,
  },
  {
    name: 'no negative balance',
    sql: `select address from ledger_accounts where balance < 0`,
  },
  {
    name: 'total supply = total funded - total fees',
    sql: `select 1 where (select coalesce(sum(balance), 0) from ledger_accounts)
            <> (select coalesce(sum(amount), 0) from ledger_fundings) - (select coalesce(sum(fee_charged), 0) from ledger_transactions) / 10000000.0`,
  },
  {
    name: 'every account balance = fundings + received - sent - fees',
    sql: `select a.address from ledger_accounts a where a.balance <>
              coalesce((select sum(f.amount) from ledger_fundings f where f.address = a.address), 0)
            + coalesce((select sum(o.amount) from ledger_operations o where o."to" = a.address), 0)
            - coalesce((select sum(o.amount) from ledger_operations o where o."from" = a.address), 0)
            - coalesce((select sum(t.fee_charged) from ledger_transactions t where t.source_account = a.address), 0) / 10000000.0`,
  },
  {
    name: 'every ledger transaction has its operations',
    sql: `select t.hash from ledger_transactions t where t.operation_count <> (select count(*) from ledger_operations o where o.transaction_hash = t.hash)`,
  },
]

/** Runs every SQL check against the stopped platform's database; answers how many passed, each broken one added to `problems`. */
export async function runSqlChecks(sql: Pick<SqlAccess, 'query'>, problems: Problems): Promise<number> {
  let passed = 0
  for (const check of SQL_CHECKS) {
    const rows = await sql.query<Record<string, unknown>>(check.sql)
    if (rows.length === 0) passed += 1
    else problems.add(`SQL invariant "${check.name}" broken by ${rows.length} rows: ${JSON.stringify(rows.slice(0, 5))}`)
  }
  return passed
}
