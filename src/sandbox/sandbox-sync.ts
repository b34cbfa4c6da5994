import { type Kysely, sql } from 'kysely'
import type { PlatformClock } from '../clock/clock.js'
import type { DB } from '../db/schema.js'
import { newId } from '../lib/crypto.js'

/**
 * What the sandbox keeps in each process's memory (the injected faults, the clock epoch that
 * voids cached credentials) made exact across processes, so that a reset, a restore or a fault
 * holds on every process the moment its request answers:
 *
 * - Every change bumps `sandbox_generation` in its own transaction (`bumpGeneration`).
 * - Every process polls that row with the platform clock's row (one statement, every `pollMs`),
 *   and on a new generation first hands the clock reading to the clock (a new epoch voids every
 *   cached credential, credential-cache.ts), then reloads its copies (`onChange`), and only then
 *   records the generation it applied in its row of `sandbox_processes`.
 * - A process uses its copies only while its last successful poll started under `maxStalenessMs`
 *   (1 s) ago; otherwise it asks the database (faults-service.ts).
 * - The process that made the change, once its transaction has committed at T, applies it
 *   itself and waits (`propagate`) until every registered process has recorded that generation,
 *   or until T + `maxStalenessMs`. Either way no process still serves an older copy: one that
 *   recorded the generation applied it; any other can serve from its copy only with a poll that
 *   started less than 1 s before, so after T, and that poll saw the change (the same holds for
 *   the credential cache's own feed, which reads the clock's epoch: credential-cache.ts). The
 *   registry only makes the usual case fast (one poll, ~100 ms); the bound makes it correct when
 *   a process died without removing its row (rows silent for a minute are ignored, then pruned).
 * - PGlite is one process: nothing to wait for.
 */
export interface SandboxSync {
  start(): Promise<void>
  stop(): Promise<void>
  /** Whether this process's copies may be used (its last poll is recent enough). */
  fresh(): boolean
  /** Called after this transaction committed a change that bumped the generation to `generation`. */
  propagate(generation: number): Promise<void>
  /** Registers what reloads this process's copies on a new generation (before it is acknowledged). */
  onChange(listener: () => Promise<void>): void
}

export interface SandboxSyncOptions {
  db: Kysely<DB>
  clock: Pick<PlatformClock, 'observe'>
  pollMs?: number
  maxStalenessMs?: number
  onError?: (error: unknown) => void
}

const HEARTBEAT_MS = 5_000
const SILENT_PROCESS = '1 minute'
const WAIT_STEP_MS = 5

/** In the changing transaction: the new generation (the row lock also orders concurrent changes). */
export async function bumpGeneration(trx: Kysely<DB>): Promise<number> {
  const row = await trx
    .updateTable('sandbox_generation')
    .set((eb) => ({ value: eb('value', '+', 1) }))
    .where('id', '=', 1)
    .returning('value')
    .executeTakeFirstOrThrow()
  return Number(row.value)
}

export function createSandboxSync(options: SandboxSyncOptions): SandboxSync {
  const { db } = options
  const pollMs = options.pollMs ?? 100
  const maxStalenessMs = options.maxStalenessMs ?? 1000
  const id = newId('proc')
  const listeners: Array<() => Promise<void>> = []
  let applied = -1
  let lastPollStartedMs = Number.NEGATIVE_INFINITY
  let lastBeatMs = Number.NEGATIVE_INFINITY
  let timer: NodeJS.Timeout | undefined
  let polling: Promise<void> | undefined
  let stopped = false

  const beat = async (generation: number): Promise<void> => {
    await db
      .insertInto('sandbox_processes')
      .values({ id, generation })
      .onConflict((oc) => oc.column('id').doUpdateSet({ generation, seen_at: sql<Date>`now()` }))
      .execute()
    lastBeatMs = Date.now()
  }

  async function pollOnce(): Promise<void> {
    const startedMs = Date.now()
    const { rows } = await sql<{ generation: string; offset_ms: string; epoch: number }>`
      select g.value::text as generation, c.offset_ms::text as offset_ms, c.epoch
      from sandbox_generation g cross join platform_clock c
      where g.id = 1 and c.id = 1`.execute(db)
    const row = rows[0]
    if (row === undefined) throw new Error('the sandbox poll answered no row')
    const generation = Number(row.generation)
    if (generation !== applied) {
      options.clock.observe({ offsetMs: Number(row.offset_ms), epoch: Number(row.epoch) })
      for (const listener of listeners) await listener()
      applied = generation
      await beat(generation)
    } else if (startedMs - lastBeatMs > HEARTBEAT_MS) {
      await beat(generation)
      await db.deleteFrom('sandbox_processes').where('seen_at', '<', sql<Date>`now() - interval '10 minutes'`).execute()
    }
    lastPollStartedMs = startedMs
  }

  /** One poll at a time; a caller that needs a poll started now waits for the one in flight, then starts its own. */
  async function poll(): Promise<void> {
    while (polling !== undefined) await polling.catch(() => {})
    polling = pollOnce().finally(() => {
      polling = undefined
    })
    return polling
  }

  return {
    async start() {
      stopped = false
      // Registered before anything is loaded: a change committed after this row is visible waits for this process.
      await beat(applied)
      await poll()
      timer = setInterval(() => {
        if (!stopped) poll().catch((error: unknown) => options.onError?.(error))
      }, pollMs)
      timer.unref()
    },

    async stop() {
      stopped = true
      if (timer !== undefined) clearInterval(timer)
      timer = undefined
      lastPollStartedMs = Number.NEGATIVE_INFINITY
      await polling?.catch(() => {})
      await db
        .deleteFrom('sandbox_processes')
        .where('id', '=', id)
        .execute()
        .catch(() => {})
    },

    fresh: () => Date.now() - lastPollStartedMs < maxStalenessMs,

    async propagate(generation) {
      const committedMs = Date.now()
      // This process first: a poll started now sees the change, applies it and acknowledges it.
      await poll()
      while (Date.now() - committedMs < maxStalenessMs) {
        const { rows } = await sql<{ behind: number }>`
          select count(*)::int as behind from sandbox_processes
          where id <> ${id} and generation < ${generation} and seen_at > now() - cast(${SILENT_PROCESS} as interval)`.execute(db)
        if ((rows[0]?.behind ?? 0) === 0) return
        await new Promise((resolve) => setTimeout(resolve, WAIT_STEP_MS))
      }
    },

    onChange(listener) {
      listeners.push(listener)
    },
  }
}
