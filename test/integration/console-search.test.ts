import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { json, type SandboxApp, type SandboxUser, sandbox, startPlatform, type TestPlatform, uniqueName } from '../helpers/platform.js'

interface Hit {
  type: 'app' | 'user' | 'payment' | 'transaction' | 'request'
  id: string
  title: string
  detail: string
  app_id: string | null
  console_url: string
  api_path: string
}
interface Found {
  q: string
  hits: Hit[]
  truncated: boolean
}

describe('GET /sandbox/search: apps, users, payments, txids and request ids in one box', () => {
  let platform: TestPlatform
  let shop: SandboxApp
  let buyer: SandboxUser
  let uid: string
  let paymentId: string
  let txid: string
  const tag = uniqueName('find')

  before(async () => {
    platform = await startPlatform()
    const sb = sandbox(platform.app)
    shop = await sb.createApp(`${tag} Shop`)
    buyer = await sb.createUser(`${tag}_buyer`)
    const fund = await platform.app.inject({
      method: 'POST',
      url: '/sandbox/ledger/fund',
      payload: { address: buyer.wallet.address, amount: '100' },
    })
    assert.equal(fund.statusCode, 200, fund.body)
    const session = await sb.authenticate(shop.app_id, buyer.user_id)
    uid = session.user.uid
    const token = { authorization: `Bearer ${session.accessToken}` }
    const created = await platform.app.inject({
      method: 'POST',
      url: '/v2/client/payments',
      headers: { ...token, 'x-request-id': `${tag}-create` },
      payload: { amount: 2, memo: `${tag} sticker pack`, metadata: {} },
    })
    assert.equal(created.statusCode, 201, created.body)
    paymentId = json<{ identifier: string }>(created).identifier
    const approved = await platform.app.inject({
      method: 'POST',
      url: `/v2/payments/${paymentId}/approve`,
      headers: { authorization: `Key ${shop.api_key}` },
    })
    assert.equal(approved.statusCode, 200, approved.body)
    const paid = await platform.app.inject({ method: 'POST', url: `/v2/client/payments/${paymentId}/submit`, headers: token })
    assert.equal(paid.statusCode, 200, paid.body)
    txid = json<{ transaction: { txid: string } }>(paid).transaction.txid
  })
  after(() => platform.close())

  const search = async (q: string) => {
    const answer = await platform.app.inject({ method: 'GET', url: `/sandbox/search?q=${encodeURIComponent(q)}` })
    assert.equal(answer.statusCode, 200, answer.body)
    return json<Found>(answer)
  }
  const only = (found: Found, type: Hit['type']) => found.hits.filter((hit) => hit.type === type)

  it('finds an app by id and by part of its name, with links to its page and its API', async () => {
    const [byId] = only(await search(shop.app_id), 'app')
    assert.equal(byId?.id, shop.app_id)
    assert.equal(byId?.console_url, `/console/#/apps/${shop.app_id}`)
    assert.equal(byId?.api_path, `/sandbox/apps/${shop.app_id}`)
    const byName = only(await search(`${tag} SHOP`.toLowerCase()), 'app')
    assert.deepEqual(
      byName.map((hit) => hit.id),
      [shop.app_id],
    )
  })

  it('finds a user by id, name, wallet address and uid in an app', async () => {
    for (const q of [buyer.user_id, `${tag}_BUY`, buyer.wallet.address, uid]) {
      const users = only(await search(q), 'user')
      assert.deepEqual(
        users.map((hit) => hit.id),
        [buyer.user_id],
        q,
      )
      assert.equal(users[0]?.console_url, `/console/#/users/${buyer.user_id}`)
    }
    assert.match(only(await search(uid), 'user')[0]?.detail ?? '', /uid in/)
  })

  it('finds a payment by id, txid (either case) and memo; the txid also names its ledger transaction', async () => {
    for (const q of [paymentId, txid, txid.toUpperCase(), `${tag} sticker`]) {
      const payments = only(await search(q), 'payment')
      assert.deepEqual(
        payments.map((hit) => hit.id),
        [paymentId],
        q,
      )
      assert.equal(payments[0]?.console_url, `/console/#/apps/${shop.app_id}/payments/${paymentId}`)
    }
    const [tx] = only(await search(txid), 'transaction')
    assert.equal(tx?.id, txid)
    assert.equal(tx?.console_url, `/console/#/ledger/transactions/${txid}`)
    assert.equal(tx?.api_path, `/ledger/transactions/${txid}`)
  })

  it('finds a request-log entry by its request id', async () => {
    const [entry] = only(await search(`${tag}-create`), 'request')
    assert.ok(entry)
    assert.equal(entry.app_id, shop.app_id)
    assert.match(entry.title, /^POST \/v2\/client\/payments → 201$/)
    const read = await platform.app.inject({ method: 'GET', url: entry.api_path })
    assert.equal(json<{ request_id: string }>(read).request_id, `${tag}-create`)
    assert.equal(entry.console_url, `/console/#/apps/${shop.app_id}/requests/${entry.id}`)
  })

  it('takes % and _ literally, finds nothing for nonsense, caps each type at 10 and says so', async () => {
    assert.deepEqual((await search('%')).hits, [])
    assert.deepEqual((await search('no-such-thing-anywhere')).hits, [])
    const sb = sandbox(platform.app)
    const many = uniqueName('many')
    for (let i = 0; i < 12; i++) await sb.createUser(`${many}_${i}`)
    const found = await search(many)
    assert.equal(only(found, 'user').length, 10)
    assert.equal(found.truncated, true)
  })

  it('refuses an empty, blank or over-long q (400 invalid_arguments)', async () => {
    for (const url of ['/sandbox/search', '/sandbox/search?q=', '/sandbox/search?q=%20%20', `/sandbox/search?q=${'a'.repeat(201)}`]) {
      const answer = await platform.app.inject({ method: 'GET', url })
      assert.equal(answer.statusCode, 400, url)
      assert.equal(json(answer).error, 'invalid_arguments', url)
    }
  })
})
