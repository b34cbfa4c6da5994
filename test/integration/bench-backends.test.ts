/**
 * The benchmark's PostgreSQL CPU (bench/lib/backends.ts): only the backends of a server's
 * application_name are counted, not another client's of the same PostgreSQL.
 */
import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { describe, it } from 'node:test'
import pg from 'pg'
import { OwnBackendsCpu, withApplicationName } from '../../bench/lib.js'
import { TEST_DB } from '../helpers/platform.js'

describe('bench: PostgreSQL CPU of a server’s own backends', { skip: TEST_DB !== 'postgres' && 'needs PostgreSQL' }, () => {
  it('counts the work of the backends of its application_name, and none of another client’s', async () => {
    const databaseUrl = process.env.DATABASE_URL
    assert.ok(databaseUrl !== undefined, 'PLINTH_TEST_DB=postgres needs DATABASE_URL')
    const tag = randomBytes(4).toString('hex')
    const names = { busy: `bench_busy_${tag}`, idle: `bench_idle_${tag}` }
    const busy = new pg.Client({ connectionString: withApplicationName(databaseUrl, names.busy) })
    const idle = new pg.Client({ connectionString: withApplicationName(databaseUrl, names.idle) })
    await busy.connect()
    await idle.connect()
    try {
      const busyCpu = new OwnBackendsCpu({ databaseUrl, applicationName: names.busy })
      const idleCpu = new OwnBackendsCpu({ databaseUrl, applicationName: names.idle })
      await busyCpu.prepare()
      await idleCpu.prepare()
      busyCpu.begin()
      idleCpu.begin()
      // Work only the busy client's backend does: far more than one 10 ms clock tick of CPU.
      await busy.query('select sum(g) from generate_series(1, 5000000) as g')
      const busyMs = await busyCpu.stop()
      const idleMs = await idleCpu.stop()
      assert.ok(busyMs !== undefined && busyMs > 0, `the busy backend's CPU: ${busyMs}`)
      assert.equal(idleMs, 0)
    } finally {
      await busy.end()
      await idle.end()
    }
  })
})
