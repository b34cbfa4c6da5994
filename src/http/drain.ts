import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'

/** How often, while draining, connections left idle on keep-alive are closed. */
const IDLE_SWEEP_MS = 100
/**
 * How long a connection must have been quiet before the drain closes it. A client sends its next
 * request right after an answer: closed in that instant, the request would be reset unread.
 */
const IDLE_GRACE_MS = 250
/**
 * The longest the drain waits for the connections already made to be taken in. Node accepts one
 * connection per turn of the event loop, and a turn of a loaded server takes a few hundred ms.
 */
const SETTLE_MAX_MS = 5_000

/** Resolves after the event loop has polled for I/O at least once more. */
function nextPoll(): Promise<void> {
  return new Promise((resolve) => setImmediate(() => setImmediate(resolve)))
}

/**
 * A graceful stop for rolling deploys: every request that reached the server is answered, and
 * no connection is kept once its last answer has gone.
 *
 * - Requests being handled, pipelined behind others or arriving on an open connection are all
 *   served (the application is built with `return503OnClosing: false`), with the database open.
 * - From the moment stopping begins, the last answer on each connection carries
 *   `Connection: close` (Node then closes the socket); an answer with more pipelined requests
 *   queued behind it keeps the connection, so that they are answered too.
 * - Before it stops listening, the server takes in what was already sent: Node accepts one
 *   connection from the listen backlog per turn of the event loop, so it polls until a turn
 *   accepts none (at most 5 s), then once more to read what those connections brought. A
 *   connection still in the backlog when the socket closes is reset by the kernel: a connection
 *   made and a request written before the signal are served instead.
 * - A connection idle for a quarter second (a client sends its next request as soon as it has an
 *   answer), checked every 100 ms, is closed, but only after the loop has polled once more and
 *   found nothing on it: a request that arrived while the loop was busy is served, not reset.
 *   A request sent after the signal on an idle connection in the instant it closes is the one
 *   case left, the race every HTTP/1.1 client retries on a kept-alive connection (it is never
 *   read, so never acted on).
 *
 * Must be called before the server listens; `drain()` resolves when the app is closed.
 */
export function registerDrain(app: FastifyInstance): { drain(): Promise<void> } {
  const server = app.server
  let stopping = false
  /** Connections accepted: the drain waits until a turn accepts none. */
  let accepted = 0
  /** Open connections; what each has received and answered, and when it was last active, is on the socket itself. */
  const open = new Set<Tracked>()
  server.on('connection', (socket: Tracked) => {
    accepted += 1
    socket[RECEIVED] = 0
    socket[ANSWERED] = 0
    socket[ACTIVE] = performance.now()
    open.add(socket)
    socket.once('close', () => open.delete(socket))
  })

  // Per request: counters on the socket and one shared listener, no closure or map entry (this
  // runs on every request: BENCHMARKS.md, Performance work).
  server.on('request', (request: IncomingMessage & { [PLACE]?: number }, response: ServerResponse) => {
    const socket = request.socket as Tracked
    const count = (socket[RECEIVED] ?? 0) + 1
    socket[RECEIVED] = count
    request[PLACE] = count
    socket[ACTIVE] = performance.now()
    response.on('close', answered)
  })
  /** Requests received and not yet answered on a connection (a pipelining client has several). */
  const pending = (socket: Tracked) => (socket[RECEIVED] ?? 0) - (socket[ANSWERED] ?? 0)

  // Node's own sweep (which server.close() runs too) closes a connection whose current answer is
  // written even when pipelined requests still wait behind it, resetting them: it spares those,
  // and the connections that were active a moment ago (the interval sweep closes them later).
  // A connection that looks idle may hold a request the server has not read: one that arrived
  // while the event loop was busy (a long handler, a starved process) is read only at the next
  // poll, and closing the socket first resets it unread. So the sweep only picks the quiet ones
  // and closes them after the loop has polled again, if that poll brought them nothing.
  const closeIdleConnections = server.closeIdleConnections.bind(server)
  server.closeIdleConnections = () => {
    const quietSince = performance.now() - IDLE_GRACE_MS
    const quiet = new Map<Tracked, number | undefined>()
    for (const socket of open) if ((socket[ACTIVE] ?? 0) <= quietSince && pending(socket) === 0) quiet.set(socket, socket[ACTIVE])
    if (quiet.size === 0) return
    void nextPoll().then(() => {
      // Node closes only the connections it knows idle (no answer unfinished, no request begun).
      const spared = [...open].filter((socket) => !quiet.has(socket) || quiet.get(socket) !== socket[ACTIVE] || pending(socket) > 0)
      for (const socket of spared) socket.destroy = keep
      try {
        closeIdleConnections()
      } finally {
        for (const socket of spared) Reflect.deleteProperty(socket, 'destroy')
      }
    })
  }

  app.addHook('onSend', (request, reply, payload, done) => {
    if (!stopping) {
      done(null, payload)
      return
    }
    // Pipelined answers go out in order: only the answer to the latest request received may close.
    if ((request.raw as { [PLACE]?: number })[PLACE] !== (request.raw.socket as Tracked)[RECEIVED]) {
      // Fastify marks every answer `Connection: close` on the raw response once closing: not this
      // one, others follow it. (An answer that must close itself, a 413 whose body was not read,
      // set the reply's own header, which this leaves.)
      reply.raw.removeHeader('connection')
    } else {
      reply.header('connection', 'close')
    }
    done(null, payload)
  })

  return {
    async drain() {
      // Answers still keep their connections while settling: closing one would reset a pipelined
      // request behind it that is not read yet. Node accepts one connection from the listen
      // backlog per turn, and reads what a connection brings at the turn after it was accepted:
      // a turn with no new connection means the backlog is empty, and the next one has read what
      // was sent on every connection before the signal.
      const settleBy = performance.now() + SETTLE_MAX_MS
      for (;;) {
        const seen = accepted
        await nextPoll()
        await nextPoll()
        if (accepted === seen || performance.now() > settleBy) break
      }
      await nextPoll()
      stopping = true
      app.log.info('draining: every connection closes after its last answer')
      const sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS)
      sweep.unref()
      try {
        // Stops listening, closes idle connections and waits for the others, then runs onClose hooks.
        await app.close()
      } finally {
        clearInterval(sweep)
      }
    },
  }
}

const RECEIVED = Symbol('requests received')
const ANSWERED = Symbol('requests answered')
const ACTIVE = Symbol('last active')
const PLACE = Symbol('place on its connection')
type Tracked = Socket & { [RECEIVED]?: number; [ANSWERED]?: number; [ACTIVE]?: number }

/** A response has closed (answered, or its connection gone): one listener shared by every response. */
function answered(this: ServerResponse): void {
  const socket = this.req.socket as Tracked
  if (!socket.destroyed) socket[ACTIVE] = performance.now()
  socket[ANSWERED] = (socket[ANSWERED] ?? 0) + 1
}

/** Stands in for `destroy` on a connection that must not be closed yet. */
function keep(this: Socket): Socket {
  return this
}
