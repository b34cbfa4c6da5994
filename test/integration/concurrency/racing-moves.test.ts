/**
 * The racing moves on one payment: each racy case in numbered rounds and in both forced orders.
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
import { describe, it } from 'node:test'
import { ledgerAccount } from '../../helpers/ledger.js'
import { TEST_DB } from '../../helpers/platform.js'
import { BRANCHES, hashOf, N, PROCESSES, RACY_ROUNDS, stroops, useRaceNodes } from '../../helpers/race-nodes.js'

describe(`concurrency (${TEST_DB === 'postgres' ? `${PROCESSES} server processes on one PostgreSQL` : 'in process, on PGlite'})`, () => {
  const {
    outcomes,
    branch,
    node,
    call,
    submit,
    appliedOnce,
    scene,
    server,
    complete,
    client,
    read,
    createU2A,
    createA2U,
    approved,
    paidU2A,
    a2uEnvelope,
    paidA2U,
    race,
    times,
    contest,
    describeAnswers,
    oneOutcome,
    invariants,
    query,
  } = useRaceNodes()

  describe('one payment, racing moves', () => {
    for (const round of RACY_ROUNDS) {
      const forced = typeof round === 'string'
      it(`approve ×${N} + cancel ×${N} of a new U2A payment: cancel wins once; approve wins or is cancelled_payment (round ${round})`, async () => {
        const s = await scene()
        const p = await createU2A(s)
        const answers = await contest(
          round,
          times(N, () => server(s, p.identifier, 'approve')),
          times(N, () => server(s, p.identifier, 'cancel')),
        )
        const approve = oneOutcome(
          answers.filter((a) => a.what === 'server approve'),
          ['cancelled_payment'],
        )
        const cancel = oneOutcome(
          answers.filter((a) => a.what === 'server cancel'),
          [],
        )
        assert.ok(cancel?.status.cancelled)
        branch(round, 'approve+cancel', approve === undefined ? 'cancel first' : 'approve first')
        if (approve !== undefined) assert.equal(approve.status.cancelled, false)
        // No lost update: the cancel saw the approval exactly when an approve succeeded (before it).
        assert.equal(cancel.status.developer_approved, approve !== undefined)
        assert.deepEqual(await read(s, p.identifier), cancel)
        await invariants()
      })

      // One outcome whatever the order: the numbered rounds are enough.
      if (!forced)
        it(`complete ×${N} + cancel ×${N} of a paid A2U payment: completes once; cancel is refused (round ${round})`, async () => {
          const s = await scene()
          const { p, txid } = await paidA2U(s)
          const answers = await race(
            ...times(N, () => complete(s, p.identifier, txid)),
            ...times(N, () => server(s, p.identifier, 'cancel')),
          )
          const done = oneOutcome(
            answers.filter((a) => a.what === 'complete'),
            [],
          )
          assert.equal(done?.status.developer_completed, true)
          assert.equal(done?.transaction?.txid, txid)
          const cancel = oneOutcome(
            answers.filter((a) => a.what === 'server cancel'),
            ['payment_tx_present', 'already_completed'],
          )
          assert.equal(cancel, undefined, 'a verified payment is never cancelled')
          assert.deepEqual(await read(s, p.identifier), done)
          await invariants()
        })

      // One outcome whatever the order: the numbered rounds are enough.
      if (!forced)
        it(`complete ×${N} + cancel ×${N} of an unpaid A2U payment: cancel wins once; complete is refused (round ${round})`, async () => {
          const s = await scene()
          const p = await createA2U(s)
          const answers = await race(
            ...times(N, () => complete(s, p.identifier, 'ab'.repeat(32))),
            ...times(N, () => server(s, p.identifier, 'cancel')),
          )
          assert.equal(
            oneOutcome(
              answers.filter((a) => a.what === 'complete'),
              ['verification_failed', 'cancelled_payment'],
            ),
            undefined,
          )
          const cancel = oneOutcome(
            answers.filter((a) => a.what === 'server cancel'),
            [],
          )
          assert.equal(cancel?.status.cancelled, true)
          await invariants()
        })

      it(`user cancel ×${N} + server approve ×${N} of a new U2A payment (round ${round})`, async () => {
        const s = await scene()
        const p = await createU2A(s)
        const answers = await contest(
          round,
          times(N, () => client(s, p.identifier, 'cancel')),
          times(N, () => server(s, p.identifier, 'approve')),
        )
        const approve = oneOutcome(
          answers.filter((a) => a.what === 'server approve'),
          ['cancelled_payment'],
        )
        const userCancel = oneOutcome(
          answers.filter((a) => a.what === 'user cancel'),
          [],
        )
        assert.equal(userCancel?.status.user_cancelled, true)
        branch(round, 'user cancel+approve', approve === undefined ? 'cancel first' : 'approve first')
        assert.equal(userCancel.status.developer_approved, approve !== undefined)
        assert.deepEqual(await read(s, p.identifier), userCancel)
        await invariants()
      })

      it(`user submit ×${N} + server cancel ×${N} of an approved U2A payment: paid once or cancelled, never both (round ${round})`, async () => {
        const s = await scene()
        const p = await approved(s)
        const before = await ledgerAccount(node(), s.user.wallet.address)
        const answers = await contest(
          round,
          times(N, () => client(s, p.identifier, 'submit')),
          times(N, () => server(s, p.identifier, 'cancel')),
          { holdBack: true },
        )
        const paid = oneOutcome(
          answers.filter((a) => a.what === 'user submit'),
          ['cancelled_payment'],
        )
        const cancelled = oneOutcome(
          answers.filter((a) => a.what === 'server cancel'),
          ['payment_tx_present'],
        )
        assert.ok((paid === undefined) !== (cancelled === undefined), `exactly one side wins: ${describeAnswers(answers)}`)
        branch(round, 'submit+cancel', paid === undefined ? 'cancelled' : 'paid')
        const afterwards = await ledgerAccount(node(), s.user.wallet.address)
        const onLedger = await query<{ hash: string }>(`select hash from ledger_transactions where memo = '${p.identifier}'`)
        if (paid !== undefined) {
          assert.equal(paid.transaction?.verified, true)
          assert.deepEqual(
            onLedger.map((t) => t.hash),
            [paid.transaction?.txid],
          )
          assert.equal(stroops(before?.balance ?? '') - stroops(afterwards?.balance ?? ''), stroops('1') + 100n, 'paid once: amount + fee')
          assert.deepEqual(await read(s, p.identifier), paid)
        } else {
          assert.deepEqual(onLedger, [], 'a cancelled payment moved no money')
          assert.equal(afterwards?.balance, before?.balance)
          assert.deepEqual(await read(s, p.identifier), cancelled)
        }
        await invariants()
      })

      it(`the app's transaction + cancel ×${N} of an A2U payment: linked or cancelled, never both (round ${round})`, async () => {
        const s = await scene()
        const p = await createA2U(s)
        const envelope = await a2uEnvelope(s, p)
        const answers = await contest(
          round,
          times(3, () => submit(envelope)),
          times(N, () => server(s, p.identifier, 'cancel')),
          { holdBack: true },
        )
        const submits = answers.filter((a) => a.what === 'submit tx')
        appliedOnce(submits, 'the transaction applies once')
        const cancelled = oneOutcome(
          answers.filter((a) => a.what === 'server cancel'),
          ['payment_tx_present'],
        )
        const now = await read(s, p.identifier)
        branch(round, 'a2u tx+cancel', cancelled === undefined ? 'linked' : 'cancelled')
        if (cancelled === undefined) {
          assert.equal(now.transaction?.txid, hashOf(envelope))
          assert.equal(now.transaction?.verified, true)
        } else {
          // The app's transfer happened on the ledger but, the payment being cancelled first, it links nothing.
          assert.equal(now.transaction, null)
          assert.deepEqual(now, cancelled)
        }
        await invariants()
      })
      it(`user submit ×${N} + a new U2A create ×${N} while approved: paid (creates refused) or replaced (submits refused) (round ${round})`, async () => {
        const s = await scene()
        const p = await approved(s)
        const answers = await contest(
          round,
          times(N, () => client(s, p.identifier, 'submit')),
          times(N, () => call('u2a create', 'POST', '/v2/client/payments', s.bearer, { amount: 2, memo: 'next', metadata: {} })),
        )
        const submits = answers.filter((a) => a.what === 'user submit')
        const creates = answers.filter((a) => a.what === 'u2a create')
        const paid = oneOutcome(submits, ['cancelled_payment'])
        const now = await read(s, p.identifier)
        branch(round, 'submit+create', paid === undefined ? 'replaced' : 'paid')
        if (paid !== undefined) {
          assert.equal(paid.transaction?.verified, true)
          for (const a of creates) {
            assert.equal(a.status, 409, describeAnswers(answers))
            assert.equal(a.body.error, 'ongoing_payment_found')
            assert.equal(a.body.payment?.identifier, p.identifier)
          }
          assert.deepEqual(now, paid)
        } else {
          assert.ok(
            creates.every((a) => a.status === 201),
            describeAnswers(answers),
          )
          assert.equal(now.status.cancelled, true)
          assert.equal(now.transaction, null)
          assert.deepEqual(await query(`select hash from ledger_transactions where memo = '${p.identifier}'`), [])
        }
        await invariants()
      })
    }

    it('met both branches of every racy case (the forced rounds guarantee it; the numbered ones add interleavings)', () => {
      for (const [racy, [one, other]] of Object.entries(BRANCHES)) {
        for (const met of [one, other]) assert.ok((outcomes.get(`${racy}: ${met}`) ?? 0) > 0, `${racy}: never met "${met}"`)
      }
    })

    it(`complete ×${N * 2} of a paid U2A payment: one completion, the rest replays`, async () => {
      const s = await scene()
      const { p, txid } = await paidU2A(s)
      const answers = await race(...times(N * 2, () => complete(s, p.identifier, txid)))
      assert.ok(
        answers.every((a) => a.status === 200),
        describeAnswers(answers),
      )
      const done = oneOutcome(answers, [])
      assert.equal(done?.status.developer_completed, true)
      const [row] = await query<{ completed_at: Date }>(`select completed_at from payments where identifier = '${p.identifier}'`)
      assert.ok(row?.completed_at)
      await invariants()
    })

    it(`cancel ×${N * 2} of an approved U2A payment: one cancellation, the rest replays`, async () => {
      const s = await scene()
      const p = await approved(s)
      const answers = await race(...times(N * 2, () => server(s, p.identifier, 'cancel')))
      assert.ok(
        answers.every((a) => a.status === 200),
        describeAnswers(answers),
      )
      assert.equal(oneOutcome(answers, [])?.status.cancelled, true)
      await invariants()
    })

    it(`submit ×${N * 2} of an approved U2A payment: the user pays once`, async () => {
      const s = await scene()
      const p = await approved(s)
      const before = await ledgerAccount(node(), s.user.wallet.address)
      const answers = await race(...times(N * 2, () => client(s, p.identifier, 'submit')))
      assert.ok(
        answers.every((a) => a.status === 200),
        describeAnswers(answers),
      )
      const paid = oneOutcome(answers, [])
      assert.equal(paid?.transaction?.verified, true)
      const afterwards = await ledgerAccount(node(), s.user.wallet.address)
      assert.equal(stroops(before?.balance ?? '') - stroops(afterwards?.balance ?? ''), stroops('1') + 100n)
      await invariants()
    })
  })
})
