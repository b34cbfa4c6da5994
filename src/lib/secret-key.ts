import { randomBytes } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Config } from '../config.js'

/**
 * The key that seals wallet seeds. PLINTH_SECRET_KEY when given (required on a PostgreSQL
 * server, where processes must share it); otherwise, for the embedded database, a key kept
 * in `PLINTH_DATA_DIR/secret.key`, beside the database files in `pgdata/` (never inside the
 * database, so a dump holds no usable seed), or a per-process key in memory mode.
 */
export function resolveSecretKey(config: Pick<Config, 'secretKey' | 'dataDir' | 'databaseUrl'>): Buffer {
  if (config.secretKey !== undefined) return config.secretKey
  if (config.databaseUrl !== undefined) throw new Error('PLINTH_SECRET_KEY is required with DATABASE_URL')
  if (config.dataDir === 'memory') return randomBytes(32)
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 })
  const file = join(config.dataDir, 'secret.key')
  try {
    return Buffer.from(readFileSync(file, 'utf8').trim(), 'hex')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
  }
  const key = randomBytes(32)
  writeFileSync(file, `${key.toString('hex')}\n`, { mode: 0o600, flag: 'wx' })
  return key
}
