import { TypeBoxValidatorCompiler } from '@fastify/type-provider-typebox'
import type { FastifySchemaCompiler, FastifySchemaValidationError } from 'fastify'
import type { TSchema } from 'typebox'
import { unstorableText } from '../lib/text.js'

interface SchemaNode {
  description?: string
  /** What to type, said to a person (sandbox routes): appended to a validation message. */
  'x-hint'?: string
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

function fieldAt(schema: SchemaNode, instancePath: string): SchemaNode | undefined {
  let node: SchemaNode | undefined = schema
  for (const key of instancePath.split('/').slice(1)) node = node?.properties?.[key] ?? node?.items
  return node
}

const TYPE_NAMES: Record<string, string> = {
  integer: 'a whole number',
  number: 'a number',
  string: 'text',
  boolean: 'true or false',
  object: 'an object',
  array: 'a list',
}

/**
 * A validation message a person can act on (the sandbox API, which the console and the sandbox
 * page show): "must be at most 60 characters" rather than "must NOT have more than 60
 * characters", and the field's hint (`x-hint`) after it, saying what to type. The /v2 routes keep
 * their messages; the error's shape is the same everywhere.
 */
function humanize(schema: SchemaNode, error: FastifySchemaValidationError): FastifySchemaValidationError {
  const field = fieldAt(schema, error.instancePath)
  const params = error.params as { limit?: unknown; requiredProperties?: unknown }
  const limit = typeof params.limit === 'number' ? params.limit.toLocaleString('en-US') : String(params.limit)
  const typeName = typeof field?.type === 'string' ? TYPE_NAMES[field.type] : undefined
  const messages: Record<string, string | undefined> = {
    maximum: `must be at most ${limit}`,
    minimum: `must be at least ${limit}`,
    exclusiveMaximum: `must be less than ${limit}`,
    exclusiveMinimum: `must be more than ${limit}`,
    maxLength: `must be at most ${limit} characters`,
    minLength: params.limit === 1 ? 'must not be empty' : `must be at least ${limit} characters`,
    pattern: field?.description === undefined ? undefined : `must be ${field.description.replace(/^./, (c) => c.toLowerCase())}`,
    type: typeName === undefined ? undefined : `must be ${typeName}`,
    required: Array.isArray(params.requiredProperties) ? `needs ${params.requiredProperties.join(', ')}` : undefined,
  }
  const message = messages[error.keyword] ?? error.message ?? 'is not valid'
  const hint = field?.['x-hint']
  return { ...error, message: hint === undefined || error.keyword === 'required' ? message : `${message} (${hint})` }
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
  const human = route.url.startsWith('/sandbox/')
  return (value: unknown) => {
    const loose = converted ? looseNumber(route.schema as SchemaNode, value) : undefined
    if (loose !== undefined) return { error: [loose] }
    const result = check(value) as { error?: FastifySchemaValidationError[]; value?: unknown }
    if (result.error !== undefined) {
      if (!human || !Array.isArray(result.error)) return result as ReturnType<typeof check>
      return { error: result.error.map((error) => humanize(route.schema as SchemaNode, error)) }
    }
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
