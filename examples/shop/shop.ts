/**
 * The Demo Shop's backend: serves its frontend and a small JSON API, and talks to the platform
 * as any app backend does (server API key, app wallet seed). Users are known only through
 * `GET /v2/me`; goods are granted only after the platform confirmed what was paid or watched.
 * State lives in memory, keyed by the uid `/me` answered.
 */
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { fileURLToPath } from 'node:url'
import { LedgerError, type PaymentDTO, PlatformError, platformApi, submitAppToUserPayment, type UserDTO } from './plinth.js'

export interface Item {
  id: string
  name: string
  description: string
  price: number
}

export const CATALOGUE: readonly Item[] = [
  { id: 'sticker-pack', name: 'Sticker pack', description: 'Twelve glossy π stickers.', price: 1 },
  { id: 'pi-mug', name: 'π mug', description: 'Holds 3.14 cups of coffee.', price: 3.14 },
  { id: 'golden-ticket', name: 'Golden ticket', description: 'Admits one to the back room.', price: 10 },
]

/** What the shop pays a user who claims the Pi reward (app to user). */
export const PI_REWARD = 0.5
/** What a rewarded ad is worth, in the shop's own coins. */
export const AD_REWARD_COINS = 10

export interface ShopOptions {
  /** Plinth's base URL, for example http://127.0.0.1:8080. */
  plinthUrl: string
  apiKey: string
  walletSeed: string
  /** How long a reward claim waits for the ad mediator's verdict (at once by default; PLINTH_AD_VERDICT_DELAY_SECONDS delays it). */
  adVerdictTimeoutMs?: number
  adPollIntervalMs?: number
  /** The app's validation key (production): served at /validation-key.txt, where the portal's Verify fetches it. */
  validationKey?: string
  log?: (line: string) => void
}

export interface UserState {
  uid: string
  username: string | null
  items: Record<string, number>
  coins: number
  /** Pi received through A2U rewards, in stroops (1 Pi = 10,000,000), to stay exact. */
  piRewardStroops: bigint
}

interface Session {
  uid: string
  scopes: string[]
  expiresAt: number
}

/** A refusal of the shop's own API: `{error, message}` with a status. */
class ShopError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message)
  }
}

const PUBLIC_DIR = fileURLToPath(new URL('./public/', import.meta.url))
const STATIC_FILES: Record<string, { file: string; type: string }> = {
  '/shop.js': { file: 'shop.js', type: 'text/javascript; charset=utf-8' },
  '/shop.css': { file: 'shop.css', type: 'text/css; charset=utf-8' },
}
const BODY_LIMIT = 16 * 1024
const ID = /^[A-Za-z0-9_-]{1,64}$/
const TXID = /^[0-9a-f]{64}$/
const STROOPS_PER_PI = 10_000_000n

const escapeAttribute = (value: string) =>
  value.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c)

const toStroops = (pi: number) => BigInt(Math.round(pi * 1e7))
function formatPi(stroops: bigint): string {
  const whole = stroops / STROOPS_PER_PI
  const fraction = (stroops % STROOPS_PER_PI).toString().padStart(7, '0').replace(/0+$/, '')
  return fraction === '' ? whole.toString() : `${whole}.${fraction}`
}

export function createShop(options: ShopOptions): { server: Server; users: Map<string, UserState> } {
  const plinthUrl = options.plinthUrl.replace(/\/+$/, '')
  const platform = platformApi({ plinthUrl, apiKey: options.apiKey })
  const log = options.log ?? (() => {})
  const verdictTimeoutMs = options.adVerdictTimeoutMs ?? 6000
  const pollMs = options.adPollIntervalMs ?? 400
  const plinthOrigin = new URL(plinthUrl).origin

  const sessions = new Map<string, Session>()
  const users = new Map<string, UserState>()
  /** Payments whose goods were delivered, and rewards paid: each is granted once however often it is reported. */
  const delivered = new Set<string>()
  /** Ads whose reward is being claimed or was granted: an adId pays once. */
  const claimedAds = new Set<string>()
  /** Users with an A2U reward in flight. */
  const rewarding = new Set<string>()

  const indexHtml = readFileSync(`${PUBLIC_DIR}index.html`, 'utf8').replaceAll('%PLINTH_URL%', escapeAttribute(plinthUrl))
  const contentSecurityPolicy = [
    "default-src 'self'",
    `script-src 'self' ${plinthOrigin}`,
    `connect-src 'self' ${plinthOrigin}`,
    `frame-src ${plinthOrigin}`,
    `img-src 'self' data: ${plinthOrigin}`,
    `style-src 'self' 'unsafe-inline' ${plinthOrigin}`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    // The platform's browser (Plinth's sandbox page) frames the app; nobody else may.
    `frame-ancestors 'self' ${plinthOrigin}`,
  ].join('; ')

  function userState(uid: string, username?: string): UserState {
    let state = users.get(uid)
    if (state === undefined) {
      state = { uid, username: username ?? null, items: {}, coins: 0, piRewardStroops: 0n }
      users.set(uid, state)
    } else if (username !== undefined) {
      state.username = username
    }
    return state
  }

  const note = (state: UserState, line: string) => log(`[${state.username ?? state.uid}] ${line}`)

  const view = (state: UserState) => ({
    uid: state.uid,
    username: state.username,
    items: CATALOGUE.map((item) => ({ id: item.id, name: item.name, count: state.items[item.id] ?? 0 })),
    coins: state.coins,
    pi_rewards: formatPi(state.piRewardStroops),
  })

  function session(request: IncomingMessage): Session {
    const match = /^Bearer (\S+)$/.exec(request.headers.authorization ?? '')
    const found = match?.[1] === undefined ? undefined : sessions.get(match[1])
    if (found === undefined || found.expiresAt <= Date.now()) throw new ShopError(401, 'signed_out', 'Sign in first.')
    return found
  }

  function requireScope(current: Session, scope: string, what: string): void {
    if (!current.scopes.includes(scope)) {
      throw new ShopError(403, 'missing_scope', `${what} needs the "${scope}" permission: sign in again and allow it.`)
    }
  }

  /** Reads a payment from the platform; another user's payment is answered as unknown, never confirmed. */
  async function ownPayment(current: Session, paymentId: string): Promise<PaymentDTO> {
    let payment: PaymentDTO
    try {
      payment = await platform.getPayment(paymentId)
    } catch (error) {
      if (error instanceof PlatformError && error.status === 404) throw new ShopError(404, 'payment_not_found', 'No such payment.')
      throw error
    }
    if (payment.user_uid !== current.uid) throw new ShopError(404, 'payment_not_found', 'No such payment.')
    return payment
  }

  /** A user's payment that buys a catalogue item at its price. */
  async function purchase(current: Session, paymentId: string): Promise<{ payment: PaymentDTO; item: Item }> {
    const payment = await ownPayment(current, paymentId)
    if (payment.direction !== 'user_to_app') throw new ShopError(400, 'not_a_purchase', 'That payment is not a purchase.')
    const item = CATALOGUE.find((candidate) => candidate.id === payment.metadata.item_id)
    if (item === undefined || toStroops(payment.amount) !== toStroops(item.price)) {
      throw new ShopError(400, 'wrong_price', 'That payment does not buy an item of this shop at its price.')
    }
    return { payment, item }
  }

  function grantPurchase(current: Session, payment: PaymentDTO, item: Item): boolean {
    if (!payment.status.developer_completed || delivered.has(payment.identifier)) return false
    delivered.add(payment.identifier)
    const state = userState(current.uid)
    state.items[item.id] = (state.items[item.id] ?? 0) + 1
    note(state, `Bought ${item.name} for ${item.price} Pi (payment ${payment.identifier}): delivered.`)
    return true
  }

  async function cancelQuietly(paymentId: string): Promise<PaymentDTO | undefined> {
    try {
      return await platform.cancelPayment(paymentId)
    } catch (error) {
      // Already cancelled by the user or the platform, paid or completed: nothing left to cancel.
      if (error instanceof PlatformError && error.status === 409) return undefined
      throw error
    }
  }

  const reward = (uid: string) => ({ amount: PI_REWARD, memo: 'Pi reward', metadata: { kind: 'reward' }, uid })
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

  // ---- the API --------------------------------------------------------------------------------

  type Handler = (request: IncomingMessage, body: Record<string, unknown>) => Promise<unknown>
  const stringField = (body: Record<string, unknown>, name: string, pattern: RegExp): string => {
    const value = body[name]
    if (typeof value !== 'string' || !pattern.test(value))
      throw new ShopError(400, 'invalid_arguments', `"${name}" is missing or malformed.`)
    return value
  }

  const routes: Record<string, Handler> = {
    'GET /api/catalogue': async () => ({
      items: CATALOGUE,
      pi_reward: PI_REWARD,
      ad_reward_coins: AD_REWARD_COINS,
    }),

    /** The frontend hands over the access token Pi.authenticate gave it; the platform says whose it is. */
    'POST /api/signin': async (_request, body) => {
      const accessToken = stringField(body, 'accessToken', /^[\x21-\x7e]{1,512}$/)
      let me: UserDTO
      try {
        me = await platform.me(accessToken)
      } catch (error) {
        if (error instanceof PlatformError && error.status === 401)
          throw new ShopError(401, 'invalid_token', 'The platform did not accept that access token.')
        throw error
      }
      for (const [id, stale] of sessions) if (stale.expiresAt <= Date.now()) sessions.delete(id)
      const sessionId = randomBytes(32).toString('base64url')
      const expiresAt = me.credentials.valid_until.timestamp * 1000
      sessions.set(sessionId, { uid: me.uid, scopes: me.credentials.scopes, expiresAt })
      const state = userState(me.uid, me.username)
      note(state, 'Signed in.')
      return { session: sessionId, scopes: me.credentials.scopes, state: view(state) }
    },

    'GET /api/me': async (request) => {
      const current = session(request)
      return { scopes: current.scopes, state: view(userState(current.uid)) }
    },

    /** onReadyForServerApproval: check the payment, then approve it. Nothing is granted yet. */
    'POST /api/payments/approve': async (request, body) => {
      const current = session(request)
      const paymentId = stringField(body, 'paymentId', ID)
      let checked: { payment: PaymentDTO; item: Item }
      try {
        checked = await purchase(current, paymentId)
      } catch (error) {
        // A payment the shop will not approve is cancelled, so it does not block the user's next one.
        if (error instanceof ShopError && error.code === 'wrong_price') await cancelQuietly(paymentId)
        throw error
      }
      const approved = await platform.approvePayment(paymentId)
      note(userState(current.uid), `Approved payment ${paymentId} for ${checked.item.name}; waiting for it to be paid.`)
      return { approved: approved.status.developer_approved, granted: false, state: view(userState(current.uid)) }
    },

    /** onReadyForServerCompletion: complete with the txid, and grant the item only once that succeeded. */
    'POST /api/payments/complete': async (request, body) => {
      const current = session(request)
      const paymentId = stringField(body, 'paymentId', ID)
      const txid = stringField(body, 'txid', TXID)
      const { item } = await purchase(current, paymentId)
      const completed = await platform.completePayment(paymentId, txid)
      grantPurchase(current, completed, item)
      return {
        completed: completed.status.developer_completed,
        granted: delivered.has(paymentId),
        item: item.id,
        state: view(userState(current.uid)),
      }
    },

    /** onCancel / onError: grant nothing; cancel on the platform what can still be cancelled. */
    'POST /api/payments/cancel': async (request, body) => {
      const current = session(request)
      const paymentId = stringField(body, 'paymentId', ID)
      const payment = await ownPayment(current, paymentId)
      if (!payment.status.developer_completed) await cancelQuietly(paymentId)
      note(userState(current.uid), `Payment ${paymentId} was cancelled: nothing delivered.`)
      return { cancelled: true, granted: false, state: view(userState(current.uid)) }
    },

    /** onIncompletePaymentFound: a payment paid on the ledger but never completed (the app went away): finish it now. */
    'POST /api/payments/incomplete': async (request, body) => {
      const current = session(request)
      const paymentId = stringField(body, 'paymentId', ID)
      const { payment, item } = await purchase(current, paymentId)
      if (payment.transaction === null || !payment.transaction.verified) {
        if (!payment.status.developer_completed) await cancelQuietly(paymentId)
        return { completed: false, granted: false, state: view(userState(current.uid)) }
      }
      const completed = await platform.completePayment(paymentId, payment.transaction.txid)
      grantPurchase(current, completed, item)
      return { completed: true, granted: delivered.has(paymentId), item: item.id, state: view(userState(current.uid)) }
    },

    /** An app-to-user payment: create it, pay it from the app wallet on the ledger, complete it. */
    'POST /api/rewards/pi': async (request) => {
      const current = session(request)
      requireScope(current, 'wallet_address', 'A Pi reward')
      if (rewarding.has(current.uid)) throw new ShopError(409, 'reward_in_progress', 'A reward is already on its way.')
      rewarding.add(current.uid)
      try {
        let payment: PaymentDTO
        try {
          payment = await platform.createPayment(reward(current.uid))
        } catch (error) {
          // An earlier reward that never finished (the shop stopped mid-way): finish that one first.
          if (!(error instanceof PlatformError && error.code === 'ongoing_payment_found')) throw error
          payment = error.body.payment as PaymentDTO
          if (payment.transaction !== null && !payment.transaction.verified) {
            // Its transaction does not match it, so it can never complete: cancel it and start again.
            await platform.cancelPayment(payment.identifier)
            payment = await platform.createPayment(reward(current.uid))
          }
        }
        const txid = payment.transaction?.txid ?? (await submitAppToUserPayment({ plinthUrl, walletSeed: options.walletSeed, payment }))
        const completed = await platform.completePayment(payment.identifier, txid)
        const state = userState(current.uid)
        if (completed.status.developer_completed && !delivered.has(completed.identifier)) {
          delivered.add(completed.identifier)
          state.piRewardStroops += toStroops(completed.amount)
          note(state, `Received a ${completed.amount} Pi reward (payment ${completed.identifier}, transaction ${txid.slice(0, 10)}…).`)
        }
        return { paymentId: completed.identifier, txid, amount: completed.amount, state: view(state) }
      } finally {
        rewarding.delete(current.uid)
      }
    },

    /** A rewarded ad the user watched: reward it only when the platform's mediator says granted. */
    'POST /api/ads/reward': async (request, body) => {
      const current = session(request)
      const adId = stringField(body, 'adId', ID)
      if (claimedAds.has(adId)) throw new ShopError(409, 'already_claimed', 'This ad was already rewarded (or is being checked).')
      claimedAds.add(adId)
      let status: string | null = null
      try {
        const deadline = Date.now() + verdictTimeoutMs
        for (;;) {
          status = (await platform.adStatus(adId)).mediator_ack_status
          if (status !== null || Date.now() + pollMs > deadline) break
          await sleep(pollMs)
        }
      } catch (error) {
        claimedAds.delete(adId)
        if (error instanceof PlatformError && error.status === 404)
          throw new ShopError(404, 'ad_not_found', 'The platform knows no such ad.')
        throw error
      }
      const state = userState(current.uid)
      if (status !== 'granted') {
        // Not granted (yet): free the id, so a pending ad can be claimed again once it is decided.
        if (status === null) claimedAds.delete(adId)
        note(state, `Ad ${adId}: the ad network says ${status ?? 'nothing yet'}; no reward.`)
        return { granted: false, status, state: view(state) }
      }
      state.coins += AD_REWARD_COINS
      note(state, `Watched ad ${adId}: +${AD_REWARD_COINS} coins.`)
      return { granted: true, status, state: view(state) }
    },

    'POST /api/notify': async (request) => {
      const current = session(request)
      requireScope(current, 'in_app_notifications', 'A notification')
      const state = userState(current.uid)
      const owned = Object.values(state.items).reduce((sum, n) => sum + n, 0)
      let delivered: boolean
      try {
        const answer = await platform.notify([
          {
            title: 'Hello from Demo Shop',
            body: `You own ${owned} item${owned === 1 ? '' : 's'} and ${state.coins} coins. Come back for more!`,
            user_uid: current.uid,
            subroute: '/',
          },
        ])
        delivered = answer.delivered_notifications.length > 0
      } catch (error) {
        if (error instanceof PlatformError && error.status === 403) throw new ShopError(429, 'quota_exceeded', error.code)
        throw error
      }
      note(state, delivered ? 'Sent you a notification.' : 'The notification was not delivered (notifications are off).')
      return { delivered, state: view(state) }
    },
  }

  // ---- HTTP -----------------------------------------------------------------------------------

  function send(response: ServerResponse, status: number, type: string, body: string, extra: Record<string, string> = {}): void {
    response.writeHead(status, {
      'content-type': type,
      'content-length': Buffer.byteLength(body),
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'cache-control': 'no-store',
      ...extra,
    })
    response.end(body)
  }
  const sendJson = (response: ServerResponse, status: number, value: unknown) =>
    send(response, status, 'application/json; charset=utf-8', JSON.stringify(value))

  async function readBody(request: IncomingMessage): Promise<Record<string, unknown>> {
    const chunks: Buffer[] = []
    let size = 0
    for await (const chunk of request) {
      size += (chunk as Buffer).length
      if (size > BODY_LIMIT) throw new ShopError(413, 'too_large', 'Request body too large.')
      chunks.push(chunk as Buffer)
    }
    if (size === 0) return {}
    if (!/^application\/json\b/.test(request.headers['content-type'] ?? ''))
      throw new ShopError(415, 'unsupported_media_type', 'Send JSON.')
    try {
      const parsed: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'))
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object')
      return parsed as Record<string, unknown>
    } catch {
      throw new ShopError(400, 'invalid_json', 'The body is not a JSON object.')
    }
  }

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = new URL(request.url ?? '/', 'http://shop.invalid').pathname
    if (request.method === 'GET' && (path === '/' || path === '/index.html')) {
      return send(response, 200, 'text/html; charset=utf-8', indexHtml, { 'content-security-policy': contentSecurityPolicy })
    }
    // The whole body is the key: the platform compares it, trimmed, with the app's (docs/portal.md).
    if (request.method === 'GET' && path === '/validation-key.txt' && options.validationKey !== undefined) {
      return send(response, 200, 'text/plain; charset=utf-8', `${options.validationKey}\n`)
    }
    const file = STATIC_FILES[path]
    if (request.method === 'GET' && file !== undefined) {
      return send(response, 200, file.type, readFileSync(`${PUBLIC_DIR}${file.file}`, 'utf8'))
    }
    const route = routes[`${request.method} ${path}`]
    if (route === undefined) return sendJson(response, 404, { error: 'not_found', message: 'No such page.' })
    try {
      const body = await readBody(request)
      sendJson(response, 200, await route(request, body))
    } catch (error) {
      if (error instanceof ShopError) return sendJson(response, error.status, { error: error.code, message: error.message })
      if (error instanceof PlatformError) {
        log(`platform refused ${request.method} ${path}: ${error.status} ${error.code}: ${error.message}`)
        // The platform refused the user's move (409, 400…): pass its code on so the frontend can say
        // what happened. A refusal of the shop's own credentials, or a platform failure, is the shop's fault.
        const ours = error.status === 401 || error.status === 403 || error.status >= 500
        return sendJson(response, ours ? 502 : 409, { error: error.code, message: error.message })
      }
      if (error instanceof LedgerError) {
        log(`ledger refused ${request.method} ${path}: ${error.message} ${JSON.stringify(error.resultCodes)}`)
        return sendJson(response, 502, { error: 'ledger_refused', message: error.message })
      }
      log(`error in ${request.method} ${path}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`)
      sendJson(response, 500, { error: 'internal', message: 'Something went wrong.' })
    }
  }

  const server = createServer((request, response) => {
    handle(request, response).catch(() => {
      if (!response.headersSent) sendJson(response, 500, { error: 'internal', message: 'Something went wrong.' })
      else response.destroy()
    })
  })
  return { server, users }
}
