/**
 * The shop backend's view of the platform: the Platform API (`/v2`) over plain HTTP, exactly
 * as against the live platform, and the ledger's Horizon-style API for app-to-user payments.
 */
import { Account, Asset, Keypair, Memo, Operation, TransactionBuilder } from '@stellar/stellar-base'

export interface UserDTO {
  uid: string
  username?: string
  credentials: { scopes: string[]; valid_until: { timestamp: number; iso8601: string } }
}

export interface PaymentDTO {
  identifier: string
  user_uid: string
  amount: number
  memo: string
  metadata: Record<string, unknown>
  from_address: string
  to_address: string
  direction: 'user_to_app' | 'app_to_user'
  created_at: string
  network: string
  status: {
    developer_approved: boolean
    transaction_verified: boolean
    developer_completed: boolean
    cancelled: boolean
    user_cancelled: boolean
  }
  transaction: null | { txid: string; verified: boolean; _link: string }
}

export interface RewardedAdStatusDTO {
  identifier: string
  mediator_ack_status: 'granted' | 'revoked' | 'failed' | null
  mediator_granted_at: string | null
  mediator_revoked_at: string | null
}

export interface NotificationInput {
  title: string
  body: string
  user_uid: string
  subroute: string
}

/** An error answer of the platform: `{error, error_message}` (notify: `{error}` with the text). */
export class PlatformError extends Error {
  override name = 'PlatformError'
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly body: Record<string, unknown>,
  ) {
    super(message)
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

async function readJson(response: Response): Promise<unknown> {
  const text = await response.text()
  if (text === '') return undefined
  try {
    return JSON.parse(text) as unknown
  } catch {
    return text
  }
}

function failure(response: Response, body: unknown): PlatformError {
  const record = isRecord(body) ? body : {}
  const code = typeof record.error === 'string' ? record.error : `http_${response.status}`
  const message = typeof record.error_message === 'string' ? record.error_message : code
  return new PlatformError(response.status, code, message, record)
}

export type PlatformApi = ReturnType<typeof platformApi>

/** The Platform API with the app's server API key; `me` uses the user's access token instead. */
export function platformApi(options: { plinthUrl: string; apiKey: string }) {
  const base = options.plinthUrl.replace(/\/+$/, '')

  async function call<T>(method: string, path: string, authorization: string, body?: unknown): Promise<T> {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: {
        authorization,
        accept: 'application/json',
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const parsed = await readJson(response)
    if (!response.ok) throw failure(response, parsed)
    return parsed as T
  }
  const key = `Key ${options.apiKey}`
  const id = (value: string) => encodeURIComponent(value)

  return {
    /** Verifies an access token: the only way the backend learns who the user is. */
    me: (accessToken: string) => call<UserDTO>('GET', '/v2/me', `Bearer ${accessToken}`),
    getPayment: (paymentId: string) => call<PaymentDTO>('GET', `/v2/payments/${id(paymentId)}`, key),
    approvePayment: (paymentId: string) => call<PaymentDTO>('POST', `/v2/payments/${id(paymentId)}/approve`, key),
    completePayment: (paymentId: string, txid: string) => call<PaymentDTO>('POST', `/v2/payments/${id(paymentId)}/complete`, key, { txid }),
    cancelPayment: (paymentId: string) => call<PaymentDTO>('POST', `/v2/payments/${id(paymentId)}/cancel`, key),
    createPayment: (payment: { amount: number; memo: string; metadata: Record<string, unknown>; uid: string }) =>
      call<PaymentDTO>('POST', '/v2/payments', key, { payment }),
    incompleteServerPayments: () =>
      call<{ incomplete_server_payments: PaymentDTO[] }>('GET', '/v2/payments/incomplete_server_payments', key),
    adStatus: (adId: string) => call<RewardedAdStatusDTO>('GET', `/v2/ads_network/status/${id(adId)}`, key),
    notify: (notifications: NotificationInput[]) =>
      call<{ success: boolean; delivered_notifications: Array<NotificationInput & { id: string }> }>(
        'POST',
        '/v2/in_app_notifications/notify',
        key,
        { notifications },
      ),
  }
}

/** A refusal of the ledger: a Horizon problem document, with the result codes when a rule refused the transaction. */
export class LedgerError extends Error {
  override name = 'LedgerError'
  constructor(
    readonly status: number,
    message: string,
    readonly resultCodes: unknown,
  ) {
    super(message)
  }
}

/** How long a signed transaction stays valid, in seconds of ledger time (what stellar-sdk's fetchTimebounds(180) gives). */
const VALID_FOR_SECONDS = 180

/**
 * The app's side of an app-to-user payment on the ledger: build one native payment from the app
 * wallet to the payment's recipient, memo = payment identifier, signed under the payment's network
 * (its passphrase), and submit it. Answers the transaction id to complete the payment with.
 */
export async function submitAppToUserPayment(options: { plinthUrl: string; walletSeed: string; payment: PaymentDTO }): Promise<string> {
  const { payment } = options
  const horizon = `${options.plinthUrl.replace(/\/+$/, '')}/ledger`
  const keypair = Keypair.fromSecret(options.walletSeed)
  if (payment.from_address !== keypair.publicKey()) {
    throw new Error(
      `Payment ${payment.identifier} is paid from ${payment.from_address}, not from this app's wallet ${keypair.publicKey()}.`,
    )
  }

  const [accountResponse, feeResponse] = await Promise.all([
    fetch(`${horizon}/accounts/${encodeURIComponent(keypair.publicKey())}`),
    fetch(`${horizon}/fee_stats`),
  ])
  const account = await readJson(accountResponse)
  const fees = await readJson(feeResponse)
  if (!accountResponse.ok || !isRecord(account) || typeof account.sequence !== 'string') {
    throw new LedgerError(accountResponse.status, `Cannot load the app wallet ${keypair.publicKey()} from the ledger.`, undefined)
  }
  const baseFee = isRecord(fees) && typeof fees.last_ledger_base_fee === 'string' ? fees.last_ledger_base_fee : '100'
  // Time bounds are checked against the ledger's clock (the platform clock, which the sandbox can
  // move), so take "now" from its Date header rather than from this machine.
  const ledgerNow = Date.parse(accountResponse.headers.get('date') ?? '')
  const nowSeconds = Math.floor((Number.isNaN(ledgerNow) ? Date.now() : ledgerNow) / 1000)

  const transaction = new TransactionBuilder(new Account(keypair.publicKey(), account.sequence), {
    fee: baseFee,
    networkPassphrase: payment.network,
    timebounds: { minTime: 0, maxTime: nowSeconds + VALID_FOR_SECONDS },
  })
    .addOperation(Operation.payment({ destination: payment.to_address, asset: Asset.native(), amount: payment.amount.toFixed(7) }))
    .addMemo(Memo.text(payment.identifier))
    .build()
  transaction.sign(keypair)

  const submitted = await fetch(`${horizon}/transactions`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams({ tx: transaction.toEnvelope().toXDR('base64') }).toString(),
  })
  const result = await readJson(submitted)
  if (!submitted.ok || !isRecord(result) || typeof result.hash !== 'string') {
    const problem = isRecord(result) ? result : {}
    const extras = isRecord(problem.extras) ? problem.extras : {}
    const detail = typeof problem.detail === 'string' ? problem.detail : `HTTP ${submitted.status}`
    throw new LedgerError(submitted.status, `The ledger refused the reward transaction: ${detail}`, extras.result_codes)
  }
  return result.hash
}
