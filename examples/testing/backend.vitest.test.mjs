// The example backend's suite on vitest: npx vitest run --root examples/testing
import { startPlinth } from 'plinth'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createBackend } from './backend.mjs'
import { shopWithUser, userPayment } from './fixtures.mjs'

describe('example backend (vitest)', () => {
  let plinth
  let fixture
  beforeAll(async () => {
    plinth = await startPlinth()
    fixture = await shopWithUser(plinth)
    await plinth.sandbox.snapshots.save('fixture')
  })
  beforeEach(() => plinth.sandbox.snapshots.restore('fixture'))
  afterAll(() => plinth.stop())

  it('knows who the user is from their access token', async () => {
    const backend = createBackend({ apiBase: plinth.url, apiKey: fixture.shop.api_key })
    expect((await backend.whoIs(fixture.accessToken)).username).toBe(fixture.user.username)
    expect(await backend.whoIs('not-a-token')).toBeNull()
  })

  it('gives up after two 500s on approve, and the payment stays unapproved', async () => {
    const backend = createBackend({ apiBase: plinth.url, apiKey: fixture.shop.api_key })
    const paymentId = await userPayment(plinth, fixture.accessToken)
    await plinth.sandbox.faults.add({ app_id: fixture.shop.app_id, match: { operation_id: 'approvePayment' }, effect: { status: 500 } })
    const approved = await backend.approve(paymentId)
    expect(approved.status).toBe(500)
    expect(approved.attempts).toBe(2)
    await plinth.sandbox.faults.clear(fixture.shop.app_id)
    expect((await backend.approve(paymentId)).status).toBe(200)
  })
})
