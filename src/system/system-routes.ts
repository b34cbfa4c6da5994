import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { ApiError } from '../core/errors.js'
import { errorResponses } from '../http/errors.js'

const Status = Type.Object({ status: Type.String() })

export function systemRoutes(app: FastifyInstance, deps: { ping: () => Promise<void> }): void {
  const r = app.withTypeProvider<TypeBoxTypeProvider>()

  r.get(
    '/healthz',
    { schema: { operationId: 'health', tags: ['System'], summary: 'The process is alive', response: { 200: Status } } },
    async () => ({ status: 'ok' }),
  )

  r.get(
    '/readyz',
    {
      schema: {
        operationId: 'ready',
        tags: ['System'],
        summary: 'The database answers',
        response: { 200: Status, ...errorResponses(503) },
      },
    },
    async (request) => {
      try {
        await deps.ping()
      } catch (error) {
        request.log.warn({ err: error }, 'readiness check failed')
        throw new ApiError('service_unavailable', 'The database is not reachable.')
      }
      return { status: 'ready' }
    },
  )

  r.get('/v2/openapi.json', { schema: { hide: true } }, async () => app.swagger())
}
