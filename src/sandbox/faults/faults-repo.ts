import { type Kysely, sql } from 'kysely'
import type { DB, SandboxFaultsTable } from '../../db/schema.js'

export type FaultEffect = { status: 500 | 502 | 503 | 429; retry_after_seconds?: number } | { delay_ms: number } | { drop: true }

export interface Fault {
  id: string
  appId: string
  route: string | null
  operationId: string | null
  userUid: string | null
  effect: FaultEffect
  when: 'before' | 'after'
  /** Null: every matching call until cleared. */
  timesLeft: number | null
  probability: number
  createdAt: Date
}

const toFault = (row: SandboxFaultsTable): Fault => ({
  id: row.id,
  appId: row.app_id,
  route: row.route,
  operationId: row.operation_id,
  userUid: row.user_uid,
  effect: (typeof row.effect === 'string' ? JSON.parse(row.effect) : row.effect) as FaultEffect,
  when: row.run_when,
  timesLeft: row.times_left === null ? null : Number(row.times_left),
  probability: Number(row.probability),
  createdAt: row.created_at,
})

/** The SQL of injected faults (faults-service.ts). */
export function faultsRepo(db: Kysely<DB>) {
  return {
    /** Faults that can still fire (no count, or some left), of one app or of all, oldest first. */
    async active(appId?: string): Promise<Fault[]> {
      let query = db
        .selectFrom('sandbox_faults')
        .selectAll()
        .where((eb) => eb.or([eb('times_left', 'is', null), eb('times_left', '>', 0)]))
      if (appId !== undefined) query = query.where('app_id', '=', appId)
      const rows = await query.orderBy('created_at').orderBy('id').execute()
      return rows.map(toFault)
    },

    async list(appId: string | undefined, limit: number): Promise<Fault[]> {
      let query = db.selectFrom('sandbox_faults').selectAll()
      if (appId !== undefined) query = query.where('app_id', '=', appId)
      const rows = await query.orderBy('created_at').orderBy('id').limit(limit).execute()
      return rows.map(toFault)
    },

    async countActive(appId: string): Promise<number> {
      const row = await db
        .selectFrom('sandbox_faults')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('app_id', '=', appId)
        .where((eb) => eb.or([eb('times_left', 'is', null), eb('times_left', '>', 0)]))
        .executeTakeFirstOrThrow()
      return Number(row.n)
    },

    async pruneSpent(appId: string): Promise<void> {
      await db.deleteFrom('sandbox_faults').where('app_id', '=', appId).where('times_left', '=', 0).execute()
    },

    async insert(fault: Fault): Promise<Fault> {
      const row = await db
        .insertInto('sandbox_faults')
        .values({
          id: fault.id,
          app_id: fault.appId,
          route: fault.route,
          operation_id: fault.operationId,
          user_uid: fault.userUid,
          effect: JSON.stringify(fault.effect),
          run_when: fault.when,
          times_left: fault.timesLeft,
          probability: fault.probability,
          created_at: sql<Date>`now()`,
        })
        .returningAll()
        .executeTakeFirstOrThrow()
      return toFault(row)
    },

    /** One call of a counted fault, atomically: the count left, or undefined when none was left. */
    async consume(id: string): Promise<number | undefined> {
      const row = await db
        .updateTable('sandbox_faults')
        .set((eb) => ({ times_left: eb('times_left', '-', 1) }))
        .where('id', '=', id)
        .where('times_left', '>', 0)
        .returning('times_left')
        .executeTakeFirst()
      return row === undefined || row.times_left === null ? undefined : Number(row.times_left)
    },

    async delete(id: string): Promise<boolean> {
      const result = await db.deleteFrom('sandbox_faults').where('id', '=', id).executeTakeFirst()
      return Number(result.numDeletedRows) > 0
    },

    async clear(appId: string | undefined): Promise<number> {
      let query = db.deleteFrom('sandbox_faults')
      if (appId !== undefined) query = query.where('app_id', '=', appId)
      const result = await query.executeTakeFirst()
      return Number(result.numDeletedRows)
    },

    async appExists(appId: string): Promise<boolean> {
      return (await db.selectFrom('apps').select('id').where('id', '=', appId).executeTakeFirst()) !== undefined
    },

    /** The user of a payment of the app, for faults chosen by user on server-key routes. */
    async paymentUserUid(appId: string, paymentId: string): Promise<string | undefined> {
      const row = await db
        .selectFrom('payments')
        .select('user_uid')
        .where('identifier', '=', paymentId)
        .where('app_id', '=', appId)
        .executeTakeFirst()
      return row?.user_uid
    },
  }
}
