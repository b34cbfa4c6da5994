import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import axios, { type AxiosError, type AxiosInstance } from 'axios'
import { pay } from '../helpers/ledger.js'
import { type ClientPlatform, type PaymentDTO, type SignedIn, signedIn, startClientPlatform } from './client-platform.js'

/**
 * axios (the devDependency's version, 1.x) against a real Plinth process, as app backends use it:
 * an instance with a base URL and `Authorization: Key …`, and body-less moves sent as
 * `post(url)`, which axios sends with an empty body and a form Content-Type.
 */
describe('axios against a real Plinth process', () => {
  let platform: ClientPlatform
  let s: SignedIn
  let server: AxiosInstance
  let user: AxiosInstance

  before(async () => {
    platform = await startClientPlatform()
    s = await signedIn(platform)
    server = axios.create({ baseURL: platform.base, timeout: 20_000, headers: { Authorization: `Key ${s.app.api_key}` } })
    user = axios.create({ baseURL: platform.base, timeout: 20_000, headers: { Authorization: `Bearer ${s.token}` } })
  })
  after(() => platform.close())

  const errorOf = async (promise: Promise<unknown>) => {
    const error = (await promise.then(
      () => assert.fail('expected a refusal'),
      (e: unknown) => e,
    )) as AxiosError<{ error: string; error_message: string }>
    return { status: error.response?.status, body: error.response?.data, headers: error.response?.headers }
  }

  it('U2A: create without metadata, approve with post(url), the user pays with post(url), complete with {txid}', async () => {
    const created = await user.post<PaymentDTO>('/v2/client/payments', { amount: 1.5, memo: 'Coffee' })
    assert.equal(created.status, 201)
    assert.deepEqual(created.data.metadata, {})
    const id = created.data.identifier
    assert.equal((await server.get<PaymentDTO>(`/v2/payments/${id}`)).data.identifier, id)

    const approved = await server.post<PaymentDTO>(`/v2/payments/${id}/approve`)
    assert.equal(approved.status, 200)
    assert.equal(approved.data.status.developer_approved, true)

    const paid = await user.post<PaymentDTO>(`/v2/client/payments/${id}/submit`)
    assert.equal(paid.status, 200)
    const txid = paid.data.transaction?.txid ?? ''
    assert.match(txid, /^[0-9a-f]{64}$/)

    const completed = await server.post<PaymentDTO>(`/v2/payments/${id}/complete`, { txid })
    assert.equal(completed.data.status.developer_completed, true)
    assert.equal(completed.data.transaction?.verified, true)
  })

  it('U2A: the app cancels with post(url); the user cancels with post(url)', async () => {
    const first = (await user.post<PaymentDTO>('/v2/client/payments', { amount: 1, memo: 'One', metadata: {} })).data.identifier
    const cancelled = await server.post<PaymentDTO>(`/v2/payments/${first}/cancel`)
    assert.equal(cancelled.data.status.cancelled, true)

    const second = (await user.post<PaymentDTO>('/v2/client/payments', { amount: 1, memo: 'Two' })).data.identifier
    const userCancelled = await user.post<PaymentDTO>(`/v2/client/payments/${second}/cancel`)
    assert.equal(userCancelled.data.status.user_cancelled, true)
  })

  it('A2U: create with a decimal string amount and no metadata; incomplete_server_payments; cancel with post(url)', async () => {
    const created = await server.post<PaymentDTO>('/v2/payments', { payment: { amount: '2.25', memo: 'Refund', uid: s.uid } })
    assert.equal(created.data.amount, 2.25)
    assert.deepEqual(created.data.metadata, {})
    const id = created.data.identifier
    const incomplete = await server.get<{ incomplete_server_payments: PaymentDTO[] }>('/v2/payments/incomplete_server_payments/')
    assert.deepEqual(
      incomplete.data.incomplete_server_payments.map((p) => p.identifier),
      [id],
    )
    assert.equal((await server.post<PaymentDTO>(`/v2/payments/${id}/cancel`)).data.status.cancelled, true)
  })

  it('A2U: pay on the ledger, then complete with txid as a form field (URLSearchParams)', async () => {
    const id = (await server.post<PaymentDTO>('/v2/payments', { payment: { amount: 1, memo: 'Prize', metadata: { n: 1 }, uid: s.uid } }))
      .data.identifier
    const to = (await server.get<PaymentDTO>(`/v2/payments/${id}`)).data.to_address
    const txid = await pay(platform.node, { seed: s.app.wallet.seed, to, amount: '1', memo: id })
    const completed = await server.post<PaymentDTO>(`/v2/payments/${id}/complete`, new URLSearchParams({ txid }))
    assert.equal(completed.data.status.developer_completed, true)
    assert.equal(completed.data.transaction?.txid, txid)
  })

  it('refuses what a route cannot read: a text body that is not JSON is 400 invalid_json, XML or a form on another route is 415', async () => {
    const text = await errorOf(server.post('/v2/payments/whatever/approve', 'hello', { headers: { 'Content-Type': 'text/plain' } }))
    assert.equal(text.status, 400)
    assert.equal(text.body?.error, 'invalid_json')
    const xml = await errorOf(server.post('/v2/payments/whatever/approve', '<a/>', { headers: { 'Content-Type': 'application/xml' } }))
    assert.equal(xml.status, 415)
    assert.equal(xml.body?.error, 'unsupported_media_type')
    const form = await errorOf(user.post('/v2/client/payments', new URLSearchParams({ amount: '1', memo: 'm' })))
    assert.equal(form.status, 415)
    assert.equal(form.body?.error, 'unsupported_media_type')
  })

  it('serves /v2/me/ and doubled slashes; a wrong method is 405 with Allow', async () => {
    const me = await user.get<{ uid: string }>('/v2/me/')
    assert.equal(me.data.uid, s.uid)
    assert.equal((await user.get<{ uid: string }>('/v2//me')).data.uid, s.uid)
    const wrong = await errorOf(user.post('/v2/me'))
    assert.equal(wrong.status, 405)
    assert.equal(wrong.body?.error, 'method_not_allowed')
    assert.equal(wrong.headers?.allow, 'GET, HEAD')
  })

  /*
   * A backend written as the official demo's (pi-apps/demo, backend/src/handlers/payments.ts):
   * `platformAPIClient` is an axios instance with the base URL and `Authorization: Key …`;
   * approve reads the payment then posts approve with no data; complete posts `{txid}`; an
   * incomplete payment is checked by following `transaction._link` and comparing its memo.
   */
  describe('a backend written as the official demo', () => {
    let platformAPIClient: AxiosInstance
    const orders = new Map<string, { txid: string | null; paid: boolean; cancelled: boolean }>()

    const demo = {
      async approve(paymentId: string) {
        const currentPayment = await platformAPIClient.get<PaymentDTO>(`/v2/payments/${paymentId}`)
        orders.set(currentPayment.data.identifier, { txid: null, paid: false, cancelled: false })
        await platformAPIClient.post(`/v2/payments/${paymentId}/approve`)
        return { status: 200, message: `Approved the payment ${paymentId}` }
      },
      async complete(paymentId: string, txid: string) {
        orders.set(paymentId, { txid, paid: true, cancelled: false })
        await platformAPIClient.post(`/v2/payments/${paymentId}/complete`, { txid })
        return { status: 200, message: `Completed the payment ${paymentId}` }
      },
      async incomplete(payment: PaymentDTO) {
        const paymentId = payment.identifier
        const txid = payment.transaction?.txid
        const txURL = payment.transaction?._link
        const order = orders.get(paymentId)
        if (order === undefined || txid === undefined || txURL === undefined) return { status: 400, message: 'Order not found' }
        const horizonResponse = await axios.create({ timeout: 20_000 }).get<{ memo: string }>(txURL)
        const paymentIdOnBlock = horizonResponse.data.memo
        if (paymentIdOnBlock !== paymentId) return { status: 400, message: "Payment id doesn't match." }
        orders.set(paymentId, { txid, paid: true, cancelled: false })
        await platformAPIClient.post(`/v2/payments/${paymentId}/complete`, { txid })
        return { status: 200, message: `Handled the incomplete payment ${paymentId}` }
      },
      async me(accessToken: string) {
        return (
          await platformAPIClient.get<{ uid: string; username: string }>('/v2/me', { headers: { Authorization: `Bearer ${accessToken}` } })
        ).data
      },
    }

    before(async () => {
      s = await signedIn(platform)
      user = axios.create({ baseURL: platform.base, timeout: 20_000, headers: { Authorization: `Bearer ${s.token}` } })
      platformAPIClient = axios.create({ baseURL: platform.base, timeout: 20_000, headers: { Authorization: `Key ${s.app.api_key}` } })
    })

    it('signs the user in with /v2/me, approves and completes a payment', async () => {
      assert.equal((await demo.me(s.token)).uid, s.uid)
      const id = (await user.post<PaymentDTO>('/v2/client/payments', { amount: 3, memo: 'Pie', metadata: { productId: 'apple_pie_1' } }))
        .data.identifier
      assert.equal((await demo.approve(id)).status, 200)
      const txid = (await user.post<PaymentDTO>(`/v2/client/payments/${id}/submit`)).data.transaction?.txid ?? ''
      assert.equal((await demo.complete(id, txid)).status, 200)
      assert.equal((await platformAPIClient.get<PaymentDTO>(`/v2/payments/${id}`)).data.status.developer_completed, true)
    })

    it('handles an incomplete payment: follows _link, compares the memo, completes', async () => {
      const id = (await user.post<PaymentDTO>('/v2/client/payments', { amount: 2, memo: 'Lemon', metadata: {} })).data.identifier
      await demo.approve(id)
      await user.post(`/v2/client/payments/${id}/submit`)
      // The app crashed before completing: the client SDK's onIncompletePaymentFound hands it back.
      const found = (await user.get<{ payment: PaymentDTO | null }>('/v2/client/payments/incomplete')).data.payment
      assert.equal(found?.identifier, id)
      assert.ok(found !== null && found !== undefined)
      assert.deepEqual(await demo.incomplete(found), { status: 200, message: `Handled the incomplete payment ${id}` })
      assert.equal((await user.get<{ payment: PaymentDTO | null }>('/v2/client/payments/incomplete')).data.payment, null)
    })
  })
})
