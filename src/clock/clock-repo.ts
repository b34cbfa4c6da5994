import type { Kysely } from 'kysely'
import type { DB } from '../db/schema.js'
import type { ClockReading, ClockStore } from './clock.js'

export function clockRepo(db: Kysely<DB>): ClockStore {
  return {
    async read() {
      const row = await db.selectFrom('platform_clock').select(['offset_ms', 'epoch']).where('id', '=', 1).executeTakeFirstOrThrow()
      return reading(row)
    },
    async addOffsetMs(deltaMs, maxOffsetMs) {
      // One guarded UPDATE: moves racing on several processes cannot pass the bound together.
      const row = await db
        .updateTable('platform_clock')
        .set((eb) => ({ offset_ms: eb('offset_ms', '+', deltaMs) }))
        .where('id', '=', 1)
        .where((eb) => eb(eb('offset_ms', '+', deltaMs), '<=', maxOffsetMs))
        .returning(['offset_ms', 'epoch'])
        .executeTakeFirst()
      return row === undefined ? undefined : reading(row)
    },
  }
}

const reading = (row: { offset_ms: number | string; epoch: number | string }): ClockReading => ({
  offsetMs: Number(row.offset_ms),
  epoch: Number(row.epoch),
})

/** The reset's steps on the clock row, inside the resetting transaction (clock-reset.ts). */
export function clockResetRepo(trx: Kysely<DB>) {
  return {
    /** Locks the clock row, so no move commits until the reset does; answers the offset it resets. */
    async lockOffsetMs(): Promise<number> {
      const row = await trx.selectFrom('platform_clock').select('offset_ms').where('id', '=', 1).forUpdate().executeTakeFirstOrThrow()
      return Number(row.offset_ms)
    },
    /** Back to real time, in a new epoch. */
    async reset(): Promise<ClockReading> {
      const row = await trx
        .updateTable('platform_clock')
        .set((eb) => ({ offset_ms: 0, epoch: eb('epoch', '+', 1) }))
        .where('id', '=', 1)
        .returning(['offset_ms', 'epoch'])
        .executeTakeFirstOrThrow()
      return reading(row)
    },
  }
}
