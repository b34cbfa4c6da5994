import { isIP } from 'node:net'
import { isAbsolute, resolve } from 'node:path'

export type Mode = 'sandbox' | 'production'
export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'

export interface Config {
  port: number
  host: string
  /** Base URL clients see, without a trailing slash. */
  publicUrl: string
  /** `memory`, or an absolute directory for the embedded database. Ignored when databaseUrl is set. */
  dataDir: string
  databaseUrl: string | undefined
  /** Schema to use on the PostgreSQL server; created if missing. */
  databaseSchema: string | undefined
  databasePoolSize: number
  mode: Mode
  adminToken: string | undefined
  logLevel: LogLevel
  /** 32-byte key that encrypts wallet seeds held by the platform. */
  secretKey: Buffer | undefined
  /** Default lifetime of an access token issued by the sandbox, in seconds. */
  tokenTtlSeconds: number
  /** How long a user-to-app payment waits for the app's approval before the platform cancels it. */
  approvalWindowSeconds: number
  /** How long the ad mediator takes to decide on a watched rewarded ad (platform clock). */
  adVerdictDelaySeconds: number
  /** Requests a minute one server API key may make, in each process; 0 turns the limit off. */
  rateLimitKeyPerMinute: number
  /** Requests a minute one access token may make, in each process; 0 turns the limit off. */
  rateLimitTokenPerMinute: number
  /** Bounds of the ledger's event streams (docs/ledger.md, "Streaming"). */
  streams: StreamLimits
  /** Bounds of the ledger closer (docs/ledger.md, "Ledgers close in batches"); the defaults when absent. */
  ledgerCloser?: LedgerCloserLimits
  /**
   * Whether /v2 calls are written to the request log (PLINTH_REQUEST_LOG): `true` every app's,
   * `false` none; unset, every app's in sandbox mode and, in production, the apps whose owner
   * turned it on in the portal.
   */
  requestLog: boolean | undefined
  /** Bearer token that reads GET /metrics; without it /metrics is open in sandbox mode and absent in production. */
  metricsToken: string | undefined
  /**
   * Host names served besides localhost, 127.0.0.1, [::1] and the host of publicUrl
   * (PLINTH_ALLOWED_HOSTS): any other Host is refused (DNS rebinding; docs/security.md).
   */
  allowedHosts: string[]
  /** Production's sessions and sign-in throttling (docs/accounts.md); the defaults when absent. */
  accounts?: AccountLimits
  /** Production's developer portal and operator's console (docs/portal.md, docs/operators.md); the defaults when absent. */
  portal?: PortalSettings
  /** Production's payment confirmation (docs/production.md, "Large payments ask for the password"); the defaults when absent. */
  payments?: PaymentSettings
  /** The faucet's test-π (docs/ledger.md, "Friendbot"); the defaults when absent. */
  faucet?: FaucetSettings
  /** Each network's Horizon at the root of its own origin (docs/ledger.md, "Each network's Horizon at its own origin"). */
  horizons?: HorizonOrigins
}

/** Where a network's Horizon is served at its root: its own listener (`port`), or the Host name a reverse proxy sends (`host`). */
export interface HorizonOrigin {
  port?: number
  host?: string
}
export type HorizonOrigins = Partial<Record<'Pi Testnet' | 'Pi Network', HorizonOrigin>>

/** PLINTH_TESTNET_HORIZON_PORT / _HOST and PLINTH_MAINNET_HORIZON_PORT / _HOST. */
function horizonOrigins(env: NodeJS.ProcessEnv): HorizonOrigins {
  const origins: HorizonOrigins = {}
  for (const [network, name] of [
    ['Pi Testnet', 'TESTNET'],
    ['Pi Network', 'MAINNET'],
  ] as const) {
    const port = integer(env, `PLINTH_${name}_HORIZON_PORT`, 0, 0, 65535)
    const host = optional(env, `PLINTH_${name}_HORIZON_HOST`)?.toLowerCase()
    if (host !== undefined && !HOST_NAME.test(host)) {
      throw new ConfigError(`PLINTH_${name}_HORIZON_HOST must be a host name without scheme or port, got "${host}"`)
    }
    if (port !== 0 || host !== undefined) origins[network] = { ...(port === 0 ? {} : { port }), ...(host === undefined ? {} : { host }) }
  }
  const ports = Object.values(origins).flatMap((o) => (o.port === undefined ? [] : [o.port]))
  const hosts = Object.values(origins).flatMap((o) => (o.host === undefined ? [] : [o.host]))
  if (new Set(ports).size < ports.length || new Set(hosts).size < hosts.length) {
    throw new ConfigError('The two networks need different Horizon ports and hosts (PLINTH_*_HORIZON_PORT, PLINTH_*_HORIZON_HOST)')
  }
  return origins
}

export interface PaymentSettings {
  /**
   * A payment of more than this many Pi (a decimal, at most 7 places) is confirmed with the user's
   * password in the payment dialog, and the server refuses it without (PLINTH_PAYMENT_STEP_UP_AMOUNT).
   */
  stepUpAmount: string
}

/** Payment settings from the environment: the step-up amount defaults to 100 Pi. */
export function paymentSettings(env: NodeJS.ProcessEnv = {}): PaymentSettings {
  const amount = optional(env, 'PLINTH_PAYMENT_STEP_UP_AMOUNT') ?? '100'
  if (!/^(0|[1-9]\d{0,12})(\.\d{1,7})?$/.test(amount)) {
    throw new ConfigError(
      `PLINTH_PAYMENT_STEP_UP_AMOUNT must be an amount of Pi (a decimal with at most 7 places), got "${amount.slice(0, 40)}"`,
    )
  }
  return { stepUpAmount: amount }
}

export type DeveloperSignup = 'operator' | 'open' | 'invite'

export interface PortalSettings {
  /**
   * Who makes a user a developer (PLINTH_DEVELOPER_SIGNUP): `operator` (only an operator),
   * `open` (any signed-in user, for themselves), `invite` (also an app's owner, by adding the user as a member).
   */
  developerSignup: DeveloperSignup
  /** PLINTH_ALLOW_PRIVATE_APP_URLS=1: the domain check may fetch private, loopback and link-local addresses (intranets, tests). */
  allowPrivateAppUrls: boolean
  /** Pi all operators together may issue in any 24 hours from the console (PLINTH_OPERATOR_DAILY_ISSUE_LIMIT), whole Pi. */
  operatorDailyIssueLimit: number
  /**
   * The two-person rule (PLINTH_OPERATOR_APPROVAL_THRESHOLD): an issue of more Pi than this, and
   * every grant of the operator role, waits for a second operator's approval; `off` for an
   * installation with one operator (weaker: docs/operators.md).
   */
  operatorApprovalThreshold: number | 'off'
  /** How long an operator's password reset link works (PLINTH_PASSWORD_RESET_SECONDS). */
  resetLinkSeconds: number
}

export interface FaucetSettings {
  /** Test-π one faucet request pays (PLINTH_FAUCET_AMOUNT): a positive decimal, at most 7 places. */
  amount: string
  /**
   * Production: faucet payments to one address in any 24 hours (PLINTH_FAUCET_DAILY_PER_ADDRESS, 3);
   * 0 turns the faucet off. Its test-π is Pi Testnet's, never the π operators issue on Pi Network.
   */
  dailyPerAddress: number
  /** Production: faucet payments one signed-in user asks for in any 24 hours (PLINTH_FAUCET_DAILY_PER_USER). */
  dailyPerUser: number
}

/** The faucet's settings from the environment (docs/ledger.md, "Friendbot"). */
export function faucetSettings(env: NodeJS.ProcessEnv = {}): FaucetSettings {
  const amount = optional(env, 'PLINTH_FAUCET_AMOUNT') ?? '100'
  if (!/^\d{1,12}(\.\d{1,7})?$/.test(amount) || !/[1-9]/.test(amount)) {
    throw new ConfigError(`PLINTH_FAUCET_AMOUNT must be a positive amount with at most 7 decimal places, got "${amount}"`)
  }
  return {
    amount,
    dailyPerAddress: integer(env, 'PLINTH_FAUCET_DAILY_PER_ADDRESS', 3, 0, 1_000_000),
    dailyPerUser: integer(env, 'PLINTH_FAUCET_DAILY_PER_USER', 10, 0, 1_000_000),
  }
}

/** The portal's settings from the environment (docs/portal.md, "Settings"). */
export function portalSettings(env: NodeJS.ProcessEnv = {}): PortalSettings {
  const signup = optional(env, 'PLINTH_DEVELOPER_SIGNUP') ?? 'operator'
  if (signup !== 'operator' && signup !== 'open' && signup !== 'invite') {
    throw new ConfigError(`PLINTH_DEVELOPER_SIGNUP must be "operator", "open" or "invite", got "${signup}"`)
  }
  const allow = optional(env, 'PLINTH_ALLOW_PRIVATE_APP_URLS') ?? '0'
  if (allow !== '0' && allow !== '1') throw new ConfigError(`PLINTH_ALLOW_PRIVATE_APP_URLS must be "0" or "1", got "${allow}"`)
  return {
    developerSignup: signup,
    allowPrivateAppUrls: allow === '1',
    operatorDailyIssueLimit: integer(env, 'PLINTH_OPERATOR_DAILY_ISSUE_LIMIT', 10_000, 0, 1_000_000_000),
    operatorApprovalThreshold:
      optional(env, 'PLINTH_OPERATOR_APPROVAL_THRESHOLD') === 'off'
        ? 'off'
        : integer(env, 'PLINTH_OPERATOR_APPROVAL_THRESHOLD', 1_000, 0, 1_000_000_000),
    resetLinkSeconds: integer(env, 'PLINTH_PASSWORD_RESET_SECONDS', 86_400, 60, 30 * 86_400),
  }
}

/** A limit: at most `attempts` in a fixed window of `windowSeconds`, counted per key. */
export interface ThrottleLimit {
  attempts: number
  windowSeconds: number
}

export interface AccountLimits {
  /** A session unused this long ends (PLINTH_SESSION_IDLE_SECONDS). */
  sessionIdleSeconds: number
  /** A session ends this long after sign-in, used or not (PLINTH_SESSION_MAX_SECONDS). */
  sessionMaxSeconds: number
  /** Sign-in attempts per username (PLINTH_SIGNIN_ATTEMPTS_PER_ACCOUNT a PLINTH_SIGNIN_WINDOW_SECONDS). */
  signinPerAccount: ThrottleLimit
  /** Sign-in attempts per client address (PLINTH_SIGNIN_ATTEMPTS_PER_ADDRESS a PLINTH_SIGNIN_WINDOW_SECONDS). */
  signinPerAddress: ThrottleLimit
  /** Sign-ups per client address an hour (PLINTH_SIGNUPS_PER_ADDRESS_PER_HOUR). */
  signupPerAddress: ThrottleLimit
}

/**
 * The accounts' limits from the environment. The defaults: ASVS 4.0 3.3.2 at level 2 (a session
 * lasts 12 hours at most and ends after 30 minutes unused); 10 sign-in attempts per account and
 * 100 per address in 15 minutes; 20 sign-ups per address an hour.
 */
export function accountLimits(env: NodeJS.ProcessEnv = {}): AccountLimits {
  const window = integer(env, 'PLINTH_SIGNIN_WINDOW_SECONDS', 900, 1, 86_400)
  return {
    sessionIdleSeconds: integer(env, 'PLINTH_SESSION_IDLE_SECONDS', 1800, 1, 30 * 86_400),
    sessionMaxSeconds: integer(env, 'PLINTH_SESSION_MAX_SECONDS', 43_200, 1, 365 * 86_400),
    signinPerAccount: { attempts: integer(env, 'PLINTH_SIGNIN_ATTEMPTS_PER_ACCOUNT', 10, 1, 1_000_000), windowSeconds: window },
    signinPerAddress: { attempts: integer(env, 'PLINTH_SIGNIN_ATTEMPTS_PER_ADDRESS', 100, 1, 1_000_000), windowSeconds: window },
    signupPerAddress: { attempts: integer(env, 'PLINTH_SIGNUPS_PER_ADDRESS_PER_HOUR', 20, 1, 1_000_000), windowSeconds: 3600 },
  }
}

/** Bounds of the ledger's Server-Sent Events streams, per process. */
export interface StreamLimits {
  /** Open streams in this process; past it, 503 service_unavailable. */
  maxOpen: number
  /** Open streams of one client address in this process; past it, 429 rate_limit_exceeded. */
  maxPerClient: number
  /** Seconds between heartbeats (an SSE comment) on a stream with nothing to send. */
  heartbeatSeconds: number
  /** Seconds a stream may stay open; it then ends with Horizon's `close` event and the client reconnects. */
  maxLifetimeSeconds: number
  /** Milliseconds between reads of the newest ledger while streams are open: a lost notification delays by at most this. */
  pollMs: number
}

/** Bounds of the ledger closer, per process (src/ledger/ledger-closer.ts). */
export interface LedgerCloserLimits {
  /** Most transactions in one ledger. */
  maxBatch: number
  /** Milliseconds the closer waits for more transactions before closing a ledger below `maxBatch` (0: none). */
  maxWaitMs: number
  /** Transactions waiting for a ledger, beyond the batch being applied; past it, 503 with Retry-After. */
  maxQueue: number
}

export function ledgerCloserLimits(env: NodeJS.ProcessEnv = {}): LedgerCloserLimits {
  return {
    maxBatch: integer(env, 'PLINTH_LEDGER_BATCH_MAX', 256, 1, 4_096),
    maxWaitMs: integer(env, 'PLINTH_LEDGER_BATCH_WAIT_MS', 0, 0, 1_000),
    maxQueue: integer(env, 'PLINTH_LEDGER_QUEUE_MAX', 4_096, 1, 1_000_000),
  }
}

export class ConfigError extends Error {
  override name = 'ConfigError'
}

const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']
const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/
/** A DNS name whose last label is not all digits (`300.1.1.1` is a bad address, not a name). */
const HOST_NAME = /^(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*[A-Za-z0-9-]*[A-Za-z-][A-Za-z0-9-]*$/

function hostSetting(env: NodeJS.ProcessEnv): string {
  const host = optional(env, 'HOST') ?? '127.0.0.1'
  const label = host.split('.').at(-1) ?? ''
  if (isIP(host) === 0 && !(HOST_NAME.test(host) && !label.startsWith('-') && !label.endsWith('-'))) {
    throw new ConfigError(`HOST must be an IPv4 or IPv6 address or a host name, got "${host}"`)
  }
  return host
}

/** PLINTH_ALLOWED_HOSTS: names or addresses (IPv6 in brackets), comma-separated, without scheme or port. */
function allowedHostsSetting(env: NodeJS.ProcessEnv): string[] {
  const raw = optional(env, 'PLINTH_ALLOWED_HOSTS')
  if (raw === undefined) return []
  const names = raw
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '')
  if (names.length > 100) throw new ConfigError(`PLINTH_ALLOWED_HOSTS takes at most 100 names, got ${names.length}`)
  for (const name of names) {
    const bare = name.endsWith('.') ? name.slice(0, -1) : name
    const v6 = /^\[(.+)\]$/.exec(bare)?.[1]
    const label = bare.split('.').at(-1) ?? ''
    const valid =
      v6 !== undefined ? isIP(v6) === 6 : isIP(bare) === 4 || (HOST_NAME.test(bare) && !label.startsWith('-') && !label.endsWith('-'))
    if (!valid) {
      throw new ConfigError(
        `PLINTH_ALLOWED_HOSTS must be comma-separated host names or addresses (IPv6 in brackets), without scheme or port, got "${name}"`,
      )
    }
  }
  return names.map((name) => name.toLowerCase())
}

function integer(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name]
  if (raw === undefined || raw === '') return fallback
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be a whole number, got "${raw}"`)
  const value = Number(raw)
  if (value < min || value > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${value}`)
  return value
}

function optional(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const raw = env[name]
  return raw === undefined || raw === '' ? undefined : raw
}

/** The streams' bounds from PLINTH_STREAM_* (the defaults when unset). */
export function streamLimits(env: NodeJS.ProcessEnv = {}): StreamLimits {
  return {
    maxOpen: integer(env, 'PLINTH_STREAM_MAX_OPEN', 1_000, 0, 100_000),
    maxPerClient: integer(env, 'PLINTH_STREAM_MAX_PER_CLIENT', 20, 0, 100_000),
    heartbeatSeconds: integer(env, 'PLINTH_STREAM_HEARTBEAT_SECONDS', 10, 1, 300),
    maxLifetimeSeconds: integer(env, 'PLINTH_STREAM_MAX_LIFETIME_SECONDS', 3_600, 1, 86_400),
    pollMs: integer(env, 'PLINTH_STREAM_POLL_MS', 1_000, 50, 60_000),
  }
}

/**
 * Reads and validates the whole configuration once, at start. Every problem is a
 * ConfigError naming the variable, so a wrong setting stops the process before it listens.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): Config {
  const port = integer(env, 'PORT', 8080, 0, 65535)
  const host = hostSetting(env)
  const horizons = horizonOrigins(env)

  const rawUrl = optional(env, 'PLINTH_PUBLIC_URL')
  let publicUrl: string
  if (rawUrl === undefined) {
    const shownHost = host.includes(':') ? `[${host}]` : host
    publicUrl = `http://${shownHost === '0.0.0.0' ? '127.0.0.1' : shownHost}:${port}`
    if (!URL.canParse(publicUrl)) {
      throw new ConfigError(`HOST "${host}" makes no valid URL (${publicUrl}): set PLINTH_PUBLIC_URL`)
    }
  } else {
    let parsed: URL
    try {
      parsed = new URL(rawUrl)
    } catch {
      throw new ConfigError(`PLINTH_PUBLIC_URL must be an absolute http(s) URL, got "${rawUrl}"`)
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new ConfigError(`PLINTH_PUBLIC_URL must use http or https, got "${parsed.protocol}"`)
    }
    publicUrl = rawUrl.replace(/\/+$/, '')
  }

  const rawDir = optional(env, 'PLINTH_DATA_DIR') ?? './.plinth'
  const dataDir = rawDir === 'memory' ? 'memory' : isAbsolute(rawDir) ? rawDir : resolve(cwd, rawDir)

  const databaseUrl = optional(env, 'DATABASE_URL')
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL must be a postgres:// or postgresql:// URL')
  }
  const databaseSchema = optional(env, 'PLINTH_DB_SCHEMA')
  if (databaseSchema !== undefined && !SCHEMA_NAME.test(databaseSchema)) {
    throw new ConfigError('PLINTH_DB_SCHEMA must be a lower-case SQL identifier ([a-z_][a-z0-9_]*, at most 63 characters)')
  }

  const mode = optional(env, 'PLINTH_MODE') ?? 'sandbox'
  if (mode !== 'sandbox' && mode !== 'production') {
    throw new ConfigError(`PLINTH_MODE must be "sandbox" or "production", got "${mode}"`)
  }

  const adminToken = optional(env, 'PLINTH_ADMIN_TOKEN')
  if (adminToken !== undefined && adminToken.length < 16) {
    throw new ConfigError('PLINTH_ADMIN_TOKEN must be at least 16 characters long')
  }

  const metricsToken = optional(env, 'PLINTH_METRICS_TOKEN')
  if (metricsToken !== undefined && (metricsToken.length < 16 || metricsToken.length > 256 || !/^[\x21-\x7e]+$/.test(metricsToken))) {
    throw new ConfigError('PLINTH_METRICS_TOKEN must be 16 to 256 printable ASCII characters without spaces')
  }

  const logLevel = (optional(env, 'LOG_LEVEL') ?? 'info') as LogLevel
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`)
  }

  const rawSecret = optional(env, 'PLINTH_SECRET_KEY')
  let secretKey: Buffer | undefined
  if (rawSecret !== undefined) {
    secretKey = /^[0-9a-fA-F]{64}$/.test(rawSecret) ? Buffer.from(rawSecret, 'hex') : Buffer.from(rawSecret, 'base64url')
    if (secretKey.length !== 32) {
      throw new ConfigError('PLINTH_SECRET_KEY must be 32 bytes, as 64 hex characters or 43 base64url characters')
    }
  }
  if (databaseUrl !== undefined && secretKey === undefined) {
    throw new ConfigError(
      'PLINTH_SECRET_KEY is required with DATABASE_URL: every process sharing the database must encrypt wallet seeds with the same key ' +
        "(make one with: node -e \"console.log(require('crypto').randomBytes(32).toString('hex'))\")",
    )
  }

  const rawRequestLog = optional(env, 'PLINTH_REQUEST_LOG')
  if (rawRequestLog !== undefined && rawRequestLog !== 'on' && rawRequestLog !== 'off') {
    throw new ConfigError(`PLINTH_REQUEST_LOG must be "on" or "off", got "${rawRequestLog}"`)
  }
  // Unset: every app's in sandbox mode; in production, each app's owner opts in (docs/portal.md).
  const requestLog = rawRequestLog === undefined ? undefined : rawRequestLog === 'on'

  return {
    port,
    host,
    publicUrl,
    dataDir,
    databaseUrl,
    databaseSchema,
    databasePoolSize: integer(env, 'PLINTH_DB_POOL_SIZE', 10, 1, 200),
    mode,
    adminToken,
    logLevel,
    secretKey,
    tokenTtlSeconds: integer(env, 'PLINTH_TOKEN_TTL_SECONDS', 86_400, 1, 30 * 86_400),
    approvalWindowSeconds: integer(env, 'PLINTH_APPROVAL_WINDOW_SECONDS', 60, 1, 86_400),
    adVerdictDelaySeconds: integer(env, 'PLINTH_AD_VERDICT_DELAY_SECONDS', 0, 0, 3600),
    rateLimitKeyPerMinute: integer(env, 'PLINTH_RATE_LIMIT_KEY_PER_MINUTE', 60_000, 0, 1_000_000_000),
    rateLimitTokenPerMinute: integer(env, 'PLINTH_RATE_LIMIT_TOKEN_PER_MINUTE', 1_200, 0, 1_000_000_000),
    streams: streamLimits(env),
    ledgerCloser: ledgerCloserLimits(env),
    requestLog,
    metricsToken,
    // A network's Horizon host is a name this server serves.
    allowedHosts: [...allowedHostsSetting(env), ...Object.values(horizons).flatMap((o) => (o.host === undefined ? [] : [o.host]))],
    horizons,
    accounts: accountLimits(env),
    portal: portalSettings(env),
    payments: paymentSettings(env),
    faucet: faucetSettings(env),
  }
}
