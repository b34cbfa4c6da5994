import { randomInt } from 'node:crypto'

// ---------------------------------------------------------------------------------------------
// Seeding through the sandbox API.

export interface SeededApp {
  appId: string
  name: string
  /** The first server API key. */
  apiKey: string
  /** Every server API key of the app, the first included (an app may hold several while it rotates them). */
  apiKeys: string[]
  walletAddress: string
  /** The app wallet's secret seed, which signs its A2U transactions. */
  walletSeed: string
  network: string
}

export interface SeededUser {
  userId: string
  username: string
  appId: string
  /** The user's uid in that app (what A2U payments and notifications are addressed to). */
  uid: string
  /** The user's ledger account. */
  walletAddress: string
  accessToken: string
}

export interface Fixtures {
  apps: SeededApp[]
  users: SeededUser[]
  /** Wall time of the whole seeding. */
  seedMs: number
}

export interface SeedOptions {
  apps: number
  users: number
  /** Server API keys per app (the first included). */
  keysPerApp: number
  /** Requests in flight at once. */
  concurrency: number
  /** Makes usernames unique to this run (a few hex characters). */
  tag: string
}

/**
 * The scopes the seeded users grant their app: what GET /v2/me reads, what lets the app pay them
 * (wallet_address, for the seeded A2U payments) and notify them (in_app_notifications).
 */
export const FIXTURE_SCOPES = ['username', 'payments', 'wallet_address', 'in_app_notifications'] as const

/** The value at a dotted path of a parsed JSON answer (`jsonAt(body, 'status.developer_completed')`); undefined when absent. */
export function jsonAt(value: unknown, path: string): unknown {
  let current = value
  for (const key of path.split('.')) {
    if (typeof current !== 'object' || current === null) return undefined
    current = (current as Record<string, unknown>)[key]
  }
  return current
}

/** A string field of an answer, or an error naming what was being done. */
export function stringField(value: unknown, key: string, what: string): string {
  if (typeof value === 'object' && value !== null) {
    const found = (value as Record<string, unknown>)[key]
    if (typeof found === 'string') return found
  }
  throw new Error(`${what}: the answer has no string "${key}": ${JSON.stringify(value)}`)
}

export async function postJson(url: string, body: unknown, expectedStatus: number, headers: Record<string, string> = {}): Promise<unknown> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  })
  const text = await response.text()
  if (response.status !== expectedStatus) {
    throw new Error(`POST ${new URL(url).pathname}: HTTP ${response.status} (expected ${expectedStatus}): ${text.slice(0, 500)}`)
  }
  return JSON.parse(text) as unknown
}

/** Runs fn(0) … fn(count - 1) with at most `limit` running at once; answers the results in order. */
export async function mapLimit<R>(count: number, limit: number, fn: (index: number) => Promise<R>): Promise<R[]> {
  const results: R[] = []
  let next = 0
  const worker = async () => {
    for (let index = next++; index < count; index = next++) results[index] = await fn(index)
  }
  await Promise.all(Array.from({ length: Math.min(limit, count) }, worker))
  return results
}

/** `POST /sandbox/apps`: a new app with its first key and its funded wallet. */
async function createApp(baseUrl: string, name: string): Promise<SeededApp> {
  const created = await postJson(`${baseUrl}/sandbox/apps`, { name }, 201)
  const wallet = jsonAt(created, 'wallet')
  const apiKey = stringField(created, 'api_key', 'create app')
  return {
    appId: stringField(created, 'app_id', 'create app'),
    name,
    apiKey,
    apiKeys: [apiKey],
    walletAddress: stringField(wallet, 'address', 'create app'),
    walletSeed: stringField(wallet, 'seed', 'create app'),
    network: stringField(created, 'network', 'create app'),
  }
}

/**
 * Realistic data, made the way a developer would: apps (each with keysPerApp server keys), then
 * users, each user signed in to one app (round robin) with FIXTURE_SCOPES, so every user holds
 * one access token and a uid in that app.
 */
export async function seed(baseUrl: string, options: SeedOptions): Promise<Fixtures> {
  const startedAt = performance.now()
  const apps = await mapLimit(options.apps, options.concurrency, (index) => createApp(baseUrl, `Bench App ${index + 1}`))
  await mapLimit(apps.length * Math.max(0, options.keysPerApp - 1), options.concurrency, async (index) => {
    const app = apps[index % apps.length]
    if (app === undefined) throw new Error('seed: no app for a key')
    const created = await postJson(`${baseUrl}/sandbox/apps/${app.appId}/keys`, {}, 201)
    app.apiKeys.push(stringField(created, 'api_key', 'create key'))
  })
  const users = await mapLimit(options.users, options.concurrency, async (index) => {
    const username = `b${options.tag}_${index}`
    const created = await postJson(`${baseUrl}/sandbox/users`, { username }, 201)
    const userId = stringField(created, 'user_id', 'create user')
    const app = apps[index % apps.length]
    if (app === undefined) throw new Error('seed: at least one app is needed')
    const signedIn = await postJson(`${baseUrl}/sandbox/apps/${app.appId}/authenticate`, { user_id: userId, scopes: FIXTURE_SCOPES }, 200)
    return {
      userId,
      username,
      appId: app.appId,
      uid: stringField(jsonAt(signedIn, 'user'), 'uid', 'authenticate'),
      walletAddress: stringField(jsonAt(created, 'wallet'), 'address', 'create user'),
      accessToken: stringField(signedIn, 'accessToken', 'authenticate'),
    }
  })
  return { apps, users, seedMs: performance.now() - startedAt }
}

/** One flow worker's own app (with its wallet, whose seed signs A2U transactions) and its own users of that app. */
export interface FlowTeam {
  app: SeededApp
  users: FlowUser[]
}

export interface FlowUser {
  userId: string
  /** The user's uid in the team's app (what A2U payments are addressed to). */
  uid: string
  accessToken: string
}

export interface FlowSeedOptions {
  teams: number
  usersPerTeam: number
  concurrency: number
  tag: string
}

/** The scopes a user grants the flow apps: wallet_address is what lets an app pay the user (A2U). */
export const FLOW_SCOPES = ['username', 'payments', 'wallet_address'] as const

/**
 * The payment flows' data: one app per worker (an app account signs its transactions one sequence
 * number at a time, and a user has one open payment per app), each with its own users, signed in
 * to that app with FLOW_SCOPES. Made apart from seed()'s users, so GET /v2/me measures what it did.
 */
export async function seedFlowTeams(baseUrl: string, options: FlowSeedOptions): Promise<{ teams: FlowTeam[]; seedMs: number }> {
  const startedAt = performance.now()
  const apps = await mapLimit(options.teams, options.concurrency, (index) => createApp(baseUrl, `Bench Flow App ${index + 1}`))
  const users = await mapLimit(options.teams * options.usersPerTeam, options.concurrency, async (index) => {
    const team = Math.floor(index / options.usersPerTeam)
    const app = apps[team]
    if (app === undefined) throw new Error('seedFlowTeams: no app for a user')
    const created = await postJson(`${baseUrl}/sandbox/users`, { username: `f${options.tag}_${team}_${index % options.usersPerTeam}` }, 201)
    const userId = stringField(created, 'user_id', 'create user')
    const signedIn = await postJson(`${baseUrl}/sandbox/apps/${app.appId}/authenticate`, { user_id: userId, scopes: FLOW_SCOPES }, 200)
    return {
      team,
      user: {
        userId,
        uid: stringField(jsonAt(signedIn, 'user'), 'uid', 'authenticate'),
        accessToken: stringField(signedIn, 'accessToken', 'authenticate'),
      },
    }
  })
  const teams = apps.map((app, team) => ({ app, users: users.filter((entry) => entry.team === team).map((entry) => entry.user) }))
  return { teams, seedMs: performance.now() - startedAt }
}

/** Hands out items in a random order, every item once before any repeats, then reshuffles. */
export class Deck<T> {
  private readonly order: T[]
  private position = 0

  constructor(items: readonly T[]) {
    if (items.length === 0) throw new Error('Deck: no items')
    this.order = [...items]
    this.shuffle()
  }

  private shuffle(): void {
    for (let i = this.order.length - 1; i > 0; i--) {
      const j = randomInt(i + 1)
      const a = this.order[i]
      const b = this.order[j]
      if (a === undefined || b === undefined) continue
      this.order[i] = b
      this.order[j] = a
    }
  }

  next(): T {
    if (this.position >= this.order.length) {
      this.shuffle()
      this.position = 0
    }
    const item = this.order[this.position++]
    if (item === undefined) throw new Error('Deck: out of range')
    return item
  }
}
