import type { FastifyInstance } from 'fastify'
import type { Kysely } from 'kysely'
import type { DB } from '../db/schema.js'
import type { PaymentsService } from '../payments/payments-service.js'
import type { RequestLog } from '../request-log/request-log.js'
import { paymentViewsRepo } from '../views/payment-views-repo.js'
import { paymentViewsServiceFactory } from '../views/payment-views-service.js'
import { viewsRepo } from '../views/views-repo.js'
import { viewsServiceFactory } from '../views/views-service.js'
import { portalActivityRoutes } from './portal-activity-routes.js'
import { portalAppRoutes } from './portal-app-routes.js'
import { portalPaymentRoutes } from './portal-payment-routes.js'
import type { PortalService } from './portal-service.js'
import { portalTeamRoutes } from './portal-team-routes.js'
import { portalToolsRoutes } from './portal-tools-routes.js'

export interface PortalRoutesDeps {
  portal: PortalService
  db: Kysely<DB>
  publicUrl: string
  payments: Pick<PaymentsService, 'complete' | 'cancel' | 'expireDueApprovals'>
  /** This process's request log writer (undefined when PLINTH_REQUEST_LOG=off). */
  requestLog: RequestLog | undefined
}

/**
 * The developer portal's API (docs/portal.md): a signed-in developer's apps. Every route needs a
 * session with the developer role (403 forbidden without); an app's routes need membership (404
 * app_not_found for anyone else's app), and an owner's acts the owner (403 forbidden). Same-origin
 * JSON only, as the account API (src/http/site-guard.ts). The groups are declared in the order of
 * the OpenAPI document: the app, who holds it, what its users met, its payments.
 */
export function portalRoutes(app: FastifyInstance, deps: PortalRoutesDeps): void {
  const { portal } = deps
  const paymentViews = paymentViewsServiceFactory({
    repo: paymentViewsRepo(deps.db),
    views: viewsServiceFactory({ repo: viewsRepo(deps.db) }),
    payments: deps.payments,
    publicUrl: deps.publicUrl,
    requestLog: deps.requestLog,
  })
  portalAppRoutes(app, portal)
  portalTeamRoutes(app, portal)
  portalActivityRoutes(app, { portal, db: deps.db, paymentViews, requestLog: deps.requestLog })
  portalPaymentRoutes(app, { portal, paymentViews })
  portalToolsRoutes(app, { ...deps, paymentViews })
}
