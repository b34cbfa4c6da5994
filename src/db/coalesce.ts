/**
 * Coalesced point reads: concurrent lookups of single rows by key share one query per round trip.
 *
 * A lookup that arrives while fewer than `maxInFlight` queries of this reader are running goes out
 * at the end of the current turn of the event loop, together with every lookup that arrived in
 * that turn; lookups that arrive while `maxInFlight` queries run wait for one of them to return
 * and then go out together. Every answer therefore comes from a query that was sent after the
 * lookup was made: this is batching, not a cache, and a read never sees a state older than the
 * moment it was asked (a write committed before the request arrived is always seen, on any process).
 *
 * Under load this turns N single-row SELECTs into one `= any($1)` SELECT: one round trip, one
 * statement for PostgreSQL to execute, one result to parse. With no concurrency it costs nothing
 * but the wait for the end of the event-loop turn (setImmediate).
 */
export interface CoalescingReader<V> {
  /** The row with this key, or undefined: answered by the next batch query that includes it. */
  get(key: string): Promise<V | undefined>
}

export interface CoalesceOptions {
  /** At most this many batch queries of this reader run at once (the rest of the pool stays free for other work). */
  maxInFlight?: number
  /** At most this many keys in one query. */
  maxBatch?: number
}

interface Waiter<V> {
  resolve(value: V | undefined): void
  reject(error: unknown): void
}

export function coalescingReader<V>(
  /** Loads the rows of these distinct keys (in one query); a key absent from the answer has no row. */
  load: (keys: string[]) => Promise<Map<string, V>>,
  options: CoalesceOptions = {},
): CoalescingReader<V> {
  const maxInFlight = options.maxInFlight ?? 2
  const maxBatch = options.maxBatch ?? 256
  let pending = new Map<string, Waiter<V>[]>()
  let inFlight = 0
  let scheduled = false

  function schedule(): void {
    if (scheduled || inFlight >= maxInFlight || pending.size === 0) return
    scheduled = true
    setImmediate(flush)
  }

  function flush(): void {
    scheduled = false
    while (inFlight < maxInFlight && pending.size > 0) {
      let batch: Map<string, Waiter<V>[]>
      if (pending.size <= maxBatch) {
        batch = pending
        pending = new Map()
      } else {
        batch = new Map()
        for (const [key, waiters] of pending) {
          if (batch.size === maxBatch) break
          batch.set(key, waiters)
          pending.delete(key)
        }
      }
      run(batch)
    }
  }

  function run(batch: Map<string, Waiter<V>[]>): void {
    inFlight++
    let loaded: Promise<Map<string, V>>
    try {
      loaded = load([...batch.keys()])
    } catch (error) {
      loaded = Promise.reject(error)
    }
    loaded.then(
      (rows) => {
        inFlight--
        for (const [key, waiters] of batch) {
          const row = rows.get(key)
          for (const waiter of waiters) waiter.resolve(row)
        }
        schedule()
      },
      (error: unknown) => {
        inFlight--
        for (const waiters of batch.values()) for (const waiter of waiters) waiter.reject(error)
        schedule()
      },
    )
  }

  return {
    get(key) {
      return new Promise<V | undefined>((resolve, reject) => {
        const waiters = pending.get(key)
        if (waiters === undefined) pending.set(key, [{ resolve, reject }])
        else waiters.push({ resolve, reject })
        schedule()
      })
    },
  }
}

/**
 * Coalesced writes: concurrent writes of one kind (a payment's create, its complete) share one
 * statement per round trip, scheduled as the reads above are: a write goes out at the end of the
 * turn of the event loop it was made in, with every write of its kind made in that turn, so it is
 * never sent before it was asked for, and with no concurrency it costs only that wait.
 *
 * `write` answers one result per item, in the items' order, in one statement (its rows commit
 * together or not at all). Should that statement fail, each of its items is written again alone,
 * so an item that breaks a constraint fails only its own caller.
 */
export interface CoalescingWriter<I, O> {
  run(item: I): Promise<O>
}

export function coalescingWriter<I, O>(write: (items: I[]) => Promise<O[]>, options: CoalesceOptions = {}): CoalescingWriter<I, O> {
  const maxInFlight = options.maxInFlight ?? 2
  const maxBatch = options.maxBatch ?? 256
  let pending: Array<{ item: I; resolve(value: O): void; reject(error: unknown): void }> = []
  let inFlight = 0
  let scheduled = false

  function schedule(): void {
    if (scheduled || inFlight >= maxInFlight || pending.length === 0) return
    scheduled = true
    setImmediate(flush)
  }

  function flush(): void {
    scheduled = false
    while (inFlight < maxInFlight && pending.length > 0) {
      const batch = pending.slice(0, maxBatch)
      pending = pending.slice(batch.length)
      inFlight++
      void run(batch).finally(() => {
        inFlight--
        schedule()
      })
    }
  }

  async function run(batch: typeof pending): Promise<void> {
    try {
      const results = await write(batch.map((waiter) => waiter.item))
      for (const [index, waiter] of batch.entries()) waiter.resolve(results[index] as O)
    } catch (error) {
      if (batch.length === 1) {
        ;(batch[0] as (typeof batch)[number]).reject(error)
        return
      }
      for (const waiter of batch) await run([waiter])
    }
  }

  return {
    run(item) {
      return new Promise<O>((resolve, reject) => {
        pending.push({ item, resolve, reject })
        schedule()
      })
    },
  }
}
