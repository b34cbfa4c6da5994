import type { FastifyInstance } from 'fastify'
import { accountRoutes } from '../accounts/account-routes.js'
import { passkeyRoutes } from '../accounts/passkey-routes.js'
import { tokenRoutes } from '../accounts/token-routes.js'
import { walletRoutes } from '../accounts/wallet-routes.js'
import { approvalRoutes } from '../admin/approval-routes.js'
import { faucetAccountRoutes } from '../admin/faucet-routes.js'
import { issueCheckRoutes } from '../admin/issue-check-routes.js'
import { listingReviewRoutes } from '../admin/listing-routes.js'
import { operatorRoutes } from '../admin/operator-routes.js'
import { supportRoutes } from '../admin/support-routes.js'
import { adsRoutes, adsSandboxRoutes } from '../ads/ads-routes.js'
import { portalSettings } from '../config.js'
import { consoleRoutes } from '../console/console-routes.js'
import { meRoutes } from '../identity/me-routes.js'
import { horizonRoutes } from '../ledger/horizon/index.js'
import { horizonBase, horizonPrefix } from '../ledger/horizon/origins.js'
import { legacyLedger } from '../ledger/network-ledgers.js'
import { LEDGER_NETWORKS, TESTNET } from '../ledger/networks.js'
import { notificationsRoutes, notificationsSandboxRoutes } from '../notifications/notifications-routes.js'
import { clientPaymentsRoutes, paymentsRoutes } from '../payments/payments-routes.js'
import { portalListingRoutes } from '../portal/listing-routes.js'
import { portalRoutes } from '../portal/portal-routes.js'
import { requestLogRoutes } from '../request-log/request-log-routes.js'
import { faultsRoutes } from '../sandbox/faults/faults-routes.js'
import { ledgerSandboxRoutes } from '../sandbox/ledger-routes.js'
import { sandboxRoutes } from '../sandbox/sandbox-routes.js'
import { sandboxPayments } from '../sandbox/views/payment-views-routes.js'
import { sandboxTools } from '../sandbox/views/tools-routes.js'
import { sandboxViews } from '../sandbox/views/views-routes.js'
import { worldRoutes } from '../sandbox/world/world-routes.js'
import { metricsRoutes } from '../system/metrics.js'
import { systemRoutes } from '../system/system-routes.js'
import { hubRoutes } from '../web/hub/hub-routes.js'
import { productionPageRoutes, sandboxPageRoutes } from '../web/sandbox-page-routes.js'
import { sdkRoutes } from '../web/sdk-routes.js'
import { webUiRoutes } from '../web/ui-routes.js'
import type { AppDeps } from './app-deps.js'
import type { PipelineContext, PipelineProducts } from './pipeline.js'
import { VERSION } from './server.js'
import type { SandboxServices } from './services.js'

interface RoutesContext extends PipelineContext {
  ping: AppDeps['ping']
  products: PipelineProducts
}

interface RouteGroup {
  name: string
  /** The paths it serves and who may call them. */
  serves: string
  /** Registered only when this holds (every time when absent). */
  when?: (ctx: RoutesContext) => boolean
  register(app: FastifyInstance, ctx: RoutesContext): void | Promise<void>
}

const sandboxOf = (ctx: RoutesContext): SandboxServices => {
  if (ctx.services.sandbox === undefined) throw new Error('the sandbox routes need the sandbox services (sandbox mode)')
  return ctx.services.sandbox
}

/**
 * The route groups, in the order they are declared, after the whole request pipeline
 * (src/app/pipeline.ts), whose route hooks they get. The order is the OpenAPI document's: a
 * group moved, or a route moved within its group, reorders the document.
 */
export const ROUTE_GROUPS: readonly RouteGroup[] = [
  {
    name: 'system',
    serves: '/healthz, /readyz, /v2/openapi.json and, when served, /metrics (its own token in production)',
    register: (app, ctx) => {
      systemRoutes(app, { ping: ctx.ping })
      if (ctx.services.metricsServed) metricsRoutes(app, { metrics: ctx.services.metrics, token: ctx.config.metricsToken })
    },
  },
  {
    name: 'platform API',
    serves: "/v2: the app's backend (server API key) and its users' clients (access token)",
    register: (app, ctx) => {
      const { identity, payments, ads, notifications } = ctx.services
      meRoutes(app, { identity })
      paymentsRoutes(app, { payments })
      clientPaymentsRoutes(app, { payments, userPays: ctx.config.mode === 'production' })
      adsRoutes(app, { ads })
      notificationsRoutes(app, { notifications })
    },
  },
  {
    name: 'account',
    serves: "/account: production's account API, for the platform's own pages (a session cookie); production mode",
    when: (ctx) => ctx.services.accounts !== undefined,
    register: (app, ctx) => {
      const { accounts, passkeys, personalTokens, identity, payments, paymentStepUp: stepUp } = ctx.services
      if (accounts === undefined || passkeys === undefined || personalTokens === undefined || stepUp === undefined)
        throw new Error('the account routes need the accounts service (production mode)')
      accountRoutes(app, { accounts, identity, payments, stepUp })
      passkeyRoutes(app, { passkeys, publicUrl: ctx.config.publicUrl })
      tokenRoutes(app, { tokens: personalTokens })
      faucetAccountRoutes(app, { faucet: ctx.services.faucet, db: ctx.services.db })
      walletRoutes(app, { accounts, ledgers: ctx.services.ledgers })
    },
  },
  {
    name: 'portal',
    serves: "/portal: the developer portal's API, a signed-in developer's apps (session, developer role); production mode",
    when: (ctx) => ctx.services.portal !== undefined,
    register: (app, ctx) => {
      const { portal, portalListing, db, payments } = ctx.services
      if (portal === undefined || portalListing === undefined)
        throw new Error('the portal routes need the portal service (production mode)')
      portalRoutes(app, { portal, db, payments, publicUrl: ctx.config.publicUrl, requestLog: ctx.products.requestLog })
      portalListingRoutes(app, { listing: portalListing })
    },
  },
  {
    name: 'operator',
    serves: "/operator: the operator's console API, the whole platform (session, operator role); production mode",
    when: (ctx) => ctx.services.operator !== undefined,
    register: (app, ctx) => {
      const { operator, listingReview, support } = ctx.services
      if (operator === undefined || listingReview === undefined || support === undefined)
        throw new Error('the operator routes need the operator service (production mode)')
      operatorRoutes(app, { operator })
      supportRoutes(app, { support, requestLog: ctx.products.requestLog })
      approvalRoutes(app, { operator })
      issueCheckRoutes(app, { operator })
      listingReviewRoutes(app, { review: listingReview })
    },
  },
  {
    name: 'SDK',
    serves: 'the browser SDK files, to anyone',
    register: (app) => sdkRoutes(app),
  },
  {
    name: 'browser UI layer',
    serves: '/web/ui/ and /web/api/: the UI layer and the API client both pages import, to anyone',
    register: async (app) => {
      await app.register(webUiRoutes)
    },
  },
  {
    name: 'ledger',
    serves: '/ledger: the Horizon-style ledger, public, with its event streams',
    register: async (app, ctx) => {
      const { ledgers, streams, faucet } = ctx.services
      const routes = ctx.products.routes
      if (routes === undefined) throw new Error('the ledger routes need the routing stage')
      await app.register(horizonRoutes, {
        prefix: '/ledger',
        routes,
        // Pi Testnet's ledger, which also applies a transaction signed for Pi Network there (docs/ledger.md, "Two networks").
        ledger: legacyLedger(ledgers),
        clock: ctx.clock,
        publicUrl: ctx.config.publicUrl,
        version: VERSION,
        streams,
        // /ledger is the Testnet's Horizon: its friendbot pays test-π there.
        friendbot: async (address: string, requestId: string) =>
          (await faucet.grant({ network: 'Pi Testnet', address, requestId })).transaction,
      })
      // Each network's Horizon at the root of its own origin, when configured (docs/ledger.md).
      for (const network of LEDGER_NETWORKS) {
        const origin = ctx.config.horizons?.[network]
        if (origin === undefined) continue
        await app.register(horizonRoutes, {
          prefix: horizonPrefix(network),
          routes,
          ledger: ledgers[network],
          clock: ctx.clock,
          publicUrl: ctx.config.publicUrl,
          linkBase: horizonBase(origin, ctx.config.publicUrl),
          hidden: true,
          version: VERSION,
          streams: ctx.services.networks[network].streams,
          // Friendbot is the Testnet's: the faucet never pays on Mainnet.
          friendbot:
            network === TESTNET
              ? async (address: string, requestId: string) => (await faucet.grant({ network, address, requestId })).transaction
              : undefined,
        })
      }
    },
  },
  {
    name: 'sandbox API',
    serves: '/sandbox: the sandbox API (the admin token when configured); sandbox mode',
    when: (ctx) => ctx.config.mode === 'sandbox',
    register: (app, ctx) => {
      const { apps, identity, ledgers, ads, notifications, payments, db } = ctx.services
      const { faults, world, resetClock } = sandboxOf(ctx)
      const { faultable, requestLog } = ctx.products
      const { publicUrl } = ctx.config
      sandboxRoutes(app, { apps, identity, clock: ctx.clock, resetClock, maxTokenTtlSeconds: 30 * 86_400, publicUrl })
      worldRoutes(app, { world })
      if (faultable !== undefined) faultsRoutes(app, { faults, routes: faultable })
      ledgerSandboxRoutes(app, { ledgers })
      adsSandboxRoutes(app, { ads, apps, requireUser: identity.requireUser })
      notificationsSandboxRoutes(app, { notifications })
      sandboxViews(app, { db })
      sandboxPayments(app, { db, publicUrl, payments, requestLog })
      sandboxTools(app, { db, publicUrl, payments, requestLog })
      requestLogRoutes(app, { db, requestLog, replayGrants: ctx.products.replayGrants })
    },
  },
  {
    name: 'sandbox page',
    serves: '/sandbox/: the sandbox web page and its scripts; sandbox mode',
    when: (ctx) => ctx.config.mode === 'sandbox',
    register: async (app, ctx) => {
      await app.register(sandboxPageRoutes, {
        approvalWindowSeconds: ctx.config.approvalWindowSeconds,
        adminTokenRequired: ctx.config.adminToken !== undefined,
      })
    },
  },
  {
    name: 'hub',
    serves: '/: a browser gets the page linking the console, sandbox, docs and ledger (the demo app too); others a 404; sandbox mode',
    when: (ctx) => ctx.config.mode === 'sandbox',
    register: async (app, ctx) => {
      const { world } = sandboxOf(ctx)
      await app.register(hubRoutes, { demo: () => world.demo(), version: VERSION })
    },
  },
  {
    name: 'platform page',
    serves: "/ and /ui/: the platform's page, where people sign in and open apps; production mode",
    when: (ctx) => ctx.config.mode === 'production',
    register: async (app, ctx) => {
      await app.register(productionPageRoutes, {
        approvalWindowSeconds: ctx.config.approvalWindowSeconds,
        paymentStepUpAmount: ctx.services.paymentStepUp?.stepUpAmount,
        developerSignup: (ctx.config.portal ?? portalSettings()).developerSignup,
      })
    },
  },
  {
    name: 'console',
    serves: 'the developer console pages; sandbox mode',
    when: (ctx) => ctx.config.mode === 'sandbox',
    register: async (app) => {
      await app.register(consoleRoutes)
    },
  },
]

/** Declares the route groups that apply, in order. */
export async function registerRouteGroups(app: FastifyInstance, ctx: RoutesContext): Promise<void> {
  for (const group of ROUTE_GROUPS) {
    if (group.when === undefined || group.when(ctx)) await group.register(app, ctx)
  }
}
