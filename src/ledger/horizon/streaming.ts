import { once } from 'node:events'
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify'
import type { StreamLimits } from '../../config.js'
import { badParameter, LedgerError, problem } from '../ledger-errors.js'
import type { LedgerTip } from '../ledger-tip.js'
import type { PageQuery } from '../ledger-types.js'
import { afterLedgerToken, cursorLedger } from '../paging-tokens.js'

/**
 * Horizon's Server-Sent Events, as its `render/sse` writes them: a `hello` on `open` that sets
 * the client's retry to a second, one message per record (`id` = its paging token, `data` = the
 * record as the collection serves it), and `byebye` on `close` (retry 10 ms) once `limit` records
 * have gone, after which the client reconnects from the last id. Horizon sends nothing while idle;
 * this server sends an SSE comment every heartbeat, which clients ignore and which keeps proxies
 * and the server's own idle timeout from closing the connection.
 *
 * A reset or a restore (a new world, whose ledger numbers go back) ends every open stream on
 * every process with `close`, its last `id` the position where the new world's numbering began
 * (`worldStart`): a client that reconnects with that Last-Event-ID gets every transaction of the
 * new world. A cursor or Last-Event-ID past every ledger number drawn can only come from a world
 * that was replaced (no record past them has been served), so it resumes there too: stellar-sdk,
 * which reconnects after `close` with `cursor` = the last record it received, gets the new world's
 * transactions, none skipped (docs/ledger.md, "Streams across a reset or a restore").
 */
const HELLO = 'retry: 1000\nevent: open\ndata: "hello"\n\n'
const GOODBYE = 'retry: 10\nevent: close\ndata: "byebye"\n\n'
const HEARTBEAT = ': heartbeat\n\n'
/** What Horizon sends when a stream fails after it started (the details go to the log). */
const FAILED = 'event: error\ndata: Unexpected stream error\n\n'

/** Records a stream reads at once; a longer backlog is read page after page. */
const READ_PAGE = 100
/** Stream reads running at once in a process: many streams woken together queue here, not on the pool. */
const CONCURRENT_READS = 4

/** What one collection lends its stream: its records after a cursor, and how each is serialised. */
export interface StreamSource<R extends { paging_token: string }> {
  list: (page: PageQuery) => Promise<R[]>
  serialize: (record: R) => string
  /** Whether a string is a paging token of the collection: Last-Event-ID must be one. */
  isCursor: (cursor: string) => boolean
}

/** True when the client asks for Server-Sent Events (Accept names text/event-stream, not with q=0). */
export function acceptsEventStream(request: FastifyRequest): boolean {
  const accept = request.headers.accept
  if (accept === undefined) return false
  return accept.split(',').some((range) => {
    const [type, ...parameters] = range.split(';').map((part) => part.trim().toLowerCase())
    return type === 'text/event-stream' && !parameters.some((parameter) => /^q=0(\.0*)?$/.test(parameter))
  })
}

/** A FIFO semaphore: at most `size` of the functions given run at once. */
function gate(size: number) {
  let running = 0
  const queue: Array<() => void> = []
  return async <T>(fn: () => Promise<T>): Promise<T> => {
    if (running >= size) await new Promise<void>((resolve) => queue.push(resolve))
    else running += 1
    try {
      return await fn()
    } finally {
      const next = queue.shift()
      if (next !== undefined) next()
      else running -= 1
    }
  }
}

export interface StreamHubDeps {
  tip: LedgerTip
  limits: StreamLimits
  /** The newest ledger number, for `cursor=now`. */
  latestLedger: () => Promise<bigint>
  /** The last ledger before the current world's numbering began (0 before any reset or restore). */
  worldStart: () => Promise<bigint>
  /** The highest ledger number drawn, committed or not: a cursor past it was served by a replaced world. */
  drawnLedger: () => Promise<bigint>
  log: FastifyBaseLogger
}

/**
 * Every open stream of this process, their bounds and their shared wake-up. A stream holds no
 * database connection while it waits: it waits for the ledger tip (ledger-tip.ts) to pass what
 * it last read, then reads once through the pool, a bounded page at a time, until it has caught up.
 */
export function streamHub(deps: StreamHubDeps) {
  const { tip, limits, log } = deps
  /** Ends each open stream (with `close` when the server stops). */
  const open = new Map<object, (farewell?: string) => void>()
  const perClient = new Map<string, number>()
  const read = gate(CONCURRENT_READS)
  let closing = false

  function admit(client: string): void {
    if (closing || open.size >= limits.maxOpen) {
      throw new LedgerError(problem('service_unavailable', 'The server has as many open streams as it serves; try again later.'))
    }
    if ((perClient.get(client) ?? 0) >= limits.maxPerClient) {
      throw new LedgerError(
        problem('rate_limit_exceeded', `A client may hold at most ${limits.maxPerClient} open streams; close one and try again.`),
      )
    }
  }

  /** The cursor a stream starts after: Last-Event-ID (a reconnect) wins over `cursor`, and `now` is after the newest ledger. */
  async function startCursor<R extends { paging_token: string }>(
    request: FastifyRequest,
    query: PageQuery,
    source: StreamSource<R>,
  ): Promise<string | undefined> {
    const lastEventId = request.headers['last-event-id']
    let cursor = query.cursor
    if (typeof lastEventId === 'string' && lastEventId !== '') {
      if (!source.isCursor(lastEventId)) {
        throw badParameter('Last-Event-ID', 'the paging_token of a record of this collection')
      }
      cursor = lastEventId
    }
    if (cursor === 'now') return afterLedgerToken(await deps.latestLedger())
    const ledger = cursor === undefined ? undefined : cursorLedger(cursor)
    // Past every number drawn: a position in a world a reset or a restore replaced; the new world starts after worldStart.
    if (ledger !== undefined && ledger > (await deps.drawnLedger())) return afterLedgerToken(await deps.worldStart())
    return cursor
  }

  return {
    /** Answers `request` as a stream of the collection's records after the cursor, until the client leaves or `limit` records went. */
    async serve<R extends { paging_token: string }>(
      request: FastifyRequest,
      reply: FastifyReply,
      query: PageQuery,
      source: StreamSource<R>,
    ): Promise<void> {
      if (query.order !== 'asc') throw badParameter('order', '"asc" on a stream (records arrive as they are applied)')
      const client = request.ip
      admit(client)
      let cursor = await startCursor(request, query, source)
      admit(client)

      const key = {}
      perClient.set(client, (perClient.get(client) ?? 0) + 1)
      const stop = new AbortController()
      const release = tip.hold()
      const res = reply.raw
      reply.hijack()
      res.writeHead(200, {
        ...(reply.getHeaders() as Record<string, string>),
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
        'access-control-allow-origin': '*',
      })
      res.write(HELLO)

      const write = (chunk: string) => {
        if (!res.writableEnded && !res.destroyed) res.write(chunk)
        heartbeat.refresh()
      }
      const heartbeat = setInterval(() => write(HEARTBEAT), limits.heartbeatSeconds * 1000)
      const lifetime = setTimeout(() => end(GOODBYE), limits.maxLifetimeSeconds * 1000)
      const end = (farewell?: string) => {
        if (stop.signal.aborted) return
        stop.abort()
        clearInterval(heartbeat)
        clearTimeout(lifetime)
        release()
        open.delete(key)
        const left = (perClient.get(client) ?? 1) - 1
        if (left > 0) perClient.set(client, left)
        else perClient.delete(client)
        if (res.writableEnded || res.destroyed) return
        if (farewell === undefined) res.end()
        else res.end(farewell)
      }
      open.set(key, end)
      res.on('close', () => end())

      let left = query.limit
      /** The tip this stream has read up to: it reads again once the tip passes it. */
      let readAt = -1n
      try {
        while (!stop.signal.aborted) {
          const current = tip.current()
          if (current > readAt) {
            readAt = current
            for (;;) {
              const size = Math.min(left, READ_PAGE)
              const after = cursor
              const records = await read(() =>
                stop.signal.aborted ? Promise.resolve([]) : source.list({ order: 'asc', limit: size, cursor: after }),
              )
              if (stop.signal.aborted) return
              for (const record of records) {
                write(`id: ${record.paging_token}\ndata: ${source.serialize(record)}\n\n`)
                cursor = record.paging_token
              }
              left -= records.length
              if (left <= 0) return end(GOODBYE)
              if (records.length < size) break
              // A slow reader: wait until what was written has gone before reading more.
              if (res.writableNeedDrain) await once(res, 'drain', { signal: stop.signal })
            }
          }
          await tip.waitPast(readAt, stop.signal)
        }
      } catch (error) {
        if (stop.signal.aborted) return
        log.error({ err: error, url: request.url }, 'a ledger stream failed')
        end(FAILED)
      }
    },

    /** Open streams in this process, and the client addresses holding them. */
    usage: () => ({ open: open.size, clients: perClient.size }),

    /**
     * A reset or a restore replaced the world (its ledger numbers went back): the tip is read again
     * and every open stream ends with `close`, its last id where the new world's numbering began.
     */
    async worldReplaced(): Promise<void> {
      const [start, latest] = await Promise.all([deps.worldStart(), deps.latestLedger()])
      tip.rewind(latest)
      const farewell = `id: ${afterLedgerToken(start)}\n${GOODBYE}`
      for (const end of [...open.values()]) end(farewell)
    },

    /** Refuses new streams and ends the open ones with Horizon's `close` (clients reconnect elsewhere). */
    closeAll(): void {
      closing = true
      for (const end of [...open.values()]) end(GOODBYE)
    },
  }
}

export type StreamHub = ReturnType<typeof streamHub>

declare module 'fastify' {
  interface FastifyInstance {
    /** How many ledger streams are open, and what waits on the ledger tip (src/app.ts). */
    ledgerStreams: { usage(): { open: number; clients: number; tip: { waiting: number; holders: number } } }
  }
}
