/**
 * The baseline: the smallest useful Fastify server, as fast as Fastify gets on this machine.
 * GET / answers {"hello":"world"} serialised through a response schema (as Plinth's routes are);
 * GET /readyz exists only so the harness can wait for it the way it waits for Plinth.
 */
import Fastify from 'fastify'

const port = Number(process.env.PORT ?? '0')
const host = process.env.HOST ?? '127.0.0.1'

const app = Fastify({ logger: false })

const Hello = { type: 'object', properties: { hello: { type: 'string' } }, required: ['hello'] } as const
const Status = { type: 'object', properties: { status: { type: 'string' } }, required: ['status'] } as const

app.get('/', { schema: { response: { 200: Hello } } }, async () => ({ hello: 'world' }))
app.get('/readyz', { schema: { response: { 200: Status } } }, async () => ({ status: 'ready' }))

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    app.close().then(
      () => process.exit(0),
      () => process.exit(1),
    )
  })
}

app.listen({ port, host }).catch((error: unknown) => {
  process.stderr.write(`hello: failed to start: ${error instanceof Error ? error.message : String(error)}\n`)
  process.exit(1)
})
