// The example backend's suite on node:test: node --test examples/testing/backend.node.test.mjs
import assert from 'node:assert/strict'
import { after, before, beforeEach, describe, it } from 'node:test'
import { startPlinth } from 'plinth'
import { createBackend } from './backend.mjs'
import { shopWithUser, userPayment } from './fixtures.mjs'

describe('example backend (node:test)', () => {
  let plinth
  let fixture
  before(async () => {
    plinth = await startPlinth()
    fixture = await shopWithUser(plinth)
    await plinth.sandbox.snapshots.save('fixture')
  })
  beforeEach(() => plinth.sandbox.snapshots.restore('fixture'))
  after(() => plinth.stop())

  it('knows who the user is from their access token', async () => {
    const backend = createBackend({ apiBase: plinth.url, apiKey: fixture.shop.api_key })
    assert.equal((await backend.whoIs(fixture.accessToken)).username, fixture.user.username)
    assert.equal(await backend.whoIs('not-a-token'), null)
  })

  it('retries an approve that the platform fails once with a 500', async () => {
    const backend = createBackend({ apiBase: plinth.url, apiKey: fixture.shop.api_key })
    const paymentId = await userPayment(plinth, fixture.accessToken)
    await plinth.sandbox.faults.add({
      app_id: fixture.shop.app_id,
      match: { operation_id: 'approvePayment' },
      effect: { status: 500 },
      times: 1,
    })
    const approved = await backend.approve(paymentId)
    assert.equal(approved.status, 200)
    assert.equal(approved.attempts, 2)
    assert.equal(approved.body.status.developer_approved, true)
  })
})
