import { type Kysely, type Selectable, sql } from 'kysely'
import { platformNow, platformNowPlus } from '../clock/platform-now.js'
import type { AdScriptsTable, AdsTable, DB } from '../db/schema.js'
import type { AckStatus } from './ad-rules.js'

export type AdRow = Selectable<AdsTable>
export type AdScriptRow = Selectable<AdScriptsTable>
/** An ad as read, with the platform time the same statement read (a verdict falls due on it). */
export type AdRead = AdRow & { platform_now: Date }

/** The key of an app-wide script: scripts for one user carry the user's id. */
export const WHOLE_APP = ''

export function adsRepo(db: Kysely<DB>) {
  const read = () => db.selectFrom('ads').selectAll().select(platformNow.as('platform_now'))
  /** Pending ads whose verdict is due on the platform clock as stored take it, dated when it was due. */
  const settleDue = () =>
    db
      .updateTable('ads')
      .set({
        mediator_ack_status: sql<AckStatus>`settles_to`,
        mediator_granted_at: sql<Date | null>`case when settles_to = 'granted' then settles_at end`,
      })
      .where('mediator_ack_status', 'is', null)
      .where('settles_at', '<=', platformNow)

  return {
    /** A watched ad, created now on the platform clock as stored; its verdict `settles_to` falls due `settlesAfterMs` later. */
    async insert(
      row: Omit<AdRow, 'mediator_ack_status' | 'mediator_granted_at' | 'mediator_revoked_at' | 'settles_at' | 'created_at'>,
      settlesAfterMs: number,
    ): Promise<void> {
      const settlesAt = row.settles_to === null ? null : platformNowPlus(settlesAfterMs)
      await db
        .insertInto('ads')
        .values({ ...row, settles_at: settlesAt, created_at: platformNow })
        .execute()
    },

    async find(id: string): Promise<AdRead | undefined> {
      return read().where('id', '=', id).executeTakeFirst()
    },

    /** The ads with these ids, of any app: the caller checks the app (coalesced reads, src/db/coalesce.ts). */
    async findMany(ids: string[]): Promise<Map<string, AdRead>> {
      const rows = await read().where('id', '=', sql<string>`any(${ids})`).execute()
      return new Map(rows.map((row) => [row.id, row]))
    },

    async findForApp(id: string, appId: string): Promise<AdRead | undefined> {
      return read().where('id', '=', id).where('app_id', '=', appId).executeTakeFirst()
    },

    /** A pending ad whose verdict is due on the platform clock as stored takes it, dated when it was due. */
    async settle(id: string): Promise<void> {
      await settleDue().where('id', '=', id).execute()
    },

    /**
     * Before a clock reset (sandbox/world/clock-reset.ts): every due verdict is taken, and every pending
     * one keeps the time it had left, so its `settles_at` moves back by the offset.
     */
    async settleDueAndShift(offsetMs: number): Promise<void> {
      await settleDue().execute()
      await db
        .updateTable('ads')
        .set({ settles_at: sql<Date>`settles_at - make_interval(secs => ${offsetMs / 1000})` })
        .where('mediator_ack_status', 'is', null)
        .where('settles_at', 'is not', null)
        .execute()
    },

    /** Every pending ad of an app whose verdict is due takes it (before the sandbox lists the app's ads). */

    /** Moves the status only from `from`; answers the row if it moved. */
    async move(id: string, from: AckStatus | null, to: AckStatus, now: Date): Promise<AdRow | undefined> {
      return db
        .updateTable('ads')
        .set({
          mediator_ack_status: to,
          ...(to === 'granted' ? { mediator_granted_at: now } : {}),
          ...(to === 'revoked' ? { mediator_revoked_at: now } : {}),
          // A status set by hand is final for the automatic verdict too.
          settles_at: null,
          settles_to: null,
        })
        .where('id', '=', id)
        .where('mediator_ack_status', from === null ? 'is' : '=', from)
        .returningAll()
        .executeTakeFirst()
    },

    async upsertScript(row: AdScriptRow): Promise<AdScriptRow> {
      return db
        .insertInto('ad_scripts')
        .values(row)
        .onConflict((oc) =>
          oc.columns(['app_id', 'user_id']).doUpdateSet({
            result: row.result,
            mediator: row.mediator,
            remaining: row.remaining,
            created_at: row.created_at,
          }),
        )
        .returningAll()
        .executeTakeFirstOrThrow()
    },

    async deleteScript(appId: string, userId: string): Promise<boolean> {
      const result = await db.deleteFrom('ad_scripts').where('app_id', '=', appId).where('user_id', '=', userId).executeTakeFirst()
      return result.numDeletedRows > 0n
    },

    async peekScript(appId: string, userId: string): Promise<AdScriptRow | undefined> {
      return db
        .selectFrom('ad_scripts')
        .selectAll()
        .where('app_id', '=', appId)
        .where('user_id', '=', userId)
        .where((eb) => eb.or([eb('remaining', 'is', null), eb('remaining', '>', 0)]))
        .executeTakeFirst()
    },

    /** Takes one ad from a script, if it has any left; one statement, so a count is never overspent. */
    async takeScript(appId: string, userId: string): Promise<AdScriptRow | undefined> {
      return db
        .updateTable('ad_scripts')
        .set((eb) => ({
          remaining: eb
            .case()
            .when('remaining', 'is', null)
            .then(null)
            .else(eb('remaining', '-', 1))
            .end(),
        }))
        .where('app_id', '=', appId)
        .where('user_id', '=', userId)
        .where((eb) => eb.or([eb('remaining', 'is', null), eb('remaining', '>', 0)]))
        .returningAll()
        .executeTakeFirst()
    },
  }
}
