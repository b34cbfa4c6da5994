import { type Compilable, type CompiledQuery, createQueryId, type Kysely } from 'kysely'
import type { DB } from './schema.js'

const SLOT = Symbol('plinth.prepared.slot')

interface Slot {
  readonly [SLOT]: string
}

const isSlot = (value: unknown): value is Slot => typeof value === 'object' && value !== null && SLOT in value

/**
 * A statement built with Kysely's query builder once, then run with new values. Kysely builds and
 * compiles a query on every call, the same text each time: about a tenth of the server's CPU on
 * the payment lifecycle (BENCHMARKS.md). `build` receives a placeholder for each value, to use only
 * as a value (each becomes one parameter): never in JavaScript (a string concatenation, a branch),
 * which the first run detects and refuses. The statement is compiled at its first run; later runs
 * fill its parameters in. Every run still goes through the plugins (the statement timer of
 * src/system/metrics.ts sees it as it sees a built query), and PostgreSQL plans the one text once
 * per connection (src/db/database.ts names parameterised statements).
 */
export function prepared<V extends object, R>(build: (db: Kysely<DB>, values: V) => Compilable<R>) {
  let template: { compiled: CompiledQuery<R>; slots: Array<string | undefined> } | undefined

  const compile = (db: Kysely<DB>) => {
    const used = new Set<string>()
    const placeholders = new Proxy({} as V, {
      get: (_target, name) => {
        if (typeof name !== 'string') return undefined
        used.add(name)
        return { [SLOT]: name } satisfies Slot
      },
    })
    const compiled = build(db, placeholders).compile()
    const slots = compiled.parameters.map((parameter) => (isSlot(parameter) ? parameter[SLOT] : undefined))
    const unbound = [...used].filter((name) => !slots.includes(name))
    if (unbound.length > 0 || compiled.sql.includes('[object Object]')) {
      throw new Error(`a prepared statement used ${unbound.join(', ') || 'a value'} outside a parameter: ${compiled.sql.slice(0, 200)}`)
    }
    return { compiled, slots }
  }

  return async (db: Kysely<DB>, values: V): Promise<R[]> => {
    template ??= compile(db)
    const { compiled, slots } = template
    const parameters = compiled.parameters.map((parameter, index) => {
      const name = slots[index]
      return name === undefined ? parameter : values[name as keyof V]
    })
    const executor = db.getExecutor()
    const queryId = createQueryId()
    const query = executor.transformQuery(compiled.query, queryId)
    const result = await executor.executeQuery<R>({ query, queryId, sql: compiled.sql, parameters })
    return result.rows
  }
}
