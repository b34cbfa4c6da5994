import assert from 'node:assert/strict'
import type { FastifyInstance } from 'fastify'
import { sql } from 'kysely'
import { type PlatformOptions, startPlatform, TEST_DB } from './platform.js'
import { startCluster } from './server-process.js'

/** Several Plinth processes on one PostgreSQL, or (PGlite, one process by design) one platform in process, with one face. */
export interface Nodes {
  /** `app.inject`-shaped: over HTTP to each process, or the in-process app. */
  nodes: FastifyInstance[]
  /** The base URL of node `index` for real HTTP clients (an in-process platform starts listening on first use). */
  base(index: number): Promise<string>
  /** SQL on the platform's schema. */
  query<T>(text: string): Promise<T[]>
  /** Stops everything; then asserts that no server process logged an error. */
  close(): Promise<void>
}

export async function startNodes(options: {
  processes: number
  env?: Record<string, string>
  timeoutMs?: number
  /** The in-process platform's options (PGlite), the counterpart of `env` (PLINTH_MODE=production: `{ mode: 'production' }`). */
  platform?: PlatformOptions
}): Promise<Nodes> {
  if (TEST_DB === 'postgres') {
    // All at once on a fresh schema: creating it, migrating and seeding race too.
    const cluster = await startCluster({ processes: options.processes, env: options.env ?? {}, timeoutMs: options.timeoutMs ?? 45_000 })
    const access = await cluster.setup.sql()
    return {
      nodes: cluster.nodes,
      base: async (index) => {
        const server = cluster.servers[index]
        if (server === undefined) throw new Error(`no server process ${index}`)
        return server.base
      },
      query: (text) => access.query(text),
      async close() {
        await access.close().catch(() => {})
        await cluster.close()
        for (const server of cluster.servers) {
          assert.doesNotMatch(server.output(), /"level":(50|60)/, `a server logged an error:\n${server.output()}`)
        }
      },
    }
  }
  const platform = await startPlatform(options.platform)
  let listening: Promise<string> | undefined
  return {
    nodes: [platform.app],
    base: () => {
      listening ??= platform.app.listen({ port: 0, host: '127.0.0.1' }).then(() => {
        const address = platform.app.server.address()
        if (address === null || typeof address === 'string') throw new Error('not listening on a port')
        return `http://127.0.0.1:${address.port}`
      })
      return listening
    },
    query: async <T>(text: string) => (await sql.raw<T>(text).execute(platform.db)).rows,
    close: () => platform.close(),
  }
}
