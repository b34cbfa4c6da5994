/**
 * The platform's notion of "now": token expiry, approval windows, quotas and ad verdicts follow
 * it, never Date.now(), so the sandbox can move time forward.
 *
 * The offset lives in the database (`platform_clock`). A decision that must come out the same
 * on every process is made in SQL against that stored offset (`platformNow` in
 * platform-now.ts), in the statement that acts on it. `now()` here is this process's copy, for
 * what may lag a move made by another process by one refresh: stamps no decision reads, and
 * the credential cache, which refreshes it with every read of the revocation feed
 * (docs/design.md, "Time").
 */
export interface Clock {
  now(): Date
  /** The wall clock this copy runs on (real time, which the sandbox never moves). */
  wallNow(): Date
}

/** The most one sandbox move advances the clock: ten years. */
export const MAX_ADVANCE_SECONDS = 10 * 366 * 86_400
/**
 * The most the platform clock is ever ahead of the wall clock: a hundred years. Platform time
 * then stays far below year 10000, past which PGlite can no longer store a timestamp and an ISO
 * 8601 date needs six digits.
 */
export const MAX_OFFSET_SECONDS = 100 * 366 * 86_400

/** The stored offset and its epoch (how many resets came before it; migration 0009). */
export interface ClockReading {
  offsetMs: number
  epoch: number
}

export interface ClockStore {
  read(): Promise<ClockReading>
  /** Adds to the offset unless it would pass `maxOffsetMs`: the new reading, or undefined (unchanged). */
  addOffsetMs(deltaMs: number, maxOffsetMs: number): Promise<ClockReading | undefined>
}

export interface PlatformClock extends Clock {
  /** Moves the clock; undefined when that would take it past MAX_OFFSET_SECONDS (then nothing moved). */
  advance(seconds: number): Promise<Date | undefined>
  refresh(): Promise<void>
  /** Takes a reading made by another statement (the revocation feed's, credential-events.ts, or a reset's). */
  observe(reading: ClockReading): void
  offsetMs(): number
  /** The epoch of the offset held (how many resets this process has seen). */
  epoch(): number
  stop(): void
}

export interface PlatformClockOptions {
  store: ClockStore
  /** Wall clock in milliseconds; injectable for tests. */
  wallMs?: () => number
  /** How often other processes' advances are picked up; 0 disables the timer. */
  refreshMs?: number
  onError?: (error: unknown) => void
}

export async function createPlatformClock(options: PlatformClockOptions): Promise<PlatformClock> {
  const wallMs = options.wallMs ?? Date.now
  let { offsetMs: offset, epoch } = await options.store.read()
  let timer: NodeJS.Timeout | undefined

  // Within an epoch the offset only grows: a read that started before this process's own move
  // answers after it must not undo it. A reset starts a new epoch, at offset 0; a reading of an
  // older epoch than the one held is stale.
  const observe = (read: ClockReading): void => {
    if (read.epoch > epoch) {
      epoch = read.epoch
      offset = read.offsetMs
    } else if (read.epoch === epoch) {
      offset = Math.max(offset, read.offsetMs)
    }
  }
  const refresh = async (): Promise<void> => {
    observe(await options.store.read())
  }
  if (options.refreshMs !== undefined && options.refreshMs > 0) {
    timer = setInterval(() => {
      refresh().catch((error: unknown) => options.onError?.(error))
    }, options.refreshMs)
    timer.unref()
  }

  return {
    now: () => new Date(wallMs() + offset),
    wallNow: () => new Date(wallMs()),
    offsetMs: () => offset,
    epoch: () => epoch,
    refresh,
    observe,
    async advance(seconds) {
      const moved = await options.store.addOffsetMs(Math.round(seconds * 1000), MAX_OFFSET_SECONDS * 1000)
      if (moved === undefined) return undefined
      observe(moved)
      return new Date(wallMs() + offset)
    },
    stop() {
      if (timer !== undefined) clearInterval(timer)
    },
  }
}
