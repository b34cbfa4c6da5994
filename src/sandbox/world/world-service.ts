import type { Kysely } from 'kysely'
import type { Clock, PlatformClock } from '../../clock/clock.js'
import { ApiError } from '../../core/errors.js'
import type { DB } from '../../db/schema.js'
import { bumpGeneration, type SandboxSync } from '../sandbox-sync.js'
import { type DemoInfo, seedDemo } from './demo-seed.js'
import { type Catalog, readCatalog, type SequenceValue, worldRepo } from './world-repo.js'

/**
 * Reset and named snapshots of the whole platform (docs/testing.md, "Reset and snapshots").
 *
 * - A reset empties every data table (world-repo.ts says which are kept) with one TRUNCATE,
 *   restarts the sequences (ledger numbers, fundings), puts the clock back on real time and, for
 *   the `demo` seed, creates the demo app and user again, all in one transaction. TRUNCATE takes
 *   every table's lock in that statement, so a concurrent request sees the old world or the new.
 * - A snapshot is every row of every saved table as jsonb in `sandbox_snapshot_rows`, taken in
 *   one REPEATABLE READ transaction (one consistent view), with the sequences' values derived
 *   from those same rows (max of the column each fills: a sequence read directly is not in the
 *   snapshot's view) and the clock's offset. A restore empties the tables as a reset does, inserts the rows back (parents
 *   first, ids kept), sets the sequences and the clock's offset: one transaction.
 * - Both start a new clock epoch and bump the sandbox generation, and answer once every process
 *   has taken them (sandbox-sync.ts): no process serves a credential cached before.
 * - Locks are waited for at most LOCK_WAIT_MS at a time; a reset that would wait longer (a request
 *   holding a table it needs while waiting for one the reset holds) rolls back and tries again,
 *   so neither it nor the request fails on a deadlock.
 */
export type Seed = 'demo' | 'empty'

export const MAX_SNAPSHOTS = 20
const LOCK_WAIT_MS = 200
const MAX_ATTEMPTS = 30

export interface WorldDeps {
  db: Kysely<DB>
  clock: PlatformClock
  secretKey: Buffer
  sync: SandboxSync
}

export interface ResetResult {
  seed: Seed
  demo?: DemoInfo
}

const RETRYABLE = new Set(['55P03', '40P01', '40001'])
const retryable = (error: unknown) => RETRYABLE.has(String((error as { code?: unknown } | undefined)?.code))

/** A clock at a fixed offset, for what a transaction stamps before its new offset is committed. */
const fixedClock = (offsetMs: number): Clock => ({
  now: () => new Date(Date.now() + offsetMs),
  wallNow: () => new Date(),
})

export function worldServiceFactory(deps: WorldDeps) {
  const { db, clock, sync } = deps
  let catalog: Catalog | undefined
  const tables = async (): Promise<Catalog> => {
    catalog ??= await readCatalog(db)
    return catalog
  }

  /** Runs `change` in a transaction that waits for locks briefly, again on a lock timeout or deadlock, then propagates it. */
  async function replaceWorld<T>(change: (trx: Kysely<DB>, catalog: Catalog) => Promise<T>): Promise<T> {
    const known = await tables()
    for (let attempt = 1; ; attempt++) {
      try {
        const { result, generation, reading } = await db.transaction().execute(async (trx) => {
          const repo = worldRepo(trx)
          await repo.limitLockWait(LOCK_WAIT_MS)
          const result = await change(trx, known)
          return { result, generation: await bumpGeneration(trx), reading: await repo.clockReading() }
        })
        clock.observe(reading)
        await sync.propagate(generation)
        return result
      } catch (error) {
        if (!retryable(error) || attempt >= MAX_ATTEMPTS) {
          if (retryable(error))
            throw new ApiError('service_unavailable', 'The platform is too busy to be replaced now; try again.').retryAfter(1)
          throw error
        }
        await new Promise((resolve) => setTimeout(resolve, 10 + Math.random() * 40 * attempt))
      }
    }
  }

  return {
    async reset(seed: Seed): Promise<ResetResult> {
      return replaceWorld(async (trx, known) => {
        const repo = worldRepo(trx)
        await repo.truncate(known.cleared)
        for (const sequence of known.sequences) await repo.restartSequence(sequence.name, 1)
        await repo.setClock(0)
        if (seed === 'empty') return { seed }
        const demo = await seedDemo(trx, { clock: fixedClock(0), secretKey: deps.secretKey })
        return { seed, demo }
      })
    },

    async saveSnapshot(name: string, replace: boolean): Promise<{ name: string; createdAt: Date; bytes: number }> {
      const known = await tables()
      return db
        .transaction()
        .setIsolationLevel('repeatable read')
        .execute(async (trx) => {
          const repo = worldRepo(trx)
          await repo.lockSnapshots()
          if (await repo.deleteSnapshot(name)) {
            if (!replace) throw new ApiError('snapshot_exists', `A snapshot named ${name} exists; send "replace": true to replace it.`)
          } else if ((await repo.countSnapshots()) >= MAX_SNAPSHOTS) {
            throw new ApiError('too_many_snapshots', `At most ${MAX_SNAPSHOTS} snapshots are kept; delete one first.`)
          }
          const createdAt = await repo.insertSnapshot(name, await repo.clockOffsetMs())
          for (const table of known.saved) await repo.saveRows(name, table)
          const sequences: Record<string, SequenceValue> = {}
          for (const sequence of known.sequences) sequences[sequence.name] = await repo.sequenceFromRows(sequence)
          const bytes = await repo.finishSnapshot(name, sequences)
          return { name, createdAt, bytes }
        })
    },

    async restoreSnapshot(name: string): Promise<void> {
      await replaceWorld(async (trx, known) => {
        const repo = worldRepo(trx)
        const snapshot = await repo.findSnapshot(name)
        if (snapshot === undefined) throw new ApiError('snapshot_not_found', `No snapshot named ${name}.`)
        await repo.truncate(known.cleared)
        for (const table of known.saved) await repo.restoreRows(name, table)
        const saved = snapshot.sequences as Record<string, SequenceValue | undefined>
        for (const sequence of known.sequences) {
          const value = saved[sequence.name]
          await repo.restartSequence(sequence.name, value === undefined ? 1 : value.called ? value.last + 1 : value.last)
        }
        await repo.setClock(Number(snapshot.clock_offset_ms))
      })
    },

    async listSnapshots(): Promise<Array<{ name: string; createdAt: Date; bytes: number }>> {
      const rows = await worldRepo(db).listSnapshots()
      return rows.map((row) => ({ name: row.name, createdAt: row.created_at, bytes: Number(row.bytes) }))
    },

    async deleteSnapshot(name: string): Promise<void> {
      const deleted = await db.transaction().execute(async (trx) => {
        const repo = worldRepo(trx)
        await repo.lockSnapshots()
        return repo.deleteSnapshot(name)
      })
      if (!deleted) throw new ApiError('snapshot_not_found', `No snapshot named ${name}.`)
    },
  }
}

export type WorldService = ReturnType<typeof worldServiceFactory>
