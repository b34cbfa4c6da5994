import type { Kysely } from 'kysely'
import type { DB } from '../db/schema.js'

/**
 * Production's per-app request log (docs/portal.md, "Request log"): which apps' owners turned it
 * on, as this process knows it. Read from the database every `pollMs` (2 s), and changed at once
 * here when this process makes the change: a switch holds on the process that made it at once,
 * on every other within `pollMs` and a read.
 */
export interface RequestLogOptIn {
  has(appId: string): boolean
  /** What this process has just committed. */
  set(appId: string, on: boolean): void
  start(): Promise<void>
  stop(): void
}

export function requestLogOptIn(db: Kysely<DB>, options: { pollMs?: number; onError?: (error: unknown) => void } = {}): RequestLogOptIn {
  const pollMs = options.pollMs ?? 2000
  let apps = new Set<string>()
  let timer: NodeJS.Timeout | undefined
  /** Changes made here since the read in flight began: a read that started before them must not undo them. */
  let changedDuringRead = new Map<string, boolean>()
  let reading = false

  async function read(): Promise<void> {
    if (reading) return
    reading = true
    changedDuringRead = new Map()
    try {
      const rows = await db.selectFrom('apps').select('id').where('request_log', '=', true).execute()
      const next = new Set(rows.map((row) => row.id))
      for (const [appId, on] of changedDuringRead) {
        if (on) next.add(appId)
        else next.delete(appId)
      }
      apps = next
    } catch (error) {
      options.onError?.(error)
    } finally {
      reading = false
    }
  }

  return {
    has: (appId) => apps.has(appId),
    set(appId, on) {
      if (on) apps.add(appId)
      else apps.delete(appId)
      if (reading) changedDuringRead.set(appId, on)
    },
    async start() {
      await read()
      timer = setInterval(() => void read(), pollMs)
      timer.unref()
    },
    stop() {
      if (timer !== undefined) clearInterval(timer)
      timer = undefined
    },
  }
}
