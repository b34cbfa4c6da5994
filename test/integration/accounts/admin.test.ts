/**
 * The operator's commands (docs/production.md): the service the `plinth admin` command runs, over
 * a production platform's database, and the command itself, spawned as an operator runs it.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'kysely'
import { ApiError } from '../../../src/core/errors.js'
import { parseStoredAmount } from '../../../src/ledger/amounts.js'
import { ledgerServiceFactory } from '../../../src/ledger/ledger-service.js'
import { adminOf, freshName, GOOD_PASSWORD, signedUp } from '../../helpers/accounts.js'
import { dumpDatabase, TEST_DB, usePlatform } from '../../helpers/platform.js'
import { type BackendSetup, runPlinthCli, setUpBackend } from '../../helpers/server-process.js'
import { issuerAddress, supplySnapshot } from '../../helpers/supply.js'

const refused = async (work: Promise<unknown>, code: string): Promise<ApiError> => {
  try {
    await work
  } catch (error) {
    assert.ok(error instanceof ApiError, String(error))
    assert.equal(error.code, code, error.message)
    return error
  }
  assert.fail(`expected ${code}`)
}

describe('the operator’s commands (service)', () => {
  const platform = usePlatform({ mode: 'production' })
  const admin = () => adminOf(platform)
  const app = () => platform.app
  const totals = async () =>
    (
      await sql<{ balances: string; funded: string; fees: string }>`
        select (select coalesce(sum(balance), 0)::text from ledger_accounts) as balances,
               (select coalesce(sum(amount), 0)::text from ledger_fundings) as funded,
               (select (coalesce(sum(fee_charged), 0) / 10000000.0)::numeric(20,7)::text from ledger_transactions) as fees`.execute(
        platform.db,
      )
    ).rows[0]

  /** The ledger's invariant, in stroops: every Pi funded is held in a balance or was burnt as a fee. */
  const assertBalanced = async () => {
    const sums = await totals()
    assert.ok(sums !== undefined)
    assert.equal(parseStoredAmount(sums.funded), parseStoredAmount(sums.balances) + parseStoredAmount(sums.fees))
  }

  it('creates an operator who signs in with that password; the password is never stored or audited as given', async () => {
    const name = freshName('op')
    const password = 'granite ferry walnut lagoon'
    const created = await admin().createOperator(name, password)
    const signedIn = await signedUp(app, freshName())
    assert.equal((await signedIn.signin(name, password)).status, 200)
    assert.deepEqual((await signedIn.account()).body.roles, ['operator'])
    const dump = await dumpDatabase(platform.db)
    assert.equal(dump.includes(password), false)
    const record = (await admin().auditTrail(50)).records.find((r) => r.id === created.audit_id)
    assert.equal(record?.action, 'create-operator')
    assert.equal(record?.target, name)
    assert.equal(JSON.stringify(record).includes(password), false)
    await refused(admin().createOperator(freshName('op'), 'password1'), 'weak_password')
    await refused(admin().createOperator(name, GOOD_PASSWORD), 'username_taken')
  })

  it('grants the developer role once (again says so), and only a developer owns an app', async () => {
    const user = await signedUp(app)
    await refused(admin().createApp({ owner: user.username, name: 'Nope', url: 'https://nope.example' }), 'invalid_arguments')
    await refused(admin().grant(freshName('ghost'), 'developer'), 'user_not_found')
    assert.equal((await admin().grant(user.username, 'developer')).already, false)
    assert.equal((await admin().grant(user.username, 'developer')).already, true)
    assert.deepEqual((await user.account()).body.roles, ['developer'])
    await refused(admin().createApp({ owner: user.username, name: ' ', url: 'https://shop.example' }), 'invalid_arguments')
    await refused(admin().createApp({ owner: user.username, name: 'Shop', url: 'javascript:alert(1)' }), 'invalid_arguments')
    const created = await admin().createApp({ owner: user.username, name: 'Shop', url: 'https://shop.example/' })
    assert.match(created.app_id, /^app_[0-9a-f]{32}$/)
    const me = await platform.app.inject({
      method: 'GET',
      url: '/v2/payments/incomplete_server_payments',
      headers: { authorization: `Key ${created.api_key}` },
    })
    assert.equal(me.statusCode, 200, 'the key works against the platform API')
    const row = await platform.db
      .selectFrom('apps')
      .innerJoin('app_members as m', (join) => join.onRef('m.app_id', '=', 'apps.id').on('m.role', '=', 'owner'))
      .select(['m.user_id', 'apps.network', 'apps.verified_by'])
      .where('apps.id', '=', created.app_id)
      .executeTakeFirstOrThrow()
    assert.equal(row.user_id, String((await user.account()).body.user_id))
    assert.equal(row.network, 'Pi Network')
    assert.equal(row.verified_by, 'operator', 'an app the operator creates is vouched for')
    const trail = JSON.stringify((await admin().auditTrail(100)).records)
    assert.equal(trail.includes(created.api_key), false)
    assert.equal(trail.includes(created.wallet.seed), false)
    assert.equal((await dumpDatabase(platform.db)).includes(created.wallet.seed), false)
  })

  it('issues money as a ledger transaction from the issuing account; the ledger’s invariant holds; bad amounts and reasons are refused', async () => {
    const user = await signedUp(app)
    const first = await admin().issue({ target: user.username, amount: '12.5', reason: 'welcome' })
    assert.equal(first.balance, '12.5000000')
    const second = await admin().issue({ target: user.username.toUpperCase(), amount: '0.0000001', reason: 'a stroop' })
    assert.equal(second.balance, '12.5000001')
    assert.equal(first.issuer, second.issuer)
    const tx = await platform.app.inject({ method: 'GET', url: `/ledger/transactions/${first.transaction}` })
    assert.equal(tx.statusCode, 200)
    assert.equal(tx.json().source_account, first.issuer)
    assert.equal(tx.json().memo, 'issued')
    const issuer = await platform.app.inject({ method: 'GET', url: `/ledger/accounts/${first.issuer}` })
    assert.equal(issuer.json().balances[0].balance, '0.0000000', 'funded with exactly what each issue needs')
    await assertBalanced()

    for (const amount of ['0', '-1', '1.00000001', 'NaN', '1e3', '9223372036854.775807', ' 1', '']) {
      await refused(admin().issue({ target: user.username, amount, reason: 'x' }), 'invalid_amount')
    }
    await refused(admin().issue({ target: user.username, amount: '1', reason: '   ' }), 'invalid_arguments')
    await refused(admin().issue({ target: user.username, amount: '1', reason: 'r'.repeat(501) }), 'invalid_arguments')
    await refused(admin().issue({ target: freshName('ghost'), amount: '1', reason: 'x' }), 'not_found')
    await refused(admin().issue({ target: 'app_nope', amount: '1', reason: 'x' }), 'not_found')
    assert.equal(((await user.account()).body.wallet as { balance: string }).balance, '12.5000001')
  })

  it('a refused issuing transaction mints nothing; a leftover in the issuing account (an earlier version’s) is used first', async () => {
    const user = await signedUp(app)
    await admin().issue({ target: user.username, amount: '1', reason: 'creates the issuer' })
    // A wallet with no ledger account: the payment to it is refused in the transaction that would have minted it.
    const broken = await signedUp(app)
    const address = String(((await broken.account()).body.wallet as { address: string }).address)
    await platform.db.deleteFrom('ledger_accounts').where('address', '=', address).execute()
    await platform.db.deleteFrom('ledger_fundings').where('address', '=', address).execute()
    const before = await supplySnapshot(platform.db)
    await refused(admin().issue({ target: broken.username, amount: '5', reason: 'to a broken wallet' }), 'transaction_failed')
    assert.deepEqual(await supplySnapshot(platform.db), before, 'no funding, no balance, no transaction, no record')
    // A leftover of 5 in the issuing account, as a refusal left it before: 3 is less, so nothing new is minted.
    await ledgerServiceFactory({ network: 'Pi Network', db: platform.db, clock: platform.clock }).fund(
      await issuerAddress(platform.db),
      '5',
    )
    const funded = (await supplySnapshot(platform.db))?.funded
    const issued = await admin().issue({ target: user.username, amount: '3', reason: 'from what the issuer holds' })
    assert.equal((await supplySnapshot(platform.db))?.funded, funded)
    const record = (await admin().auditTrail(5)).records.find((r) => r.id === issued.audit_id)
    assert.deepEqual([record?.details.amount, record?.details.fee, record?.details.minted], ['3.0000000', '0.0000100', '0.0000000'])
    await assertBalanced()
  })

  it('chains the audit log: an edited, removed or inserted record breaks the chain at that record; ids past 9 stay in order', async () => {
    const user = await signedUp(app)
    // More than nine records, so that an id compared as text (10 before 9) would show.
    for (let i = 0; i < 11; i++) await admin().grant(user.username, 'developer')
    await admin().issue({ target: user.username, amount: '1', reason: 'audit chain' })
    assert.equal((await admin().auditTrail(5)).broken_at, null)
    const [last, previous] = (await admin().auditTrail(2)).records
    assert.ok(last !== undefined && previous !== undefined)
    assert.equal(last.prev_hash, previous.hash)

    await sql`update audit_log set details = jsonb_set(details, '{amount}', '"1000.0000000"') where id = ${last.id}`.execute(platform.db)
    assert.equal((await admin().auditTrail(1)).broken_at, last.id)
    await sql`update audit_log set details = jsonb_set(details, '{amount}', '"1.0000000"') where id = ${last.id}`.execute(platform.db)
    assert.equal((await admin().auditTrail(1)).broken_at, null, 'restored exactly, whole again')

    // Kept as text, so that putting it back is exact to the microsecond (a Date holds milliseconds).
    const saved = (
      await sql<{ row: string }>`select row_to_json(a)::text as row from audit_log a where id = ${previous.id}`.execute(platform.db)
    ).rows[0]?.row
    assert.ok(saved !== undefined)
    await sql`delete from audit_log where id = ${previous.id}`.execute(platform.db)
    assert.equal((await admin().auditTrail(1)).broken_at, last.id)
    await sql`insert into audit_log select * from json_populate_record(null::audit_log, ${saved}::json)`.execute(platform.db)
    assert.equal((await admin().auditTrail(1)).broken_at, null)
  })
})

describe(`plinth admin, spawned (${TEST_DB})`, () => {
  let setup: BackendSetup
  before(async () => {
    setup = await setUpBackend(TEST_DB)
  })
  after(() => setup?.cleanup())

  const run = (args: string[], input = '', env: Record<string, string> = {}) =>
    runPlinthCli(['admin', ...args], { env: { ...setup.env, ...env }, input })

  it('walks the operator’s first commands with --json and the documented exit codes', async () => {
    const help = await run(['--help'])
    assert.equal(help.code, 0)
    assert.match(help.stdout, /create-operator <username>/)
    assert.equal((await run([])).code, 2)
    assert.equal((await run(['apps', 'create', '--owner', 'x'])).code, 2, 'missing --name and --url')
    assert.equal((await run(['wallets', 'issue', 'x', '1'])).code, 2, 'missing --reason')
    assert.equal((await run(['create-operator', 'olga', '--password', 'x'])).code, 2, 'no password flag exists')

    const operator = await run(['create-operator', 'olga', '--json'], `${GOOD_PASSWORD}\n`)
    assert.equal(operator.code, 0, operator.stderr)
    assert.equal(JSON.parse(operator.stdout).username, 'olga')
    const weak = await run(['create-operator', 'bob', '--json'], 'password1\n')
    assert.equal(weak.code, 1)
    assert.equal(JSON.parse(weak.stdout).error, 'weak_password')
    assert.match(weak.stderr, /too easy to guess/)

    assert.equal((await run(['users', 'grant-developer', 'olga'])).code, 0)
    const appRun = await run(['apps', 'create', '--owner', 'olga', '--name', 'Shop', '--url', 'https://shop.example/', '--json'])
    assert.equal(appRun.code, 0, appRun.stderr)
    const created = JSON.parse(appRun.stdout) as { app_id: string; api_key: string; wallet: { seed: string; address: string } }
    assert.match(created.wallet.seed, /^S[A-Z2-7]{55}$/)
    const issued = await run(['wallets', 'issue', created.app_id, '250', '--reason', 'rewards budget', '--json'])
    assert.equal(issued.code, 0, issued.stderr)
    assert.equal(JSON.parse(issued.stdout).balance, '250.0000000')
    const readable = await run(['wallets', 'issue', 'olga', '1.5', '--reason', 'hello'])
    assert.match(readable.stdout, /^issued 1\.5000000 Pi to olga \(G[A-Z2-7]{55}\) in ledger \d+/)
    assert.equal((await run(['wallets', 'issue', 'nobody_here', '1', '--reason', 'x'])).code, 1)

    const books = await run(['ledger', 'check', '--json'])
    assert.equal(books.code, 0, books.stderr)
    const mainnet = {
      total_issued: '251.5000200',
      total_balances: '251.5000000',
      total_fees: '0.0000200',
      total_audited: '251.5000200',
      total_faucet: '0.0000000',
      negative_balances: 0,
      mismatched_accounts: 0,
      differs: [],
      balanced: true,
    }
    // Operators issue π on Pi Network; Pi Testnet holds nothing yet (docs/operators.md, "The ledger check").
    const none = { ...mainnet, total_issued: '0.0000000', total_balances: '0.0000000', total_fees: '0.0000000', total_audited: '0.0000000' }
    assert.deepEqual(JSON.parse(books.stdout), {
      ...mainnet,
      networks: [
        { network: 'Pi Testnet', ...none, total_split: '0.0000000' },
        { network: 'Pi Network', ...mainnet, total_split: '0.0000000' },
      ],
    })
    // Money minted without an issue record (what a refused issue did before the issue was one transaction): the books
    // still balance, and the check names the audit log as the figure that differs (exit 1).
    const minting = await setup.sql()
    try {
      const on = `network = 'Pi Network'`
      await minting.query(`update ledger_accounts set balance = balance + 20000 where ${on} and address = $1`, [created.wallet.address])
      await minting.query(`insert into ledger_fundings (network, address, amount, created_at) values ('Pi Network', $1, 20000, now())`, [
        created.wallet.address,
      ])
    } finally {
      await minting.close()
    }
    const minted = await run(['ledger', 'check'])
    assert.equal(minted.code, 1)
    assert.match(
      minted.stdout,
      /^issued 20251\.5000200 = balances 20251\.5000000 \+ fees 0\.0000200 = audited issues 251\.5000200: NOT BALANCED \(the audit log's issues differs\)$/m,
    )

    const audit = await run(['audit', '--json'])
    assert.equal(audit.code, 0)
    const trail = JSON.parse(audit.stdout) as { records: Array<{ action: string; actor: string }>; broken_at: string | null }
    assert.deepEqual(
      trail.records.map((r) => r.action),
      ['issue', 'issue', 'create-app', 'grant-developer', 'create-operator'],
    )
    assert.match(trail.records[0]?.actor ?? '', /^cli/)
    assert.equal(trail.broken_at, null)
    for (const secret of [GOOD_PASSWORD, created.api_key, created.wallet.seed]) assert.equal(audit.stdout.includes(secret), false)

    // A record edited behind the command's back: the chain is broken there, and the command says so (exit 1).
    const whole = await run(['audit', 'verify'])
    assert.equal(whole.code, 0, whole.stderr)
    assert.match(whole.stdout, /^chain: whole \(\d+ records\)$/m)
    const access = await setup.sql()
    try {
      await access.query(`update audit_log set target = 'someone else' where action = 'create-app'`)
    } finally {
      await access.close()
    }
    const broken = await run(['audit'])
    assert.equal(broken.code, 1)
    assert.match(broken.stdout, /chain: BROKEN at record \d+/)
    const verified = await run(['audit', 'verify', '--json'])
    assert.equal(verified.code, 1)
    assert.match(String(JSON.parse(verified.stdout).broken_at), /^\d+$/)
    assert.equal((await run(['audit', 'verity'])).code, 2, 'a usage error')
  })

  it('exits 3 when the database cannot be opened', async () => {
    const answer = await run(['audit'], '', { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none', PLINTH_SECRET_KEY: '0'.repeat(64) })
    assert.equal(answer.code, 3)
    assert.match(answer.stderr, /cannot open the database/)
  })
})
