import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { startPlinth } from '../../src/index.js'
import { TEST_DB } from '../helpers/platform.js'
import { RawConnection } from '../helpers/raw-http.js'

const backend = () => (TEST_DB === 'postgres' ? { databaseUrl: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test' } : {})

/** Node accepts one connection per turn of the event loop; a starved server's turns are slow. */
const TURN_MS = 150
const CONNECTIONS = 12

/** Every turn of this process's event loop takes `TURN_MS` at least: a server on a loaded machine. */
function slowTurns(): () => void {
  const timer = setInterval(() => {
    const end = performance.now() + TURN_MS
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
})
