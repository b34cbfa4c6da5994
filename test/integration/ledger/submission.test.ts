/**
 * The embedded ledger: submission, concurrency, its clock, funding, ledger numbers, the
 * onTransactionApplied hook and its OpenAPI; and production mode, which serves no sandbox ledger route.
 */
import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import { Asset, Keypair, Operation } from '@stellar/stellar-base'
import { sql } from 'kysely'
import { LedgerError } from '../../../src/ledger/ledger-errors.js'
import { ledgerServiceFactory } from '../../../src/ledger/ledger-service.js'
import type { AppliedTransaction } from '../../../src/ledger/ledger-types.js'
import { stampLedger, transactionMetaTemplate } from '../../../src/ledger/stellar/meta-xdr.js'
import { checkLedgerAfterEach, ledgerClient, type Problem, type TransactionBody, withBadChecksum } from '../../helpers/ledger-client.js'
import { json, sandbox, TEST_DB, usePlatform } from '../../helpers/platform.js'

// One suite around both: the production-mode platform in the second shares the first's database,
// so that platform outlives both (and a hook at a file's top level would belong to its whole shard).
describe('the ledger, in sandbox and in production mode', () => {
  const platform = usePlatform()

  describe('embedded ledger', () => {
    let sb: ReturnType<typeof sandbox>
    before(() => {
      sb = sandbox(platform.app)
    })
    checkLedgerAfterEach(platform)
    const { get, account, build, submit, hashOf, fund, funded } = ledgerClient(platform)

    describe('submission', () => {
      it('accepts JSON {tx} as well as a form', async () => {
        const from = await funded()
        const to = await funded()
        const response = await platform.app.inject({
          method: 'POST',
          url: '/ledger/transactions',
          payload: { tx: await build({ from, to: to.publicKey(), amount: '2' }) },
        })
        assert.equal(response.statusCode, 200, response.body)
        assert.deepEqual(await account(to.publicKey()), { balance: '102.0000000', sequence: '0' })
      })

      it('a transaction signed under Pi Network applies and records that network', async () => {
        // /ledger reads Pi Testnet's accounts (docs/ledger.md, "Two networks"): the sender's sequence is read there.
        const from = await funded('100', 'Pi Network')
        assert.equal((await fund(from.publicKey(), '100')).statusCode, 200)
        const to = await funded('100', 'Pi Network')
        const envelope = await build({ from, to: to.publicKey(), network: 'Pi Network' })
        const response = await submit(envelope)
        assert.equal(response.statusCode, 200, response.body)
        assert.equal(json<TransactionBody>(response).hash, hashOf(envelope, 'Pi Network'))
        const row = await platform.db
          .selectFrom('ledger_transactions')
          .select('network')
          .where('hash', '=', hashOf(envelope, 'Pi Network'))
          .executeTakeFirstOrThrow()
        assert.equal(row.network, 'Pi Network')
      })

      it('a payment with several operations and operation sources signed by each', async () => {
        const a = await funded('50')
        const b = await funded('50')
        const c = await funded('50')
        const ops = [
          Operation.payment({ destination: c.publicKey(), asset: Asset.native(), amount: '5' }),
          Operation.payment({ destination: c.publicKey(), asset: Asset.native(), amount: '7', source: b.publicKey() }),
        ]
        const response = await submit(await build({ from: a, to: c.publicKey(), ops, signers: [a, b] }))
        assert.equal(response.statusCode, 200, response.body)
        assert.deepEqual(await account(a.publicKey()), { balance: '44.9999800', sequence: '1' })
        assert.deepEqual(await account(b.publicKey()), { balance: '43.0000000', sequence: '0' })
        assert.deepEqual(await account(c.publicKey()), { balance: '62.0000000', sequence: '0' })
        assert.equal(json<TransactionBody>(response).fee_charged, '200')
      })

      it('answers a body without tx, of another type, or unknown routes with Horizon problems', async () => {
        const missing = await platform.app.inject({ method: 'POST', url: '/ledger/transactions', payload: {} })
        assert.equal(missing.statusCode, 400)
        assert.equal(json<Problem>(missing).type, 'https://stellar.org/horizon-errors/bad_request')
        const text = await platform.app.inject({
          method: 'POST',
          url: '/ledger/transactions',
          headers: { 'content-type': 'text/plain' },
          payload: 'tx=AAAA',
        })
        assert.equal(text.statusCode, 415)
        assert.match(String(text.headers['content-type']), /^application\/problem\+json/)
        const huge = await platform.app.inject({
          method: 'POST',
          url: '/ledger/transactions',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          payload: `tx=${'A'.repeat(300 * 1024)}`,
        })
        assert.equal(huge.statusCode, 413)
        assert.equal(json<Problem>(huge).status, 413)
        const badQuery = await get('/ledger/ledgers?limit=201')
        assert.equal(badQuery.statusCode, 400)
        assert.equal(json<Problem>(badQuery).type, 'https://stellar.org/horizon-errors/bad_request')
        const nowhere = await get('/ledger/offers')
        assert.equal(nowhere.statusCode, 404)
        assert.equal(json<Problem>(nowhere).title, 'Resource Missing')
        // Outside /ledger the platform's own error shape still holds.
        assert.equal(json(await get('/v2/nowhere')).error, 'not_found')
      })

      it("pages an account's transactions with order, limit and cursor", async () => {
        const from = await funded()
        const to = await funded()
        const hashes: string[] = []
        for (let i = 0; i < 3; i++) {
          const response = await submit(await build({ from, to: to.publicKey() }))
          hashes.push(json<TransactionBody>(response).hash)
        }
        const page = async (query: string) =>
          json<{ _embedded: { records: TransactionBody[] }; _links: { next: { href: string } } }>(
            await get(`/ledger/accounts/${from.publicKey()}/transactions?${query}`),
          )
        const first = await page('limit=2')
        assert.deepEqual(
          first._embedded.records.map((r) => r.hash),
          hashes.slice(0, 2),
        )
        const next = new URL(first._links.next.href)
        const second = await page(next.searchParams.toString())
        assert.deepEqual(
          second._embedded.records.map((r) => r.hash),
          hashes.slice(2),
        )
        const desc = await page('order=desc&limit=200')
        assert.deepEqual(
          desc._embedded.records.map((r) => r.hash),
          [...hashes].reverse(),
        )
      })
    })

    describe('concurrency', () => {
      it('two transactions on one sequence number submitted at once: exactly one applies', async () => {
        for (let round = 0; round < 5; round++) {
          const from = await funded()
          const to = await funded()
          const one = await build({ from, to: to.publicKey(), amount: '1', sequence: '0' })
          const two = await build({ from, to: to.publicKey(), amount: '2', sequence: '0' })
          const responses = await Promise.all([submit(one), submit(two)])
          const statuses = responses.map((r) => r.statusCode).sort()
          assert.deepEqual(statuses, [200, 400], `round ${round} on ${TEST_DB}`)
          const refusal = responses.find((r) => r.statusCode === 400)
          assert.ok(refusal)
          assert.equal(json<Problem>(refusal).extras?.result_codes?.transaction, 'tx_bad_seq')
          const after = await account(from.publicKey())
          assert.equal(after.sequence, '1')
          const paid = responses[0]?.statusCode === 200 ? '1' : '2'
          assert.equal(after.balance, paid === '1' ? '98.9999900' : '97.9999900')
        }
      })

      it('payments in opposite directions at once all apply, without deadlock', async () => {
        const a = await funded('100')
        const b = await funded('100')
        const envelopes: string[] = []
        for (let i = 0; i < 4; i++) {
          envelopes.push(await build({ from: a, to: b.publicKey(), amount: '1', sequence: String(i) }))
          envelopes.push(await build({ from: b, to: a.publicKey(), amount: '2', sequence: String(i) }))
        }
        // Sequence numbers must arrive in order per account; pair them so each wave is one per account.
        for (let i = 0; i < envelopes.length; i += 2) {
          const responses = await Promise.all([submit(envelopes[i] ?? ''), submit(envelopes[i + 1] ?? '')])
          assert.deepEqual(
            responses.map((r) => r.statusCode),
            [200, 200],
            responses.map((r) => r.body).join('\n'),
          )
        }
        assert.deepEqual(await account(a.publicKey()), { balance: '103.9999600', sequence: '4' })
        assert.deepEqual(await account(b.publicKey()), { balance: '95.9999600', sequence: '4' })
      })
    })

    describe('the Date header is the platform clock', () => {
      it('on every /ledger response, including problems, after the clock moved', async () => {
        await sb.advanceClock(86_400)
        const expected = platform.clock.now().getTime()
        for (const [method, url] of [
          ['GET', '/ledger/'],
          ['GET', '/ledger/fee_stats'],
          ['GET', '/ledger/accounts/nobody'],
          ['GET', '/ledger/no-such-route'],
          ['POST', '/ledger/transactions'],
        ] as const) {
          const response = await platform.app.inject({ method, url, ...(method === 'POST' ? { payload: { tx: 'AAAA' } } : {}) })
          const date = Date.parse(String(response.headers.date))
          assert.ok(Math.abs(date - expected) < 5_000, `${url}: Date ${response.headers.date} is not the platform time`)
          assert.ok(date - Date.now() > 86_000_000, `${url}: Date is the wall clock`)
        }
      })
    })

    describe('POST /sandbox/ledger/fund', () => {
      it('tops up an account, or creates it, and answers the balance', async () => {
        const key = Keypair.random()
        const created = await fund(key.publicKey(), '12.5')
        assert.equal(created.statusCode, 200)
        assert.deepEqual(json(created), { address: key.publicKey(), balance: '12.5000000' })
        const topped = await fund(key.publicKey(), 0.1)
        assert.deepEqual(json(topped), { address: key.publicKey(), balance: '12.6000000' })
        assert.deepEqual(await account(key.publicKey()), { balance: '12.6000000', sequence: '0' })
      })

      for (const [what, body] of [
        ['an address that is not an account id', { address: 'GABC', amount: '1' }],
        ['an address with a bad checksum', { address: withBadChecksum(Keypair.random().publicKey()), amount: '1' }],
        ['a secret seed as address', { address: Keypair.random().secret(), amount: '1' }],
        ['a zero amount', { address: Keypair.random().publicKey(), amount: '0' }],
        ['a negative amount', { address: Keypair.random().publicKey(), amount: -1 }],
        ['8 decimal places', { address: Keypair.random().publicKey(), amount: '1.00000001' }],
        ['8 decimal places as a number', { address: Keypair.random().publicKey(), amount: 0.12345678 }],
        ['more than 1,000,000', { address: Keypair.random().publicKey(), amount: '1000000.0000001' }],
        ['words', { address: Keypair.random().publicKey(), amount: 'ten' }],
        ['no amount', { address: Keypair.random().publicKey() }],
      ] as const) {
        it(`refuses ${what} with 400 invalid_arguments`, async () => {
          const response = await platform.app.inject({ method: 'POST', url: '/sandbox/ledger/fund', payload: body })
          assert.equal(response.statusCode, 400, response.body)
          assert.equal(json(response).error, 'invalid_arguments')
          if ('address' in body && body.address.startsWith('G') && body.address.length === 56) {
            assert.equal((await get(`/ledger/accounts/${body.address}`)).statusCode, 404)
          }
        })
      }

      it('GET /sandbox/ledger/check answers the books', async () => {
        const check = json<Record<string, unknown>>(await get('/sandbox/ledger/check'))
        assert.equal(check.ok, true)
        assert.equal(check.negative_balances, 0)
        assert.equal(check.mismatched_accounts, 0)
        const total = (name: string) => BigInt(String(check[name]).replace('.', ''))
        assert.equal(total('total_balances'), total('total_funded') - total('total_fees'))
        assert.ok(total('total_fees') > 0n, 'the earlier tests burned fees')
      })

      it('GET /sandbox/ledger/check catches a balance that moved outside a transaction; a negative one cannot be stored', async () => {
        const key = await funded()
        const address = key.publicKey()
        const tamper = (delta: string) =>
          sql`update ledger_accounts set balance = balance + cast(${delta} as numeric) where address = ${address}`.execute(platform.db)
        await tamper('0.0000001')
        try {
          const check = json<Record<string, unknown>>(await get('/sandbox/ledger/check'))
          assert.equal(check.ok, false)
          assert.equal(check.mismatched_accounts, 1)
        } finally {
          await tamper('-0.0000001')
        }
        // A negative balance cannot even be written: the column's check constraint refuses it.
        await assert.rejects(tamper('-1000'))
        assert.equal(json(await get('/sandbox/ledger/check')).ok, true)
      })
    })

    describe('ledger numbers drawn at COMMIT (migration 0014)', () => {
      it('the database writes the number into the meta XDR exactly as the JavaScript stamp does, up to 2^32 − 1', async () => {
        const [a, b] = [Keypair.random().publicKey(), Keypair.random().publicKey()]
        const template = transactionMetaTemplate({
          source: a,
          sequence: 2n,
          fee: 100n,
          payments: [{ from: a, to: b, amount: 5n }],
          before: new Map([
            [a, { balance: 1_000n, sequence: 1n, lastModifiedLedger: 3 }],
            [b, { balance: 0n, sequence: 0n, lastModifiedLedger: 0 }],
          ]),
        })
        for (const ledger of [1, 256, 2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, 2 ** 53]) {
          const { rows } = await sql<{ meta: string }>`
          select ledger_stamp_meta(${template.result}::bytea, ${template.resultLedgerAt}::integer[], ${ledger.toString()}::bigint) as meta`.execute(
            platform.db,
          )
          assert.equal(rows[0]?.meta, stampLedger(template.result, template.resultLedgerAt, ledger), `ledger ${ledger}`)
        }
      })

      it('a transaction that rolls back draws no number: the next ledger follows the last one', async () => {
        const from = await funded()
        const to = await funded()
        const refusing = ledgerServiceFactory({
          network: 'Pi Testnet',
          db: platform.db,
          clock: platform.clock,
          onTransactionApplied: async () => {
            throw new Error('rolled back')
          },
        })
        const plain = ledgerServiceFactory({ network: 'Pi Testnet', db: platform.db, clock: platform.clock })
        const first = await plain.submit(await build({ from, to: to.publicKey(), amount: '1' }))
        await assert.rejects(refusing.submit(await build({ from, to: to.publicKey(), amount: '1' })), /rolled back/)
        const next = await plain.submit(await build({ from, to: to.publicKey(), amount: '1' }))
        assert.equal(BigInt(next.ledger), BigInt(first.ledger) + 1n)
      })
    })

    describe('the onTransactionApplied hook', () => {
      it('runs inside the applying transaction, with the applied transaction; its number is drawn at COMMIT', async () => {
        const from = await funded()
        const to = await funded()
        const seen: Array<{ tx: AppliedTransaction; queued: boolean; closed: boolean; balance: string | undefined }> = []
        const closed: string[] = []
        const ledger = ledgerServiceFactory({
          network: 'Pi Testnet',
          db: platform.db,
          clock: platform.clock,
          onTransactionApplied: async (trx, tx) => {
            assert.ok(trx.isTransaction)
            const queued = await trx.selectFrom('ledger_pending').select('hash').where('hash', '=', tx.hash).executeTakeFirst()
            const row = await trx.selectFrom('ledger_transactions').select('hash').where('hash', '=', tx.hash).executeTakeFirst()
            const moved = await trx
              .selectFrom('ledger_accounts')
              .select(sql<string>`balance::text`.as('balance'))
              .where('address', '=', tx.sourceAccount)
              .executeTakeFirst()
            seen.push({ tx, queued: queued !== undefined, closed: row !== undefined, balance: moved?.balance })
          },
          onLedgerClosed: (number) => closed.push(number),
        })
        const submitted = await ledger.submit(await build({ from, to: to.publicKey(), amount: '3', memo: 'memo-of-hook' }))
        assert.equal(seen.length, 1)
        const [call] = seen
        assert.equal(call?.balance, '96.9999900', 'the hook sees the balances the ledger moved')
        assert.equal(call?.queued, true, 'and the transaction queued to close a ledger')
        assert.equal(call?.closed, false, 'which gets its number only at COMMIT')
        assert.deepEqual(closed, [submitted.ledger], 'onLedgerClosed has the number, after the commit')
        const stored = await platform.db
          .selectFrom('ledger_transactions')
          .select(sql<string>`ledger::text`.as('ledger'))
          .where('hash', '=', submitted.hash)
          .executeTakeFirst()
        assert.equal(stored?.ledger, submitted.ledger)
        assert.equal(
          (await platform.db.selectFrom('ledger_pending').select('hash').execute()).length,
          0,
          'the queue is empty after the commit',
        )
        assert.deepEqual(call?.tx, {
          hash: submitted.hash,
          network: 'Pi Testnet',
          sourceAccount: from.publicKey(),
          memo: 'memo-of-hook',
          memoType: 'text',
          // No time: the ledger's close time is taken at COMMIT, after the hook (docs/ledger.md, "Close times never go back").
          operations: [{ type: 'payment', from: from.publicKey(), to: to.publicKey(), amount: '3.0000000' }],
          feeCharged: '100',
        })
      })

      it('a hook that throws rolls the whole ledger transaction back', async () => {
        const from = await funded()
        const to = await funded()
        const ledger = ledgerServiceFactory({
          network: 'Pi Testnet',
          db: platform.db,
          clock: platform.clock,
          onTransactionApplied: async () => {
            throw new Error('payments said no')
          },
        })
        const envelope = await build({ from, to: to.publicKey(), amount: '3' })
        await assert.rejects(ledger.submit(envelope), /payments said no/)
        assert.deepEqual(await account(from.publicKey()), { balance: '100.0000000', sequence: '0' })
        assert.deepEqual(await account(to.publicKey()), { balance: '100.0000000', sequence: '0' })
        assert.equal(await ledger.getTransaction(hashOf(envelope)), undefined)
        assert.deepEqual(await ledger.getOperations(hashOf(envelope)), [])
        // The same envelope applies once the hook lets it.
        const plain = ledgerServiceFactory({ network: 'Pi Testnet', db: platform.db, clock: platform.clock })
        assert.equal((await plain.submit(envelope)).hash, hashOf(envelope))
      })

      it('a LedgerError from the hook reaches the submitter as is', async () => {
        const from = await funded()
        const to = await funded()
        const ledger = ledgerServiceFactory({
          network: 'Pi Testnet',
          db: platform.db,
          clock: platform.clock,
          onTransactionApplied: async () => {
            throw new LedgerError({
              type: 'https://stellar.org/horizon-errors/bad_request',
              title: 'Bad Request',
              status: 400,
              detail: 'no',
            })
          },
        })
        await assert.rejects(ledger.submit(await build({ from, to: to.publicKey() })), (error: unknown) => {
          assert.ok(error instanceof LedgerError)
          assert.equal(error.problem.detail, 'no')
          return true
        })
        assert.deepEqual(await account(from.publicKey()), { balance: '100.0000000', sequence: '0' })
      })
    })

    describe('OpenAPI', () => {
      it('documents every /ledger route under the Ledger tag', async () => {
        const doc = json<{ paths: Record<string, Record<string, { tags?: string[]; operationId?: string }>> }>(
          await get('/v2/openapi.json'),
        )
        for (const [path, method] of [
          ['/ledger/', 'get'],
          ['/ledger/accounts/{account_id}', 'get'],
          ['/ledger/accounts/{account_id}/transactions', 'get'],
          ['/ledger/fee_stats', 'get'],
          ['/ledger/ledgers', 'get'],
          ['/ledger/transactions', 'post'],
          ['/ledger/transactions/{hash}', 'get'],
          ['/ledger/transactions/{hash}/operations', 'get'],
        ] as const) {
          const operation = doc.paths[path]?.[method]
          assert.ok(operation, `${method} ${path}`)
          assert.deepEqual(operation.tags, ['Ledger'])
          assert.ok(operation.operationId)
        }
        assert.ok(doc.paths['/sandbox/ledger/fund']?.post)
      })
    })
  })

  describe('embedded ledger in production mode', () => {
    const production = usePlatform(() => ({ mode: 'production', sharing: platform }))

    it('serves /ledger but not the sandbox ledger routes', async () => {
      assert.equal((await production.app.inject({ method: 'GET', url: '/ledger/' })).statusCode, 200)
      const fund = await production.app.inject({
        method: 'POST',
        url: '/sandbox/ledger/fund',
        payload: { address: Keypair.random().publicKey(), amount: '1' },
      })
      assert.equal(fund.statusCode, 404)
      assert.equal((await production.app.inject({ method: 'GET', url: '/sandbox/ledger/check' })).statusCode, 404)
    })
  })
})
