/**
 * The audit log's chain against someone who can write the database but does not hold
 * PLINTH_SECRET_KEY (docs/operators.md, "Audit log"): they edit, remove or forge records and
 * recompute every SHA-256 after them, as anyone can; the chain must still say where.
 */
import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { after, before, describe, it } from 'node:test'
import { type Kysely, sql } from 'kysely'
import { migrateToLatest } from '../../../src/db/migrate.js'
import type { DB } from '../../../src/db/schema.js'
import { accountBrowser, adminOf, GOOD_PASSWORD, signedUp } from '../../helpers/accounts.js'
import { migrateDownToBefore } from '../../helpers/migrations.js'
import { startPlatform, TEST_DB, type TestPlatform, usePlatform } from '../../helpers/platform.js'
import { type BackendSetup, runPlinthCli, setUpBackend } from '../../helpers/server-process.js'

const GENESIS = '0'.repeat(64)

/** The same JSON whatever the order of an object's keys (as the log's own hash input). */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical)
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, canonical((value as Record<string, unknown>)[key])]),
    )
  }
  return value
}

interface Row {
  id: string
  at_micros: string
  actor: string
  action: string
  target: string | null
  details: Record<string, unknown>
  hash: string
}

const rows = async (db: Kysely<DB>): Promise<Row[]> =>
  (
    await sql<Row>`select id::text as id, (extract(epoch from at) * 1000000)::bigint::text as at_micros, actor, action, target,
      details, hash from audit_log order by audit_log.id`.execute(db)
  ).rows

/** The SHA-256 record hash anyone can compute: the log's formula before it was keyed. */
const sha256Of = (prev: string, row: Row) =>
  createHash('sha256')
    .update(JSON.stringify([prev, row.id, row.at_micros, row.actor, row.action, row.target, canonical(row.details)]))
    .digest('hex')

/** What a database writer does after a change: every record from `fromId` on gets a fresh SHA-256, linked to the one before. */
async function rechainFrom(db: Kysely<DB>, fromId: string): Promise<void> {
  let prev = GENESIS
  for (const row of await rows(db)) {
    if (BigInt(row.id) >= BigInt(fromId)) {
      const hash = sha256Of(prev, row)
      await sql`update audit_log set prev_hash = ${prev}, hash = ${hash} where id = ${row.id}`.execute(db)
      prev = hash
    } else {
      prev = row.hash
    }
  }
}

describe(`the audit chain against a database writer without the key (${TEST_DB})`, () => {
  const platform = usePlatform({ mode: 'production' })
  const admin = () => adminOf(platform)
  const app = () => platform.app

  /** Five records or more: a user, two issues, a grant; answers the log's rows. */
  async function someRecords(): Promise<Row[]> {
    const user = await signedUp(app)
    await admin().issue({ target: user.username, amount: '5', reason: 'first' })
    await admin().grant(user.username, 'developer')
    await admin().issue({ target: user.username, amount: '7', reason: 'second' })
    await admin().createApp({ owner: user.username, name: 'Shop', url: 'https://shop.example/' })
    assert.equal((await admin().verifyAudit()).broken_at, null, 'whole before the attack')
    return rows(platform.db)
  }

  /** Puts the log back as it was (the saved rows, exactly), so each attack starts from a whole chain. */
  async function restoring(work: () => Promise<void>): Promise<void> {
    const saved = (
      await sql<{ rows: string }>`select coalesce(json_agg(a order by id), '[]')::text as rows from audit_log a`.execute(platform.db)
    ).rows[0]?.rows
    try {
      await work()
    } finally {
      await sql`delete from audit_log`.execute(platform.db)
      await sql`insert into audit_log select * from json_populate_recordset(null::audit_log, ${saved}::json)`.execute(platform.db)
    }
    assert.equal((await admin().verifyAudit()).broken_at, null, 'whole again once restored')
  }

  it('an issue record’s amount edited and every later SHA-256 recomputed: verify reports that record', async () => {
    const log = await someRecords()
    const issued = log.find((r) => r.action === 'issue' && r.details.reason === 'first')
    assert.ok(issued !== undefined)
    await restoring(async () => {
      await sql`update audit_log set details = jsonb_set(details, '{amount}', '"5000.0000000"') where id = ${issued.id}`.execute(
        platform.db,
      )
      await rechainFrom(platform.db, issued.id)
      assert.equal((await admin().verifyAudit()).broken_at, issued.id)
    })
  })

  it('a middle record removed and every later SHA-256 recomputed: verify reports the record after the gap', async () => {
    const log = await someRecords()
    const middle = log.findLast((r) => r.action === 'grant-developer')
    const next = log[log.indexOf(middle as Row) + 1]
    assert.ok(middle !== undefined && next !== undefined)
    await restoring(async () => {
      await sql`delete from audit_log where id = ${middle.id}`.execute(platform.db)
      await rechainFrom(platform.db, next.id)
      assert.equal((await admin().verifyAudit()).broken_at, next.id)
    })
  })

  it('a forged record appended with a correct SHA-256: verify reports it', async () => {
    const log = await someRecords()
    const last = log[log.length - 1]
    assert.ok(last !== undefined)
    await restoring(async () => {
      const { rows: made } = await sql<{ id: string }>`
        insert into audit_log (actor, action, target, details, prev_hash, hash)
        values ('cli:root', 'issue', 'mallory', '{"amount": "1000000.0000000", "reason": "forged"}', ${last.hash}, ${`forged-${last.id}`})
        returning id::text as id`.execute(platform.db)
      const forged = made[0]?.id
      assert.ok(forged !== undefined)
      await rechainFrom(platform.db, forged)
      assert.equal((await admin().verifyAudit()).broken_at, forged)
    })
  })
})

describe(`the audit chain's head, kept outside the database (${TEST_DB})`, () => {
  const platform = usePlatform({ mode: 'production' })
  const admin = () => adminOf(platform)
  const app = () => platform.app

  it('removing the newest records leaves a whole chain, and verify with the head kept says the chain no longer reaches it', async () => {
    const user = await signedUp(app)
    await admin().grant(user.username, 'developer')
    await admin().issue({ target: user.username, amount: '3', reason: 'head test' })
    const head = await admin().auditHead()
    assert.ok(head !== null)
    const newest = (await rows(platform.db)).at(-1)
    assert.deepEqual(head, { id: newest?.id, mac: newest?.hash })
    assert.equal((await admin().verifyAudit(head)).expected_head, 'reached')
    assert.equal((await admin().verifyAudit({ id: head.id, mac: 'f'.repeat(64) })).expected_head, 'changed')

    await sql`delete from audit_log where id >= ${head.id}`.execute(platform.db)
    const truncated = await admin().verifyAudit(head)
    assert.equal(truncated.broken_at, null, 'what is left is a whole chain: only the head shows the truncation')
    assert.equal(truncated.expected_head, 'missing')
    assert.notEqual(truncated.head?.id, head.id)
  })

  it('the console gives the head and verifies against one; a malformed head is 400', async () => {
    const op = await signedUp(app)
    await admin().grant(op.username, 'operator')
    const given = await op.call('GET', '/operator/audit/head')
    assert.equal(given.status, 200)
    const head = String(given.body.head)
    assert.match(head, /^\d+:[0-9a-f]{64}$/)
    assert.equal(`${given.body.id}:${given.body.mac}`, head)
    const verified = await op.call('GET', `/operator/audit/verify?head=${head}`)
    assert.equal(verified.status, 200)
    assert.equal(verified.body.broken_at, null)
    assert.equal(verified.body.expected_head, 'reached')
    const gone = await op.call('GET', `/operator/audit/verify?head=999999999:${'a'.repeat(64)}`)
    assert.equal(gone.body.expected_head, 'missing')
    assert.equal((await op.call('GET', '/operator/audit/verify?head=12:xyz')).status, 400)
    assert.equal((await accountBrowser(app).call('GET', '/operator/audit/head')).status, 401)
  })
})

describe(`re-keying a chain written before migration 0021 (${TEST_DB})`, () => {
  const platform = usePlatform({ mode: 'production' })
  const admin = () => adminOf(platform)
  const app = () => platform.app
  const started: TestPlatform[] = []
  /** The restarted platforms share the first one's database: they close before it does. */
  const closeRestarted = async () => {
    for (const next of started.splice(0)) await next.close()
  }
  after(closeRestarted)

  /** The log as the old code left it: every record unkeyed, its hash the SHA-256 chain (mac_version 0, the column's default). */
  async function asBeforeTheMigration(): Promise<Row[]> {
    const user = await signedUp(app)
    await admin().grant(user.username, 'developer')
    await admin().issue({ target: user.username, amount: '2', reason: 'old money' })
    await admin().createApp({ owner: user.username, name: 'Old', url: 'https://old.example/' })
    await sql`update audit_log set mac_version = 0`.execute(platform.db)
    await rechainFrom(platform.db, '1')
    const log = await rows(platform.db)
    const check = await admin().verifyAudit()
    assert.equal(check.broken_at, log[0]?.id, 'not trusted until re-keyed')
    assert.equal(check.problem, 'unkeyed')
    return log
  }

  /** The next start of the platform on this database (another process, as after an upgrade). */
  const restart = async () => {
    const next = await startPlatform({ mode: 'production', sharing: platform })
    started.push(next)
    return next
  }

  it('the next start verifies the SHA-256 chain, MACs every record from the first and records the re-keying', async () => {
    const old = await asBeforeTheMigration()
    await restart()
    const now = await rows(platform.db)
    assert.equal(now.length, old.length + 1)
    assert.deepEqual(
      now.slice(0, -1).map((r) => [r.id, r.action, r.target, r.details]),
      old.map((r) => [r.id, r.action, r.target, r.details]),
      'the records themselves are untouched',
    )
    for (const [i, r] of old.entries()) assert.notEqual(now[i]?.hash, r.hash, 'each record carries a MAC now')
    const rekey = now.at(-1)
    assert.equal(rekey?.action, 'audit-rekey')
    assert.equal(rekey?.actor, 'platform')
    assert.deepEqual(rekey?.details, { records: old.length, last_unkeyed_id: old.at(-1)?.id, last_unkeyed_hash: old.at(-1)?.hash })
    assert.deepEqual(await admin().verifyAudit(), {
      records: now.length,
      broken_at: null,
      problem: null,
      head: { id: rekey?.id, mac: rekey?.hash },
    })
    await restart()
    assert.equal((await rows(platform.db)).length, now.length, 'once: a keyed chain is left alone')

    // Now keyed: the old trick (recompute the SHA-256s, mark the records unkeyed again) is refused at the next start.
    const issued = now.find((r) => r.action === 'issue')
    assert.ok(issued !== undefined)
    await sql`update audit_log set details = jsonb_set(details, '{amount}', '"9000.0000000"'), mac_version = 0 where id >= ${issued.id}`.execute(
      platform.db,
    )
    await rechainFrom(platform.db, issued.id)
    const forged = await rows(platform.db)
    await restart()
    assert.deepEqual(await rows(platform.db), forged, 'nothing re-keyed')
    assert.equal((await admin().verifyAudit()).broken_at, issued.id)
    await closeRestarted()
  })

  it('a database as the old code left it (before migration 0021): the migration marks its records, the next start keys them', async () => {
    await sql`delete from audit_log`.execute(platform.db)
    const old = await asBeforeTheMigration()
    // Undo migration 0021, and every later one, as the migrator does: their `down`, newest first.
    await migrateDownToBefore(platform.db as Kysely<unknown>, platform.schema, '0021-audit-chain-keyed')
    await migrateToLatest(platform.db as Kysely<unknown>, platform.schema)
    const marked = await sql<{ n: string }>`select count(*)::text as n from audit_log where mac_version = 0`.execute(platform.db)
    assert.equal(marked.rows[0]?.n, String(old.length), 'every old record marked unkeyed, none changed')
    assert.deepEqual(await rows(platform.db), old)
    await restart()
    const check = await admin().verifyAudit()
    assert.deepEqual([check.broken_at, check.records], [null, old.length + 1])
    assert.equal((await rows(platform.db)).at(-1)?.action, 'audit-rekey')
    await closeRestarted()
  })

  it('an old chain that is already broken is not re-keyed: it is left as it is, and verify keeps showing the break', async () => {
    await sql`delete from audit_log`.execute(platform.db)
    const old = await asBeforeTheMigration()
    const edited = old[1]
    assert.ok(edited !== undefined)
    await sql`update audit_log set target = 'someone else' where id = ${edited.id}`.execute(platform.db)
    const broken = await rows(platform.db)
    const next = await restart()
    assert.deepEqual(await rows(platform.db), broken, 'no record re-keyed, none added')
    assert.deepEqual(
      await admin()
        .verifyAudit()
        .then((c) => [c.broken_at, c.problem]),
      [edited.id, 'changed'],
    )
    // The platform runs on, and what it records is keyed after the break, which stays visible.
    await signedUp(() => next.app).then((u) => adminOf(next).grant(u.username, 'developer'))
    assert.equal((await rows(platform.db)).length, broken.length + 1)
    assert.equal((await adminOf(next).verifyAudit()).broken_at, edited.id)
    await closeRestarted()
  })
})

describe(`plinth admin audit head and verify --head, spawned (${TEST_DB})`, () => {
  let setup: BackendSetup
  before(async () => {
    setup = await setUpBackend(TEST_DB)
  })
  after(() => setup?.cleanup())
  const run = (args: string[], input = '') => runPlinthCli(['admin', ...args], { env: setup.env, input })

  it('head prints <id>:<mac>; verify --head exits 0 while the chain reaches it, 1 once it was cut off, 2 for a malformed head', async () => {
    assert.equal((await run(['create-operator', 'hanna'], `${GOOD_PASSWORD}\n`)).code, 0)
    const head = await run(['audit', 'head'])
    assert.equal(head.code, 0, head.stderr)
    const printed = head.stdout.trim()
    assert.match(printed, /^\d+:[0-9a-f]{64}$/)
    const reached = await run(['audit', 'verify', '--head', printed])
    assert.equal(reached.code, 0, reached.stderr)
    assert.match(reached.stdout, /^chain: whole \(\d+ records\)\nhead: reached$/m)

    const access = await setup.sql()
    try {
      await access.query(`delete from audit_log where id = $1`, [printed.split(':')[0]])
    } finally {
      await access.close()
    }
    const cut = await run(['audit', 'verify', '--head', printed, '--json'])
    assert.equal(cut.code, 1)
    const checked = JSON.parse(cut.stdout) as { broken_at: string | null; expected_head: string }
    assert.deepEqual([checked.broken_at, checked.expected_head], [null, 'missing'], 'the chain left is whole: only the head shows the cut')
    assert.equal((await run(['audit', 'verify', '--head', 'latest'])).code, 2)
    assert.equal((await run(['audit', '--head', printed])).code, 2, '--head goes with verify')
  })
})
