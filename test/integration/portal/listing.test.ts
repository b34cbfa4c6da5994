/**
 * Mainnet listing (docs/portal.md, "Listing"): a production Mainnet app waits for an operator's
 * review; until approved it is not in the directory and only its members pay it or are paid by it
 * (403 app_not_listed). Rejection with a reason, asking again, approval, each audited; a Testnet
 * app needs none; changing an app's network is the owner's, refused while a payment is open.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { type AccountBrowser, adminOf, signedUp } from '../../helpers/accounts.js'
import { assertError } from '../../helpers/payments-client.js'
import { usePlatform } from '../../helpers/platform.js'

interface Listing {
  state: string
  reason: string | null
}

describe('Mainnet listing', () => {
  const platform = usePlatform({ mode: 'production' })
  const app = () => platform.app
  const admin = () => adminOf(platform)

  const withRole = async (role: 'developer' | 'operator') => {
    const user = await signedUp(app)
    await admin().grant(user.username, role)
    return user
  }
  /** An app registered in the portal, its domain taken as proven (the domain check is portal.test.ts's). */
  const register = async (owner: AccountBrowser, network?: 'Pi Network' | 'Pi Testnet') => {
    const made = await owner.call('POST', '/portal/apps', { name: 'Comet', url: 'https://comet.example/', ...(network ? { network } : {}) })
    assert.equal(made.status, 201, JSON.stringify(made.body))
    const created = made.body as { app: { app_id: string; listing: Listing | null }; api_key: string }
    await platform.db
      .updateTable('apps')
      .set({ verified_at: new Date(), verified_by: 'domain' })
      .where('id', '=', created.app.app_id)
      .execute()
    return created
  }
  const signIn = async (user: AccountBrowser, appId: string) => {
    const answer = await user.call('POST', `/account/apps/${appId}/authenticate`, { scopes: ['payments', 'wallet_address', 'username'] })
    assert.equal(answer.status, 200, JSON.stringify(answer.body))
    return { token: String(answer.body.accessToken), uid: (answer.body.user as { uid: string }).uid }
  }
  const inject = async (method: 'POST' | 'GET', url: string, authorization: string, body?: unknown) => {
    const answer = await platform.app.inject({
      method,
      url,
      headers: { authorization, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    })
    return { status: answer.statusCode, body: answer.json() as Record<string, unknown> }
  }
  const userPays = (token: string) => inject('POST', '/v2/client/payments', `Bearer ${token}`, { amount: 1, memo: 'tea', metadata: {} })
  const appPays = (apiKey: string, uid: string) =>
    inject('POST', '/v2/payments', `Key ${apiKey}`, { payment: { amount: 1, memo: 'reward', metadata: {}, uid } })
  const listed = async (user: AccountBrowser, appId: string) =>
    ((await user.call('GET', '/account/apps')).body.apps as Array<{ app_id: string }>).some((a) => a.app_id === appId)
  const paymentsOf = async (appId: string) =>
    (await platform.db.selectFrom('payments').select('identifier').where('app_id', '=', appId).execute()).length

  it('holds a Mainnet app until approved: out of the directory, non-members refused (app_not_listed), members allowed; reject, ask again, approve, all audited', async () => {
    const dev = await withRole('developer')
    const op = await withRole('operator')
    const { app: made, api_key: apiKey } = await register(dev)
    assert.equal(made.listing?.state, 'pending', 'a Mainnet app waits for review from its registration')
    const appId = made.app_id

    const stranger = await signedUp(app)
    assert.equal(await listed(stranger, appId), false, 'not in the directory')
    const strangerIn = await signIn(stranger, appId)
    assertError(await userPays(strangerIn.token), 403, 'app_not_listed')
    assertError(await appPays(apiKey, strangerIn.uid), 403, 'app_not_listed')
    assert.equal(await paymentsOf(appId), 0, 'a refused payment is never made')

    // Its own members pay it and are paid by it.
    const devIn = await signIn(dev, appId)
    assert.equal((await userPays(devIn.token)).status, 201)
    assert.equal((await appPays(apiKey, devIn.uid)).status, 200)

    // The operator's queue, which only operators read.
    assertError(await dev.call('GET', '/operator/listings'), 403, 'forbidden')
    const queue = (await op.call('GET', '/operator/listings')).body.apps as Array<{ app_id: string; owner: string; listing: Listing }>
    const queued = queue.find((a) => a.app_id === appId)
    assert.equal(queued?.owner, dev.username)
    assert.equal(queued?.listing.state, 'pending')

    // Rejected with a reason the developer reads; nothing else changes.
    assertError(await op.call('POST', `/operator/apps/${appId}/listing/reject`, { reason: ' \u200b ' }), 400, 'invalid_arguments')
    const rejected = await op.call('POST', `/operator/apps/${appId}/listing/reject`, { reason: 'The shop sells nothing yet.' })
    assert.equal(rejected.status, 200, JSON.stringify(rejected.body))
    assertError(await op.call('POST', `/operator/apps/${appId}/listing/approve`), 409, 'listing_not_pending')
    const seen = (await dev.call('GET', `/portal/apps/${appId}`)).body.listing as Listing
    assert.deepEqual({ state: seen.state, reason: seen.reason }, { state: 'rejected', reason: 'The shop sells nothing yet.' })
    assert.equal(
      ((await op.call('GET', '/operator/listings')).body.apps as Array<{ app_id: string }>).some((a) => a.app_id === appId),
      false,
    )
    assertError(await userPays(strangerIn.token), 403, 'app_not_listed')
    assert.equal(await listed(stranger, appId), false)

    // Only the owner asks again, and only after a rejection.
    const mate = await withRole('developer')
    assert.equal((await dev.call('POST', `/portal/apps/${appId}/members`, { username: mate.username })).status, 201)
    assertError(await mate.call('POST', `/portal/apps/${appId}/listing/request`), 403, 'forbidden')
    const again = await dev.call('POST', `/portal/apps/${appId}/listing/request`)
    assert.equal((again.body.listing as Listing).state, 'pending')
    assertError(await dev.call('POST', `/portal/apps/${appId}/listing/request`), 409, 'invalid_status_transition')

    const approved = await op.call('POST', `/operator/apps/${appId}/listing/approve`)
    assert.equal((approved.body.listing as Listing).state, 'approved')
    assert.equal(await listed(stranger, appId), true, 'listed once approved')
    assert.equal((await userPays(strangerIn.token)).status, 201)

    const trail = (await admin().auditTrail(50)).records.filter((r) => r.target === appId).map((r) => r.action)
    assert.deepEqual(trail, ['approve-listing', 'request-listing', 'add-member', 'reject-listing', 'register-app'])
    const rejection = (await admin().auditTrail(50)).records.find((r) => r.target === appId && r.action === 'reject-listing')
    assert.ok(rejection)
    assert.equal(rejection.actor, `user:${(await op.call('GET', '/account')).body.user_id}`)
    assert.equal((rejection.details as { reason: string }).reason, 'The shop sells nothing yet.')
  })

  it('needs no review on Testnet, nor for an app an operator creates', async () => {
    const dev = await withRole('developer')
    const { app: made } = await register(dev, 'Pi Testnet')
    assert.equal(made.listing, null)
    const user = await signedUp(app)
    assert.equal(await listed(user, made.app_id), true)
    assert.equal((await userPays((await signIn(user, made.app_id)).token)).status, 201)

    const created = await admin().createApp({ owner: dev.username, name: 'Operator Shop', url: 'https://op-shop.example/' })
    assert.equal(((await dev.call('GET', `/portal/apps/${created.app_id}`)).body.listing as Listing).state, 'approved')
    assert.equal(await listed(user, created.app_id), true)
  })

  it("changes an app's network (the owner's): refused while a payment is open; to Mainnet it waits for review, to Testnet it needs none", async () => {
    const dev = await withRole('developer')
    const { app: made, api_key: apiKey } = await register(dev, 'Pi Testnet')
    const appId = made.app_id
    const user = await signedUp(app)
    const open = await userPays((await signIn(user, appId)).token)
    assert.equal(open.status, 201)

    const mate = await withRole('developer')
    assert.equal((await dev.call('POST', `/portal/apps/${appId}/members`, { username: mate.username })).status, 201)
    assertError(await mate.call('POST', `/portal/apps/${appId}/network`, { network: 'Pi Network' }), 403, 'forbidden')
    assertError(await dev.call('POST', `/portal/apps/${appId}/network`, { network: 'Pi Network' }), 409, 'payments_open')
    assert.equal((await dev.call('GET', `/portal/apps/${appId}`)).body.network, 'Pi Testnet', 'nothing changed')

    assert.equal((await inject('POST', `/v2/payments/${String(open.body.identifier)}/cancel`, `Key ${apiKey}`)).status, 200)
    const moved = await dev.call('POST', `/portal/apps/${appId}/network`, { network: 'Pi Network' })
    assert.equal(moved.status, 200, JSON.stringify(moved.body))
    assert.equal(moved.body.network, 'Pi Network')
    assert.equal((moved.body.listing as Listing).state, 'pending')
    assert.equal(await listed(user, appId), false)
    assertError(await userPays((await signIn(user, appId)).token), 403, 'app_not_listed')

    const back = await dev.call('POST', `/portal/apps/${appId}/network`, { network: 'Pi Testnet' })
    assert.equal(back.body.listing, null)
    assert.equal(await listed(user, appId), true)
    const changes = (await admin().auditTrail(50)).records.filter((r) => r.target === appId && r.action === 'change-app-network')
    assert.deepEqual(
      changes.map((r) => (r.details as { to: string }).to),
      ['Pi Testnet', 'Pi Network'],
    )
  })
})

describe('listing in sandbox mode', () => {
  const platform = usePlatform()
  const post = async (url: string, body: unknown, authorization?: string) => {
    const answer = await platform.app.inject({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/json', ...(authorization === undefined ? {} : { authorization }) },
      payload: JSON.stringify(body),
    })
    return { status: answer.statusCode, body: answer.json() as Record<string, unknown> }
  }

  it('does not apply: a Mainnet app is paid by anyone', async () => {
    const made = await post('/sandbox/apps', { name: 'Sandbox Comet', network: 'Pi Network' })
    assert.equal(made.status, 201, JSON.stringify(made.body))
    const appId = String(made.body.app_id)
    const user = await post('/sandbox/users', { username: `sam_${process.pid}` })
    const token = await post(`/sandbox/apps/${appId}/authenticate`, { user_id: user.body.user_id, scopes: ['payments'] })
    const paid = await post('/v2/client/payments', { amount: 1, memo: 'tea', metadata: {} }, `Bearer ${String(token.body.accessToken)}`)
    assert.equal(paid.status, 201, JSON.stringify(paid.body))
  })
})
