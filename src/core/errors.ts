import { type Static, Type } from 'typebox'

/**
 * The closed vocabulary of error codes and the HTTP status each one carries. Codes the
 * live platform and its SDKs know keep their names (`payment_not_found`, `unknown_error`,
 * `invalid_arguments`, …); docs/errors.md lists them all.
 */
export const ERROR_STATUS = {
  invalid_arguments: 400,
  invalid_json: 400,
  bad_request: 400,
  invalid_amount: 400,
  invalid_metadata: 400,
  missing_txid: 400,
  transaction_failed: 400,
  clock_out_of_range: 400,
  weak_password: 400,
  invalid_reset_link: 400,
  invalid_snapshot: 400,
  missing_authorization: 401,
  wrong_authorization_scheme: 401,
  invalid_api_key: 401,
  invalid_access_token: 401,
  token_expired: 401,
  invalid_admin_token: 401,
  invalid_metrics_token: 401,
  missing_scope: 401,
  invalid_credentials: 401,
  session_required: 401,
  invalid_personal_token: 401,
  personal_token_refused: 401,
  cross_site_request: 403,
  user_confirmation_required: 403,
  reauthentication_required: 403,
  app_suspended: 403,
  user_suspended: 403,
  app_not_verified: 403,
  app_not_listed: 403,
  step_up_required: 403,
  step_up_failed: 403,
  forbidden: 403,
  read_only_token: 403,
  not_found: 404,
  app_not_found: 404,
  user_not_found: 404,
  key_not_found: 404,
  token_not_found: 404,
  payment_not_found: 404,
  ad_not_found: 404,
  notification_not_found: 404,
  snapshot_not_found: 404,
  fault_not_found: 404,
  missing_wallet: 404,
  request_not_found: 404,
  approval_not_found: 404,
  method_not_allowed: 405,
  username_taken: 409,
  ongoing_payment_found: 409,
  wrong_direction: 409,
  cancelled_payment: 409,
  already_completed: 409,
  payment_tx_present: 409,
  txid_mismatch: 409,
  not_verified: 409,
  verification_failed: 409,
  not_approved: 409,
  invalid_status_transition: 409,
  payment_busy: 409,
  snapshot_exists: 409,
  domain_check_failed: 409,
  not_a_developer: 409,
  member_exists: 409,
  issue_limit_reached: 409,
  listing_not_pending: 409,
  payments_open: 409,
  faucet_limit_reached: 429,
  faucet_not_on_network: 403,
  too_many_apps: 409,
  too_many_keys: 409,
  too_many_members: 409,
  too_many_passkeys: 409,
  too_many_tokens: 409,
  ownership_changed: 409,
  approval_not_pending: 409,
  last_operator: 409,
  too_many_snapshots: 409,
  too_many_faults: 409,
  request_not_replayable: 409,
  request_timeout: 408,
  payload_too_large: 413,
  unsupported_media_type: 415,
  client_header_required: 415,
  expectation_failed: 417,
  misdirected_request: 421,
  rate_limited: 429,
  too_many_attempts: 429,
  headers_too_large: 431,
  unknown_error: 500,
  injected_fault: 500,
  service_unavailable: 503,
  wallet_busy: 503,
} as const

export type ErrorCode = keyof typeof ERROR_STATUS

export class ApiError extends Error {
  override name = 'ApiError'
  readonly statusCode: number

  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Extra body fields some errors carry (for example `payment` on `ongoing_payment_found`). */
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message)
    this.statusCode = ERROR_STATUS[code]
  }

  /** Seconds the client should wait before trying again: sent as `Retry-After`. */
  retryAfterSeconds: number | undefined

  /** Marks the error as retryable after `seconds` (sent as `Retry-After`). */
  retryAfter(seconds: number): this {
    this.retryAfterSeconds = seconds
    return this
  }

  toBody(): ErrorBodyType {
    return { ...this.extra, error: this.code, error_message: this.message }
  }
}

export const ErrorBody = Type.Object(
  {
    error: Type.String({ description: 'Machine-readable error code' }),
    error_message: Type.String({ description: 'Human-readable explanation' }),
  },
  { $id: 'ErrorBody', additionalProperties: true, description: 'The platform error shape' },
)
export type ErrorBodyType = Static<typeof ErrorBody>
