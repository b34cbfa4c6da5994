import type { Kysely } from 'kysely'
import { ApiError } from '../../core/errors.js'
import type { DB } from '../../db/schema.js'
import { newId } from '../../lib/crypto.js'
import { bumpGeneration, type SandboxSync } from '../sandbox-sync.js'
import { type Fault, type FaultEffect, faultsRepo } from './faults-repo.js'

/**
 * Injected faults (docs/testing.md, "Fault injection"): chosen calls of one app fail.
 *
 * Each process keeps the faults that can still fire, by app, reloaded whenever the sandbox
 * generation moves (sandbox-sync.ts): creating, deleting or clearing a fault bumps it and answers
 * only once every process has reloaded, so a fault holds everywhere from that answer on, and a
 * call of an app without faults costs one Map lookup, no database round trip. The copy is used
 * only while this process's sandbox poll is fresh; otherwise each call asks the database. A
 * counted fault ("the next N calls") is consumed by one guarded UPDATE (`times_left > 0`), so the
 * count is exact over every process; a copy that still shows a spent fault only costs that UPDATE.
 */
export const MAX_FAULTS_PER_APP = 50

export interface NewFault {
  appId: string
  route: string | null
  operationId: string | null
  userUid: string | null
  effect: FaultEffect
  when: 'before' | 'after'
  times: number | null
  probability: number
}

export interface CallContext {
  appId: string
  /** `METHOD /v2/pattern`, as the route is declared. */
  route: string
  operationId: string | undefined
  /** The user the call acts for, looked up only when a fault of the app is chosen by user. */
  userUid: () => Promise<string | undefined>
}

export interface FaultsDeps {
  db: Kysely<DB>
  sync: SandboxSync
  /** A number in [0, 1): the dice of `probability` (Math.random unless a test fixes it). */
  random?: () => number
}

export function faultsServiceFactory(deps: FaultsDeps) {
  const { db, sync } = deps
  const random = deps.random ?? Math.random
  const repo = faultsRepo(db)
  let byApp = new Map<string, Fault[]>()

  sync.onChange(async () => {
    const next = new Map<string, Fault[]>()
    for (const fault of await repo.active()) {
      const list = next.get(fault.appId)
      if (list === undefined) next.set(fault.appId, [fault])
      else list.push(fault)
    }
    byApp = next
  })

  /** Commits `change` with a new sandbox generation, then waits until every process has it. */
  async function changeEverywhere<T>(change: (trx: Kysely<DB>) => Promise<T>): Promise<T> {
    const { result, generation } = await db.transaction().execute(async (trx) => {
      const result = await change(trx)
      return { result, generation: await bumpGeneration(trx) }
    })
    await sync.propagate(generation)
    return result
  }

  return {
    async create(input: NewFault): Promise<Fault> {
      return changeEverywhere(async (trx) => {
        const faults = faultsRepo(trx)
        if (!(await faults.appExists(input.appId))) throw new ApiError('app_not_found', `No app ${input.appId}.`)
        await faults.pruneSpent(input.appId)
        if ((await faults.countActive(input.appId)) >= MAX_FAULTS_PER_APP) {
          throw new ApiError('too_many_faults', `An app has at most ${MAX_FAULTS_PER_APP} faults; delete some first.`)
        }
        return faults.insert({
          id: newId('flt'),
          appId: input.appId,
          route: input.route,
          operationId: input.operationId,
          userUid: input.userUid,
          effect: input.effect,
          when: input.when,
          timesLeft: input.times,
          probability: input.probability,
          createdAt: new Date(),
        })
      })
    },

    list: (appId: string | undefined, limit: number) => repo.list(appId, limit),

    paymentUserUid: (appId: string, paymentId: string) => repo.paymentUserUid(appId, paymentId),

    async delete(id: string): Promise<void> {
      // Thrown inside the transaction: a refused deletion changes nothing, not even the generation.
      await changeEverywhere(async (trx) => {
        if (!(await faultsRepo(trx).delete(id))) throw new ApiError('fault_not_found', `No fault ${id}.`)
      })
    },

    async clear(appId: string | undefined): Promise<void> {
      await changeEverywhere((trx) => faultsRepo(trx).clear(appId))
    },

    /** True when this process knows, without asking the database, that the app has no fault. */
    none(appId: string): boolean {
      return sync.fresh() && (byApp.get(appId)?.length ?? 0) === 0
    },

    /** The fault this call gets, if any (a counted one is consumed here). */
    async pick(call: CallContext): Promise<Fault | undefined> {
      const faults = sync.fresh() ? byApp.get(call.appId) : await repo.active(call.appId)
      if (faults === undefined || faults.length === 0) return undefined
      let uid: string | undefined | null = null
      for (const fault of faults) {
        if (fault.timesLeft === 0) continue
        if (fault.route !== null && fault.route !== call.route) continue
        if (fault.operationId !== null && fault.operationId !== call.operationId) continue
        if (fault.userUid !== null) {
          if (uid === null) uid = await call.userUid()
          if (uid !== fault.userUid) continue
        }
        if (fault.probability < 1 && random() >= fault.probability) continue
        if (fault.timesLeft !== null) {
          const left = await repo.consume(fault.id)
          fault.timesLeft = left ?? 0
          if (left === undefined) continue
        }
        return fault
      }
      return undefined
    },
  }
}

export type FaultsService = ReturnType<typeof faultsServiceFactory>
