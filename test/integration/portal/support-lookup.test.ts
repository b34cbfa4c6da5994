/**
 * The operator's support lookup (docs/operators.md, "Support lookup"): "I paid but got nothing"
 * answered from what the person can tell (their username, the transaction hash, the app), the
 * payment's timeline with the app's request behind each step, every lookup in the audit log,
 * operators only, bounded inputs and cursors that refuse what no page gave.
 */
import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import { sql } from 'kysely'
import { type AccountBrowser, accountBrowser, adminOf, signedUp } from '../../helpers/accounts.js'
import { assertError } from '../../helpers/payments-client.js'
import { usePlatform } from '../../helpers/platform.js'

interface Step {
  kind: string
  actor: string
  request_id: string | null
  request: { method: string; path: string; status: number; request_body: string | null } | null
}

describe('the operator’s support lookup', () => {
  const platform = usePlatform({ mode: 'production', requestLog: true })
  const app = () => platform.app
  const admin = () => adminOf(platform)
  let operator: AccountBrowser & { username: string }
  let payer: AccountBrowser & { username: string }
  let shop: { app_id: string; api_key: string }
  let paymentId = ''
  let txid = ''
  let uid = ''

  /** The audit records of `action` newest first. */
  const records = async (action: string) => (await admin().auditTrail(500)).records.filter((r) => r.action === action)

  /** A user who creates a payment to the app (a 1 π pot), approved by the app; answers its id. */
  const paymentBy = async (user: AccountBrowser & { username: string }, approve = true) => {
    await admin().issue({ target: user.username, amount: '20', reason: 'test money' })
    const consent = await user.call('POST', `/account/apps/${shop.app_id}/authenticate`, { scopes: ['payments'] })
    const created = await app().inject({
      method: 'POST',
      url: '/v2/client/payments',
      headers: { authorization: `Bearer ${String(consent.body.accessToken)}`, 'content-type': 'application/json' },
      payload: JSON.stringify({ amount: 1, memo: 'a pot', metadata: {} }),
    })
    assert.equal(created.statusCode, 201, created.body)
    const id = String(created.json().identifier)
    if (approve) {
      const approved = await app().inject({
        method: 'POST',
        url: `/v2/payments/${id}/approve`,
        headers: { authorization: `Key ${shop.api_key}` },
      })
      assert.equal(approved.statusCode, 200)
    }
    return { id, uid: String((consent.body.user as { uid: string }).uid) }
  }

  before(async () => {
    operator = await signedUp(app)
    await admin().grant(operator.username, 'operator')
    const dev = await signedUp(app)
    await admin().grant(dev.username, 'developer')
    const created = await admin().createApp({ owner: dev.username, name: 'Mug Shop', url: 'https://mugs.example/' })
    shop = { app_id: created.app_id, api_key: created.api_key }
    payer = await signedUp(app)
    // "I paid but got nothing": the user paid, the app never completed.
    ;({ id: paymentId, uid } = await paymentBy(payer))
    const paid = await payer.call('POST', `/account/payments/${paymentId}/pay`)
    assert.equal(paid.status, 200, JSON.stringify(paid.body))
    txid = String((paid.body.transaction as { txid: string }).txid)
  })

  it('finds the payment by the username, the uid, the transaction hash, the payment id and the app, with its state', async () => {
    for (const q of [payer.username.toUpperCase(), uid, txid, paymentId, shop.app_id]) {
      const found = await operator.call('GET', `/operator/support/payments?q=${encodeURIComponent(q)}`)
      assert.equal(found.status, 200, JSON.stringify(found.body))
      const payments = found.body.payments as Array<Record<string, unknown>>
      assert.ok(
        payments.some((p) => p.payment_id === paymentId),
        `q=${q} finds it`,
      )
      const mine = payments.find((p) => p.payment_id === paymentId)
      assert.deepEqual(
        [mine?.username, mine?.uid, mine?.app_name, mine?.state, mine?.txid, mine?.amount],
        [payer.username, uid, 'Mug Shop', 'verified', txid, '1.0000000'],
      )
    }
    const none = await operator.call('GET', `/operator/support/payments?q=${'f'.repeat(64)}`)
    assert.deepEqual(none.body, { payments: [], next_cursor: null })
  })

  it("opens the payment's timeline: each app call with its request from the app's request log, the ledger's steps without one", async () => {
    const opened = await operator.call('GET', `/operator/support/payments/${paymentId}`)
    assert.equal(opened.status, 200, JSON.stringify(opened.body))
    const body = opened.body as {
      state: string
      user: { username: string; uid: string }
      app: { app_id: string }
      ledger_transaction: { hash: string } | null
      advice: { waiting_for: string }
      timeline: Step[]
    }
    assert.equal(body.state, 'verified')
    assert.deepEqual([body.user.username, body.user.uid, body.app.app_id], [payer.username, uid, shop.app_id])
    assert.equal(body.ledger_transaction?.hash, txid)
    assert.match(body.advice.waiting_for, /complete/i)
    const approve = body.timeline.find((step) => step.actor === 'app')
    assert.ok(approve?.request !== null && approve?.request !== undefined, 'the approve step has its request')
    assert.equal(approve.request.method, 'POST')
    assert.equal(approve.request.path, `/v2/payments/${paymentId}/approve`)
    assert.equal(approve.request.status, 200)
    const create = body.timeline.find((step) => step.kind === 'created')
    assert.equal(create?.request?.path, '/v2/client/payments')
    // The pay came from the platform's page and the ledger linked it: no app call, so no request.
    const ledger = body.timeline.filter((step) => step.actor === 'ledger')
    assert.deepEqual(
      ledger.map((step) => [step.kind, step.request]),
      [
        ['transaction_linked', null],
        ['transaction_verified', null],
      ],
    )
    assertError(await operator.call('GET', '/operator/support/payments/pay_nope'), 404, 'payment_not_found')
  })

  it('records every lookup in the audit log: who asked, what, and whose data it showed', async () => {
    const operatorId = `user:${String((await operator.account()).body.user_id)}`
    const payerId = String((await payer.account()).body.user_id)
    await operator.call('GET', `/operator/support/payments?q=${txid}`)
    const search = (await records('lookup-payments'))[0]
    assert.equal(search?.actor, operatorId)
    assert.equal(search?.target, txid)
    assert.deepEqual(search?.details.user_ids, [payerId])
    assert.deepEqual(search?.details.payment_ids, [paymentId])
    assert.equal(typeof search?.details.request_id, 'string')

    await operator.call('GET', `/operator/support/payments/${paymentId}`)
    const view = (await records('view-payment'))[0]
    assert.deepEqual(
      [view?.actor, view?.target, view?.details.user_id, view?.details.app_id],
      [operatorId, paymentId, payerId, shop.app_id],
    )

    await operator.call('GET', `/operator/support/users?q=${uid}`)
    const users = (await records('lookup-users'))[0]
    assert.deepEqual([users?.target, users?.details.user_ids], [uid, [payerId]])

    await operator.call('GET', '/operator/support/apps?q=mug')
    const apps = (await records('lookup-apps'))[0]
    assert.deepEqual([apps?.target, apps?.details.app_ids], ['mug', [shop.app_id]])
    // The Users and Apps tabs' details of one user or app too.
    assert.equal((await operator.call('GET', `/operator/users/${payer.username}`)).status, 200)
    const viewUser = (await records('view-user'))[0]
    assert.deepEqual([viewUser?.actor, viewUser?.target, viewUser?.details.user_id], [operatorId, payer.username, payerId])
    assert.equal((await operator.call('GET', `/operator/apps/${shop.app_id}`)).status, 200)
    const viewApp = (await records('view-app'))[0]
    assert.deepEqual([viewApp?.actor, viewApp?.target], [operatorId, shop.app_id])
    assert.equal((await admin().verifyAudit()).broken_at, null, 'the chain holds')
  })

  it('shows nothing when its audit record cannot be written: a 500 without the data', async () => {
    const db = platform.db
    await sql`create or replace function support_refuse_test() returns trigger language plpgsql as $$
      begin raise exception 'audit record refused by the test'; end $$`.execute(db)
    await sql`create trigger support_refuse_test before insert on audit_log for each row
      when (new.action like 'lookup-%' or new.action like 'view-%') execute function support_refuse_test()`.execute(db)
    try {
      for (const path of [
        `/operator/support/payments?q=${txid}`,
        `/operator/support/payments/${paymentId}`,
        `/operator/support/users?q=${uid}`,
        '/operator/support/apps',
        `/operator/users/${payer.username}`,
        `/operator/apps/${shop.app_id}`,
      ]) {
        const refused = assertError(await operator.call('GET', path), 500, 'unknown_error')
        assert.equal(JSON.stringify(refused).includes(payer.username), false, `${path} leaks nothing`)
        assert.equal(JSON.stringify(refused).includes(paymentId), false, `${path} leaks nothing`)
        assert.equal(JSON.stringify(refused).includes('Mug Shop'), false, `${path} leaks nothing`)
      }
    } finally {
      await sql`drop trigger support_refuse_test on audit_log`.execute(db)
    }
  })

  it('finds users by a part of the name, their id, wallet address or a uid; apps by name, id, wallet or owner', async () => {
    const account = (await payer.account()).body as { user_id: string; wallet: { address: string } }
    for (const q of [payer.username.slice(0, 12), account.user_id, account.wallet.address, uid]) {
      const users = (await operator.call('GET', `/operator/support/users?q=${encodeURIComponent(q)}`)).body.users as Array<{
        username: string
      }>
      assert.ok(
        users.some((u) => u.username === payer.username),
        `q=${q}`,
      )
    }
    const owner = (await operator.call('GET', `/operator/support/apps?q=${shop.app_id}`)).body.apps as Array<{ owner: string }>
    const byOwner = (await operator.call('GET', `/operator/support/apps?q=${owner[0]?.owner ?? ''}`)).body.apps as Array<{ app_id: string }>
    assert.deepEqual(
      byOwner.map((a) => a.app_id),
      [shop.app_id],
    )
  })

  it('refuses anyone but an operator (401 anonymous, 403 a user or a developer), and records nothing for them', async () => {
    const before = (await admin().auditTrail(1000)).records.length
    const developer = await signedUp(app)
    await admin().grant(developer.username, 'developer')
    const after = (await admin().auditTrail(1000)).records.length
    for (const path of [
      `/operator/support/payments?q=${txid}`,
      `/operator/support/payments/${paymentId}`,
      '/operator/support/users',
      '/operator/support/apps',
    ]) {
      assertError(await accountBrowser(app).call('GET', path), 401, 'session_required')
      assertError(await payer.call('GET', path), 403, 'forbidden')
      assertError(await developer.call('GET', path), 403, 'forbidden')
    }
    assert.equal((await admin().auditTrail(1000)).records.length, after, 'no lookup was recorded')
    assert.ok(after > before)
  })

  it('pages payments newest first with cursors, each page recorded; a cursor of another list or an impossible one is 400', async () => {
    const others = []
    for (let i = 0; i < 3; i++) others.push((await paymentBy(await signedUp(app), false)).id)
    const seen: string[] = []
    let cursor: string | null = null
    do {
      const query: string = cursor === null ? '' : `&before=${cursor}`
      const answer = await operator.call('GET', `/operator/support/payments?app_id=${shop.app_id}&limit=2${query}`)
      assert.equal(answer.status, 200, JSON.stringify(answer.body))
      seen.push(...(answer.body.payments as Array<{ payment_id: string }>).map((p) => p.payment_id))
      cursor = answer.body.next_cursor as string | null
    } while (cursor !== null)
    assert.deepEqual(seen, [...others.reverse(), paymentId])

    const users = await operator.call('GET', '/operator/support/users?limit=1')
    const usersCursor = String(users.body.next_cursor)
    const count = (await admin().auditTrail(1000)).records.length
    const impossible = [
      usersCursor,
      Buffer.from('support-payments||99999999999999999999|x').toString('base64url'),
      Buffer.from('support-payments||1|not an id!').toString('base64url'),
      Buffer.from('support-payments|another|1|x').toString('base64url'),
      'not a cursor*',
    ]
    for (const given of impossible) {
      assertError(await operator.call('GET', `/operator/support/payments?before=${encodeURIComponent(given)}`), 400, 'invalid_arguments')
    }
    for (const bad of ['limit=0', 'limit=101', `q=${'x'.repeat(201)}`, `app_id=${'a'.repeat(65)}`]) {
      assertError(await operator.call('GET', `/operator/support/payments?${bad}`), 400, 'invalid_arguments')
    }
    assertError(
      await operator.call('GET', `/operator/support/users?after=${encodeURIComponent(impossible[1] ?? '')}`),
      400,
      'invalid_arguments',
    )
    assert.equal((await admin().auditTrail(1000)).records.length, count, 'a refused lookup is not recorded: it showed nothing')
  })
})
