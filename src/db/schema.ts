import type { ColumnType } from 'kysely'

/** Column written by the database on insert (default) and read as T. */
type Defaulted<T> = ColumnType<T, T | undefined, T>

export interface PlatformClockTable {
  id: Defaulted<number>
  offset_ms: number
}

/** Facts about this platform instance (for example which demo app was created at first start). */
export interface PlatformMetaTable {
  key: string
  value: string
}

export interface UsersTable {
  id: string
  username: string
  /** lower(username): usernames are unique regardless of case. */
  username_key: string
  wallet_address: string
  /** The wallet seed, AES-256-GCM sealed under PLINTH_SECRET_KEY. */
  wallet_seed_enc: string
  created_at: Date
}

export interface AppsTable {
  id: string
  name: string
  network: 'Pi Network' | 'Pi Testnet'
  wallet_address: string
  created_at: Date
}

export interface ApiKeysTable {
  id: string
  app_id: string
  /** SHA-256 of the key, hex. The key itself is never stored. */
  key_hash: string
  /** First characters of the key, for display only. */
  key_prefix: string
  created_at: Date
  revoked_at: Date | null
}

/** A user's membership in an app: the app-scoped uid and the consent the user gave it. */
export interface AppUsersTable {
  app_id: string
  user_id: string
  uid: string
  scopes: string[]
  created_at: Date
  updated_at: Date
}

export interface AccessTokensTable {
  id: string
  /** SHA-256 of the token, hex. The token itself is never stored. */
  token_hash: string
  app_id: string
  user_id: string
  scopes: string[]
  created_at: Date
  expires_at: Date
  revoked_at: Date | null
}

export interface DB {
  platform_clock: PlatformClockTable
  platform_meta: PlatformMetaTable
  users: UsersTable
  apps: AppsTable
  api_keys: ApiKeysTable
  app_users: AppUsersTable
  access_tokens: AccessTokensTable
}
