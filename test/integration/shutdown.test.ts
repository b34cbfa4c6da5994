import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { subscribe, unsubscribe } from 'node:diagnostics_channel'
import { describe, it } from 'node:test'
import { Pool } from 'undici'
import { sandbox, TEST_DB } from '../helpers/platform.js'
import { RawConnection, type RawResponse } from '../helpers/raw-http.js'
import { freePort, httpNode, PlinthProcess, setUpBackend } from '../helpers/server-process.js'

const ROUNDS = 3
const FETCH_WORKERS = 10
/** Sequential clients sharing the pool's 4 connections, so requests are pipelined on them. */
const POOL_WORKERS = 12
const RAW_CONNECTIONS = 8
const PIPELINED = 3
const SLOW_REQUESTS = 3
/** SIGTERM goes once this many answers have arrived. */
const ANSWERS_BEFORE_SIGNAL = 10

interface Outcome {
  id: string
  status?: number
  connection?: string
  error?: string
}

/**
 * A rolling deploy's stop: keep-alive clients (fetch, an undici Pool pipelining on a few
 * connections, and raw sockets with requests pipelined just before the signal) have requests
 * in flight when SIGTERM comes. Every request written before the signal must be answered (a
 * 200: no 503, no reset), and the process must close the database and exit 0.
 */
describe('graceful shutdown under keep-alive load', () => {
  for (let round = 1; round <= ROUNDS; round++) {
    it(`round ${round}: every request written before SIGTERM is answered, then the database closes and the exit is 0`, async (t) => {
      const setup = await setUpBackend(TEST_DB)
      const server = PlinthProcess.spawn(await freePort(), { ...setup.env, LOG_LEVEL: 'info' })
      const output: Buffer[] = []
      server.child.stdout?.on('data', (chunk: Buffer) => output.push(chunk))
      server.child.stderr?.on('data', (chunk: Buffer) => output.push(chunk))
      const pool = new Pool(server.base, { connections: 4, pipelining: 6 })
      // Which requests a client had fully written (a GET: its head) before SIGTERM, by X-Request-Id.
      let signalled = false
      const writtenBeforeSignal = new Map<string, boolean>()
      const onHeaders = (message: unknown) => {
        const id = /x-request-id: (\S+)/i.exec(String((message as { headers?: unknown }).headers))?.[1]
        if (id !== undefined) writtenBeforeSignal.set(id, !signalled)
      }
      subscribe('undici:client:sendHeaders', onHeaders)
      try {
        await server.waitReady()
        const app = await sandbox(httpNode(server.base)).createApp()
        const path = '/v2/payments/incomplete_server_payments'
        const headers = (id: string) => ({ authorization: `Key ${app.api_key}`, 'x-request-id': id })
        const rawRequest = (id: string) =>
          `GET ${id.endsWith('r') ? '/readyz' : path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Key ${app.api_key}\r\nX-Request-Id: ${id}\r\n\r\n`

        // Raw keep-alive connections, each answered once and now idle.
        const raw = await Promise.all(Array.from({ length: RAW_CONNECTIONS }, () => RawConnection.open(server.port)))
        await Promise.all(raw.map((connection, i) => connection.write(rawRequest(`warm-${round}-${i}`))))
        for (const connection of raw) assert.equal((await connection.answers(1))[0]?.status, 200)

        let answered = 0
        let fire: () => void = () => {}
        const enough = new Promise<void>((resolve) => {
          fire = resolve
        })
        const count = () => {
          answered += 1
          if (answered === ANSWERS_BEFORE_SIGNAL) fire()
        }
        const outcomes: Outcome[] = []
        const run = async (id: string, send: (id: string) => Promise<{ status: number; connection: string | undefined }>) => {
          try {
            const { status, connection } = await send(id)
            count()
            outcomes.push({ id, status, ...(connection === undefined ? {} : { connection }) })
          } catch (error) {
            outcomes.push({ id, error: String((error as { cause?: unknown }).cause ?? error) })
          }
        }
        const unique = () => randomBytes(6).toString('hex')
        // Clients that keep sending, one request after another, until the server has exited.
        const worker = async (name: string, send: (id: string) => Promise<{ status: number; connection: string | undefined }>) => {
          for (let i = 0; !server.hasExited(); i++) await run(`${name}-${i}-${unique()}`, send)
        }
        const load = [
          ...Array.from({ length: FETCH_WORKERS }, (_, w) =>
            worker(`fetch-${round}-${w}`, async (id) => {
              const response = await fetch(`${server.base}${path}`, { headers: headers(id) })
              await response.arrayBuffer()
              return { status: response.status, connection: response.headers.get('connection') ?? undefined }
            }),
          ),
          ...Array.from({ length: POOL_WORKERS }, (_, w) =>
            worker(`pool-${round}-${w}`, async (id) => {
              const response = await pool.request({ method: 'GET', path, headers: headers(id) })
              await response.body.arrayBuffer()
              const connection = response.headers.connection
              return { status: response.statusCode, connection: typeof connection === 'string' ? connection : undefined }
            }),
          ),
        ]

        // Ten answers in: the raw connections pipeline requests, fully written, then SIGTERM.
        await enough
        const rawIds = raw.map((_, i) => Array.from({ length: PIPELINED }, (_, j) => `raw-${round}-${i}-${j}${j === 1 ? 'r' : ''}`))
        await Promise.all(raw.map((connection, i) => connection.write((rawIds[i] ?? []).map(rawRequest).join(''))))
        // Requests whose body is half sent: received, and still in flight once the server drains.
        const slow = await Promise.all(Array.from({ length: SLOW_REQUESTS }, () => RawConnection.open(server.port)))
        const slowBodies = slow.map((_, i) => JSON.stringify({ username: `slow_${round}_${i}_${unique()}` }))
        await Promise.all(
          slow.map((connection, i) => {
            const body = slowBodies[i] ?? ''
            return connection.write(
              `POST /sandbox/users HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
            )
          }),
        )
        signalled = true
        const stoppedAt = performance.now()
        server.child.kill('SIGTERM')
        // Once the server drains, the rest of those bodies: the answers must close their connections.
        const drainingDeadline = Date.now() + 15_000
        while (!Buffer.concat(output).toString().includes('every connection closes after its last answer')) {
          // (Without it, the bodies go anyway: the assertions below say what went wrong.)
          if (Date.now() > drainingDeadline || server.hasExited()) break
          await new Promise((resolve) => setTimeout(resolve, 10))
        }
        await Promise.all(slow.map((connection, i) => connection.write((slowBodies[i] ?? '').slice(5)).catch(() => undefined)))

        const exit = await server.stop(30_000)
        await Promise.all(load)
        const rawClosed = await Promise.all(raw.map((connection) => connection.closed))
        const exitMs = Math.round(performance.now() - stoppedAt)
        const log = Buffer.concat(output).toString()

        assert.equal(exit.code, 0, `the exit code; the server printed:\n${log.slice(-4000)}`)

        // fetch and the pool: every request written before the signal has its answer, a 200.
        let before = 0
        let closeAnswers = 0
        for (const outcome of outcomes) {
          if (outcome.connection === 'close') closeAnswers += 1
          if (outcome.status !== undefined) assert.equal(outcome.status, 200, `${outcome.id}: an answer, but not a 200`)
          if (writtenBeforeSignal.get(outcome.id) === true) {
            before += 1
            assert.equal(
              outcome.status,
              200,
              `${outcome.id} was written before SIGTERM but got ${outcome.error ?? outcome.status} (the server logged it: ${log.includes(outcome.id)})`,
            )
          }
        }
        // The raw connections: every pipelined request answered, in order, the connection closed by the server.
        let rawClose = 0
        for (const [i, connection] of raw.entries()) {
          const answers: RawResponse[] = connection.responses
          assert.equal(
            answers.length,
            1 + PIPELINED,
            `raw connection ${i}: ${answers.length - 1} of ${PIPELINED} pipelined answers (${String(rawClosed[i])})`,
          )
          assert.deepEqual(
            answers.slice(1).map((answer) => answer.headers['x-request-id']),
            rawIds[i],
          )
          for (const answer of answers) assert.equal(answer.status, 200, answer.text.slice(0, 300))
          // Only the last answer of a connection may close it: the pipelined ones before it keep it open.
          for (const answer of answers.slice(0, -1)) assert.notEqual(answer.headers.connection, 'close', `raw connection ${i}`)
          if (answers.at(-1)?.headers.connection === 'close') rawClose += 1
          assert.equal(rawClosed[i], undefined, `raw connection ${i} ended by an error`)
        }
        assert.match(log, /database closed; exiting/)
        assert.doesNotMatch(log, /shutdown took too long/)
        const errors = new Map<string, number>()
        for (const { error } of outcomes) {
          const kind = error?.replace(/ 127\.0\.0\.1:\d+$/, '')
          if (kind !== undefined) errors.set(kind, (errors.get(kind) ?? 0) + 1)
        }
        t.diagnostic(
          `${TEST_DB}: ${outcomes.filter((o) => o.status === 200).length}/${outcomes.length} fetch+pool answered ` +
            `(${before} written before SIGTERM, all 200; ${outcomes.filter((o) => o.error !== undefined).length} failed after: ${JSON.stringify([...errors])}), ` +
            `${closeAnswers} with Connection: close; raw ${RAW_CONNECTIONS}x${PIPELINED} pipelined all answered, ` +
            `${rawClose} closed by their last answer; ${SLOW_REQUESTS} answered after draining began, with Connection: close; exit ${exit.code} ${exitMs} ms after SIGTERM`,
        )
        // Answers sent once draining began close their connections.
        for (const [i, connection] of slow.entries()) {
          const [answer] = await connection.answers(1)
          assert.equal(answer?.status, 201, `slow request ${i}: ${answer?.text.slice(0, 300) ?? String(await connection.closed)}`)
          assert.equal(answer.headers.connection, 'close', `slow request ${i}`)
          assert.equal(await connection.closed, undefined, `slow request ${i}: the server closed the connection cleanly`)
        }
      } finally {
        unsubscribe('undici:client:sendHeaders', onHeaders)
        await pool.destroy()
        await server.kill()
        await setup.cleanup()
      }
    })
  }
})
