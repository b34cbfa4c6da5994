import { TypeBoxValidatorCompiler } from '@fastify/type-provider-typebox'
import type { FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify'
import type { TSchema } from 'typebox'

interface SchemaNode {
  type?: unknown
  anyOf?: SchemaNode[]
  oneOf?: SchemaNode[]
  properties?: Record<string, SchemaNode>
  items?: SchemaNode
}

const isStringSchema = (schema: SchemaNode): boolean =>
  schema.type === 'string' || (schema.anyOf ?? schema.oneOf ?? []).some(isStringSchema)

/** The path of the first string the schema declares as a string that holds a NUL character. */
function nulPath(schema: SchemaNode, value: unknown, path: string): string | undefined {
  if (typeof value === 'string') return isStringSchema(schema) && value.includes('\u0000') ? path : undefined
  if (Array.isArray(value)) {
    const items = schema.items
    if (items === undefined) return undefined
    for (const [index, item] of value.entries()) {
      const found = nulPath(items, item, `${path}/${index}`)
      if (found !== undefined) return found
    }
    return undefined
  }
  if (typeof value !== 'object' || value === null || schema.properties === undefined) return undefined
  for (const [key, property] of Object.entries(schema.properties)) {
    const found = nulPath(property, (value as Record<string, unknown>)[key], `${path}/${key}`)
    if (found !== undefined) return found
  }
  return undefined
}

/**
 * TypeBox's validator, plus one rule for every string a schema declares: no NUL character.
 * PostgreSQL text cannot hold one, so an id, name or query value carrying it would otherwise
 * fail in the database (a 500) instead of being refused as invalid_arguments.
 */
export const validatorCompiler: FastifySchemaCompiler<TSchema> = (route) => {
  const check = TypeBoxValidatorCompiler(route)
  return (value: unknown) => {
    const result = check(value) as { error?: unknown; value?: unknown }
    if (result.error !== undefined) return result as ReturnType<typeof check>
    const path = nulPath(route.schema as SchemaNode, result.value, '')
    if (path === undefined) return result as ReturnType<typeof check>
    const error: FastifySchemaValidationError = {
      keyword: 'nul',
      instancePath: path,
      schemaPath: '#',
      params: {},
      message: 'must not contain NUL characters',
    }
    return { error: [error] }
  }
}
