/** The operator console's shapes, from the API (routes.d.ts), and what its sections are given. */
import type { Answer } from '../../api/routes'
import type { Child } from '../../ui/types'
import type { Attempt } from '../types'

export type Approval = Answer<'/operator/approvals'>['approvals'][number]
export type OperatorUser = Answer<'/operator/users'>['users'][number]
export type OperatorApp = Answer<'/operator/apps'>['apps'][number]
export type AuditRecord = Answer<'/operator/audit'>['records'][number]
export type Issued = Exclude<Answer<'/operator/issue', 'POST'>, { approval: unknown }>

/** What the page's shell gives the console (main.js). */
export interface OperatorContext {
  /** Who is signed in. */
  user(): { username: string } | undefined
  /** The session is over: back to sign-in. */
  signedOut(): void
}

/** What the console gives its money sections (operator-money.js) and the listing queue (listing-ui.js). */
export interface MoneyContext {
  attempt: Attempt
  section(id: string, title: string, ...children: Child[]): HTMLElement
  user(): { username: string } | undefined
  /** A request for a second operator was made: the approvals tab reloads. */
  onRequested(): void
}

/** A section of the console: its element, and what runs when its tab is shown. */
export interface ConsoleSection {
  element: HTMLElement
  shown?: () => unknown
}
