import type { FastifyInstance } from 'fastify'
import { type SandboxApp, type SandboxUser, sandbox, TEST_DB } from '../helpers/platform.js'
import { type Cluster, startCluster } from '../helpers/server-process.js'

/**
 * The real-client suite's platform: one real Plinth process (`src/server.ts`, its default
 * configuration) on this run's backend, reached over a socket by the client libraries under
 * test. `node` is the same process shaped like `app.inject`, for the sandbox set-up.
 */
export interface ClientPlatform {
  base: string
  node: FastifyInstance
  sb: ReturnType<typeof sandbox>
  cluster: Cluster
  close(): Promise<void>
}

export async function startClientPlatform(env: Record<string, string> = {}): Promise<ClientPlatform> {
  const cluster = await startCluster({ processes: 1, backend: TEST_DB, env })
  const [server] = cluster.servers
  const [node] = cluster.nodes
  if (server === undefined || node === undefined) throw new Error('no server process')
  return {
    base: server.base,
    node,
    sb: sandbox(node),
    cluster,
    close: async () => {
      await cluster.close()
    },
  }
}

export interface SignedIn {
  app: SandboxApp
  user: SandboxUser
  uid: string
  token: string
}

/** A new app and a new user signed in to it (what the client SDK's authenticate hands the app). */
export async function signedIn(platform: ClientPlatform, scopes = ['username', 'payments', 'wallet_address']): Promise<SignedIn> {
  const app = await platform.sb.createApp()
  const user = await platform.sb.createUser()
  const auth = await platform.sb.authenticate(app.app_id, user.user_id, scopes)
  return { app, user, uid: auth.user.uid, token: auth.accessToken }
}

export type { PaymentDTO } from '../../src/payments/payment-dto.js'
