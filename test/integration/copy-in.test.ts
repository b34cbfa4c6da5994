/**
 * COPY … FROM STDIN through Kysely (src/db/copy-in.ts), on the engine the run uses: the request
 * log's batches go this way (issue #40). Every text oddity round-trips, a copy inside a
 * transaction goes with it, a refused copy writes nothing and leaves the connection usable.
 */
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { CompiledQuery, sql } from 'kysely'
import { copyField, copyRows } from '../../src/db/copy-in.js'
import { startPlatform, TEST_DB, type TestPlatform } from '../helpers/platform.js'

const ODD = [
  'tab\there',
  'line\nbreak\r\nand CR',
  'back\\slash \\N \\. \\t',
  '\\.',
  '\uFEFFBOM first',
  'é ü 你好 🎉 \u2028',
  '',
  ' spaces ',
  'a'.repeat(20_000),
]

describe(`COPY FROM STDIN through Kysely (${TEST_DB})`, () => {
  let platform: TestPlatform
  before(async () => {
    platform = await startPlatform()
    await sql`create table copy_probe (id int primary key, body text, at timestamptz, n numeric(12, 3))`.execute(platform.db)
  })
  after(() => platform.close())

  it('writes each field in the text format: tab, newline, CR and backslash escaped, null as \\N', () => {
    assert.equal(copyField(null), '\\N')
    assert.equal(copyField(undefined), '\\N')
    assert.equal(copyField('a\tb\nc\rd\\e'), 'a\\tb\\nc\\rd\\\\e')
    assert.equal(copyField('\\N'), '\\\\N', 'the text \\N is not null')
    assert.equal(copyField(new Date('2026-11-29T07:00:00.123Z')), '2026-11-29T07:00:00.123Z')
    assert.equal(copyField(1.5), '1.5')
    assert.equal(
      copyRows(
        't',
        ['a', 'b'],
        [
          ['x', null],
          ['\t', 2],
        ],
      ).data.text,
      'x\t\\N\n\\t\t2\n',
    )
  })

  it('round-trips every text oddity, nulls and dates, as the rows were', async () => {
    const at = new Date('2026-11-29T07:00:00.123Z')
    const rows = [...ODD.map((body, i) => [i, body, at, i + 0.125] as const), [ODD.length, null, null, null] as const]
    const copy = copyRows('copy_probe', ['id', 'body', 'at', 'n'], rows)
    const result = await platform.db.executeQuery(CompiledQuery.raw(copy.sql, [copy.data]))
    assert.equal(result.numAffectedRows, BigInt(rows.length))
    const stored = await sql<{
      id: number
      body: string | null
      at: Date | null
      n: string | null
    }>`select id, body, at, n from copy_probe order by id`.execute(platform.db)
    assert.deepEqual(
      stored.rows.map((row) => row.body),
      [...ODD, null],
    )
    assert.equal(stored.rows[0]?.at?.toISOString(), at.toISOString())
    assert.equal(Number(stored.rows[1]?.n), 1.125)
    assert.equal(stored.rows.at(-1)?.at, null)
  })

  it('goes with its transaction: rolled back, nothing is written', async () => {
    const copy = copyRows('copy_probe', ['id', 'body'], [[100, 'in a transaction']])
    await assert.rejects(
      platform.db.transaction().execute(async (trx) => {
        await trx.executeQuery(CompiledQuery.raw(copy.sql, [copy.data]))
        const seen = await sql<{ n: number }>`select count(*)::int as n from copy_probe where id = 100`.execute(trx)
        assert.equal(seen.rows[0]?.n, 1, 'the transaction sees its own copy')
        throw new Error('roll back')
      }),
      /roll back/,
    )
    const after = await sql<{ n: number }>`select count(*)::int as n from copy_probe where id = 100`.execute(platform.db)
    assert.equal(after.rows[0]?.n, 0)
  })

  it('a refused copy (a duplicate key in the batch) writes none of its rows, and the next statement runs', async () => {
    const copy = copyRows(
      'copy_probe',
      ['id', 'body'],
      [
        [200, 'first'],
        [200, 'again'],
      ],
    )
    await assert.rejects(platform.db.executeQuery(CompiledQuery.raw(copy.sql, [copy.data])), /duplicate key|unique/)
    const after = await sql<{ n: number }>`select count(*)::int as n from copy_probe where id = 200`.execute(platform.db)
    assert.equal(after.rows[0]?.n, 0)
  })
})
