import type { ColumnType } from 'kysely'

/** Column written by the database on insert (default) and read as T. */
type Defaulted<T> = ColumnType<T, T | undefined, T>
/** Nullable column that may be left out on insert. */
type Optional<T> = ColumnType<T | null, T | null | undefined, T | null>

export interface PlatformClockTable {
  id: Defaulted<number>
  offset_ms: number
  /** How many times the sandbox reset the clock (migration 0009). */
  epoch: Defaulted<number>
}

/** Facts about this platform instance (for example which demo app was created at first start). */
export interface PlatformMetaTable {
  key: string
  value: string
}

export interface UsersTable {
  id: string
  username: string
  /** lower(username): usernames are unique regardless of case. */
  username_key: string
  wallet_address: string
  /** The wallet seed, AES-256-GCM sealed under PLINTH_SECRET_KEY. */
  wallet_seed_enc: string
  created_at: Date
  /** argon2id PHC string of the password (migration 0016); null for a user without one. */
  password_hash: Optional<string>
  /** `operator`, `developer` (migration 0016). */
  roles: Defaulted<string[]>
  /** When an operator suspended the user (migration 0017). */
  suspended_at: Optional<Date>
}

/** A signed-in browser (migration 0016): only the token's SHA-256 is kept. */
export interface AccountSessionsTable {
  id: string
  token_hash: string
  user_id: string
  created_at: Defaulted<Date>
  last_seen_at: Defaulted<Date>
  /** The absolute end of the session. */
  expires_at: Date
  revoked_at: Optional<Date>
  /** When the session last proved its person again: a sign-in, the password or a passkey (migration 0022). */
  reauthenticated_at: Optional<Date>
}

/** A personal access token of an account, for the /portal API (migration 0025). */
export interface PersonalTokensTable {
  id: string
  user_id: string
  name: string
  scope: 'read' | 'write'
  /** SHA-256 of the token, hex; the token is shown once and never stored. */
  token_hash: string
  /** The token's first characters, for display. */
  prefix: string
  created_at: Defaulted<Date>
  expires_at: Date
  last_used_at: Optional<Date>
  revoked_at: Optional<Date>
}

/** A passkey (WebAuthn credential) of an account (migration 0016). */
export interface AccountPasskeysTable {
  /** The credential id, base64url. */
  id: string
  user_id: string
  /** The COSE public key, base64url. */
  public_key: string
  counter: ColumnType<string, string | number | undefined, string | number>
  transports: Defaulted<string[]>
  name: string
  created_at: Defaulted<Date>
  last_used_at: Optional<Date>
}

/** A WebAuthn ceremony's challenge, used once (migration 0016). */
export interface WebauthnChallengesTable {
  challenge: string
  purpose: 'register' | 'signin' | 'reauthenticate'
  user_id: string | null
  expires_at: Date
}

/** Sign-in attempts per key in the current window (migration 0016). */
export interface SigninThrottleTable {
  key: string
  window_start: Date
  attempts: number
}

/** The hash-chained record of what operators did (migration 0016). */
export interface AuditLogTable {
  id: Defaulted<string>
  at: Defaulted<Date>
  actor: string
  action: string
  target: string | null
  details: ColumnType<Record<string, unknown>, string, string>
  prev_hash: string
  /** The record's MAC (mac_version 1) or, before migration 0021 re-keyed it, its SHA-256 (0). */
  hash: string
  mac_version: Defaulted<number>
}

export interface AppsTable {
  id: string
  name: string
  network: 'Pi Network' | 'Pi Testnet'
  wallet_address: string
  created_at: Date
  /** The app's frontend, for the sandbox browser; null when not given. */
  url: Optional<string>
  /** Shown in the directory (migration 0017). */
  description: Defaulted<string>
  /** A small PNG, JPEG or WebP as a data: URL (migration 0017). */
  icon: Optional<string>
  /** What the developer publishes at /validation-key.txt (migration 0017); null for a sandbox app. */
  validation_key: Optional<string>
  /** When the app's URL was verified; null until then (a production app is listed and given tokens only once verified). */
  verified_at: Optional<Date>
  /** `domain` (the fetch matched) or `operator` (created by plinth admin apps create). */
  verified_by: Optional<'domain' | 'operator'>
  /** When an operator suspended the app. */
  suspended_at: Optional<Date>
  /** Production: the owner turned the app's request log on (migration 0017). */
  request_log: Defaulted<boolean>
  /** A production Mainnet app's listing review (migration 0024); null where listing does not apply. */
  listing: Optional<'pending' | 'approved' | 'rejected'>
  /** The operator's reason of a rejection. */
  listing_reason: Optional<string>
  /** When the listing state last changed: the review queue's order. */
  listing_changed_at: Optional<Date>
}

/** Who may manage an app (migration 0017): exactly one owner, any number of members. */
export interface AppMembersTable {
  app_id: string
  user_id: string
  role: 'owner' | 'member'
  added_at: Defaulted<Date>
}

/** A one-time password reset link an operator issued (migration 0017): only the token's SHA-256 is kept. */
export interface PasswordResetsTable {
  token_hash: string
  user_id: string
  /** The audit actor who issued it. */
  created_by: string
  created_at: Defaulted<Date>
  expires_at: Date
  used_at: Optional<Date>
}

/** An operator's act waiting for a second operator (migration 0020, docs/operators.md "Two operators"). */
export interface OperatorApprovalsTable {
  id: string
  kind: 'issue' | 'grant-role'
  /** The user id of the operator who asked. */
  requested_by: string
  /** A username, or an app id (an issue's recipient). */
  target: string
  /** An issue's amount, Pi (numeric: read as text). */
  amount: string | null
  /** A grant's role. */
  role: string | null
  reason: string
  status: Defaulted<'pending' | 'approved' | 'rejected'>
  created_at: Defaulted<Date>
  expires_at: Date
  decided_by: Optional<string>
  decided_at: Optional<Date>
  decision_reason: Optional<string>
}

export interface ApiKeysTable {
  id: string
  app_id: string
  /** SHA-256 of the key, hex. The key itself is never stored. */
  key_hash: string
  /** First characters of the key, for display only. */
  key_prefix: string
  created_at: Date
  revoked_at: Date | null
  /** A name the developer gave it (migration 0017). */
  name: Defaulted<string>
  /** When it last authenticated a request, to the minute (migration 0017). */
  last_used_at: Optional<Date>
}

/** A user's membership in an app: the app-scoped uid and the consent the user gave it. */
export interface AppUsersTable {
  app_id: string
  user_id: string
  uid: string
  scopes: string[]
  created_at: Date
  updated_at: Date
  notifications_enabled: Defaulted<boolean>
}

export interface AccessTokensTable {
  id: string
  /** SHA-256 of the token, hex. The token itself is never stored. */
  token_hash: string
  app_id: string
  user_id: string
  scopes: string[]
  created_at: Date
  expires_at: Date
  revoked_at: Date | null
}

export interface PaymentsTable {
  identifier: string
  app_id: string
  user_id: string
  user_uid: string
  direction: 'user_to_app' | 'app_to_user'
  /** numeric(20,7), read as its exact decimal string. */
  amount: string
  memo: string
  metadata: ColumnType<Record<string, unknown>, string, string>
  from_address: string
  to_address: string
  network: 'Pi Network' | 'Pi Testnet'
  created_at: Date
  developer_approved: Defaulted<boolean>
  approved_at: Optional<Date>
  developer_completed: Defaulted<boolean>
  completed_at: Optional<Date>
  cancelled: Defaulted<boolean>
  user_cancelled: Defaulted<boolean>
  cancelled_at: Optional<Date>
  txid: Optional<string>
  tx_verified: Optional<boolean>
  tx_linked_at: Optional<Date>
}

/** Numeric and int8 columns the ledger reads back as text (`::text`), never through a JS number. */
type Text = ColumnType<string, string | bigint, string | bigint>

/** The ledger a row belongs to (migration 0029: one ledger per network; src/ledger/networks.ts). */
type Network = 'Pi Testnet' | 'Pi Network'

export interface LedgerAccountsTable {
  /** With the address, the key: one wallet key has an account on each network (migration 0029). */
  network: Network
  address: string
  /** Pi, numeric(20,7). */
  balance: Text
  sequence: Defaulted<string>
  last_modified_ledger: Defaulted<string>
  created_at: Date
}

export interface LedgerTransactionsTable {
  hash: string
  ledger: Text
  /** The transaction's place in its ledger, from 1 (migration 0019: a ledger holds a batch). */
  application_order: number
  network: 'Pi Testnet' | 'Pi Network'
  source_account: string
  source_account_sequence: Text
  /** Stroops. */
  fee_charged: Text
  max_fee: Text
  operation_count: number
  memo: string | null
  memo_type: 'none' | 'text' | 'id' | 'hash' | 'return'
  envelope_xdr: string
  result_xdr: string
  /** The ledger's close time: non-decreasing in ledger order (migration 0015). */
  created_at: Date
  /** Stroops burned by fees up to and including this ledger (migration 0013); the same on every transaction of a ledger. */
  fee_pool: Text
  fee_meta_xdr: ColumnType<string, string | undefined, string>
  result_meta_xdr: ColumnType<string, string | undefined, string>
}

/** A transaction queued by the transaction applying it, written with its number at COMMIT (migration 0014). */
export interface LedgerPendingTable extends Omit<LedgerTransactionsTable, 'ledger' | 'fee_pool' | 'fee_meta_xdr' | 'result_meta_xdr'> {
  fee_meta: Buffer
  fee_meta_ledger_at: number[]
  result_meta: Buffer
  result_meta_ledger_at: number[]
  op_from: string[]
  op_to: string[]
  op_amount: string[]
  accounts: string[]
  /** Migration 0019: the applying transaction's id (its default), by which the closing trigger finds its rows. */
  xact: ColumnType<string, string | undefined, never>
}

export interface LedgerOperationsTable {
  transaction_hash: string
  /** Its transaction's (migration 0029). */
  network: Network
  index: number
  type: 'payment'
  from: string
  to: string
  /** Pi, numeric(20,7). */
  amount: Text
  created_at: Date
}

export interface LedgerFundingsTable {
  id: ColumnType<string, never, never>
  network: Network
  address: string
  /** Migration 0029: money that crossed networks while they were one ledger, funded on the network that spent it. */
  network_split: Defaulted<boolean>
  /** Pi, numeric(20,7). */
  amount: Text
  created_at: Date
}

export interface AdsTable {
  id: string
  app_id: string
  user_id: string
  type: 'rewarded' | 'interstitial'
  mediator_ack_status: Optional<'granted' | 'revoked' | 'failed'>
  mediator_granted_at: Optional<Date>
  mediator_revoked_at: Optional<Date>
  /** The verdict a pending ad takes by itself at settles_at (null: stays pending until moved by hand). */
  settles_to: Optional<'granted' | 'failed'>
  settles_at: Optional<Date>
  created_at: Date
}

export interface AdScriptsTable {
  app_id: string
  /** '' for the whole app. */
  user_id: string
  result: string
  mediator: 'granted' | 'failed' | 'pending'
  remaining: number | null
  created_at: Date
}

export interface NotificationsTable {
  id: string
  app_id: string
  user_id: string
  user_uid: string
  title: string
  body: string
  subroute: string
  created_at: Date
  seen_at: Optional<Date>
  dismissed_at: Optional<Date>
  /**
   * The quota's state, on one row of each delivery to a user: the times of the app's 48 most
   * recent notifications to them, ascending (null on the delivery's other rows). Internal.
   */
  recent_deliveries: Optional<Date[]>
}

export interface CredentialEventsTable {
  id: ColumnType<number, never, never>
  kind: 'token' | 'key' | 'member' | 'app' | 'user'
  /** The token's or key's hash, or `<app_id>:<user_id>` for a membership. */
  subject: string
  /** The writing transaction's id (`xid8`, as text): the feed is read by commit (credential-cache.ts). */
  xid: ColumnType<string, never, never>
  /** The database's time when the revoking transaction began; events are pruned by it. */
  created_at: ColumnType<Date, never, never>
}

/** One /v2 call attributed to an app (migration 0010; src/request-log/). */
export interface RequestLogTable {
  id: ColumnType<number, never, never>
  app_id: string
  at: Date
  logged_at: ColumnType<Date, never, never>
  method: string
  path: string
  route: string
  operation_id: string | null
  key_id: string | null
  user_uid: string | null
  status: number
  error_code: string | null
  /** numeric(12,3), read as text. */
  latency_ms: ColumnType<string, number, never>
  request_id: string
  request_body: string | null
  response_body: string | null
  fault: string | null
  /** Migration 0018: the query string and the headers (JSON objects), redacted; the entry this call replayed. */
  query: string | null
  request_headers: string | null
  response_headers: string | null
  replay_of: ColumnType<number | null, never, number | null>
}

/** One move of a payment (migration 0011), written by the statement that makes it. */
export interface PaymentEventsTable {
  id: ColumnType<number, never, never>
  payment_id: string
  app_id: string
  kind: string
  /** 'app' (actor_id: key id), 'user' (actor_id: uid), 'approval_window', 'ledger' or 'sandbox'. */
  actor: string
  actor_id: string | null
  at: Date
  request_id: string | null
  detail: string | null
}

/** Migration 0012: what processes hold in memory for the sandbox changes with this number (sandbox-sync.ts). */
export interface SandboxGenerationTable {
  id: Defaulted<number>
  value: number
}

/** Migration 0012: every process in sandbox mode, and the sandbox generation it has applied. */
export interface SandboxProcessesTable {
  id: string
  generation: number
  seen_at: Defaulted<Date>
}

/** Migration 0012: injected faults (faults-service.ts). */
export interface SandboxFaultsTable {
  id: string
  app_id: string
  route: string | null
  operation_id: string | null
  user_uid: string | null
  effect: unknown
  run_when: 'before' | 'after'
  /** Null: until cleared. */
  times_left: number | null
  probability: number
  created_at: Date
}

/** Migration 0012: named snapshots (world.ts). */
export interface SandboxSnapshotsTable {
  name: string
  created_at: Date
  clock_offset_ms: number
  /** Sequence name to its last value (`{ "ledger_numbers": { "last": 12, "called": true } }`). */
  sequences: unknown
  bytes: number
}

export interface SandboxSnapshotRowsTable {
  snapshot: string
  table_name: string
  data: unknown
}

export interface DB {
  ledger_accounts: LedgerAccountsTable
  ledger_transactions: LedgerTransactionsTable
  ledger_operations: LedgerOperationsTable
  ledger_pending: LedgerPendingTable
  ledger_fundings: LedgerFundingsTable
  platform_clock: PlatformClockTable
  platform_meta: PlatformMetaTable
  users: UsersTable
  account_sessions: AccountSessionsTable
  signin_throttle: SigninThrottleTable
  account_passkeys: AccountPasskeysTable
  personal_tokens: PersonalTokensTable
  webauthn_challenges: WebauthnChallengesTable
  audit_log: AuditLogTable
  apps: AppsTable
  app_members: AppMembersTable
  password_resets: PasswordResetsTable
  operator_approvals: OperatorApprovalsTable
  api_keys: ApiKeysTable
  app_users: AppUsersTable
  access_tokens: AccessTokensTable
  payments: PaymentsTable
  ads: AdsTable
  ad_scripts: AdScriptsTable
  notifications: NotificationsTable
  credential_events: CredentialEventsTable
  request_log: RequestLogTable
  payment_events: PaymentEventsTable
  sandbox_generation: SandboxGenerationTable
  sandbox_processes: SandboxProcessesTable
  sandbox_faults: SandboxFaultsTable
  sandbox_snapshots: SandboxSnapshotsTable
  sandbox_snapshot_rows: SandboxSnapshotRowsTable
}
