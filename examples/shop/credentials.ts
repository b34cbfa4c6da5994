/**
 * The shop's platform credentials: its app id, server API key and wallet seed. Taken from the
 * environment when given there; otherwise the shop creates its app through Plinth's sandbox API
 * on first run and keeps the answer in a file only its owner can read.
 */
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs'

export interface ShopCredentials {
  plinthUrl: string
  appId: string | null
  apiKey: string
  walletSeed: string
}

export interface CredentialOptions {
  plinthUrl: string
  /** Where the credentials the shop created are kept (git-ignored). */
  file: string
  /** The frontend URL registered with the app: the sandbox browser opens it. */
  shopUrl: string
  env?: Record<string, string | undefined>
  log?: (line: string) => void
}

type Source = 'environment' | 'file' | 'created'

const isCredentials = (value: unknown): value is ShopCredentials => {
  if (typeof value !== 'object' || value === null) return false
  const record = value as Record<string, unknown>
  return typeof record.plinthUrl === 'string' && typeof record.apiKey === 'string' && typeof record.walletSeed === 'string'
}

/** Whether Plinth accepts the key: the cheapest call that needs one. */
async function keyWorks(plinthUrl: string, apiKey: string): Promise<boolean> {
  const response = await fetch(`${plinthUrl}/v2/payments/incomplete_server_payments`, { headers: { authorization: `Key ${apiKey}` } })
  await response.arrayBuffer()
  if (response.status === 401) return false
  if (!response.ok) throw new Error(`Plinth answered ${response.status} when checking the shop's API key.`)
  return true
}

async function createApp(options: CredentialOptions, env: Record<string, string | undefined>): Promise<ShopCredentials> {
  const adminToken = env.PLINTH_ADMIN_TOKEN
  const response = await fetch(`${options.plinthUrl}/sandbox/apps`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(adminToken ? { 'x-admin-token': adminToken } : {}) },
    body: JSON.stringify({ name: 'Demo Shop', url: options.shopUrl }),
  })
  const body = (await response.json().catch(() => ({}))) as Record<string, unknown>
  if (response.status !== 201) {
    const hint =
      body.error === 'invalid_admin_token'
        ? ' Plinth has PLINTH_ADMIN_TOKEN set: give the shop the same PLINTH_ADMIN_TOKEN.'
        : response.status === 404
          ? ' Is Plinth in sandbox mode?'
          : ''
    throw new Error(`Could not create the shop's app: ${response.status} ${String(body.error_message ?? body.error ?? '')}.${hint}`)
  }
  const wallet = body.wallet as { seed: string }
  return { plinthUrl: options.plinthUrl, appId: String(body.app_id), apiKey: String(body.api_key), walletSeed: wallet.seed }
}

export async function loadCredentials(options: CredentialOptions): Promise<{ credentials: ShopCredentials; source: Source }> {
  const env = options.env ?? process.env
  const log = options.log ?? (() => {})
  if (env.SHOP_API_KEY && env.SHOP_WALLET_SEED) {
    return {
      credentials: {
        plinthUrl: options.plinthUrl,
        appId: env.SHOP_APP_ID ?? null,
        apiKey: env.SHOP_API_KEY,
        walletSeed: env.SHOP_WALLET_SEED,
      },
      source: 'environment',
    }
  }

  if (existsSync(options.file)) {
    const stored: unknown = JSON.parse(readFileSync(options.file, 'utf8'))
    if (isCredentials(stored) && stored.plinthUrl === options.plinthUrl) {
      if (await keyWorks(options.plinthUrl, stored.apiKey)) return { credentials: stored, source: 'file' }
      // Plinth was reset (an in-memory database, a new data directory) or the key was revoked.
      log(`The key in ${options.file} is no longer accepted by ${options.plinthUrl}: creating the app again.`)
    } else {
      log(`${options.file} is for another Plinth: creating the app on ${options.plinthUrl}.`)
    }
  }

  const credentials = await createApp(options, env)
  writeFileSync(options.file, `${JSON.stringify({ ...credentials, createdAt: new Date().toISOString() }, null, 2)}\n`, { mode: 0o600 })
  chmodSync(options.file, 0o600)
  return { credentials, source: 'created' }
}
