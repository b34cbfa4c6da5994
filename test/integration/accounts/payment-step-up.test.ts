/**
 * Large payments ask for the password (docs/production.md, "Large payments ask for the password";
 * src/accounts/payment-step-up.ts): above the step-up amount the server refuses the pay without
 * the user's password in the request, or with a wrong one, and nothing moves; with it the payment
 * is paid. At or below the amount the pay needs nothing more.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { accountLimits, paymentSettings } from '../../../src/config.js'
import { adminOf, GOOD_PASSWORD, signedUp } from '../../helpers/accounts.js'
import { assertError } from '../../helpers/payments-client.js'
import { usePlatform } from '../../helpers/platform.js'

describe('the step-up for large payments (production)', () => {
  const limits = { ...accountLimits(), signinPerAccount: { attempts: 3, windowSeconds: 900 } }
  const platform = usePlatform({ mode: 'production', accounts: limits, payments: { stepUpAmount: '25.5' } })
  const app = () => platform.app
  const admin = () => adminOf(platform)

  /** A shop, a user with 500 π, and an approved payment of `amount` from the user to the shop. */
  async function approved(amount: number) {
    const developer = await signedUp(app)
    await admin().grant(developer.username, 'developer')
    const shop = await admin().createApp({ owner: developer.username, name: 'Shop', url: 'https://shop.example' })
    const user = await signedUp(app)
    await admin().issue({ target: user.username, amount: '500', reason: 'test money' })
    const token = String((await user.call('POST', `/account/apps/${shop.app_id}/authenticate`, { scopes: ['payments'] })).body.accessToken)
    const post = (url: string, authorization: string, payload: unknown = {}) =>
      platform.app.inject({
        method: 'POST',
        url,
        headers: { authorization, 'content-type': 'application/json' },
        payload: JSON.stringify(payload),
      })
    const created = await post('/v2/client/payments', `Bearer ${token}`, { amount, memo: 'a big one', metadata: {} })
    assert.equal(created.statusCode, 201, created.body)
    const id = String(created.json().identifier)
    assert.equal((await post(`/v2/payments/${id}/approve`, `Key ${shop.api_key}`)).statusCode, 200)
    const balance = async () => ((await user.call('GET', '/account')).body.wallet as { balance: string }).balance
    const payment = async () => (await user.call('GET', `/account/payments/${id}`)).body.payment as { transaction: unknown }
    return { user, id, balance, payment }
  }

  it('PLINTH_PAYMENT_STEP_UP_AMOUNT: 100 π unless set; an amount with at most 7 places; anything else refuses to start', () => {
    assert.equal(paymentSettings({}).stepUpAmount, '100')
    assert.equal(paymentSettings({ PLINTH_PAYMENT_STEP_UP_AMOUNT: '0.5' }).stepUpAmount, '0.5')
    for (const bad of ['-1', 'ten', '1.12345678', '1e3', '01'])
      assert.throws(() => paymentSettings({ PLINTH_PAYMENT_STEP_UP_AMOUNT: bad }), /PLINTH_PAYMENT_STEP_UP_AMOUNT/, bad)
  })

  it('above the amount: refused without the password and with a wrong one, nothing moves; paid with it', async () => {
    const { user, id, balance, payment } = await approved(25.5000001)
    const before = await balance()
    assert.equal(before, '500.0000000')

    const bare = await user.call('POST', `/account/payments/${id}/pay`)
    assertError(bare, 403, 'step_up_required')
    assert.equal(bare.body.step_up_amount, '25.5')
    assert.match(String(bare.body.error_message), /more than 25\.5 π: confirm it with your password/)
    assertError(await user.call('POST', `/account/payments/${id}/pay`, { password: 'not my password' }), 403, 'step_up_failed')
    assert.equal(await balance(), before, 'refused: no money moved')
    assert.equal((await payment()).transaction, null, 'refused: the payment has no transaction')

    const paid = await user.call('POST', `/account/payments/${id}/pay`, { password: GOOD_PASSWORD })
    assert.equal(paid.status, 200, JSON.stringify(paid.body))
    assert.notEqual(paid.body.transaction, null)
    assert.equal(await balance(), '474.4999899', '25.5000001 and the 0.00001 fee')
  })

  it('at or below the amount the pay needs nothing more', async () => {
    const { user, id, balance } = await approved(25.5)
    const paid = await user.call('POST', `/account/payments/${id}/pay`)
    assert.equal(paid.status, 200, JSON.stringify(paid.body))
    assert.equal(await balance(), '474.4999900')
  })

  it('wrong passwords count as sign-in attempts: a stolen session cannot guess through the pay', async () => {
    const { user, id, balance } = await approved(30)
    for (let i = 0; i < 3; i++) {
      assertError(await user.call('POST', `/account/payments/${id}/pay`, { password: `guess ${i} of many` }), 403, 'step_up_failed')
    }
    // Over the account's limit (3 in this suite), even the right password waits: 429, nothing paid.
    const throttled = await user.call('POST', `/account/payments/${id}/pay`, { password: GOOD_PASSWORD })
    assertError(throttled, 429, 'too_many_attempts')
    assert.equal(await balance(), '500.0000000')
  })

  it("another user's payment is 404 with or without a password, and a body field it does not name is 400", async () => {
    const { id, user } = await approved(40)
    const stranger = await signedUp(app)
    assertError(await stranger.call('POST', `/account/payments/${id}/pay`), 404, 'payment_not_found')
    assertError(await stranger.call('POST', `/account/payments/${id}/pay`, { password: GOOD_PASSWORD }), 404, 'payment_not_found')
    assertError(await user.call('POST', `/account/payments/${id}/pay`, { password: GOOD_PASSWORD, amount: 1 }), 400, 'invalid_arguments')
  })
})
