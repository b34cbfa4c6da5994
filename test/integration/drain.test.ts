import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { startPlinth } from '../../src/index.js'
import { TEST_DB } from '../helpers/platform.js'
import { RawConnection } from '../helpers/raw-http.js'

const backend = () => (TEST_DB === 'postgres' ? { databaseUrl: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test' } : {})

/** Node accepts one connection per turn of the event loop; a starved server's turns are slow. */
const TURN_MS = 150
const CONNECTIONS = 12

/** Every turn of this process's event loop takes `turnMs` at least: a server on a loaded machine. */
function slowTurns(turnMs = TURN_MS): () => void {
  const timer = setInterval(() => {
    const end = performance.now() + turnMs
    while (performance.now() < end) {
      // busy, as a starved server is between two polls
    }
  }, 1)
  return () => clearInterval(timer)
}

/**
 * The graceful stop (src/http/drain.ts) with the interleavings a loaded machine produces, forced
 * in process: the server here is slow because this test makes every turn of its loop slow.
 */
describe(`the graceful stop when the event loop is slow (${TEST_DB})`, () => {
  it(`answers ${CONNECTIONS} connections still in the listen backlog when the stop begins, then closes them`, async () => {
    const plinth = await startPlinth(backend())
    const port = Number(new URL(plinth.url).port)
    const stopSlowTurns = slowTurns()
    try {
      // Made and written before the stop: at one accept per slow turn, most still wait in the backlog.
      const connections = await Promise.all(Array.from({ length: CONNECTIONS }, () => RawConnection.open(port)))
      await Promise.all(
        connections.map((connection, i) =>
          connection.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-Id: backlog-${i}\r\n\r\n`),
        ),
      )
      const stopped = plinth.stop()
      const answers = await Promise.all(connections.map(async (connection) => (await connection.answers(1))[0]))
      stopSlowTurns()
      await stopped
      for (const [i, connection] of connections.entries()) {
        const answer = answers[i]
        assert.equal(answer?.status, 200, `connection ${i}: ${answer?.text ?? String(await connection.closed)}`)
        assert.equal(await connection.closed, undefined, `connection ${i}: closed cleanly by the server`)
      }
    } finally {
      stopSlowTurns()
      await plinth.stop()
    }
  })

  it('reads a request that reached an idle connection while the loop was busy before it closes the connection', async () => {
    const plinth = await startPlinth(backend())
    const port = Number(new URL(plinth.url).port)
    const connection = await RawConnection.open(port)
    const request = (i: number) => `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Request-Id: idle-${i}\r\n\r\n`
    await connection.write(request(0))
    await connection.answers(1)
    // A client that sends its next request the moment it has an answer, through the stop. Each
    // request reaches the server while its loop is busy (a turn of 300 ms, longer than the idle
    // grace), so the idle sweep, whose timer runs before the poll, sees a connection quiet for
    // longer than the grace with a request on it the server has not read.
    const stopSlowTurns = slowTurns(300)
    let written = 1
    const client = (async () => {
      while (connection.responses.length === written && connection.responses.at(-1)?.headers.connection !== 'close') {
        await connection.write(request(written)).catch(() => undefined)
        written += 1
        await connection.answers(written)
      }
    })()
    try {
      await plinth.stop()
      await client
      stopSlowTurns()
      assert.equal(
        connection.responses.length,
        written,
        `${written} requests written, ${connection.responses.length} answered (${String(await connection.closed)})`,
      )
      for (const answer of connection.responses) assert.equal(answer.status, 200)
      assert.equal(connection.responses.at(-1)?.headers.connection, 'close')
      assert.equal(await connection.closed, undefined, 'closed cleanly by the server')
    } finally {
      stopSlowTurns()
      await plinth.stop()
    }
  })
})
