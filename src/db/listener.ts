import pg from 'pg'

/** How long a dropped LISTEN connection waits before it connects again. */
const RECONNECT_MS = 1_000

export interface ListenHandlers {
  /** A notification's payload. */
  onNotify: (payload: string) => void
  /** The connection is listening again after a drop (notifications sent meanwhile are lost: read the state afresh). */
  onListening: () => void
  onError: (error: unknown) => void
}

/**
 * LISTEN on a connection of its own, outside the pool, so a waiting process holds exactly one
 * connection however many are waiting in it. The channel is named by a SQL expression evaluated
 * on that connection (with the pool's search_path), so it can depend on the schema. A dropped
 * connection is replaced after a second, for as long as the listener is open.
 */
export function listenOn(
  connection: { connectionString: string | undefined; schema: string | undefined },
  channelSql: string,
  handlers: ListenHandlers,
): { close(): Promise<void> } {
  let closed = false
  let client: pg.Client | undefined
  let retry: NodeJS.Timeout | undefined

  const connect = async () => {
    retry = undefined
    if (closed) return
    const next = new pg.Client({
      connectionString: connection.connectionString,
      ...(connection.schema === undefined ? {} : { options: `-c search_path="${connection.schema}"` }),
    })
    client = next
    let dropped = false
    const drop = (error: unknown) => {
      if (dropped) return
      dropped = true
      if (!closed) handlers.onError(error)
      next.end().catch(() => {})
      if (client === next) client = undefined
      if (!closed) retry = setTimeout(connect, RECONNECT_MS)
    }
    next.on('error', drop)
    next.on('end', () => drop(new Error('the LISTEN connection ended')))
    next.on('notification', (message) => handlers.onNotify(message.payload ?? ''))
    try {
      await next.connect()
      const { rows } = await next.query<{ channel: string }>(`select ${channelSql} as channel`)
      const channel = rows[0]?.channel ?? ''
      await next.query(`listen "${channel.replaceAll('"', '""')}"`)
      if (closed) await next.end()
      else handlers.onListening()
    } catch (error) {
      drop(error)
    }
  }
  void connect()

  return {
    async close() {
      closed = true
      if (retry !== undefined) clearTimeout(retry)
      await client?.end().catch(() => {})
    },
  }
}
