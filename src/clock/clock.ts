/**
 * The platform's notion of "now". Everything time-based (token expiry, approval windows,
 * quotas) asks this clock, never Date.now(), so the sandbox can move time forward.
 *
 * The offset lives in the database so that every process sharing it sees the same time.
 * `now()` is synchronous and reads a cached offset; the cache is refreshed on a short
 * interval (and immediately in the process that advanced it), so another process sees an
 * advance within `refreshMs`.
 */
export interface Clock {
  now(): Date
}

export interface ClockStore {
  readOffsetMs(): Promise<number>
  addOffsetMs(deltaMs: number): Promise<number>
}

export interface PlatformClock extends Clock {
  advance(seconds: number): Promise<Date>
  refresh(): Promise<void>
  offsetMs(): number
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
  let offset = await options.store.readOffsetMs()
  let timer: NodeJS.Timeout | undefined

  const refresh = async (): Promise<void> => {
    offset = await options.store.readOffsetMs()
  }
  if (options.refreshMs !== undefined && options.refreshMs > 0) {
    timer = setInterval(() => {
      refresh().catch((error: unknown) => options.onError?.(error))
    }, options.refreshMs)
    timer.unref()
  }

  return {
    now: () => new Date(wallMs() + offset),
    offsetMs: () => offset,
    refresh,
    async advance(seconds) {
      offset = await options.store.addOffsetMs(Math.round(seconds * 1000))
      return new Date(wallMs() + offset)
    },
    stop() {
      if (timer !== undefined) clearInterval(timer)
    },
  }
}
