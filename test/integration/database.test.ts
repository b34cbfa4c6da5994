import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { sql } from 'kysely'
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
