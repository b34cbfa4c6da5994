/** Notify in 256-batches with the quota enforced, the platform clock moved a day at every quota epoch. */
import { randomInt } from 'node:crypto'
import { type AnswerVerdict, defineScenario, jsonAt, postJson, type ScenarioContext } from '../lib.js'
import { formatCount, keyHeaders, pick } from './common.js'

// ---------------------------------------------------------------------------------------------
// Notify in 256-batches, with the quota (48 per app and user in any 24 hours of platform time).

const NOTIFY_BATCH = 256
const NOTIFY_QUOTA = 48
/** One day and a second: after an advance nothing sent before it is inside anyone's 24-hour window. */
const CLOCK_STEP_SECONDS = 86_401

interface NotifyApp {
  appId: string
  keys: readonly string[]
  /** The app's users (uids) in two halves: an epoch of the quota uses one half, the next epoch the other. */
  halves: [string[], string[]]
  /** Where the next batch starts in the current half (batches take consecutive users, wrapping around). */
  cursor: number
  /** Batches dealt in the current epoch, and how many an epoch allows (every user of the half gets at most 48). */
  batches: number
  capacity: number
}

/**
 * The quota, kept exactly from this side. Every batch goes to 256 distinct users of one app,
 * consecutive in a shuffled half of its users, so after n batches each user of the half has had
 * ⌊256n/H⌋ or ⌈256n/H⌉ notifications: an epoch stops at ⌊48H/256⌋ batches. Then the platform clock
 * is advanced a day and a second (everything before leaves every window) and the next epoch uses
 * the other half, so a batch still in flight when the clock moves, whichever side of the move the
 * server sees it on, never lands in a window of the users now being notified: their last
 * notifications were two epochs ago, and the switch waits for those to be answered (when it
 * cannot, it is counted as unsafe; a 403 would show it).
 */
interface NotifyState {
  baseUrl: string
  apps: NotifyApp[]
  epoch: number
  /** Batches dealt and not yet answered, per epoch (those autocannon left unanswered at the end of a run are dropped from it). */
  inFlight: Map<number, number>
  /** Batches autocannon stopped waiting for at the end of a run (the server still handles them). */
  abandoned: number
  advances: number
  advanceSettled: boolean
  advanceFailures: string[]
  unsafeSwitches: number
  batches: number
}

function shuffle<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = randomInt(i + 1)
    const a = items[i]
    const b = items[j]
    if (a === undefined || b === undefined) continue
    items[i] = b
    items[j] = a
  }
  return items
}

function startEpoch(state: NotifyState): void {
  const next = state.epoch + 1
  if (!state.advanceSettled || (state.inFlight.get(next - 2) ?? 0) > 0) state.unsafeSwitches++
  state.epoch = next
  for (const app of state.apps) {
    shuffle(app.halves[next % 2 === 0 ? 0 : 1])
    app.cursor = 0
    app.batches = 0
  }
  state.advances++
  state.advanceSettled = false
  postJson(`${state.baseUrl}/sandbox/clock`, { advance_seconds: CLOCK_STEP_SECONDS }, 200).then(
    () => {
      state.advanceSettled = true
    },
    (error: unknown) => {
      state.advanceSettled = true
      state.advanceFailures.push(error instanceof Error ? error.message : String(error))
    },
  )
}

function notifyCheck(status: number, body: string): AnswerVerdict {
  if (status !== 201) return { problem: `HTTP ${status}` }
  let parsed: unknown
  try {
    parsed = JSON.parse(body) as unknown
  } catch {
    return { problem: '201 that is not JSON' }
  }
  const delivered = jsonAt(parsed, 'delivered_notifications')
  if (jsonAt(parsed, 'success') !== true || !Array.isArray(delivered)) return { problem: '201 without success and delivered_notifications' }
  if (delivered.length !== NOTIFY_BATCH) return { problem: `201 with ${delivered.length} of ${NOTIFY_BATCH} delivered` }
  return { items: delivered.length }
}

async function prepareNotify(context: ScenarioContext): Promise<NotifyState> {
  const { apps, users } = await context.fixtures()
  const notifyApps = apps.map((app): NotifyApp => {
    const uids = shuffle(users.filter((user) => user.appId === app.appId).map((user) => user.uid))
    const halfSize = Math.floor(uids.length / 2)
    if (halfSize < NOTIFY_BATCH) {
      throw new Error(
        `notify needs at least ${2 * NOTIFY_BATCH} users per app (two halves of ${NOTIFY_BATCH} distinct users); ` +
          `${app.name} has ${uids.length}: seed more users or fewer apps`,
      )
    }
    return {
      appId: app.appId,
      keys: keyHeaders(app),
      halves: [uids.slice(0, halfSize), uids.slice(halfSize, 2 * halfSize)],
      cursor: 0,
      batches: 0,
      capacity: Math.floor((NOTIFY_QUOTA * halfSize) / NOTIFY_BATCH),
    }
  })
  return {
    baseUrl: context.baseUrl,
    apps: notifyApps,
    epoch: 0,
    inFlight: new Map(),
    abandoned: 0,
    advances: 0,
    advanceSettled: true,
    advanceFailures: [],
    unsafeSwitches: 0,
    batches: 0,
  }
}

function notifyBatch(state: NotifyState): { app: NotifyApp; uids: string[]; epoch: number } {
  let open = state.apps.filter((app) => app.batches < app.capacity)
  if (open.length === 0) {
    startEpoch(state)
    open = state.apps
  }
  const app = pick(open)
  const half = app.halves[state.epoch % 2 === 0 ? 0 : 1]
  const uids: string[] = []
  for (let k = 0; k < NOTIFY_BATCH; k++) {
    const uid = half[(app.cursor + k) % half.length]
    if (uid !== undefined) uids.push(uid)
  }
  app.cursor = (app.cursor + NOTIFY_BATCH) % half.length
  app.batches++
  state.batches++
  state.inFlight.set(state.epoch, (state.inFlight.get(state.epoch) ?? 0) + 1)
  return { app, uids, epoch: state.epoch }
}
// An app's server notifying 256 of its users at once; the quota is kept exactly (see NotifyState),
// every answer must be 201 with all 256 delivered. Runs last on its server: it moves the clock.
// Not on PGlite: its one connection serialises every transaction, and with 32 batches of 256 queued, trial runs had a tail past
// autocannon's 10 s timeout (p99 7.5 s, a few timed out), which would void the row (see BENCHMARKS.md's notes).
export const notify = defineScenario<NotifyState>({
  name: 'notify, 256 per request',
  backends: ['postgres'],
  movesClock: true,
  // Two halves of 256 distinct users, and some room so consecutive batches do not always take the same ones.
  minUsersPerApp: 550,
  checksAnswers: true,
  itemUnit: 'notifications/s',
  setup: prepareNotify,
  request: (state) => {
    const { app, uids, epoch } = notifyBatch(state)
    const batch = state.batches
    return {
      method: 'POST',
      path: '/v2/in_app_notifications/notify',
      headers: { authorization: pick(app.keys), 'content-type': 'application/json' },
      body: JSON.stringify({
        notifications: uids.map((uid, index) => ({
          title: `Bench notification ${batch}`,
          body: `Item ${index} of batch ${batch} is ready.`,
          user_uid: uid,
          subroute: '/x',
        })),
      }),
      check: (status, body) => {
        state.inFlight.set(epoch, (state.inFlight.get(epoch) ?? 1) - 1)
        return notifyCheck(status, body)
      },
    }
  },
  afterRun: (state) => {
    for (const count of state.inFlight.values()) state.abandoned += Math.max(0, count)
    state.inFlight.clear()
  },
  summary: (state) => {
    const halves = state.apps.map((app) => app.halves[0].length)
    return (
      `${formatCount(state.batches)} batches sent (warm-up and probe included) to ${state.apps.length} apps, each app's users in two halves of ` +
      `${Math.min(...halves)}–${Math.max(...halves)}; ${state.advances} clock advances of ${formatCount(CLOCK_STEP_SECONDS)} s (one per quota epoch of ` +
      `${state.apps.map((app) => app.capacity).join('/')} batches per app)` +
      `${state.unsafeSwitches > 0 ? `; ${state.unsafeSwitches} epoch switches made before the previous clock move had answered or before every batch of two epochs earlier had been answered` : ''}` +
      `${state.advanceFailures.length > 0 ? `; ${state.advanceFailures.length} clock advances FAILED: ${state.advanceFailures[0]}` : ''}`
    )
  },
})
