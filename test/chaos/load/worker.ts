import { Account, Asset, Keypair, Memo, Operation, TransactionBuilder } from '@stellar/stellar-base'
import type { PaymentDTO } from '../../../src/payments/payment-dto.js'
import { type Client, field, type Problems, type Reply } from './client.js'
import { isFinal, type Journal } from './journal.js'
import type { Random } from './random.js'

/**
 * Sustained load on a running Plinth, and what it takes to check it afterwards: workers run
 * A2U and U2A payment lifecycles, plain ledger transfers and notify requests over HTTP, and a
 * journal keeps what every 2xx answered, so that after a crash the answers can be read back.
 */

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
