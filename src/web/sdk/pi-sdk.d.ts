/**
 * Types of Plinth's client SDK, the interface of the live platform's browser SDK.
 *
 * Served at `/sdk/pi-sdk.d.ts`. With the classic script (`<script src=".../sdk/pi-sdk.js">`)
 * the SDK is `window.Pi`; the ES module (`.../sdk/pi-sdk.mjs`) exports `Pi` (also as the
 * default export) and `PiSdkError`. See docs/sandbox-browser.md.
 */

/** Scopes an app can ask for in `Pi.authenticate`. */
export type Scope = 'username' | 'payments' | 'wallet_address' | 'roles' | 'in_app_notifications' | 'platform' | 'preferred_language'

export interface InitConfig {
  /** The SDK version: `"2.0"`. */
  version: '2.0'
  /** Whether the app runs in the platform's sandbox. */
  sandbox?: boolean
  /**
   * Plinth extension: the origin of the sandbox page (Plinth's origin, for example
   * `http://127.0.0.1:8080`). Default: the origin the SDK was loaded from.
   */
  hostOrigin?: string
}

export interface AuthUser {
  /** The user's id in this app. */
  uid: string
  /** Present only when the `username` scope was granted. */
  username?: string
}

export interface AuthResult {
  /** Send it to the app's backend, which verifies it with `GET /v2/me`. */
  accessToken: string
  user: AuthUser
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
  network: 'Pi Network' | 'Pi Testnet'
  status: {
    developer_approved: boolean
    transaction_verified: boolean
    developer_completed: boolean
    cancelled: boolean
    user_cancelled: boolean
  }
  transaction: null | { txid: string; verified: boolean; _link: string }
}

export interface PaymentData {
  /** More than 0, at most 7 decimal places. */
  amount: number
  /** Shown to the user. */
  memo: string
  /** For the developer's own use (at most 4 KiB of JSON). */
  metadata?: Record<string, unknown>
}

export interface PaymentCallbacks {
  /** The payment exists; the backend approves it. Called again about every 10 s until it is approved or the approval window ends. */
  onReadyForServerApproval(paymentId: string): unknown
  /**
   * The user paid; the backend completes with this txid. Called again about every 10 s until it is completed, for at
   * most one more approval window; a payment still not completed then reaches the app's next `authenticate` through
   * `onIncompletePaymentFound`.
   */
  onReadyForServerCompletion(paymentId: string, txid: string): unknown
  /** The user cancelled: grant nothing. */
  onCancel(paymentId: string): unknown
  /** The payment failed or the platform cancelled it: grant nothing. */
  onError(error: PiSdkError, payment?: PaymentDTO): unknown
}

export type AdType = 'rewarded' | 'interstitial'

export type ShowAdResult =
  | 'AD_REWARDED'
  | 'AD_CLOSED'
  | 'AD_DISPLAY_ERROR'
  | 'AD_NETWORK_ERROR'
  | 'AD_NOT_AVAILABLE'
  | 'ADS_NOT_SUPPORTED'
  | 'USER_UNAUTHENTICATED'

export interface ShowAdResponse {
  type: AdType
  result: ShowAdResult
  /** Only for a rewarded ad watched to the end (`AD_REWARDED`): the backend checks `GET /v2/ads_network/status/{adId}`. */
  adId?: string
}

export interface IsAdReadyResponse {
  type: AdType
  ready: boolean
}

export interface RequestAdResponse {
  type: AdType
  result: 'AD_LOADED' | 'AD_FAILED_TO_LOAD' | 'AD_NOT_AVAILABLE'
}

export type NativeFeature = 'inline_media' | 'request_permission' | 'ad_network'

/**
 * Before authenticate, showAd resolves `USER_UNAUTHENTICATED`; after an authenticate without the
 * payments scope (which Plinth's ad routes need), each method rejects with PiSdkError `missing_scope`.
 */
export interface PiAds {
  showAd(type: AdType): Promise<ShowAdResponse>
  isAdReady(type: AdType): Promise<IsAdReadyResponse>
  requestAd(type: AdType): Promise<RequestAdResponse>
}

export interface PiSdk {
  /** Required once before anything else; throws PiSdkError `invalid_arguments` for a bad config. */
  init(config: InitConfig): void
  /**
   * Signs the user in to the app: the sandbox page asks for consent the first time a scope is
   * asked for. Rejects with `consent_denied` when the user declines. Calls for the same scopes
   * while one is pending (React's StrictMode) share its one dialog and its result; a call for
   * other scopes waits for the pending one to settle. `onIncompletePaymentFound`
   * receives the user's paid but uncompleted payment in this app, if any, before this resolves.
   */
  authenticate(scopes: Scope[], onIncompletePaymentFound?: (payment: PaymentDTO) => unknown): Promise<AuthResult>
  /**
   * Opens the payment dialog. Throws PiSdkError synchronously before init (`not_initialized`),
   * before authenticate (`not_authenticated`), without the payments scope (`missing_scope`) or
   * with bad arguments (`invalid_arguments`). Resolves with the payment once created; a payment
   * that cannot be created rejects and calls `onError` too.
   */
  createPayment(paymentData: PaymentData, callbacks: PaymentCallbacks): Promise<PaymentDTO>
  Ads: PiAds
  /** The specification's name for `Pi.Ads.showAd`. */
  displayAd(type: AdType): Promise<ShowAdResponse>
  nativeFeaturesList(): Promise<NativeFeature[]>
  openShareDialog(title: string, message: string): void
  /** Resolves once the user chose to open the URL; rejects with `user_cancelled` otherwise. */
  openUrlInSystemBrowser(url: string): Promise<void>
  /**
   * Where the app runs: `pi-browser` inside the sandbox browser (its page answered), `web`
   * anywhere else (not in a frame, or no sandbox page answered within 3 s). Never rejects; works before `init`.
   */
  getPiHostAppInfo(): Promise<HostAppInfo>
  /** `true` inside the sandbox browser (it plays the platform's browser), `false` elsewhere. Never rejects. */
  checkUserHasPiBrowser(): Promise<{ userHasPiBrowser: boolean }>
  /** `true` inside the sandbox browser (its test users are Pioneers with the mining app), `false` elsewhere. Never rejects. */
  checkUserHasMiningApp(): Promise<{ userHasMiningApp: boolean }>
}

export interface HostAppInfo {
  /** `pi-browser` inside the sandbox browser; `web` in any other browser page. */
  hostApp: 'pi-browser' | 'web'
}

export type PiSdkErrorCode =
  | 'not_initialized'
  | 'not_authenticated'
  | 'not_in_sandbox'
  | 'host_unreachable'
  | 'invalid_arguments'
  | 'missing_scope'
  | 'consent_denied'
  | 'user_cancelled'
  | 'busy'
  | 'payment_expired'
  | 'payment_cancelled'
  | 'ongoing_payment_found'
  | 'transaction_failed'
  | 'unknown_error'

export declare class PiSdkError extends Error {
  readonly name: 'PiSdkError'
  /** One of PiSdkErrorCode, or a platform error code passed through. */
  readonly code: PiSdkErrorCode | (string & {})
  /** `payment`: the payment concerned, when there is one (for example the one that blocks a new payment). */
  readonly details?: { payment?: PaymentDTO }
  /**
   * Set on `onError` errors of a payment: `true` when Pay failed and the dialog stays open for the user to
   * try again or cancel (the payment is still open: do not cancel it; `onCancel` follows if the user cancels).
   */
  readonly retryable?: boolean
}

export declare const Pi: PiSdk
export default Pi

declare global {
  interface Window {
    /** Set by the classic script `/sdk/pi-sdk.js`. */
    Pi: PiSdk
  }
}
