/** The types the platform page's modules share (the shell hands them to its views and panels). */
import type { Answer } from '../api/routes'

/** An app as the picker lists it (the sandbox's apps, or production's directory). */
export interface AppListing {
  app_id: string
  name: string
  url: string | null
  icon?: string | null
  description?: string | null
  /** Its network, Pi Network or Pi Testnet (docs/ledger.md, "Two networks"). */
  network: string
}

/** What the page knows of the platform (its own file ui/platform.json, not an API route: src/web/sandbox-page-routes.ts). */
export interface PlatformInfo {
  mode: 'sandbox' | 'production'
  approval_window_seconds: number
  /** Sandbox: whether the page asks for the admin token first. */
  admin_token_required?: boolean
  /** Production: above this amount of Pi the payment dialog asks for the password. */
  payment_step_up_amount?: string
  /** Production: how a person becomes a developer (PLINTH_DEVELOPER_SIGNUP). */
  developer_signup?: 'open' | 'invite' | 'operator'
}

/** The person the page acts for (main.js): a sandbox test user, or production's signed-in person with their roles. */
export interface PageUser {
  user_id: string
  username: string
  wallet_address: string
  roles?: string[]
}

/** The app open in the page's frame (main.js). */
export interface OpenedApp {
  app_id: string
  name: string
  url: string
  origin: string
  /** Its network: its payments are paid from the user's balance there (docs/ledger.md, "Two networks"). */
  network: string
}

export type Network = 'Pi Network' | 'Pi Testnet'

/** Shows an error in `element`, or asks for the admin token when that was the problem (main.js). */
export type FailIn = (element: HTMLElement) => (error: unknown) => void

export interface PickerContext {
  production(): boolean
  showView(id: string): void
  markTab(name: string | undefined): void
  setUrl(changes: Record<string, string | undefined>): void
  failIn: FailIn
  listApps(): Promise<AppListing[]>
  openApp(app: { app_id: string; name: string; url: string | null; network: string }): void
  openAppById(appId: string, url?: string): Promise<void>
}

export interface SignInContext {
  production(): boolean
  showView(id: string): void
  failIn: FailIn
  signIn(userId: string): Promise<void>
  enterAccount(): Promise<void>
  leaveApp(): void
}

/** A panel's alert line (widgets.js, alertLine): `set(error)` shows an error's message, `set(undefined)` hides it. */
export interface ProblemLine {
  element: HTMLElement
  set(error: unknown): void
}

/** The result of a panel's call (widgets.js, attempter): no error when the session was over (the page went back to sign-in). */
export type Attempted<T> = { ok: true; value: T } | { ok: false; error?: unknown }
/** Runs a panel's call, its error said in `line` (the panel's alert line by default). */
export type Attempt = <T>(work: () => Promise<T>, line?: { element: HTMLElement; set(error: unknown): void }) => Promise<Attempted<T>>

/** An app as the portal shows it. */
export type PortalApp = Answer<`/portal/apps/${string}`, 'GET'>
export type PortalKey = Answer<`/portal/apps/${string}/keys`, 'GET'>['keys'][number]
export type PortalMember = Answer<`/portal/apps/${string}/members`, 'GET'>['members'][number]

/** A secret the portal shows once (a new key), until the person hides it. */
export interface ShownOnce {
  appId: string
  title: string
  note: string
  entries: Array<{ label: string; value: string; testid: string }>
}

/** What the portal's app page gives its sections (keys-section.js, members-section.js). */
export interface PortalSectionView {
  attempt: Attempt
  section(id: string, title: string, ...children: import('../ui/types').Child[]): HTMLElement
  renderDetail(): Promise<void>
  reload(): Promise<void>
  user(): { username: string } | undefined
  showSecret(secret: ShownOnce): void
  /** Takes the key that starts with `prefix` (revoked) out of the shown-once box. */
  forgetKey(prefix: string): void
  deselect(): void
}

/** A passkey's answer, as @simplewebauthn/browser gives it (JSON, for the server to verify). */
export interface WebAuthnCredential {
  id: string
  rawId: string
  response: { [key: string]: unknown }
  type: 'public-key'
  [key: string]: unknown
}

declare global {
  interface Window {
    /** @simplewebauthn/browser's bundle (ui/vendor/webauthn.js, a classic script the page loads first). */
    SimpleWebAuthnBrowser: {
      startAuthentication(options: { optionsJSON: unknown }): Promise<WebAuthnCredential>
      startRegistration(options: { optionsJSON: unknown }): Promise<WebAuthnCredential>
    }
  }
}
