import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { ApiError } from '../../core/errors.js'
import { Timestamp } from '../../core/schemas.js'
import { errorResponses } from '../../http/errors.js'
import { ADMIN_SECURITY } from '../../http/openapi.js'
import { MAX_SNAPSHOTS, SNAPSHOT_FILE_FORMAT, type WorldService } from './world-service.js'

const SnapshotName = Type.String({
  pattern: '^[a-z0-9][a-z0-9_-]{0,62}$',
  description: 'Lower-case letters, digits, `_` and `-`, starting with a letter or digit; at most 63 characters',
})
const SeedSchema = Type.Union([Type.Literal('demo'), Type.Literal('empty')], {
  description: '`demo` (the default): the demo app and user a sandbox creates at first start; `empty`: nothing',
})

/** A snapshot file's largest size on import: a few thousand payments take a few MB (~2 KB a completed payment). */
export const SNAPSHOT_IMPORT_LIMIT = 32 * 1024 * 1024

const SnapshotFileSchema = Type.Object(
  {
    plinth_snapshot: Type.Integer({ description: `The file format: ${SNAPSHOT_FILE_FORMAT}` }),
    name: Type.Optional(
      Type.String({ maxLength: 63, description: 'The name it was exported under (the import takes ?name= instead when given)' }),
    ),
    schema_version: Type.String({ maxLength: 200, description: 'The newest migration of the platform that exported it' }),
    created_at: Type.String({ pattern: '^(19|20)\\d{2}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,6})?Z$', description: 'ISO 8601 UTC' }),
    clock_offset_ms: Type.Integer({ minimum: 0, maximum: 100 * 366 * 86_400_000 }),
    sequences: Type.Record(
      Type.String(),
      Type.Object(
        { last: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }), called: Type.Boolean() },
        { additionalProperties: false },
      ),
    ),
    tables: Type.Record(Type.String(), Type.Array(Type.Record(Type.String(), Type.Unknown()))),
  },
  { additionalProperties: false },
)

/** POST /sandbox/reset and /sandbox/snapshots (docs/testing.md, "Reset and snapshots"). Sandbox mode only. */
export function worldRoutes(app: FastifyInstance, deps: { world: WorldService }): void {
  const { world } = deps
  const r = app.withTypeProvider<TypeBoxTypeProvider>()
  const common = { tags: ['Sandbox'], security: ADMIN_SECURITY }
  const config = { auth: 'admin' as const }
  const elapsed = (startedAt: number) => Math.round((performance.now() - startedAt) * 10) / 10

  r.post(
    '/sandbox/reset',
    {
      config,
      // No body at all is the default seed (curl -X POST, fetch without a body).
      preValidation: async (request) => {
        request.body ??= {}
      },
      schema: {
        ...common,
        operationId: 'sandboxReset',
        summary: 'Empty the platform, then seed it again',
        description:
          'Every app, key, user, token, payment, ledger entry, ad, notification and fault goes; ledger numbers start again at 1 and the clock is back on real time. One transaction; every process has taken it when this answers (credentials issued before are refused everywhere). Snapshots are kept.',
        body: Type.Object({ seed: Type.Optional(SeedSchema) }, { additionalProperties: false }),
        response: {
          200: Type.Object({
            seed: SeedSchema,
            took_ms: Type.Number(),
            demo: Type.Optional(
              Type.Object({
                app_id: Type.String(),
                app_name: Type.String(),
                api_key: Type.String({ description: "The new demo app's server API key; shown once" }),
                user_id: Type.String(),
                username: Type.String(),
              }),
            ),
          }),
          ...errorResponses(401, 503),
        },
      },
    },
    async (request) => {
      const startedAt = performance.now()
      const result = await world.reset(request.body.seed ?? 'demo')
      const demo = result.demo
      return {
        seed: result.seed,
        took_ms: elapsed(startedAt),
        ...(demo === undefined
          ? {}
          : {
              demo: {
                app_id: demo.appId,
                app_name: demo.appName,
                api_key: demo.apiKey ?? '',
                user_id: demo.userId,
                username: demo.username,
              },
            }),
      }
    },
  )

  r.get(
    '/sandbox/snapshots',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxListSnapshots',
        summary: 'List the saved snapshots, oldest first',
        response: {
          200: Type.Object({
            snapshots: Type.Array(
              Type.Object({
                name: Type.String(),
                created_at: Timestamp('ISO 8601 UTC (real time)'),
                bytes: Type.Number({ description: 'What its rows take in the database' }),
              }),
              { maxItems: MAX_SNAPSHOTS },
            ),
          }),
          ...errorResponses(401),
        },
      },
    },
    async () => {
      const snapshots = await world.listSnapshots()
      return { snapshots: snapshots.map((s) => ({ name: s.name, created_at: s.createdAt.toISOString(), bytes: s.bytes })) }
    },
  )

  r.post(
    '/sandbox/snapshots',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxSaveSnapshot',
        summary: 'Save the whole platform under a name',
        description: `At most ${MAX_SNAPSHOTS} snapshots; an existing name is 409 unless \`replace\` is true. Faults are not saved.`,
        body: Type.Object({ name: SnapshotName, replace: Type.Optional(Type.Boolean()) }, { additionalProperties: false }),
        response: {
          201: Type.Object({ name: Type.String(), created_at: Type.String(), bytes: Type.Number(), took_ms: Type.Number() }),
          ...errorResponses(401, 409),
        },
      },
    },
    async (request, reply) => {
      const startedAt = performance.now()
      const saved = await world.saveSnapshot(request.body.name, request.body.replace === true)
      return reply
        .code(201)
        .send({ name: saved.name, created_at: saved.createdAt.toISOString(), bytes: saved.bytes, took_ms: elapsed(startedAt) })
    },
  )

  r.post(
    '/sandbox/snapshots/:name/restore',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxRestoreSnapshot',
        summary: 'Put the platform back as it was saved',
        description:
          'Every data table as saved, ledger numbers and other sequences continuing from where they were, the clock offset as it was; faults are cleared. One transaction; every process has taken it when this answers.',
        params: Type.Object({ name: SnapshotName }),
        response: { 200: Type.Object({ name: Type.String(), took_ms: Type.Number() }), ...errorResponses(401, 404, 503) },
      },
    },
    async (request) => {
      const startedAt = performance.now()
      await world.restoreSnapshot(request.params.name)
      return { name: request.params.name, took_ms: elapsed(startedAt) }
    },
  )

  r.get(
    '/sandbox/snapshots/:name/export',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxExportSnapshot',
        summary: 'A snapshot as one JSON file, for POST /sandbox/snapshots/import on this or another platform',
        description:
          'Every saved row, the sequences and the clock offset. Wallet seeds stay sealed under the PLINTH_SECRET_KEY of the platform that exported it: import it where the key is the same for its users to pay.',
        params: Type.Object({ name: SnapshotName }),
        response: { 200: SnapshotFileSchema, ...errorResponses(401, 404) },
      },
    },
    async (request, reply) => {
      const text = await world.exportSnapshot(request.params.name)
      // Already JSON text (built by the database): a string is sent as is, not serialised again.
      return reply
        .type('application/json; charset=utf-8')
        .header('content-disposition', `attachment; filename="${request.params.name}.plinth-snapshot.json"`)
        .send(text as never)
    },
  )

  r.post(
    '/sandbox/snapshots/import',
    {
      config,
      bodyLimit: SNAPSHOT_IMPORT_LIMIT,
      schema: {
        ...common,
        operationId: 'sandboxImportSnapshot',
        summary: 'Save a snapshot file (from GET /sandbox/snapshots/{name}/export) as a snapshot; restore it to use it',
        description: `The body is the file, at most ${SNAPSHOT_IMPORT_LIMIT / 1024 / 1024} MiB. It is saved under \`name\` (the file's own name when absent); an existing name is 409 unless \`replace=true\`. 400 \`invalid_snapshot\` when the file is of another format or schema version, names a table or sequence this platform does not have, or holds a value a column cannot take (a word for a number, text with a NUL or an unpaired surrogate, nesting deeper than the database reads).`,
        querystring: Type.Object({
          name: Type.Optional(SnapshotName),
          replace: Type.Optional(Type.Boolean()),
        }),
        body: SnapshotFileSchema,
        response: {
          201: Type.Object({ name: Type.String(), created_at: Type.String(), bytes: Type.Number(), took_ms: Type.Number() }),
          ...errorResponses(401, 409, 413),
        },
      },
    },
    async (request, reply) => {
      const startedAt = performance.now()
      const name = request.query.name ?? request.body.name
      if (name === undefined || !/^[a-z0-9][a-z0-9_-]{0,62}$/.test(name)) {
        throw new ApiError(
          'invalid_arguments',
          'Give the snapshot a name: ?name= (^[a-z0-9][a-z0-9_-]{0,62}$), or a file with a valid "name".',
        )
      }
      const saved = await world.importSnapshot(name, request.body, request.query.replace === true)
      return reply
        .code(201)
        .send({ name: saved.name, created_at: saved.createdAt.toISOString(), bytes: saved.bytes, took_ms: elapsed(startedAt) })
    },
  )

  r.get(
    '/sandbox/demo',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxGetDemo',
        summary: "The demo app and user, and the demo app wallet's seed (never its key: mint one with POST /sandbox/apps/{app_id}/keys)",
        description:
          "The seed signs the demo app's app-to-user transactions (`plinth trigger a2u-submitted` reads it here). It is null for a demo made by a Plinth that did not keep it: reset the sandbox for a new demo app.",
        response: {
          200: Type.Object({
            app_id: Type.String(),
            app_name: Type.String(),
            user_id: Type.String(),
            username: Type.String(),
            app_wallet_seed: Type.Union([Type.String({ description: "The demo app wallet's secret seed (S…)" }), Type.Null()]),
          }),
          ...errorResponses(401, 404),
        },
      },
    },
    async () => {
      const demo = await world.demo()
      if (demo === undefined)
        throw new ApiError('app_not_found', 'This platform has no demo app (it was reset empty, or started with --seed empty).')
      return {
        app_id: demo.appId,
        app_name: demo.appName,
        user_id: demo.userId,
        username: demo.username,
        app_wallet_seed: demo.appWalletSeed,
      }
    },
  )

  r.delete(
    '/sandbox/snapshots/:name',
    {
      config,
      schema: {
        ...common,
        operationId: 'sandboxDeleteSnapshot',
        summary: 'Delete a snapshot',
        params: Type.Object({ name: SnapshotName }),
        response: { 204: Type.Null(), ...errorResponses(401, 404) },
      },
    },
    async (request, reply) => {
      await world.deleteSnapshot(request.params.name)
      return reply.code(204).send(null)
    },
  )
}
