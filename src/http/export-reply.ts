import type { FastifyReply } from 'fastify'
import { type TSchema, Type } from 'typebox'
import { toCsv } from '../lib/csv.js'

/**
 * The exports' one encoder on the HTTP side (docs/api.md, "Exports"): the console's exports and the
 * portal's answer the same JSON document or the same CSV file (src/lib/csv.ts: every cell quoted,
 * formulas defused), as an attachment named after what it holds.
 */

/** An export holds at most this many rows, the newest that match. */
export const MAX_EXPORT_ROWS = 10_000

/** The `format` of an export's query string. */
export const ExportFormat = {
  format: Type.Optional(Type.Union([Type.Literal('json'), Type.Literal('csv')], { description: 'json (the default) or csv' })),
}

/** The 200 of an export: the JSON document or the CSV file. */
export function exportResponse(listName: string, item: TSchema) {
  return {
    description: 'The export, as an attachment',
    content: {
      'application/json': {
        schema: Type.Object({
          [listName]: Type.Array(item),
          exported: Type.Integer({ description: 'How many rows the file holds' }),
          truncated: Type.Boolean({ description: `Whether older rows that match were left out (past the export's bound)` }),
        }),
      },
      'text/csv': { schema: Type.String() },
    },
  }
}

/**
 * Answers an export in the format asked. `rows` are the JSON rows; `csvRows` (the same rows
 * flattened, when they differ) the CSV's; `identifiers` the CSV columns written verbatim.
 */
export function sendExport(
  reply: FastifyReply,
  options: {
    format: 'json' | 'csv' | undefined
    file: string
    listName: string
    columns: readonly string[]
    identifiers: ReadonlySet<string>
    rows: readonly unknown[]
    csvRows?: readonly Record<string, unknown>[]
    truncated: boolean
  },
) {
  const format = options.format ?? 'json'
  const file = options.file.replace(/[^A-Za-z0-9_-]/g, '_').slice(0, 80)
  reply.header('content-disposition', `attachment; filename="${file}.${format}"`)
  reply.header('x-plinth-export-truncated', String(options.truncated))
  if (format === 'csv') {
    const records = options.csvRows ?? (options.rows as readonly Record<string, unknown>[])
    return reply.type('text/csv; charset=utf-8').send(toCsv(options.columns, records, options.identifiers))
  }
  return reply.send({ [options.listName]: options.rows, exported: options.rows.length, truncated: options.truncated })
}
