import { TypeBoxValidatorCompiler } from '@fastify/type-provider-typebox'
import type { FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify'
import type { TSchema } from 'typebox'
import { unstorableText } from '../lib/text.js'

interface SchemaNode {
  type?: unknown
  anyOf?: SchemaNode[]
  oneOf?: SchemaNode[]
  properties?: Record<string, SchemaNode>
  items?: SchemaNode
}

const isStringSchema = (schema: SchemaNode): boolean =>
  schema.type === 'string' || (schema.anyOf ?? schema.oneOf ?? []).some(isStringSchema)

/** The first string the schema declares as a string that the database cannot store exactly, with its path. */
function unstorablePath(schema: SchemaNode, value: unknown, path: string): { path: string; keyword: string; message: string } | undefined {
  if (typeof value === 'string') {
    const found = isStringSchema(schema) ? unstorableText(value) : undefined
    return found === undefined ? undefined : { path, ...found }
  }
  if (Array.isArray(value)) {
    const items = schema.items
    if (items === undefined) return undefined
    for (const [index, item] of value.entries()) {
      const found = unstorablePath(items, item, `${path}/${index}`)
      if (found !== undefined) return found
    }
    return undefined
  }
  if (typeof value !== 'object' || value === null || schema.properties === undefined) return undefined
  for (const [key, property] of Object.entries(schema.properties)) {
    const found = unstorablePath(property, (value as Record<string, unknown>)[key], `${path}/${key}`)
    if (found !== undefined) return found
  }
  return undefined
}

const DECIMAL = { integer: /^-?[0-9]{1,40}$/, number: /^-?[0-9]{1,40}(\.[0-9]{1,40})?$/ }

/**
 * A query or path value that the schema declares a number but that is not written as one in
 * plain decimal. TypeBox converts the text before checking it, and its conversion is lenient
 * (`1.5` becomes the integer 1, `0x10` 16, ` 1` and `+1` 1): a client's mistake would be served
 * as another request instead of refused.
 */
function looseNumber(schema: SchemaNode, value: unknown): FastifySchemaValidationError | undefined {
  if (typeof value !== 'object' || value === null || schema.properties === undefined) return undefined
  for (const [key, property] of Object.entries(schema.properties)) {
    const type = property.type === 'integer' || property.type === 'number' ? property.type : undefined
    const text = (value as Record<string, unknown>)[key]
    if (type === undefined || typeof text !== 'string' || DECIMAL[type].test(text)) continue
    const message = type === 'integer' ? 'must be an integer in decimal digits' : 'must be a number in decimal digits'
    return { keyword: 'type', instancePath: `/${key}`, schemaPath: '#', params: {}, message }
  }
  return undefined
}

/**
 * TypeBox's validator, plus one rule for every string a schema declares: it must be text the
 * database stores exactly. PostgreSQL text cannot hold a NUL character, so an id, name or query
 * value carrying one would otherwise fail in the database (a 500); an unpaired surrogate has no
 * UTF-8 form, so the driver would store U+FFFD instead of what was sent. Both are refused as
 * invalid_arguments. (Free-form JSON, such as payment metadata, has its own check: invalid_metadata.)
 */
export const validatorCompiler: FastifySchemaCompiler<TSchema> = (route) => {
  const check = TypeBoxValidatorCompiler(route)
  const converted = route.httpPart === 'querystring' || route.httpPart === 'params'
  return (value: unknown) => {
    const loose = converted ? looseNumber(route.schema as SchemaNode, value) : undefined
    if (loose !== undefined) return { error: [loose] }
    const result = check(value) as { error?: unknown; value?: unknown }
    if (result.error !== undefined) return result as ReturnType<typeof check>
    const found = unstorablePath(route.schema as SchemaNode, result.value, '')
    if (found === undefined) return result as ReturnType<typeof check>
    const error: FastifySchemaValidationError = {
      keyword: found.keyword,
      instancePath: found.path,
      schemaPath: '#',
      params: {},
      message: found.message,
    }
    return { error: [error] }
  }
}
