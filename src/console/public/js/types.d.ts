/**
 * The types the console's modules share. What is the API's data is the API's type (routes.d.ts,
 * from its OpenAPI document): a field renamed on the server fails `npm run typecheck` here.
 */
import type { Answer } from '../../../web/api/routes'

/** An app as the sandbox's app page reads it, with its keys. */
export type App = Answer<'/sandbox/apps/{app_id}'>
/** A payment as an app's payments list gives it. */
export type PaymentItem = Answer<'/sandbox/apps/{app_id}/payments'>['payments'][number]
/** One payment's page: the payment, its state, what happens next and its timeline. */
export type PaymentDetail = Answer<'/sandbox/apps/{app_id}/payments/{payment_id}'>
/** What happens next to a payment, and the console's actions that move it on. */
export type Advice = PaymentDetail['advice']
/** Where a payment is (created … completed, or cancelled). */
export type PaymentState = PaymentItem['state']
export type Ad = Answer<'/sandbox/apps/{app_id}/ads'>['ads'][number]
export type AdScript = Answer<'/sandbox/apps/{app_id}/ads/script'>
export type Checklist = Answer<'/sandbox/apps/{app_id}/checklist'>
export type SentNotification = Answer<'/sandbox/apps/{app_id}/notifications'>['notifications'][number]
/** A request log entry (its list gives each as its own page does: with headers and bodies). */
export type RequestEntry = Answer<'/sandbox/apps/{app_id}/requests/{id}'>
export type Fault = Answer<'/sandbox/faults'>['faults'][number]
export type AppItem = Answer<'/sandbox/apps'>['apps'][number]

/** Secrets shown once (a new app's key and seed, a new user's seed), on the page `owner` (a route). */
export interface Reveal {
  owner: string
  title: string
  items: { label: string; value: string; testid: string }[]
}
