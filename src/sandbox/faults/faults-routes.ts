import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { ApiError } from '../../core/errors.js'
import { Id, Timestamp } from '../../core/schemas.js'
import { errorResponses } from '../../http/errors.js'
import { ADMIN_SECURITY } from '../../http/openapi.js'
import { type FaultableRoutes, normalizeRoute } from './fault-injection.js'
import type { Fault } from './faults-repo.js'
import { type FaultsService, MAX_FAULTS_PER_APP } from './faults-service.js'

const AppId = Id({ description: 'App id' })
const MAX_LISTED = 1000

const Match = Type.Object(
  {
    route: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 300,
        description: '`METHOD /v2/path` as the API reference names it: `POST /v2/payments/{payment_id}/approve`',
      }),
    ),
    operation_id: Type.Optional(
      Type.String({ minLength: 1, maxLength: 100, description: 'The operationId of a /v2 route: `approvePayment`' }),
    ),
    user_uid: Type.Optional(Id({ description: "Only calls for this user (the app's uid of the user: the token's, or the payment's)" })),
  },
  { additionalProperties: false, description: 'Which calls of the app; none given: every /v2 call of the app' },
)
const StatusEffect = Type.Object(
  {
    status: Type.Union([Type.Literal(500), Type.Literal(502), Type.Literal(503), Type.Literal(429)]),
    retry_after_seconds: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 86_400, description: 'Retry-After of a 429 or 503 (1 when absent)' }),
    ),
  },
  { additionalProperties: false },
)
const DelayEffect = Type.Object({ delay_ms: Type.Integer({ minimum: 1, maximum: 30_000 }) }, { additionalProperties: false })
const DropEffect = Type.Object(
  { drop: Type.Literal(true) },
  { additionalProperties: false, description: 'The connection is closed without an answer' },
)
const Effect = Type.Union([StatusEffect, DelayEffect, DropEffect])
const When = Type.Union([Type.Literal('before'), Type.Literal('after')], {
  description:
    '`before` (the default): the call fails without running, nothing changes; `after`: the call runs, then its answer is replaced, delayed or dropped',
})

const FaultSchema = Type.Object({
  id: Type.String(),
  app_id: Type.String(),
  match: Match,
  effect: Effect,
  when: When,
  times_left: Type.Union([Type.Integer(), Type.Null()], { description: 'Calls it still fails; null: until deleted' }),
  probability: Type.Number(),
  created_at: Timestamp('ISO 8601 UTC (real time)'),
})

const toDto = (fault: Fault) => ({
  id: fault.id,
  app_id: fault.appId,
  match: {
    ...(fault.route === null ? {} : { route: fault.route }),
    ...(fault.operationId === null ? {} : { operation_id: fault.operationId }),
    ...(fault.userUid === null ? {} : { user_uid: fault.userUid }),
  },
  effect: fault.effect,
  when: fault.when,
  times_left: fault.timesLeft,
  probability: fault.probability,
  created_at: fault.createdAt.toISOString(),
})

/** /sandbox/faults (docs/testing.md, "Fault injection"). Sandbox mode only. */
export function faultsRoutes(app: FastifyInstance, deps: { faults: FaultsService; routes: FaultableRoutes }): void {
  const { faults, routes } = deps
  const r = app.withTypeProvider<TypeBoxTypeProvider>()
  const common = { tags: ['Sandbox'], security: ADMIN_SECURITY }
  const config = { auth: 'admin' as const }

  r.post(
    '/sandbox/faults',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxCreateFault',
        summary: 'Make chosen /v2 calls of an app fail: a status, a delay or a dropped connection',
        description: `For the next \`times\` matching calls, or every one until deleted, each with \`probability\`. At most ${MAX_FAULTS_PER_APP} faults an app. It holds on every process when this answers.`,
        body: Type.Object(
          {
            app_id: AppId,
            match: Type.Optional(Match),
            effect: Effect,
            when: Type.Optional(When),
            times: Type.Optional(
              Type.Integer({ minimum: 1, maximum: 1_000_000, description: 'The next N matching calls; absent: until deleted' }),
            ),
            probability: Type.Optional(
              Type.Number({ exclusiveMinimum: 0, maximum: 1, description: 'Chance a matching call fails (1 when absent)' }),
            ),
          },
          { additionalProperties: false },
        ),
        response: { 201: FaultSchema, ...errorResponses(401, 404, 409) },
      },
    },
    async (request, reply) => {
      const { match = {}, ...body } = request.body
      const route = match.route === undefined ? null : normalizeRoute(match.route)
      if (route !== null && !routes.has(route)) {
        throw new ApiError('invalid_arguments', `match.route: no /v2 route ${route.slice(0, 300)}; one of: ${routes.list().join(', ')}`)
      }
      if (match.operation_id !== undefined && !routes.hasOperation(match.operation_id)) {
        throw new ApiError('invalid_arguments', `match.operation_id: no /v2 operation ${match.operation_id}.`)
      }
      const created = await faults.create({
        appId: body.app_id,
        route,
        operationId: match.operation_id ?? null,
        userUid: match.user_uid ?? null,
        effect: body.effect,
        when: body.when ?? 'before',
        times: body.times ?? null,
        probability: body.probability ?? 1,
      })
      return reply.code(201).send(toDto(created))
    },
  )

  r.get(
    '/sandbox/faults',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxListFaults',
        summary: 'List the faults (of one app), oldest first; spent ones show times_left 0',
        querystring: Type.Object({ app_id: Type.Optional(AppId) }),
        response: { 200: Type.Object({ faults: Type.Array(FaultSchema, { maxItems: MAX_LISTED }) }), ...errorResponses(401) },
      },
    },
    async (request) => ({ faults: (await faults.list(request.query.app_id, MAX_LISTED)).map(toDto) }),
  )

  r.delete(
    '/sandbox/faults/:fault_id',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxDeleteFault',
        summary: 'Delete a fault',
        params: Type.Object({ fault_id: Id() }),
        response: { 204: Type.Null(), ...errorResponses(401, 404) },
      },
    },
    async (request, reply) => {
      await faults.delete(request.params.fault_id)
      return reply.code(204).send(null)
    },
  )

  r.delete(
    '/sandbox/faults',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxClearFaults',
        summary: "Delete an app's faults (every fault without app_id)",
        querystring: Type.Object({ app_id: Type.Optional(AppId) }),
        response: { 204: Type.Null(), ...errorResponses(401) },
      },
    },
    async (request, reply) => {
      await faults.clear(request.query.app_id)
      return reply.code(204).send(null)
    },
  )
}
