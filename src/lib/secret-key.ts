import { randomBytes } from 'node:crypto'
import { closeSync, fsyncSync, linkSync, mkdirSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs'
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
  const existing = readKeyFile(file)
  if (existing !== undefined) return existing
  // Written whole and flushed under another name, then linked into place: a process killed at any
  // moment leaves either no key file or a whole one, and of two first starts the second reads the first's key.
  const key = randomBytes(32)
  const temp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`
  const fd = openSync(temp, 'wx', 0o600)
  try {
    writeSync(fd, `${key.toString('hex')}\n`)
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  try {
    linkSync(temp, file)
  } catch (error) {
    const winner = (error as NodeJS.ErrnoException).code === 'EEXIST' ? readKeyFile(file) : undefined
    if (winner === undefined) throw error
    return winner
  } finally {
    unlinkSync(temp)
  }
  return key
}

function readKeyFile(file: string): Buffer | undefined {
  let text: string
  try {
    text = readFileSync(file, 'utf8').trim()
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
  if (!/^[0-9a-f]{64}$/i.test(text)) throw new Error(`${file} must hold 64 hex characters (the key that seals wallet seeds)`)
  return Buffer.from(text, 'hex')
}
