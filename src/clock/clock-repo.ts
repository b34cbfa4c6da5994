import type { Kysely } from 'kysely'
import type { DB } from '../db/schema.js'
import type { ClockStore } from './clock.js'

export function clockRepo(db: Kysely<DB>): ClockStore {
  return {
    async readOffsetMs() {
      const row = await db.selectFrom('platform_clock').select('offset_ms').where('id', '=', 1).executeTakeFirstOrThrow()
      return Number(row.offset_ms)
    },
    async addOffsetMs(deltaMs, maxOffsetMs) {
      // One guarded UPDATE: moves racing on several processes cannot pass the bound together.
      const row = await db
        .updateTable('platform_clock')
        .set((eb) => ({ offset_ms: eb('offset_ms', '+', deltaMs) }))
        .where('id', '=', 1)
        .where((eb) => eb(eb('offset_ms', '+', deltaMs), '<=', maxOffsetMs))
        .returning('offset_ms')
        .executeTakeFirst()
      return row === undefined ? undefined : Number(row.offset_ms)
    },
  }
}
