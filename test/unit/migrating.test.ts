import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { MigrationResultSet } from 'kysely'
import { migrating } from '../../src/db/migrate.js'

/** An error as `pg` raises it: PostgreSQL's SQLSTATE in `code`. */
const pgError = (code: string, message: string) => Object.assign(new Error(message), { code })

/** A migrator's step that fails with each of `failures` in turn, then succeeds; counts its calls. */
function step(failures: unknown[]) {
  let calls = 0
  const run = async (): Promise<MigrationResultSet> => {
    const failure = failures[calls++]
    return failure === undefined ? { results: [] } : { error: failure, results: [] }
  }
  return { run, calls: () => calls }
}

describe('migrating: a migrator step retried while another user of the server drops what it introspects', () => {
  it('runs the step again after a schema (3F000), a table (42P01) or a column (42703) vanished under it', async () => {
    // The CI failure of stop 47: `schema "churn_…" does not exist` from Kysely's introspection of every schema.
    const s = step([
      pgError('3F000', 'schema "other_run" does not exist'),
      pgError('42P01', 'relation "other_run.t" does not exist'),
      pgError('42703', 'column "a" does not exist'),
    ])
    assert.deepEqual(await migrating(s.run), { results: [] })
    assert.equal(s.calls(), 4)
  })

  it('gives up after five attempts, throwing the last failure', async () => {
    const errors = Array.from({ length: 6 }, (_, i) => pgError('3F000', `schema "gone_${i}" does not exist`))
    const s = step(errors)
    await assert.rejects(migrating(s.run), (error) => error === errors[4])
    assert.equal(s.calls(), 5)
  })

  it('throws any other failure at once: a migration that failed is not run again', async () => {
    const failure = pgError('23505', 'duplicate key value violates unique constraint')
    const s = step([failure])
    await assert.rejects(migrating(s.run), (error) => error === failure)
    assert.equal(s.calls(), 1)
  })

  it('throws a failure that is not an Error as an Error naming it', async () => {
    const s = step(['lock timeout'])
    await assert.rejects(migrating(s.run), { message: 'lock timeout' })
    assert.equal(s.calls(), 1)
  })
})
