import assert from 'node:assert/strict'
import type { InjectOptions } from 'fastify'
import type { PaymentDTO } from '../../src/payments/payment-dto.js'
import { type SandboxApp, type SandboxUser, sandbox, type TestPlatform } from './platform.js'

/** The error body of the Pi API (`/v2`). */
export interface ErrorBody {
  error: string
  error_message: string
  payment?: PaymentDTO
  verification_error?: string
}

/** The scopes an app needs to pay a user and be paid. */
export const A2U_SCOPES = ['username', 'payments', 'wallet_address']

/** A memo and metadata for payments whose content does not matter to the test. */
export const order = { memo: 'A reward', metadata: { order: 42 } }

/** An app with a user signed in to it, and the payments API as each of them sees it. */
export interface PaymentScene {
  app: SandboxApp
  user: SandboxUser
  token: string
  uid: string
  server: ReturnType<ReturnType<typeof paymentClients>['asApp']>
  client: ReturnType<ReturnType<typeof paymentClients>['asUser']>
}

/**
 * The payments API as an app's server (`asApp`, with its API key) and as a user's client
 * (`asUser`, with an access token) call it, on `platform` unless another platform is given.
 * `platform` may be a `usePlatform()` handle: it is read only when a call is made.
 */
export function paymentClients(platform: TestPlatform) {
  async function call<T = PaymentDTO>(options: InjectOptions, on: TestPlatform = platform): Promise<{ status: number; body: T }> {
    const response = await on.app.inject(options)
    return { status: response.statusCode, body: response.json() as T }
  }
  const callOn = <T = PaymentDTO>(on: TestPlatform, options: InjectOptions) => call<T>(options, on)
  const asApp = (app: SandboxApp, on: TestPlatform = platform) => ({
    create: (payment: Record<string, unknown>) =>
      callOn(on, { method: 'POST', url: '/v2/payments', headers: { authorization: `Key ${app.api_key}` }, payload: { payment } }),
    get: (id: string) => callOn(on, { method: 'GET', url: `/v2/payments/${id}`, headers: { authorization: `Key ${app.api_key}` } }),
    approve: (id: string) =>
      callOn(on, { method: 'POST', url: `/v2/payments/${id}/approve`, headers: { authorization: `Key ${app.api_key}` } }),
    complete: (id: string, txid?: string) =>
      callOn(on, {
        method: 'POST',
        url: `/v2/payments/${id}/complete`,
        headers: { authorization: `Key ${app.api_key}` },
        ...(txid === undefined ? {} : { payload: { txid } }),
      }),
    cancel: (id: string) =>
      callOn(on, { method: 'POST', url: `/v2/payments/${id}/cancel`, headers: { authorization: `Key ${app.api_key}` } }),
    incomplete: () =>
      callOn<{ incomplete_server_payments: PaymentDTO[] }>(on, {
        method: 'GET',
        url: '/v2/payments/incomplete_server_payments',
        headers: { authorization: `Key ${app.api_key}` },
      }),
  })
  const asUser = (token: string, on: TestPlatform = platform) => ({
    create: (payment: Record<string, unknown>) =>
      callOn(on, { method: 'POST', url: '/v2/client/payments', headers: { authorization: `Bearer ${token}` }, payload: payment }),
    get: (id: string) => callOn(on, { method: 'GET', url: `/v2/client/payments/${id}`, headers: { authorization: `Bearer ${token}` } }),
    submit: (id: string) =>
      callOn(on, { method: 'POST', url: `/v2/client/payments/${id}/submit`, headers: { authorization: `Bearer ${token}` } }),
    cancel: (id: string) =>
      callOn(on, { method: 'POST', url: `/v2/client/payments/${id}/cancel`, headers: { authorization: `Bearer ${token}` } }),
    incomplete: () =>
      callOn<{ payment: PaymentDTO | null }>(on, {
        method: 'GET',
        url: '/v2/client/payments/incomplete',
        headers: { authorization: `Bearer ${token}` },
      }),
  })
  /** A new app and user, the user signed in to the app with `scopes`. */
  async function scene(scopes = A2U_SCOPES, on: TestPlatform = platform): Promise<PaymentScene> {
    const sb = sandbox(on.app)
    const app = await sb.createApp()
    const user = await sb.createUser()
    const auth = await sb.authenticate(app.app_id, user.user_id, scopes)
    return { app, user, token: auth.accessToken, uid: auth.user.uid, server: asApp(app, on), client: asUser(auth.accessToken, on) }
  }
  return { call, asApp, asUser, scene }
}

/** Asserts a Pi API error answer (status, code, a message) and returns its body. */
export function assertError(result: { status: number; body: unknown }, status: number, code: string): ErrorBody {
  const body = result.body as ErrorBody
  assert.equal(result.status, status, `expected ${status} ${code}, got ${result.status} ${JSON.stringify(body)}`)
  assert.equal(body.error, code)
  assert.equal(typeof body.error_message, 'string')
  return body
}
