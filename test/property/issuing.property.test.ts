/**
 * The supply invariant under random sequences (property; docs/operators.md, "The ledger check"):
 * issues within, at and over the platform's daily limit, some above the approval threshold (a
 * request another operator approves), some at the same moment (after a restart, on two platforms
 * at once: two pools and closers on PostgreSQL, as two processes); payments between wallets and
 * payments the ledger refuses; issues the console refuses; and restarts (a new platform on the
 * same database). After every step the supply issued = the balances + the fees = what the audit
 * log's issue records minted, and what was issued is what the model says. Few runs, on each
 * backend: a run is a fresh platform.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import fc from 'fast-check'
import { type AccountBrowser, accountBrowser, adminOf, freshName, GOOD_PASSWORD } from '../helpers/accounts.js'
import { assertProperty, fcParams, fuzzRuns } from '../helpers/fuzz.js'
import { buildPayment, submitEnvelope } from '../helpers/ledger.js'
import { startPlatform, type TestPlatform } from '../helpers/platform.js'

const RUNS = fuzzRuns(3)
const LIMIT = 1000
const THRESHOLD = 400
const FEE = 0.00001

type Size = 'within' | 'at' | 'over'
type Step =
  | { kind: 'issue'; by: number; to: number; size: Size; pick: number }
  | { kind: 'concurrent'; amounts: number[] }
  | { kind: 'pay'; from: number; to: number; share: number; overdraw: boolean }
  | { kind: 'refused'; what: 'amount' | 'target' | 'reason' }
  | { kind: 'restart' }

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('issue' as const),
      by: fc.nat(1),
      to: fc.nat(1),
      size: fc.constantFrom<Size>('within', 'at', 'over'),
      pick: fc.double({ min: 0, max: 1, noNaN: true }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('concurrent' as const),
      amounts: fc.array(fc.integer({ min: 1, max: THRESHOLD }), { minLength: 2, maxLength: 4 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('pay' as const),
      from: fc.nat(1),
      to: fc.nat(1),
      share: fc.double({ min: 0.01, max: 1, noNaN: true }),
      overdraw: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('refused' as const),
      what: fc.constantFrom('amount' as const, 'target' as const, 'reason' as const),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('restart' as const) }) },
)

describe('the supply invariant (property)', () => {
  it(`holds after every step of random issues, approvals, payments, refusals and restarts (${RUNS} runs)`, async () => {
    await assertProperty(
      // Every run ends with a restart and issues at once on both platforms, whatever came before.
      fc.asyncProperty(
        fc
          .tuple(
            fc.array(step, { minLength: 3, maxLength: 8 }),
            fc.array(fc.integer({ min: 1, max: THRESHOLD }), { minLength: 2, maxLength: 4 }),
          )
          .map(([steps, amounts]): Step[] => [...steps, { kind: 'restart' }, { kind: 'concurrent', amounts }]),
        async (steps) => {
          const owner = await startPlatform({
            mode: 'production',
            portal: { operatorDailyIssueLimit: LIMIT, operatorApprovalThreshold: THRESHOLD },
          })
          let current: TestPlatform = owner
          try {
            const app = () => current.app
            const admin = adminOf(owner)
            const operators: AccountBrowser[] = []
            for (let i = 0; i < 2; i++) {
              const name = freshName('op')
              const browser = accountBrowser(app)
              assert.equal((await browser.signup(name, GOOD_PASSWORD)).status, 201)
              await admin.grant(name, 'operator')
              operators.push(browser)
            }
            const developer = freshName('dev')
            assert.equal((await accountBrowser(app).signup(developer, GOOD_PASSWORD)).status, 201)
            await admin.grant(developer, 'developer')
            const wallets = [
              await admin.createApp({ owner: developer, name: 'Alpha', url: 'https://alpha.example/' }),
              await admin.createApp({ owner: developer, name: 'Beta', url: 'https://beta.example/' }),
            ]
            /** The model: Pi issued from the console, and issues done. */
            let issued = 0
            let issues = 0
            const op = (i: number) => operators[i % 2] as AccountBrowser
            const issue = (by: number, to: number, amount: number) =>
              op(by).call('POST', '/operator/issue', { target: wallets[to % 2]?.app_id, amount: String(amount), reason: 'property' })

            const expectIssue = async (by: number, to: number, amount: number) => {
              const answer = await issue(by, to, amount)
              const fits = issued + amount <= LIMIT
              if (amount > THRESHOLD) {
                if (!fits) return assert.equal(answer.body.error, 'issue_limit_reached', JSON.stringify(answer.body))
                assert.equal(answer.status, 202, JSON.stringify(answer.body))
                const id = String((answer.body.approval as { approval_id: string }).approval_id)
                const approved = await op(by + 1).call('POST', `/operator/approvals/${id}/approve`)
                assert.equal(approved.status, 200, JSON.stringify(approved.body))
              } else if (!fits) return assert.equal(answer.body.error, 'issue_limit_reached', JSON.stringify(answer.body))
              else assert.equal(answer.status, 200, JSON.stringify(answer.body))
              issued += amount
              issues += 1
            }

            for (const s of steps) {
              const left = LIMIT - issued
              if (s.kind === 'issue') {
                const amount = s.size === 'at' ? left : s.size === 'over' ? left + 1 + Math.floor(s.pick * 100) : Math.floor(s.pick * left)
                if (amount > 0) await expectIssue(s.by, s.to, amount)
              } else if (s.kind === 'concurrent') {
                // After a restart two platforms are up on the database (on PostgreSQL each with its own pool and
                // closer, as two processes): the issues alternate between them.
                const answers = await Promise.all(
                  s.amounts.map((amount, i) => {
                    const browser = accountBrowser(() => (i % 2 === 0 ? owner.app : current.app))
                    browser.use(op(i).token)
                    return browser.call('POST', '/operator/issue', {
                      target: wallets[i % 2]?.app_id,
                      amount: String(amount),
                      reason: 'race',
                    })
                  }),
                )
                let done = 0
                answers.forEach((answer, i) => {
                  if (answer.status === 200) {
                    done += s.amounts[i] ?? 0
                    issues += 1
                  } else assert.equal(answer.body.error, 'issue_limit_reached', JSON.stringify(answer.body))
                })
                assert.ok(done <= left, 'together they stay within the limit')
                if (s.amounts.reduce((a, b) => a + b, 0) <= left)
                  assert.ok(
                    answers.every((a) => a.status === 200),
                    'all fit: all succeed',
                  )
                issued += done
              } else if (s.kind === 'pay') {
                const from = wallets[s.from]
                const to = wallets[(s.from + 1) % 2]
                assert.ok(from !== undefined && to !== undefined)
                const balance = await ledgerBalance(current, from.wallet.address)
                const amount = s.overdraw ? balance + 1 : Math.floor(balance * s.share * 1e7) / 1e7 - FEE
                if (amount <= 0) continue
                const envelope = await buildPayment(current.app, {
                  seed: from.wallet.seed,
                  to: to.wallet.address,
                  amount: amount.toFixed(7),
                  network: 'Pi Network',
                })
                const paid = await submitEnvelope(current.app, envelope)
                assert.equal(paid.status, s.overdraw ? 400 : 200, JSON.stringify(paid.body))
              } else if (s.kind === 'refused') {
                const body =
                  s.what === 'amount'
                    ? { target: wallets[0]?.app_id, amount: '-5', reason: 'x' }
                    : s.what === 'target'
                      ? { target: 'nobody_at_all', amount: '1', reason: 'x' }
                      : { target: wallets[0]?.app_id, amount: '1', reason: ' ' }
                const answer = await op(0).call('POST', '/operator/issue', body)
                assert.ok([400, 404].includes(answer.status), JSON.stringify(answer.body))
              } else {
                if (current !== owner) await current.close()
                current = await startPlatform({
                  mode: 'production',
                  sharing: owner,
                  portal: { operatorDailyIssueLimit: LIMIT, operatorApprovalThreshold: THRESHOLD },
                })
              }
              const books = await op(1).call('GET', '/operator/ledger/check')
              assert.deepEqual(
                [books.body.differs, books.body.balanced],
                [[], true],
                `after ${JSON.stringify(s)}: ${JSON.stringify(books.body)}`,
              )
              assert.equal(Number(books.body.total_audited).toFixed(5), (issued + issues * FEE).toFixed(5), `after ${JSON.stringify(s)}`)
            }
          } finally {
            if (current !== owner) await current.close()
            await owner.close()
          }
        },
      ),
      fcParams(RUNS),
    )
  })
})

/** The wallet's π: its balance on Pi Network, where operators issue (/ledger reads Pi Testnet's). */
async function ledgerBalance(platform: TestPlatform, address: string): Promise<number> {
  const row = await platform.db
    .selectFrom('ledger_accounts')
    .select((eb) => eb.cast<string>('balance', 'text').as('balance'))
    .where('network', '=', 'Pi Network')
    .where('address', '=', address)
    .executeTakeFirst()
  return Number(row?.balance ?? '0')
}
