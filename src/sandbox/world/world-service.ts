import type { Kysely } from 'kysely'
import type { Clock, PlatformClock } from '../../clock/clock.js'
import { ApiError } from '../../core/errors.js'
import type { DB } from '../../db/schema.js'
import { analyzeTables } from '../../db/statistics.js'
import { bumpGeneration, type SandboxSync } from '../sandbox-sync.js'
import { type DemoInfo, openDemoAppSeed, seedDemo } from './demo-seed.js'
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
/** The format number of a snapshot file (GET /sandbox/snapshots/{name}/export). */
export const SNAPSHOT_FILE_FORMAT = 1

/** A snapshot file as POST /sandbox/snapshots/import reads it (the route has checked its shape). */
export interface SnapshotFile {
  plinth_snapshot: number
  schema_version: string
  created_at: string
  clock_offset_ms: number
  sequences: Record<string, SequenceValue>
  tables: Record<string, unknown[]>
}
/** An escape JSON.stringify writes (one not preceded by an escaped backslash): a NUL, and an unpaired surrogate, which has no UTF-8 form. */
const NUL_ESCAPE = /(?<!\\)(?:\\\\)*\\u0000/
const UNPAIRED_SURROGATE_ESCAPE = /(?<!\\)(?:\\\\)*\\u[dD][89a-fA-F][0-9a-fA-F]{2}/

/**
 * A table's imported rows as JSON text, or why jsonb cannot hold them: a NUL character, an
 * unpaired surrogate, or nesting deeper than JSON.stringify's stack (each was a 500 at import).
 */
function rowsText(rows: unknown[]): { text: string } | { refusal: string } {
  let text: string
  try {
    text = JSON.stringify(rows)
  } catch {
    return { refusal: 'a value is nested too deeply' }
  }
  if (NUL_ESCAPE.test(text)) return { refusal: 'text must not contain NUL characters' }
  if (UNPAIRED_SURROGATE_ESCAPE.test(text)) return { refusal: 'text must be valid Unicode (no unpaired surrogates)' }
  return { text }
}
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
        // The tables now hold another world: statistics of it before the next request plans a statement (src/db/statistics.ts).
        await analyzeTables(db, 'all')
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

  async function restore(name: string): Promise<void> {
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
      try {
        await restore(name)
      } catch (error) {
        // Only an imported file can hold rows the tables refuse (a missing required value, a
        // dangling reference): the restore rolled back, nothing changed.
        const state = String((error as { code?: unknown }).code ?? '')
        if (state.startsWith('22') || state.startsWith('23')) {
          throw new ApiError('invalid_snapshot', `The snapshot ${name} cannot be restored: ${(error as Error).message}. Nothing changed.`)
        }
        throw error
      }
    },

    /** The whole snapshot as one JSON text (the route sends it as is: no copy of every row as objects). */
    async exportSnapshot(name: string): Promise<string> {
      return db
        .transaction()
        .setIsolationLevel('repeatable read')
        .execute(async (trx) => {
          const repo = worldRepo(trx)
          const snapshot = await repo.findSnapshot(name)
          if (snapshot === undefined) throw new ApiError('snapshot_not_found', `No snapshot named ${name}.`)
          const head = {
            plinth_snapshot: SNAPSHOT_FILE_FORMAT,
            name,
            schema_version: await repo.schemaVersion(),
            created_at: snapshot.created_at.toISOString(),
            clock_offset_ms: Number(snapshot.clock_offset_ms),
            sequences: snapshot.sequences,
          }
          const tables = (await repo.exportRows(name)).map((t) => `${JSON.stringify(t.table_name)}:${t.rows}`)
          return `${JSON.stringify(head).slice(0, -1)},"tables":{${tables.join(',')}}}`
        })
    },

    /** A snapshot file saved under `name`: checked against this platform's tables and column types first. */
    async importSnapshot(name: string, file: SnapshotFile, replace: boolean): Promise<{ name: string; createdAt: Date; bytes: number }> {
      const known = await tables()
      const invalid = (message: string) => new ApiError('invalid_snapshot', message)
      if (file.plinth_snapshot !== SNAPSHOT_FILE_FORMAT) {
        throw invalid(`plinth_snapshot must be ${SNAPSHOT_FILE_FORMAT} (the format this platform writes), got ${file.plinth_snapshot}.`)
      }
      const saved = new Set(known.saved)
      const unknown = Object.keys(file.tables).filter((table) => !saved.has(table))
      if (unknown.length > 0) throw invalid(`tables: this platform saves no table ${unknown.slice(0, 5).join(', ')}.`)
      const unknownSequences = Object.keys(file.sequences).filter((s) => !known.sequences.some((k) => k.name === s))
      if (unknownSequences.length > 0) throw invalid(`sequences: this platform has no sequence ${unknownSequences.slice(0, 5).join(', ')}.`)
      // Every table's rows as text jsonb can hold, checked before the database is touched.
      const texts = new Map<string, string>()
      for (const table of known.saved) {
        const rows = file.tables[table]
        if (rows === undefined || rows.length === 0) continue
        const json = rowsText(rows)
        if ('refusal' in json) throw invalid(`tables.${table}: ${json.refusal}.`)
        texts.set(table, json.text)
      }
      return db.transaction().execute(async (trx) => {
        const repo = worldRepo(trx)
        const version = await repo.schemaVersion()
        if (file.schema_version !== version) {
          throw invalid(
            `The file was exported from schema ${file.schema_version}, this platform is at ${version}: export it again from a platform at this version.`,
          )
        }
        await repo.lockSnapshots()
        if (await repo.deleteSnapshot(name)) {
          if (!replace) throw new ApiError('snapshot_exists', `A snapshot named ${name} exists; send replace=true to replace it.`)
        } else if ((await repo.countSnapshots()) >= MAX_SNAPSHOTS) {
          throw new ApiError('too_many_snapshots', `At most ${MAX_SNAPSHOTS} snapshots are kept; delete one first.`)
        }
        const createdAt = new Date(file.created_at)
        await repo.insertImportedSnapshot(name, file.clock_offset_ms, Number.isNaN(createdAt.getTime()) ? new Date() : createdAt)
        for (const [table, text] of texts) {
          try {
            await repo.importRows(name, table, text)
            await repo.checkRows(name, table)
          } catch (error) {
            // A value jsonb or the column cannot take (22…), or nesting past PostgreSQL's stack (54001): the file's fault.
            const state = String((error as { code?: unknown }).code ?? '')
            if (!state.startsWith('22') && !state.startsWith('54')) throw error
            throw invalid(`tables.${table}: ${(error as Error).message}.`)
          }
        }
        const bytes = await repo.finishSnapshot(name, file.sequences)
        return { name, createdAt, bytes }
      })
    },
    /** The demo app and user, without its key (shown once), or undefined when the platform has none. */
    async demo(): Promise<(Omit<DemoInfo, 'apiKey' | 'appWalletSeedSealed'> & { appWalletSeed: string | null }) | undefined> {
      const value = await worldRepo(db).demo()
      if (value === undefined) return undefined
      const info = JSON.parse(value) as DemoInfo
      const { appId, appName, userId, username } = info
      return { appId, appName, userId, username, appWalletSeed: openDemoAppSeed(deps.secretKey, info) }
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
