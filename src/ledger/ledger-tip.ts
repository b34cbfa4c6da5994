import type { Listen } from '../db/database.js'

export interface LedgerTipDeps {
  /**
   * The NOTIFY channel of the ledger's tip, as SQL: one per network and schema (tests run many
   * schemas in one database), hashed so any schema name gives an identifier within PostgreSQL's 63
   * bytes (src/ledger/networks.ts). Migration 0029's `ledger_close` notifies on the same expression.
   */
  channelSql: string
  /** The newest applied ledger number, read through the pool. */
  latest: () => Promise<bigint>
  /** PostgreSQL's LISTEN (src/db/listener.ts); absent on PGlite, where the process is the only writer. */
  listen?: Listen | undefined
  /** Milliseconds between reads of `latest` while someone waits: the longest a lost notification delays. */
  pollMs: number
  onError: (error: unknown) => void
}

/**
 * The newest ledger this process knows has been applied by any process, and a way to wait for
 * it to pass a number without holding a database connection.
 *
 * - The database trigger that draws a ledger's number at COMMIT (migration 0014, `ledger_close`)
 *   sends `pg_notify(channel, ledger)`, which PostgreSQL delivers once that COMMIT is done; each
 *   process LISTENs on one dedicated connection, opened at the first wait and kept until close.
 * - On PGlite, the only writer, the process raises the signal itself after its COMMIT (`closed`).
 * - While anyone waits, `latest` is read every `pollMs`, so a notification lost to a dropped
 *   connection only delays.
 *
 * Ledger numbers become visible in commit order (docs/design.md), so a read made after the tip
 * passed N sees every record up to N: a follower that reads "after my cursor" when woken never
 * skips one.
 */
export function ledgerTip(deps: LedgerTipDeps) {
  let tip = 0n
  const waiters = new Set<() => void>()
  let listener: { close(): Promise<void> } | undefined
  let poll: NodeJS.Timeout | undefined
  let polling = false
  let closed = false
  /** Streams open in this process: the poll runs while there is one. */
  let holders = 0

  const raise = (ledger: bigint) => {
    if (ledger <= tip) return
    tip = ledger
    const woken = [...waiters]
    waiters.clear()
    for (const wake of woken) wake()
  }

  const readLatest = async () => {
    if (polling || closed) return
    polling = true
    try {
      raise(await deps.latest())
    } catch (error) {
      deps.onError(error)
    } finally {
      polling = false
    }
  }

  /** Starts listening at the first hold, and polling while anything is held. */
  const watch = (waiting: boolean) => {
    if (closed) return
    if (waiting && listener === undefined && deps.listen !== undefined) {
      listener = deps.listen(deps.channelSql, {
        onNotify: (payload) => {
          if (/^[0-9]{1,19}$/.test(payload)) raise(BigInt(payload))
        },
        onListening: () => void readLatest(),
        onError: deps.onError,
      })
    }
    if (waiting && poll === undefined) {
      poll = setInterval(() => void readLatest(), deps.pollMs)
      poll.unref()
      // The tip is not followed while no stream is open: learn it now.
      void readLatest()
    } else if (!waiting && poll !== undefined) {
      clearInterval(poll)
      poll = undefined
    }
  }

  return {
    /** The newest ledger number known to this process (0 before it learnt any). */
    current: (): bigint => tip,

    /**
     * Called once the transaction that closed `ledger` has committed in this process. On
     * PostgreSQL every process, this one included, learns it from the NOTIFY the database sends
     * at that COMMIT (migration 0014), so the tests of LISTEN see it as any other process does.
     */
    closed(ledger: string): void {
      if (deps.listen === undefined) raise(BigInt(ledger))
    },

    /** Keeps the tip fresh (LISTEN, and the poll) until the returned release is called. */
    hold(): () => void {
      holders += 1
      watch(true)
      let released = false
      return () => {
        if (released) return
        released = true
        holders -= 1
        if (holders === 0) watch(false)
      }
    },

    /**
     * Resolves once the tip is past `seen`, or when `signal` aborts. Holds no connection; many
     * waiters share one wake-up.
     */
    async waitPast(seen: bigint, signal: AbortSignal): Promise<void> {
      if (tip > seen || signal.aborted || closed) return
      await new Promise<void>((resolve) => {
        const done = () => {
          waiters.delete(done)
          signal.removeEventListener('abort', done)
          resolve()
        }
        waiters.add(done)
        signal.addEventListener('abort', done, { once: true })
      })
    },

    /**
     * A reset or a restore put the ledger back: the tip is `ledger` now, even if lower (every stream
     * open on the old world is ended by its hub; new ones wait past the new tip).
     */
    rewind(ledger: bigint): void {
      tip = ledger
      const woken = [...waiters]
      waiters.clear()
      for (const wake of woken) wake()
    },

    /** How many wait, and how many hold the tip (none once every stream is gone). */
    usage: () => ({ waiting: waiters.size, holders }),

    async close(): Promise<void> {
      closed = true
      watch(false)
      if (poll !== undefined) clearInterval(poll)
      for (const wake of [...waiters]) wake()
      await listener?.close()
    },
  }
}

export type LedgerTip = ReturnType<typeof ledgerTip>
