import { createHash } from 'node:crypto'
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs'
import { join } from 'node:path'

/**
 * The embedded database's directory, made safe to crash in: one process at a time (a lock), and
 * a new database that appears whole or not at all.
 *
 * PGlite is PostgreSQL in single-user mode: nothing stops a second process from opening the same
 * directory, and two processes writing it lose acknowledged commits and break the ledger. And
 * PGlite creates a database by extracting a fresh cluster into the directory file by file, with
 * PG_VERSION (its sign of a finished database) before the configuration files: a process killed
 * in between leaves a directory that never starts again.
 */

export class DataDirInUseError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'DataDirInUseError'
  }
}

interface Holder {
  pid: number
  /** The process's start time as the kernel counts it (Linux), so that a reused pid is not taken for the holder. */
  started?: string
}

const LOCK_FILE = 'plinth.lock'
/** A lock file this young that cannot be read yet is being written by its holder. */
const FRESH_LOCK_MS = 2_000

function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Field 22 (starttime), counting from the state, which follows the parenthesised command name.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]
  } catch {
    return undefined
  }
}

function isAlive(holder: Holder): boolean {
  try {
    process.kill(holder.pid, 0)
  } catch (error) {
    // EPERM: the process exists, under another user.
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false
  }
  if (holder.started !== undefined) {
    const started = processStart(holder.pid)
    if (started !== undefined) return started === holder.started
  }
  // Without /proc, the same pid as ours is a previous life of this process (a restarted container's pid 1).
  return holder.pid !== process.pid
}

function parseHolder(text: string): Holder | undefined {
  try {
    const value = JSON.parse(text) as Partial<Holder>
    return typeof value.pid === 'number'
      ? { pid: value.pid, ...(typeof value.started === 'string' ? { started: value.started } : {}) }
      : undefined
  } catch {
    return undefined
  }
}

function readIfExists(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
}

/** Whether a file that cannot be read yet is young enough to be still being written (or is gone already). */
function isFresh(path: string): boolean {
  try {
    return Date.now() - statSync(path).mtimeMs < FRESH_LOCK_MS
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return true
    throw error
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Takes the data directory for this process, or throws DataDirInUseError naming the process that
 * has it. A lock left by a process that died (SIGKILL, a crash) is taken over. Answers the release.
 */
export async function lockDataDir(dataDir: string): Promise<() => void> {
  const path = join(dataDir, LOCK_FILE)
  const started = processStart(process.pid)
  const content = JSON.stringify({ pid: process.pid, ...(started === undefined ? {} : { started }) })
  for (let attempt = 0; attempt < 100; attempt++) {
    try {
      writeFileSync(path, content, { flag: 'wx', mode: 0o600 })
      removeLeftoverClaims(dataDir)
      return () => {
        if (readIfExists(path) === content) unlinkSync(path)
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    }
    const text = readIfExists(path)
    if (text === undefined) continue
    const holder = parseHolder(text)
    if (holder === undefined && isFresh(path)) {
      await sleep(50)
      continue
    }
    if (holder !== undefined && isAlive(holder)) {
      throw new DataDirInUseError(
        `the embedded database in ${dataDir} is in use by process ${holder.pid}; two processes on one data directory corrupt it ` +
          `(stop that process, or remove ${path} if it is not a Plinth)`,
      )
    }
    // Its holder is gone: remove it, unless another starter is doing so (then look again shortly).
    if (!removeStaleLock(path, text, content)) await sleep(20)
  }
  throw new DataDirInUseError(`could not lock the embedded database in ${dataDir}: its lock file keeps changing`)
}

const CLAIM_INFIX = '.takeover-'

/**
 * Removes the lock file if it still holds `text`, a lock judged stale; answers false when another
 * living starter is removing it. "Remove the file if it still holds this" is not one atomic step,
 * and a starter that checked, then removed, could remove the lock a faster starter had just taken
 * (two winners). So the removal is claimed first: a claim file named after the stale lock, created
 * exclusively. Of the starters that judged the lock stale, one living one at a time holds a claim,
 * and nothing else removes a stale lock (its holder is dead), so the lock cannot change between
 * the claimant's check and its removal. A claim whose claimant died is passed over by the next
 * claim number. Claims are removed with the lock; a later claim for the same lock finds it gone.
 */
function removeStaleLock(path: string, text: string, identity: string): boolean {
  const base = `${path}${CLAIM_INFIX}${createHash('sha256').update(text).digest('hex').slice(0, 16)}`
  const passed: string[] = []
  for (let number = 0; number < 100; number++) {
    const claim = `${base}.${number}`
    try {
      writeFileSync(claim, identity, { flag: 'wx', mode: 0o600 })
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      const claimText = readIfExists(claim)
      if (claimText === undefined) return false
      const claimant = parseHolder(claimText)
      if (claimant === undefined ? isFresh(claim) : isAlive(claimant)) return false
      passed.push(claim)
      continue
    }
    try {
      if (readIfExists(path) === text) unlinkSync(path)
    } finally {
      for (const file of [...passed, claim]) rmSync(file, { force: true })
    }
    return true
  }
  return false
}

/**
 * Claims left by starters that died while taking over a stale lock. Once this process holds the
 * lock, every claim is for a lock that is gone for good, and no claimant can remove ours.
 */
function removeLeftoverClaims(dataDir: string): void {
  for (const name of readdirSync(dataDir)) {
    if (name.startsWith(`${LOCK_FILE}${CLAIM_INFIX}`)) rmSync(join(dataDir, name), { force: true })
  }
}

function fsyncPath(path: string): void {
  let fd: number | undefined
  try {
    fd = openSync(path, 'r')
    fsyncSync(fd)
  } catch {
    // Some platforms cannot open or fsync a directory; the files' own fsyncs still hold.
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

function fsyncTree(path: string): void {
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    const child = join(path, entry.name)
    if (entry.isDirectory()) fsyncTree(child)
    else if (entry.isFile()) fsyncPath(child)
  }
  fsyncPath(path)
}

/**
 * Makes sure `<dataDir>/pgdata` holds a whole PGlite database: a new one is created in
 * `pgdata.init`, closed, flushed to disk and renamed into place, so a process killed while
 * creating it leaves only `pgdata.init`, which the next start throws away. A `pgdata` without
 * PG_VERSION (an older version's creation that was cut short) is moved aside, never deleted.
 */
export async function ensurePGliteDatabase(
  dataDir: string,
  create: (pgdata: string) => Promise<{ close(): Promise<void> }>,
): Promise<string> {
  const pgdata = join(dataDir, 'pgdata')
  if (existsSync(join(pgdata, 'PG_VERSION'))) return pgdata
  const staging = join(dataDir, 'pgdata.init')
  rmSync(staging, { recursive: true, force: true })
  mkdirSync(staging, { recursive: true, mode: 0o700 })
  const fresh = await create(staging)
  await fresh.close()
  fsyncTree(staging)
  if (existsSync(pgdata)) {
    if (readdirSync(pgdata).length === 0) rmSync(pgdata, { recursive: true })
    else renameSync(pgdata, `${pgdata}.incomplete-${Date.now()}`)
  }
  renameSync(staging, pgdata)
  fsyncPath(dataDir)
  return pgdata
}
