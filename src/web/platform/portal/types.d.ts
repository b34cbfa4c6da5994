/** The portal's shapes, from the API (routes.d.ts), for its app page and its activity tabs. */
import type { Answer } from '../../api/routes'

export type PortalPayment = Answer<`/portal/apps/${string}/payments`>['payments'][number]
export type PortalPaymentDetail = Answer<`/portal/apps/${string}/payments/${string}`>
export type PortalBlocking = Answer<`/portal/apps/${string}/users/${string}/blocking`>
export type PortalNotification = Answer<`/portal/apps/${string}/notifications`>['notifications'][number]
export type PortalAd = Answer<`/portal/apps/${string}/ads`>['ads'][number]
export type RequestLogPage = Answer<`/portal/apps/${string}/requests`>
export type RequestLogEntry = RequestLogPage['requests'][number]

/**
 * What the activity tab reads of a payment's timeline event and ledger transaction. The portal's
 * route declares both as open objects (the sandbox's describes them in full), so the page narrows
 * them to what it reads until they share a schema as `advice` does.
 */
export type TimelineEvent = { kind: string; at: string; actor: string }
export type LedgerTransactionRef = { hash: string }

/** A tab of the activity section (widgets.js, subTabs): its element, and what runs when it is shown. */
export interface ActivityPanel {
  element: HTMLElement
  shown?: () => unknown
}

/** What the activity section and its request log run calls with, and redraw the app's page with. */
export interface ActivityContext {
  attempt: import('../types').Attempt
  refresh(): Promise<void>
}

export type PortalWallet = Answer<`/portal/apps/${string}/wallet`>

/** What the page's shell gives the portal (main.js). */
export interface PortalContext {
  /** Who is signed in. */
  user(): { username: string } | undefined
  /** The session is over: back to sign-in. */
  signedOut(): void
  /** The app shown (undefined: none), for the page's URL. */
  selected(appId: string | undefined): void
}

/** The portal's tools of a live app (portal-tools.js). */
export type PortalOverview = Answer<`/portal/apps/${string}/overview`>
export type PortalAppUser = Answer<`/portal/apps/${string}/users`>['users'][number]
export type PortalCurl = Answer<`/portal/apps/${string}/requests/${string}/curl`>
