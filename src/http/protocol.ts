import { randomUUID } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { ApiError } from '../core/errors.js'
import { writeRawError } from './errors.js'

/** The `Expect` value HTTP/1.1 defines; Node answers it with `100 Continue` itself. */
const CONTINUE = /^100-continue$/i

/**
 * What Node's HTTP server would otherwise answer on its own, without the platform's body,
 * `X-Content-Type-Options` or `X-Request-Id`, goes through the application instead:
 *
 * - an `Expect` other than `100-continue` (Node's bare 417) is routed, and refused with 417
 *   `expectation_failed` before its body is read;
 * - an HTTP/1.1 request without `Host` (Node's bare 400; the server is built with
 *   `requireHostHeader: false`) is routed, and refused with 400 `bad_request`;
 * - a `CONNECT` (which Node drops without an answer) is answered 400 `bad_request` on its socket.
 *
 * Both refused routed requests close the connection: their body, if any, was not read.
 */
export function registerProtocolChecks(app: FastifyInstance): void {
  app.server.on('checkExpectation', (request, response) => app.server.emit('request', request, response))
  app.server.on('connect', (_request, socket) => {
    const reqId = randomUUID()
    app.log.debug({ reqId, method: 'CONNECT' }, 'refused a CONNECT request')
    writeRawError(socket, new ApiError('bad_request', 'CONNECT is not supported: this server is not a proxy.'), reqId)
  })

  app.addHook('onRequest', (request, reply, done) => {
    const raw = request.raw
    const expect = raw.headers.expect
    if (expect !== undefined && !CONTINUE.test(expect)) {
      reply.header('connection', 'close')
      done(new ApiError('expectation_failed', 'The only expectation this server meets is "Expect: 100-continue".'))
      return
    }
    if (raw.headers.host === undefined && raw.httpVersionMajor === 1 && raw.httpVersionMinor >= 1) {
      reply.header('connection', 'close')
      done(new ApiError('bad_request', 'An HTTP/1.1 request must carry a Host header.'))
      return
    }
    done()
  })
}
