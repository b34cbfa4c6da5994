/**
 * Transactions racing payments, one open payment per user, ads, credentials and the notification
 * quota; and (PostgreSQL only) several processes opening one new schema at once.
 *
 * Concurrency across real Plinth processes on one PostgreSQL: three `src/server.ts` children
 * share a fresh schema and the secret key, and every case fires its requests spread over them.
 * On PGlite (one process by design) the same cases run in process, interleaved on one platform.
 *
 * Every racing request must end as exactly one outcome: the move that won, replays of it (200
 * with the same body) or its documented refusals; never a 5xx. After every case the ledger and
 * payment invariants are checked through the sandbox API and in SQL.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, it } from 'node:test'
import pg from 'pg'
import { openDatabase } from '../../../src/db/database.js'
import type { PaymentDTO } from '../../../src/payments/payment-dto.js'
import { buildPayment, ledgerAccount } from '../../helpers/ledger.js'
import { sandbox, TEST_DB } from '../../helpers/platform.js'
import { type Answer, hashOf, N, PROCESSES, SCOPES, type Scene, stroops, useRaceNodes, WALLET_PAYMENTS } from '../../helpers/race-nodes.js'

describe(`concurrency (${TEST_DB === 'postgres' ? `${PROCESSES} server processes on one PostgreSQL` : 'in process, on PGlite'})`, () => {
  const harness = useRaceNodes()
  const {
    node,
    call,
    submit,
    resultCode,
    appliedOnce,
    scene,
    complete,
    client,
    read,
    createA2U,
    approved,
    a2uEnvelope,
    paidA2U,
    race,
    times,
    describeAnswers,
    oneOutcome,
    invariants,
    query,
  } = harness

  describe('transactions and payments', () => {
    it(`one user pays ${WALLET_PAYMENTS} apps at once from one wallet: every payment is paid once, none refused`, async () => {
      // Issue 12, item 7: the platform read the wallet's sequence outside the applying transaction and
      // retried, so under contention some submits answered 400 transaction_failed. Its signing is now
      // serialised per wallet: contention is never reported as a refusal.
      const first = await scene()
      // The apps and the user's sign-ins to them, made at once over the processes.
      const others = await Promise.all(
        Array.from({ length: WALLET_PAYMENTS - 1 }, async (): Promise<Scene> => {
          const app = await sandbox(node()).createApp()
          const auth = await sandbox(node()).authenticate(app.app_id, first.user.user_id, SCOPES)
          return { app, user: first.user, uid: auth.user.uid, key: `Key ${app.api_key}`, bearer: `Bearer ${auth.accessToken}` }
        }),
      )
      const scenes = [first, ...others]
      const payments = await Promise.all(scenes.map((s) => approved(s)))
      const before = await ledgerAccount(node(), first.user.wallet.address)
      // The platform signs each with the user's one sequence number: the submits race for it.
      const answers = await race(...scenes.map((s, i) => () => client(s, payments[i]?.identifier ?? '', 'submit')))
      const refused = answers.filter((a) => a.status !== 200)
      assert.deepEqual(
        refused.map((a) => `${a.status} ${String(a.body.error)}: ${String(a.body.error_message)}`),
        [],
        `all ${WALLET_PAYMENTS} paid`,
      )
      for (const a of answers) assert.equal((a.body as unknown as PaymentDTO).transaction?.verified, true)
      const afterwards = await ledgerAccount(node(), first.user.wallet.address)
      assert.equal(BigInt(afterwards?.sequence ?? '0'), BigInt(before?.sequence ?? '0') + BigInt(WALLET_PAYMENTS))
      assert.equal(stroops(before?.balance ?? '') - stroops(afterwards?.balance ?? ''), BigInt(WALLET_PAYMENTS) * (stroops('1') + 100n))
      const paid = await query<{ n: number }>(
        `select count(*)::int as n from payments where from_address = '${first.user.wallet.address}' and tx_verified`,
      )
      assert.equal(Number(paid[0]?.n), WALLET_PAYMENTS)
      await invariants()
    })

    it('one txid offered to complete three payments: only its own payment completes', async () => {
      const own = await scene()
      const unpaid = await scene(own.app)
      const otherPaid = await scene(own.app)
      const { p, txid } = await paidA2U(own)
      const q = await createA2U(unpaid)
      const { p: r, txid: rTxid } = await paidA2U(otherPaid)
      const answers = await race(
        ...times(N, () => complete(own, p.identifier, txid)),
        ...times(N, () => complete(own, q.identifier, txid)),
        ...times(N, () => complete(own, r.identifier, txid)),
      )
      const forP = answers.slice(0, N)
      const forQ = answers.slice(N, 2 * N)
      const forR = answers.slice(2 * N)
      assert.ok(forP.every((a) => a.status === 200))
      assert.equal(oneOutcome(forP, [])?.status.developer_completed, true)
      for (const a of forQ) {
        assert.equal(a.status, 409)
        assert.equal(a.body.error, 'verification_failed')
        assert.equal(a.body.verification_error, 'tx_memo_payment_identifier_mismatch')
      }
      for (const a of forR) {
        assert.equal(a.status, 409)
        assert.equal(a.body.error, 'txid_mismatch')
      }
      assert.equal((await read(own, q.identifier)).transaction, null)
      const rNow = await read(own, r.identifier)
      assert.equal(rNow.status.developer_completed, false)
      assert.equal(rNow.transaction?.txid, rTxid)
      assert.equal((await complete(own, r.identifier, rTxid)).status, 200)
      await invariants()
    })

    it("the payer's and a stranger's transactions with one payment's memo, at once: both apply once, the payer's links", async () => {
      const s = await scene()
      const stranger = await sandbox(node()).createUser()
      const p = await createA2U(s)
      const payer = await a2uEnvelope(s, p)
      const other = await buildPayment(node(), {
        seed: stranger.wallet.seed,
        to: p.to_address,
        amount: String(p.amount),
        memo: p.identifier,
      })
      const answers = await race(...times(3, () => submit(payer)), ...times(3, () => submit(other)))
      for (const envelope of [payer, other]) {
        const mine = answers.filter((_, i) => (i < 3 ? payer : other) === envelope)
        appliedOnce(mine, 'applies once')
      }
      const now = await read(s, p.identifier)
      assert.equal(now.transaction?.txid, hashOf(payer))
      assert.equal(now.transaction?.verified, true)
      assert.deepEqual(await query(`select identifier from payments where txid = '${hashOf(other)}'`), [])
      await invariants()
    })

    it("two of the payer's transactions with one payment's memo (consecutive sequences), at once: each applies once, the first links", async () => {
      const s = await scene()
      const p = await createA2U(s)
      const sequence = BigInt((await ledgerAccount(node(), s.app.wallet.address))?.sequence ?? '0')
      const first = await a2uEnvelope(s, p, { sequence: String(sequence) })
      const second = await a2uEnvelope(s, p, { sequence: String(sequence + 1n) })
      const applied = new Map<string, Set<string>>()
      const all: Answer[] = []
      // The second can only apply after the first: submit both at once, again and again, until both are on the ledger.
      for (let attempt = 0; attempt < 10 && applied.size < 2; attempt++) {
        const answers = await race(...times(3, () => submit(first)), ...times(3, () => submit(second)))
        all.push(...answers)
        for (const a of answers.filter((x) => x.status === 200)) {
          const ledgers = applied.get(String(a.body.hash)) ?? new Set<string>()
          applied.set(String(a.body.hash), ledgers.add(String(a.body.ledger)))
        }
      }
      // Each applied in exactly one ledger (a copy after that answers the earlier result).
      assert.deepEqual(
        [...applied.entries()].map(([hash, ledgers]) => [hash, ledgers.size]).sort(),
        [
          [hashOf(first), 1],
          [hashOf(second), 1],
        ].sort(),
        `each applies exactly once: ${describeAnswers(all)}`,
      )
      for (const refused of all.filter((a) => a.status !== 200)) assert.equal(resultCode(refused), 'tx_bad_seq')
      const now = await read(s, p.identifier)
      assert.equal(now.transaction?.txid, hashOf(first))
      assert.deepEqual(await query(`select identifier from payments where txid = '${hashOf(second)}'`), [])
      const refused = await complete(s, p.identifier, hashOf(second))
      assert.equal(refused.status, 409)
      assert.equal(refused.body.error, 'txid_mismatch')
      assert.equal((await complete(s, p.identifier, hashOf(first))).status, 200)
      await invariants()
    })

    it('two transactions on one account sequence, at once: exactly one applies, the other is tx_bad_seq', async () => {
      const s = await scene()
      const other = await sandbox(node()).createUser()
      const account = await ledgerAccount(node(), s.user.wallet.address)
      assert.ok(account)
      const toApp = await buildPayment(node(), {
        seed: s.user.wallet.seed,
        to: s.app.wallet.address,
        amount: '2',
        sequence: account.sequence,
      })
      const toOther = await buildPayment(node(), {
        seed: s.user.wallet.seed,
        to: other.wallet.address,
        amount: '3',
        sequence: account.sequence,
      })
      const answers = await race(...times(N, (i) => submit(i % 2 === 0 ? toApp : toOther)))
      const wins = answers.filter((a) => a.status === 200)
      // One envelope wins; its other copies answer its result (as Horizon answers a duplicate), the other envelope's are tx_bad_seq.
      assert.equal(new Set(wins.map((a) => `${a.body.hash}@${a.body.ledger}`)).size, 1, describeAnswers(answers))
      for (const refused of answers.filter((a) => a.status !== 200)) {
        assert.equal(refused.status, 400)
        assert.equal(resultCode(refused), 'tx_bad_seq')
      }
      const winner = String(wins[0]?.body.hash)
      const loser = winner === hashOf(toApp) ? hashOf(toOther) : hashOf(toApp)
      assert.equal((await node().inject({ method: 'GET', url: `/ledger/transactions/${loser}` })).statusCode, 404)
      const afterwards = await ledgerAccount(node(), s.user.wallet.address)
      assert.equal(BigInt(afterwards?.sequence ?? '0'), BigInt(account.sequence) + 1n)
      const moved = winner === hashOf(toApp) ? '2' : '3'
      assert.equal(stroops(account.balance) - stroops(afterwards?.balance ?? ''), stroops(moved) + 100n)
      await invariants()
    })
  })

  describe('one open payment per user', () => {
    it(`A2U create ×${N * 2} for one user: exactly one payment, the others 409 ongoing_payment_found with it`, async () => {
      const s = await scene()
      const answers = await race(
        ...times(N * 2, (i) =>
          call('a2u create', 'POST', '/v2/payments', s.key, { payment: { amount: i + 1, memo: 'race', metadata: {}, uid: s.uid } }),
        ),
      )
      const created = answers.filter((a) => a.status === 200)
      assert.equal(created.length, 1, describeAnswers(answers))
      const id = String(created[0]?.body.identifier)
      for (const a of answers.filter((x) => x.status !== 200)) {
        assert.equal(a.status, 409)
        assert.equal(a.body.error, 'ongoing_payment_found')
        assert.equal(a.body.payment?.identifier, id)
      }
      const rows = await query<{ identifier: string }>(
        `select p.identifier from payments p join apps a on a.id = p.app_id where a.id = '${s.app.app_id}'`,
      )
      assert.deepEqual(
        rows.map((r) => r.identifier),
        [id],
      )
      await invariants()
    })

    it(`U2A create ×${N * 2} for one user: every create answers, exactly one stays open`, async () => {
      const s = await scene()
      const answers = await race(
        ...times(N * 2, (i) => call('u2a create', 'POST', '/v2/client/payments', s.bearer, { amount: i + 1, memo: 'race', metadata: {} })),
      )
      for (const a of answers) {
        assert.ok(a.status === 201 || (a.status === 409 && a.body.error === 'ongoing_payment_found'), describeAnswers(answers))
      }
      const open = await query<{ identifier: string }>(
        `select identifier from payments where app_id = '${s.app.app_id}' and not cancelled and not user_cancelled and not developer_completed`,
      )
      assert.equal(open.length, 1)
      const created = answers.filter((a) => a.status === 201).map((a) => String(a.body.identifier))
      assert.ok(created.includes(open[0]?.identifier ?? ''), 'the open one is one the user was told about')
      await invariants()
    })
  })

  describe('ads and credentials', () => {
    it(`a script of 5 unavailable ads under ${N * 4} concurrent shows: exactly 5 are used up`, async () => {
      const s = await scene()
      const scripted = await call('script', 'PUT', `/sandbox/apps/${s.app.app_id}/ads/script`, undefined, {
        result: 'AD_NOT_AVAILABLE',
        count: 5,
      })
      assert.equal(scripted.status, 200, JSON.stringify(scripted.body))
      const answers = await race(...times(N * 4, () => call('show', 'POST', '/v2/client/ads/rewarded/show', s.bearer, {})))
      assert.ok(
        answers.every((a) => a.status === 200),
        describeAnswers(answers),
      )
      const results = answers.map((a) => String(a.body.result))
      assert.equal(results.filter((r) => r === 'AD_NOT_AVAILABLE').length, 5, results.join())
      assert.equal(results.filter((r) => r === 'AD_REWARDED').length, N * 4 - 5)
      const ads = answers.map((a) => a.body.adId).filter((id) => id !== undefined)
      assert.equal(new Set(ads).size, N * 4 - 5, 'every rewarded ad has an id of its own')
      await invariants()
    })

    it('a key revoked on one process is refused by every process soon after', async () => {
      const s = await scene()
      const extra = await sandbox(node()).createKey(s.app.app_id)
      const path = '/v2/payments/incomplete_server_payments'
      // Every process has verified (and cached) the key.
      for (let i = 0; i < harness.nodes.length; i++)
        assert.equal((await call('read', 'GET', path, `Key ${extra.api_key}`, undefined, i)).status, 200)
      await sandbox(node(0)).revokeKey(s.app.app_id, extra.key_id)
      assert.equal((await call('read', 'GET', path, `Key ${extra.api_key}`, undefined, 0)).status, 401, 'at once where revoked')
      const deadline = Date.now() + 5_000
      for (let i = 0; i < harness.nodes.length; i++) {
        for (;;) {
          const answer = await call('read', 'GET', path, `Key ${extra.api_key}`, undefined, i)
          if (answer.status === 401) {
            assert.equal(answer.body.error, 'invalid_api_key')
            break
          }
          assert.equal(answer.status, 200)
          assert.ok(Date.now() < deadline, `process ${i} still accepts the revoked key`)
          await new Promise((resolve) => setTimeout(resolve, 50))
        }
      }
      // The app's other key is untouched.
      assert.equal((await call('read', 'GET', path, s.key)).status, 200)
      await invariants()
    })
  })

  describe('notification quota', () => {
    it('100 single-notification requests for one user at once deliver exactly 48', async () => {
      const s = await scene()
      const answers = await race(
        ...times(100, (i) =>
          call('notify', 'POST', '/v2/in_app_notifications/notify', s.key, {
            notifications: [{ title: `n${i}`, body: 'race', user_uid: s.uid, subroute: '/' }],
          }),
        ),
      )
      const delivered = answers.filter((a) => a.status === 201)
      const refused = answers.filter((a) => a.status === 403)
      assert.equal(delivered.length, 48, describeAnswers(answers))
      assert.equal(refused.length, 52)
      for (const a of refused) assert.match(String(a.body.error), /^Notification quota exceeded for users: /)
      const [count] = await query<{ n: number }>(`select count(*)::int as n from notifications where app_id = '${s.app.app_id}'`)
      assert.equal(Number(count?.n), 48)
      await invariants()
    })

    it('60 batches to the same 4 users in opposite orders, at once: no deadlock, every user gets exactly 48', async () => {
      const first = await scene()
      const members = [first]
      for (let i = 1; i < 4; i++) members.push(await scene(first.app))
      const uids = members.map((m) => m.uid)
      // 60 requests of one notification for each of the 4: 60 a user asked for, 48 allowed; all or nothing per request.
      const answers = await race(
        ...times(60, (i) =>
          call('notify', 'POST', '/v2/in_app_notifications/notify', first.key, {
            notifications: (i % 2 === 0 ? uids : [...uids].reverse()).map((uid) => ({
              title: `n${i}`,
              body: 'race',
              user_uid: uid,
              subroute: '/',
            })),
          }),
        ),
      )
      assert.ok(
        answers.every((a) => a.status === 201 || a.status === 403),
        describeAnswers(answers),
      )
      assert.equal(answers.filter((a) => a.status === 201).length, 48)
      const counts = await query<{ n: number }>(
        `select count(*)::int as n from notifications where app_id = '${first.app.app_id}' group by user_id`,
      )
      assert.deepEqual(
        counts.map((c) => Number(c.n)),
        [48, 48, 48, 48],
      )
      await invariants()
    })
  })
})

describe('opening one new schema from several processes at once', {
  skip: TEST_DB === 'postgres' ? false : 'PostgreSQL only: PGlite has one process',
}, () => {
  it('every opener succeeds: creating the schema and migrating it race safely', async () => {
    const databaseUrl = process.env.DATABASE_URL ?? ''
    for (let round = 0; round < 5; round++) {
      const schema = `plinth_test_open_${process.pid}_${randomBytes(4).toString('hex')}`
      try {
        const opened = await Promise.allSettled(Array.from({ length: 4 }, () => openDatabase({ databaseUrl, schema, poolSize: 2 })))
        for (const result of opened) if (result.status === 'fulfilled') await result.value.close()
        const failures = opened.flatMap((result) => (result.status === 'rejected' ? [String(result.reason)] : []))
        assert.deepEqual(failures, [], `round ${round}`)
      } finally {
        const admin = new pg.Client({ connectionString: databaseUrl })
        await admin.connect()
        await admin.query(`drop schema if exists "${schema}" cascade`)
        await admin.end()
      }
    }
  })
})
