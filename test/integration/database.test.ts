import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'kysely'
import { type Database, openDatabase } from '../../src/db/database.js'
import { startPlatform, TEST_DB, type TestPlatform } from '../helpers/platform.js'

describe('the PostgreSQL connection pool', { skip: TEST_DB !== 'postgres' && 'PostgreSQL only: PGlite runs in process' }, () => {
  let platform: TestPlatform

  before(async () => {
    platform = await startPlatform()
  })
  after(() => platform.close())

  const prepared = async (run: (trx: TestPlatform['db']) => Promise<unknown>) =>
    // One transaction is one connection: what it prepared is in that session's pg_prepared_statements.
    platform.db.transaction().execute(async (trx) => {
      await run(trx)
      await run(trx)
      const { rows } = await sql<{ name: string; statement: string }>`select name, statement from pg_prepared_statements`.execute(trx)
      return rows
    })

  it('prepares a parameterised statement once per connection under one name, and reuses it', async () => {
    const rows = await prepared((trx) => trx.selectFrom('apps').select('id').where('id', '=', 'no-such-app').execute())
    const mine = rows.filter((row) => row.statement.includes('from "apps" where "id" = $1'))
    assert.equal(mine.length, 1, `one prepared statement for the query run twice: ${JSON.stringify(rows)}`)
    assert.match(mine[0]?.name ?? '', /^plinth_\d+$/)
  })

  it('leaves statements without parameters, and multi-row statements past the bound, unnamed', async () => {
    const rows = await prepared(async (trx) => {
      await sql`select 42 as answer_without_parameters`.execute(trx)
      const many = Array.from({ length: 101 }, (_, i) => `id-${i}`)
      await trx.selectFrom('apps').select('id').where('id', 'in', many).execute()
    })
    assert.equal(
      rows.some((row) => row.statement.includes('answer_without_parameters')),
      false,
    )
    assert.equal(
      rows.some((row) => row.statement.includes('$101')),
      false,
    )
  })
})

describe('memory databases that share an image (startPlinth())', { skip: TEST_DB !== 'pglite' && 'PGlite only: memory mode' }, () => {
  // initdb gives every database cluster its own system identifier; one started from another's files keeps it.
  const systemId = async (database: Database) =>
    (await sql<{ id: string }>`select system_identifier::text as id from pg_control_system()`.execute(database.db)).rows[0]?.id

  it('makes the image from the first, migrated and empty; later ones, even those started at once, start from it and own their data', async () => {
    const [first, second, third] = await Promise.all([1, 2, 3].map(() => openDatabase({ dataDir: 'memory', shareMemoryImage: true })))
    assert.ok(first && second && third)
    const later = await openDatabase({ dataDir: 'memory', shareMemoryImage: true })
    const own = await openDatabase({ dataDir: 'memory' })
    try {
      const firstId = await systemId(first)
      assert.ok(firstId)
      for (const database of [second, third, later]) assert.equal(await systemId(database), firstId, 'started from the image')
      assert.notEqual(await systemId(own), firstId, 'without shareMemoryImage: a database of its own (initdb)')

      await first.db.insertInto('platform_meta').values({ key: 'only-in-first', value: 'x' }).execute()
      const fourth = await openDatabase({ dataDir: 'memory', shareMemoryImage: true })
      try {
        for (const database of [second, later, fourth]) {
          const rows = await database.db.selectFrom('platform_meta').select('key').where('key', '=', 'only-in-first').execute()
          assert.deepEqual(rows, [], 'what the first holds after its image was made is its own')
          const migrations = await sql<{ n: number }>`select count(*)::int as n from kysely_migration`.execute(database.db)
          assert.ok((migrations.rows[0]?.n ?? 0) > 0, 'migrated')
        }
      } finally {
        await fourth.close()
      }
    } finally {
      await Promise.all([first, second, third, later, own].map((database) => database.close()))
    }
  })
})
