import type { FastifyBaseLogger } from 'fastify'
import type { Kysely } from 'kysely'
import { type AccountsService, accountsServiceFactory } from '../accounts/accounts-service.js'
import { type PasskeysService, passkeysServiceFactory } from '../accounts/passkeys.js'
import { passwordPepper } from '../accounts/passwords.js'
import { type PaymentStepUp, paymentStepUpFactory } from '../accounts/payment-step-up.js'
import { type PersonalTokensService, personalTokensServiceFactory } from '../accounts/personal-tokens.js'
import { type Faucet, faucetFactory } from '../admin/faucet.js'
import { type ListingReview, listingReviewFactory } from '../admin/listing-service.js'
import { type OperatorService, operatorServiceFactory } from '../admin/operator-service.js'
import { type SupportService, supportServiceFactory } from '../admin/support-service.js'
import { type AdsService, adsServiceFactory } from '../ads/ads-service.js'
import { type AppsService, appsServiceFactory } from '../apps/apps-service.js'
import { listingGate } from '../apps/listing-gate.js'
import { auditChainKey } from '../audit/audit-log.js'
import { accountLimits, faucetSettings, paymentSettings, portalSettings, streamLimits } from '../config.js'
import type { DB } from '../db/schema.js'
import { type StatisticsKeeper, statisticsKeeper } from '../db/statistics.js'
import { type CredentialCache, createCredentialCache } from '../identity/credential-cache.js'
import { type IdentityService, identityServiceFactory } from '../identity/identity-service.js'
import { type StreamHub, streamHub } from '../ledger/horizon/streaming.js'
import { drawnLedger, ledgerRepo, worldStartLedger } from '../ledger/ledger-repo.js'
import { type LedgerService, ledgerServiceFactory } from '../ledger/ledger-service.js'
import { type LedgerTip, ledgerTip } from '../ledger/ledger-tip.js'
import type { NetworkLedgers } from '../ledger/network-ledgers.js'
import { LEDGER_NETWORKS, type LedgerNetwork, networkStorage, TESTNET } from '../ledger/networks.js'
import { EMPTY_BALANCES, ledgerWallets, STARTING_BALANCES } from '../ledger/wallets.js'
import { type NotificationsService, notificationsServiceFactory } from '../notifications/notifications-service.js'
import { linkPayments, paymentsLedger } from '../payments/payments-ledger.js'
import { type PaymentsService, paymentsServiceFactory } from '../payments/payments-service.js'
import { checkDomain } from '../portal/domain-check.js'
import { type PortalListing, portalListingFactory } from '../portal/listing-service.js'
import { type PortalService, portalServiceFactory } from '../portal/portal-service.js'
import { type RequestLogOptIn, requestLogOptIn } from '../request-log/opt-in.js'
import { type FaultsService, faultsServiceFactory } from '../sandbox/faults/faults-service.js'
import { createSandboxSync, type SandboxSync } from '../sandbox/sandbox-sync.js'
import { clockResetFactory } from '../sandbox/world/clock-reset.js'
import { type WorldService, worldServiceFactory } from '../sandbox/world/world-service.js'
import { createMetrics, type Metrics } from '../system/metrics.js'
import type { AppDeps } from './app-deps.js'

/** One network's ledger, the tip its streams wait on, and its event streams. */
export interface NetworkLedger {
  ledger: LedgerService
  tip: LedgerTip
  streams: StreamHub
}

/** What only sandbox mode builds. */
export interface SandboxServices {
  /** What each process holds for the sandbox (faults, the clock epoch of a reset) kept exact across processes. */
  sync: SandboxSync
  faults: FaultsService
  world: WorldService
  resetClock: ReturnType<typeof clockResetFactory>
}

export interface Services {
  metrics: Metrics
  /** Whether GET /metrics is served: when not, nothing is measured either. */
  metricsServed: boolean
  /** The database every service uses: `deps.db`, timed per statement when metrics are served. */
  db: Kysely<DB>
  /** Pi Testnet's tip, ledger and streams: what /ledger serves (docs/ledger.md, "Two networks"). */
  tip: LedgerTip
  ledger: LedgerService
  streams: StreamHub
  /** Each network's ledger, tip and streams. */
  networks: Readonly<Record<LedgerNetwork, NetworkLedger>>
  ledgers: NetworkLedgers
  credentials: CredentialCache
  /** Analyzes the tables as they grow, so that no statement keeps a plan made on an empty table (src/db/statistics.ts). */
  statistics: StatisticsKeeper
  apps: AppsService
  identity: IdentityService
  payments: PaymentsService
  ads: AdsService
  notifications: NotificationsService
  /** Production's accounts: sign-up, sign-in, sessions (absent in sandbox mode, where the developer acts as any user). */
  accounts: AccountsService | undefined
  /** Production's passkeys (WebAuthn), beside the accounts. */
  passkeys: PasskeysService | undefined
  /** Production's personal access tokens: a person's credential for the /portal API (docs/portal.md). */
  personalTokens: PersonalTokensService | undefined
  /** Production's step-up for large payments: the password with the pay (docs/production.md). */
  paymentStepUp: PaymentStepUp | undefined
  /** Production, PLINTH_REQUEST_LOG unset: the apps whose owner turned their request log on. */
  requestLogOptIn: RequestLogOptIn | undefined
  /** Production's developer portal and operator's console (docs/portal.md, docs/operators.md). */
  portal: PortalService | undefined
  operator: OperatorService | undefined
  /** Production: the operator's listing queue and the owner's listing acts (docs/portal.md, "Listing"). */
  listingReview: ListingReview | undefined
  /** Production: the operator's support lookup (docs/operators.md, "Support lookup"). */
  support: SupportService | undefined
  portalListing: PortalListing | undefined
  /** The faucet's test-π (docs/ledger.md, "Friendbot"): limited per day in production, not in the sandbox. */
  faucet: Faucet
  sandbox: SandboxServices | undefined
}

/**
 * Builds every service, each after what it uses. `log` is the application's logger: background
 * work (the ledger tip, the revocation feed, the sandbox state) reports its errors there.
 */
export function buildServices(deps: AppDeps, log: FastifyBaseLogger): Services {
  const { clock, config, secretKey } = deps
  // Served in sandbox mode, and in production only with a token (src/system/metrics.ts): when not
  // served, nothing is measured either, and registered gauges are never read.
  const metricsServed = config.mode === 'sandbox' || config.metricsToken !== undefined
  const metrics = createMetrics({ enabled: metricsServed })
  const db = metricsServed ? deps.db.withPlugin(metrics.queryTimer) : deps.db
  const limits = config.streams ?? streamLimits()

  // Each network's ledger, its tip and its event streams (docs/ledger.md, "Two networks").
  const networks = Object.fromEntries(
    LEDGER_NETWORKS.map((network) => {
      // Every closed ledger is announced (NOTIFY at commit, from the database): event streams on any process wake on it.
      const tip = ledgerTip({
        channelSql: networkStorage(network).tipChannelSql,
        latest: async () => BigInt((await ledgerRepo(db, network).latestLedger()).ledger),
        listen: deps.listen,
        pollMs: limits.pollMs,
        onError: (error) => log.warn({ err: error, network }, 'could not follow the ledger tip'),
      })
      const ledger = ledgerServiceFactory({
        db,
        clock,
        network,
        closer: config.ledgerCloser,
        // A payment's link commits with the transaction that pays it, or the transaction is refused.
        hook: linkPayments(clock),
        onLedgerClosed: (closed, transactions) => {
          tip.closed(closed)
          metrics.ledgerBatch(transactions)
        },
      })
      const streams = streamHub({
        tip,
        limits,
        latestLedger: async () => BigInt((await ledger.latestLedger()).sequence),
        worldStart: () => worldStartLedger(db, network),
        drawnLedger: () => drawnLedger(db, network),
        log,
      })
      return [network, { ledger, tip, streams }]
    }),
  ) as Record<LedgerNetwork, NetworkLedger>
  const ledgers: NetworkLedgers = { 'Pi Testnet': networks['Pi Testnet'].ledger, 'Pi Network': networks['Pi Network'].ledger }
  const { ledger, tip, streams } = networks[TESTNET]
  const all = Object.values(networks)
  metrics.gauge('plinth_ledger_closer_waiting', "Transactions waiting for this process's ledger closers", () =>
    all.reduce((sum, n) => sum + n.ledger.closerWaiting(), 0),
  )
  metrics.gauge('plinth_ledger_streams_open', 'Ledger event streams (SSE) open in this process', () =>
    all.reduce((sum, n) => sum + n.streams.usage().open, 0),
  )
  metrics.gauge('plinth_ledger_stream_clients', 'Client addresses holding ledger event streams in this process', () =>
    all.reduce((sum, n) => sum + n.streams.usage().clients, 0),
  )
  const wallets = ledgerWallets(ledgers, config.mode === 'production' ? EMPTY_BALANCES : STARTING_BALANCES)

  // Verified credentials are cached per process; a revocation is dropped at once here (forget, after
  // its transaction committed) and within a second on every process (the feed).
  const credentials = createCredentialCache({
    db,
    clock,
    onError: (error) => log.warn({ err: error }, 'could not read the revocation feed'),
    ...(metricsServed ? { onLookup: metrics.credentialLookup } : {}),
  })
  metrics.gauge('plinth_credential_cache_entries', 'Verified API keys and access tokens held by the per-process cache', credentials.size)
  const poolStats = deps.poolStats
  if (poolStats !== undefined) {
    metrics.gauge('plinth_db_connections', 'Database connections open (PGlite: its one connection)', () => poolStats().total)
    metrics.gauge('plinth_db_connections_idle', 'Database connections open and idle', () => poolStats().idle)
    metrics.gauge(
      'plinth_db_connections_waiting',
      'Callers waiting for a database connection (PGlite: its queue)',
      () => poolStats().waiting,
    )
  }
  const apps = appsServiceFactory({ db, clock, wallets, afterRevocation: credentials.forget })
  const identity = identityServiceFactory({
    db,
    clock,
    secretKey,
    defaultTokenTtlSeconds: config.tokenTtlSeconds,
    wallets,
    afterRevocation: credentials.forget,
  })

  const payments = paymentsServiceFactory({
    db,
    clock,
    publicUrl: config.publicUrl,
    approvalWindowMs: config.approvalWindowSeconds * 1000,
    userSeed: identity.openWalletSeed,
    ledger: paymentsLedger(ledgers),
    // Mainnet listing holds a production app's payments to its members until it is approved; the sandbox lists nothing.
    ...(config.mode === 'production' ? { listingGate: listingGate(db) } : {}),
  })

  const ads = adsServiceFactory({ db, clock, verdictDelayMs: config.adVerdictDelaySeconds * 1000 })
  const notifications = notificationsServiceFactory({ db, clock })

  const production = config.mode === 'production'
  const auditKey = auditChainKey(secretKey)
  const accounts = production
    ? accountsServiceFactory({
        db,
        identity,
        limits: config.accounts ?? accountLimits(),
        pepper: passwordPepper(secretKey),
        auditKey,
      })
    : undefined
  const settings = config.portal ?? portalSettings()
  const optIn =
    production && config.requestLog === undefined
      ? requestLogOptIn(db, { onError: (error) => log.warn({ err: error }, 'could not read which apps keep a request log') })
      : undefined
  const portal = production
    ? portalServiceFactory({
        db,
        clock,
        wallets,
        auditKey,
        publicUrl: config.publicUrl,
        developerSignup: settings.developerSignup,
        checkDomain: (url, key) => checkDomain(url, key, { allowPrivate: settings.allowPrivateAppUrls }),
        afterRevocation: credentials.forget,
        requestLog: optIn === undefined ? (config.requestLog === true ? 'all' : 'off') : optIn,
      })
    : undefined
  const operator = production
    ? operatorServiceFactory({
        db,
        clock,
        secretKey,
        publicUrl: config.publicUrl,
        dailyIssueLimit: settings.operatorDailyIssueLimit,
        approvalThreshold: settings.operatorApprovalThreshold,
        resetLinkSeconds: settings.resetLinkSeconds,
        afterRevocation: credentials.forget,
      })
    : undefined

  return {
    metrics,
    metricsServed,
    db,
    statistics: statisticsKeeper({
      db: deps.db,
      onError: (error) => log.warn({ err: error }, 'could not analyze the grown tables'),
    }),
    tip,
    ledger,
    streams,
    networks,
    ledgers,
    credentials,
    apps,
    identity,
    payments,
    ads,
    notifications,
    accounts,
    passkeys: accounts === undefined ? undefined : passkeysServiceFactory({ db, accounts }),
    personalTokens: accounts === undefined ? undefined : personalTokensServiceFactory({ db, accounts, auditKey }),
    paymentStepUp:
      accounts === undefined
        ? undefined
        : paymentStepUpFactory({
            db,
            accounts,
            stepUpAmount: (config.payments ?? paymentSettings()).stepUpAmount,
          }),
    requestLogOptIn: optIn,
    portal,
    operator,
    listingReview: production ? listingReviewFactory({ db, secretKey }) : undefined,
    support: production ? supportServiceFactory({ db, auditKey, publicUrl: config.publicUrl, payments }) : undefined,
    portalListing: portal === undefined ? undefined : portalListingFactory({ db, auditKey, portal }),
    faucet: faucetFactory({ db, clock, secretKey, settings: config.faucet ?? faucetSettings(), limited: production }),
    sandbox: config.mode === 'sandbox' ? buildSandboxServices(deps, { db, streams: all.map((n) => n.streams), log }) : undefined,
  }
}

function buildSandboxServices(deps: AppDeps, built: { db: Kysely<DB>; streams: StreamHub[]; log: FastifyBaseLogger }): SandboxServices {
  const { clock, config, secretKey } = deps
  const { db, streams, log } = built
  const sync = createSandboxSync({ db, clock, onError: (error) => log.warn({ err: error }, 'could not read the sandbox state') })
  // A reset or a restore (a new clock epoch; a clock reset too) ends every stream here before this
  // process acknowledges it. Listeners run in the order added: this one before the faults' reload.
  let epoch = clock.epoch()
  sync.onChange(async () => {
    if (clock.epoch() === epoch) return
    epoch = clock.epoch()
    for (const hub of streams) await hub.worldReplaced()
  })
  return {
    sync,
    faults: faultsServiceFactory({ db, sync }),
    world: worldServiceFactory({ db, clock, secretKey, sync }),
    resetClock: clockResetFactory({ db, clock, approvalWindowMs: config.approvalWindowSeconds * 1000 }),
  }
}
