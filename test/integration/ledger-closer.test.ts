/**
 * The ledger closer (src/ledger/ledger-closer.ts): transactions submitted together close one
 * ledger; a refused one leaves the batch and the others commit; a batch costs the same statements
 * whatever its size; the meta XDR of a ledger's later transactions sees the earlier ones; past its
 * queue bound the closer answers 503 with Retry-After and applies nothing. The closer waits
 * `maxWaitMs` here so that a burst is one batch whatever the machine's speed.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { Keypair, xdr } from '@stellar/stellar-base'
import type { KyselyPlugin } from 'kysely'
import { ledgerServiceFactory } from '../../src/ledger/ledger-service.js'
import { checkLedgerAfterEach, ledgerClient, type Problem, type TransactionBody } from '../helpers/ledger-client.js'
import { assertError, paymentClients } from '../helpers/payments-client.js'
import { json, TEST_DB, usePlatform } from '../helpers/platform.js'

/** Counts every statement the app's services send (the closer's among them). */
function statementCounter(): { plugin: KyselyPlugin; count: () => number } {
  let count = 0
  return {
    plugin: {
      transformQuery(args) {
        count += 1
        return args.node
      },
      async transformResult(args) {
        return args.result
      },
    },
    count: () => count,
  }
}

/** A transaction's place in its ledger, from its paging token (TOID: ledger << 32 | order << 12). */
const orderOf = (body: TransactionBody): number => Number((BigInt(body.paging_token) >> 12n) & 0xfffffn)

describe(`the ledger closer (${TEST_DB})`, () => {
  const platform = usePlatform({ ledgerCloser: { maxBatch: 256, maxWaitMs: 150, maxQueue: 4096 } })
  checkLedgerAfterEach(platform)
  const { account, build, submit, funded } = ledgerClient(platform)

  it('transactions submitted together close one ledger, in the order they arrived, each answered with its own record', async () => {
    const pairs = await Promise.all(Array.from({ length: 12 }, async () => ({ from: await funded(), to: await funded() })))
    const envelopes = await Promise.all(pairs.map(({ from, to }, i) => build({ from, to: to.publicKey(), amount: String(i + 1) })))
    const responses = await Promise.all(envelopes.map((envelope) => submit(envelope)))
    const bodies = responses.map((response) => {
      assert.equal(response.statusCode, 200, response.body)
      return json<TransactionBody>(response)
    })
    const ledgers = new Set(bodies.map((body) => body.ledger))
    assert.equal(ledgers.size, 1, `one ledger for the burst, got ${[...ledgers].join(', ')}`)
    assert.deepEqual(
      bodies.map(orderOf).sort((a, b) => a - b),
      Array.from({ length: 12 }, (_, i) => i + 1),
      'application orders 1 to 12',
    )
    for (const [i, { to }] of pairs.entries()) assert.equal((await account(to.publicKey())).balance, `${100 + i + 1}.0000000`)
    const ledger = json<{ successful_transaction_count: number; operation_count: number }>(
      await platform.app.inject({ method: 'GET', url: `/ledger/ledgers/${[...ledgers][0]}` }),
    )
    assert.equal(ledger.successful_transaction_count, 12)
    assert.equal(ledger.operation_count, 12)
  })

  it('a transaction refused by the rules leaves the batch; the others commit in the same ledger and nothing of it moves', async () => {
    const good = await Promise.all(Array.from({ length: 4 }, () => funded()))
    const poor = await funded('1')
    const sink = await funded()
    const reused = await funded()
    const envelopes = [
      ...(await Promise.all(good.map((from) => build({ from, to: sink.publicKey(), amount: '5' })))),
      await build({ from: poor, to: sink.publicKey(), amount: '50' }),
      await build({ from: reused, to: sink.publicKey(), sequence: '7' }),
      await build({ from: Keypair.random(), to: sink.publicKey(), sequence: '0' }),
    ]
    const responses = await Promise.all(envelopes.map((envelope) => submit(envelope)))
    const codes = responses.map((response) =>
      response.statusCode === 200
        ? 'ok'
        : (json<Problem>(response).extras?.result_codes?.operations?.[0] ?? json<Problem>(response).extras?.result_codes?.transaction),
    )
    assert.deepEqual(codes, ['ok', 'ok', 'ok', 'ok', 'op_underfunded', 'tx_bad_seq', 'tx_no_source_account'])
    assert.equal(new Set(responses.slice(0, 4).map((response) => json<TransactionBody>(response).ledger)).size, 1)
    assert.deepEqual(await account(poor.publicKey()), { balance: '1.0000000', sequence: '0' })
    assert.deepEqual(await account(reused.publicKey()), { balance: '100.0000000', sequence: '0' })
    assert.equal((await account(sink.publicKey())).balance, '120.0000000')
  })

  it('a batch runs the same statements whatever its size', async () => {
    const counter = statementCounter()
    const ledger = ledgerServiceFactory({
      network: 'Pi Testnet',
      db: platform.db.withPlugin(counter.plugin),
      clock: platform.clock,
      closer: { maxBatch: 256, maxWaitMs: 150, maxQueue: 4096 },
    })
    const burst = async (size: number) => {
      const pairs = await Promise.all(Array.from({ length: size }, async () => ({ from: await funded(), to: await funded() })))
      const envelopes = await Promise.all(pairs.map(({ from, to }) => build({ from, to: to.publicKey() })))
      const before = counter.count()
      const submitted = await Promise.all(envelopes.map((envelope) => ledger.submit(envelope)))
      assert.equal(new Set(submitted.map((tx) => tx.ledger)).size, 1)
      return counter.count() - before
    }
    const one = await burst(1)
    const twenty = await burst(20)
    assert.equal(one, 3, 'a batch locks the accounts, writes them with its transactions in one statement and reads them back')
    assert.equal(twenty, one, 'a batch of 20 runs the statements of a batch of 1')
  })

  it("a later transaction's meta XDR sees the account as an earlier one of the same ledger left it", async () => {
    const a = await funded()
    const b = await funded()
    const to = await funded()
    const responses = await Promise.all([
      submit(await build({ from: a, to: to.publicKey(), amount: '1' })),
      submit(await build({ from: b, to: to.publicKey(), amount: '2' })),
    ])
    const bodies = responses.map((response) => json<TransactionBody>(response))
    assert.equal(bodies[0]?.ledger, bodies[1]?.ledger)
    const ledger = Number(bodies[0]?.ledger)
    const stateOfRecipient = (body: TransactionBody) => {
      const meta = xdr.TransactionMeta.fromXDR(body.result_meta_xdr, 'base64').v2()
      const changes = meta.operations()[0]?.changes() ?? []
      const state = changes.find(
        (change) =>
          change.switch().name === 'ledgerEntryState' &&
          Keypair.fromPublicKey(to.publicKey()).rawPublicKey().equals(change.state().data().account().accountId().ed25519()),
      )
      assert.ok(state, 'the recipient has a state entry')
      return { lastModified: state.state().lastModifiedLedgerSeq(), balance: state.state().data().account().balance().toString() }
    }
    const [first, second] = [...bodies].sort((x, y) => orderOf(x) - orderOf(y)) as [TransactionBody, TransactionBody]
    assert.notEqual(stateOfRecipient(first).lastModified, ledger, 'the first sees the account as it was before the ledger')
    assert.equal(stateOfRecipient(first).balance, '1000000000')
    assert.equal(stateOfRecipient(second).lastModified, ledger, 'the second sees it modified in this very ledger')
    assert.equal(stateOfRecipient(second).balance, first === bodies[0] ? '1010000000' : '1020000000')
  })

  it('the batch sizes are in GET /metrics', async () => {
    const scrape = async () => {
      const text = (await platform.app.inject({ method: 'GET', url: '/metrics' })).body
      const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? 'NaN')
      return { count: value('plinth_ledger_batch_transactions_count'), sum: value('plinth_ledger_batch_transactions_sum') }
    }
    const before = await scrape()
    const pairs = await Promise.all(Array.from({ length: 3 }, async () => ({ from: await funded(), to: await funded() })))
    const envelopes = await Promise.all(pairs.map(({ from, to }) => build({ from, to: to.publicKey() })))
    await Promise.all(envelopes.map((envelope) => submit(envelope)))
    const after = await scrape()
    assert.equal(after.count - before.count, 1, 'one ledger')
    assert.equal(after.sum - before.sum, 3, 'of three transactions')
  })
})

describe(`the ledger closer's bounds (${TEST_DB})`, () => {
  const platform = usePlatform({ ledgerCloser: { maxBatch: 256, maxWaitMs: 300, maxQueue: 2 } })
  checkLedgerAfterEach(platform)
  const { account, build, submit, funded } = ledgerClient(platform)

  it('past its queue bound the closer answers 503 with Retry-After at once and applies nothing of those', async () => {
    const pairs = await Promise.all(Array.from({ length: 5 }, async () => ({ from: await funded(), to: await funded() })))
    const envelopes = await Promise.all(pairs.map(({ from, to }) => build({ from, to: to.publicKey(), amount: '3' })))
    const responses = await Promise.all(envelopes.map((envelope) => submit(envelope)))
    const busy = responses.filter((response) => response.statusCode === 503)
    assert.equal(busy.length, 3, responses.map((response) => response.statusCode).join(', '))
    for (const response of busy) {
      assert.equal(response.headers['retry-after'], '1')
      assert.equal(json<Problem & { extras: { reason: string } }>(response).extras.reason, 'ledger_busy')
    }
    for (const [i, response] of responses.entries()) {
      const pair = pairs[i] as (typeof pairs)[number]
      const expected = response.statusCode === 200 ? '103.0000000' : '100.0000000'
      assert.equal((await account(pair.to.publicKey())).balance, expected)
    }
    // Once the queue drained, the refused ones apply.
    for (const [i, response] of responses.entries()) {
      if (response.statusCode !== 503) continue
      assert.equal((await submit(envelopes[i] as string)).statusCode, 200)
    }
  })

  it("past its queue bound a user's payment is answered 503 service_unavailable with Retry-After and nothing moves", async () => {
    const { scene } = paymentClients(platform)
    const scenes = await Promise.all(Array.from({ length: 3 }, () => scene()))
    const payments = await Promise.all(
      scenes.map(async (s) => {
        const created = await s.client.create({ amount: 2, memo: 'bounded', metadata: {} })
        assert.equal(created.status, 201, JSON.stringify(created.body))
        assert.equal((await s.server.approve(created.body.identifier)).status, 200)
        return created.body.identifier
      }),
    )
    const answers = await Promise.all(
      scenes.map((s, i) =>
        platform.app.inject({
          method: 'POST',
          url: `/v2/client/payments/${payments[i]}/submit`,
          headers: { authorization: `Bearer ${s.token}` },
        }),
      ),
    )
    const refused = answers.flatMap((answer, i) => (answer.statusCode === 503 ? [i] : []))
    assert.equal(refused.length, 1, answers.map((answer) => answer.statusCode).join(', '))
    const i = refused[0] as number
    const s = scenes[i] as (typeof scenes)[number]
    const answer = answers[i] as (typeof answers)[number]
    assert.equal(answer.headers['retry-after'], '1')
    const error = assertError({ status: answer.statusCode, body: answer.json() }, 503, 'service_unavailable')
    assert.match(error.error_message, /Submit the transaction again/)
    assert.equal((await account(s.user.wallet.address)).balance, '1000.0000000', 'no fee, no payment')
    assert.equal((await s.client.get(payments[i] as string)).body.transaction, null)
    // Once the queue drained, the same call pays.
    assert.equal((await s.client.submit(payments[i] as string)).status, 200)
  })

  it('a per-transaction hook that refuses one transaction of a batch: the others commit, it does not', async () => {
    const ledger = ledgerServiceFactory({
      network: 'Pi Testnet',
      db: platform.db,
      clock: platform.clock,
      closer: { maxBatch: 256, maxWaitMs: 100, maxQueue: 100 },
      onTransactionApplied: async (_trx, tx) => {
        if (tx.memo === 'poison') throw new Error('the hook refused the poison')
      },
    })
    const pairs = await Promise.all(Array.from({ length: 4 }, async () => ({ from: await funded(), to: await funded() })))
    const envelopes = await Promise.all(
      pairs.map(({ from, to }, i) => build({ from, to: to.publicKey(), amount: '2', memo: i === 2 ? 'poison' : `ok-${i}` })),
    )
    const results = await Promise.allSettled(envelopes.map((envelope) => ledger.submit(envelope)))
    assert.deepEqual(
      results.map((result) => result.status),
      ['fulfilled', 'fulfilled', 'rejected', 'fulfilled'],
    )
    assert.match(String((results[2] as PromiseRejectedResult).reason), /the hook refused the poison/)
    for (const [i, { from, to }] of pairs.entries()) {
      assert.equal((await account(to.publicKey())).balance, i === 2 ? '100.0000000' : '102.0000000')
      assert.equal((await account(from.publicKey())).sequence, i === 2 ? '0' : '1')
    }
  })
})
