/**
 * Statements built once (src/db/prepared.ts): a prepared statement answers what the same query
 * built on every call answers, is built and compiled once however often it runs, is still seen by
 * the statement timer, and refuses a value used outside a parameter.
 */
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { sql } from 'kysely'
import { prepared } from '../../src/db/prepared.js'
import { createMetrics } from '../../src/system/metrics.js'
import { TEST_DB, usePlatform } from '../helpers/platform.js'

describe(`prepared statements (${TEST_DB})`, () => {
  const platform = usePlatform()

  it('answer what the built query answers, with new values each run, built once', async () => {
    let builds = 0
    const statement = prepared((db, v: { a: number; b: string; when: Date }) => {
      builds += 1
      return db.selectNoFrom([
        sql<number>`${v.a}::integer + 1`.as('next'),
        sql<string>`upper(${v.b}::text)`.as('shout'),
        sql<string>`to_char(${v.when}::timestamptz at time zone 'UTC', 'YYYY-MM-DD')`.as('day'),
      ])
    })
    for (const [a, b, when] of [
      [1, 'x', new Date('2026-01-02T03:04:05Z')],
      [41, 'plinth', new Date('1999-12-31T23:00:00Z')],
      [-5, '', new Date('2030-06-30T12:00:00Z')],
    ] as const) {
      const [row] = await statement(platform.db, { a, b, when })
      const built = await platform.db
        .selectNoFrom([
          sql<number>`${a}::integer + 1`.as('next'),
          sql<string>`upper(${b}::text)`.as('shout'),
          sql<string>`to_char(${when}::timestamptz at time zone 'UTC', 'YYYY-MM-DD')`.as('day'),
        ])
        .executeTakeFirstOrThrow()
      assert.deepEqual(row, built)
    }
    assert.equal(builds, 1, 'built and compiled at its first run only')
  })

  it('every run is timed by the statement timer, as a built query is', async () => {
    const metrics = createMetrics({ enabled: true })
    const db = platform.db.withPlugin(metrics.queryTimer)
    const statement = prepared((kdb, v: { n: number }) => kdb.selectNoFrom(sql<number>`${v.n}::integer`.as('n')))
    const count = async () => {
      const text = await metrics.registry.metrics()
      return Number(/^plinth_db_query_duration_seconds_count\{kind="select"\} (\d+)$/m.exec(text)?.[1] ?? '0')
    }
    const before = await count()
    for (let n = 0; n < 5; n++) assert.deepEqual(await statement(db, { n }), [{ n }])
    assert.equal((await count()) - before, 5)
  })

  it('refuses a value used in JavaScript rather than as a parameter, at its first run', async () => {
    const concatenated = prepared((db, v: { name: string }) => db.selectNoFrom(sql<string>`${`hello ${v.name}`}::text`.as('greeting')))
    await assert.rejects(concatenated(platform.db, { name: 'x' }), /used name outside a parameter/)
    const branched = prepared((db, v: { flag: boolean }) => db.selectNoFrom(sql<number>`${v.flag ? 1 : 2}::integer`.as('n')))
    await assert.rejects(branched(platform.db, { flag: false }), /used flag outside a parameter/)
  })
})
