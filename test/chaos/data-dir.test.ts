import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { sql } from 'kysely'
import { DataDirInUseError, ensurePGliteDatabase } from '../../src/db/data-dir.js'
import { openDatabase } from '../../src/db/database.js'
import { resolveSecretKey } from '../../src/lib/secret-key.js'
import { REPO_ROOT, sleep } from '../helpers/server-process.js'

// The embedded database's directory under crashes; PostgreSQL runs have nothing to check here.
const skip = process.env.PLINTH_TEST_DB === 'postgres' ? 'PGlite only' : false

describe('the embedded database directory', { skip }, () => {
  const dirs: string[] = []
  const newDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'plinth-datadir-'))
    dirs.push(dir)
    return dir
  }
  after(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
  })

  // Creating a database is the slow part: the lock cases share one.
  let shared: string | undefined
  const sharedDir = async () => {
    if (shared === undefined) {
      shared = newDir()
      await (await openDatabase({ dataDir: shared })).close()
    }
    return shared
  }

  it('is held by one process at a time: a second open is refused, naming the holder, until the first closes', async () => {
    const dir = await sharedDir()
    const first = await openDatabase({ dataDir: dir })
    await assert.rejects(openDatabase({ dataDir: dir }), (error: unknown) => {
      assert.ok(error instanceof DataDirInUseError)
      assert.match(error.message, new RegExp(`in use by process ${process.pid}`))
      return true
    })
    await first.close()
    assert.equal(existsSync(join(dir, 'plinth.lock')), false, 'closing releases the lock')
    const second = await openDatabase({ dataDir: dir })
    await second.close()
  })

  it('takes over the lock of a process that died (SIGKILL leaves it behind), also when its pid was reused', async () => {
    const dir = await sharedDir()
    const dead = spawn(process.execPath, ['-e', ''])
    const deadPid = await new Promise<number>((resolve) => dead.on('exit', () => resolve(dead.pid ?? 0)))
    writeFileSync(join(dir, 'plinth.lock'), JSON.stringify({ pid: deadPid }))
    const database = await openDatabase({ dataDir: dir })
    assert.equal(JSON.parse(readFileSync(join(dir, 'plinth.lock'), 'utf8')).pid, process.pid)
    await database.close()
    // Our own pid, started at another time: a previous life of this pid (a restarted container's pid 1).
    writeFileSync(join(dir, 'plinth.lock'), JSON.stringify({ pid: process.pid, started: '1' }))
    await (await openDatabase({ dataDir: dir })).close()
  })

  it('never shows a database directory before it is whole, and throws away a creation that was cut short', async () => {
    const dir = newDir()
    const failing = async (path: string) => {
      // PGlite writes PG_VERSION before its configuration files; stop right after it.
      writeFileSync(join(path, 'PG_VERSION'), '17\n')
      throw new Error('killed')
    }
    await assert.rejects(ensurePGliteDatabase(dir, failing), /killed/)
    assert.equal(existsSync(join(dir, 'pgdata')), false, 'no pgdata until the database is whole')
    // An empty pgdata is what a start killed before the database existed leaves too.
    mkdirSync(join(dir, 'pgdata'))
    const database = await openDatabase({ dataDir: dir })
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from payments`.execute(database.db)
    assert.equal(rows[0]?.n, 0)
    await database.close()
    assert.deepEqual(readdirSync(dir).sort(), ['pgdata'])
    assert.ok(existsSync(join(dir, 'pgdata', 'postgresql.conf')))
  })

  it('opens after a process was killed while creating it, half-way through writing the files', { timeout: 180_000 }, async () => {
    const dir = newDir()
    const script = `import('./src/db/database.ts').then((m) => m.openDatabase({ dataDir: ${JSON.stringify(dir)} })).then(() => setInterval(() => {}, 1000))`
    const child = spawn(process.execPath, ['--import', 'tsx', '-e', script], { cwd: REPO_ROOT, stdio: 'ignore' })
    const exited = new Promise((resolve) => child.on('exit', resolve))
    // A fresh database is about 1000 files; kill once half of them are written (or, on a fast disk, once it is in place).
    let files = 0
    const deadline = Date.now() + 120_000
    while (files < 500 && !existsSync(join(dir, 'pgdata', 'PG_VERSION')) && Date.now() < deadline) {
      await sleep(5)
      try {
        files = readdirSync(join(dir, 'pgdata.init'), { recursive: true }).length
      } catch {
        // Not there yet, or renamed into place meanwhile.
      }
    }
    child.kill('SIGKILL')
    await exited
    const database = await openDatabase({ dataDir: dir })
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from ledger_accounts`.execute(database.db)
    assert.equal(rows[0]?.n, 0)
    await database.close()
  })

  it('keeps the secret key whole: a key file is written under another name and linked into place', () => {
    const dir = newDir()
    const key = resolveSecretKey({ dataDir: dir, secretKey: undefined, databaseUrl: undefined })
    assert.equal(key.length, 32)
    assert.deepEqual(resolveSecretKey({ dataDir: dir, secretKey: undefined, databaseUrl: undefined }), key)
    assert.deepEqual(readdirSync(dir), ['secret.key'], 'no temporary file is left')
    writeFileSync(join(dir, 'secret.key'), '')
    assert.throws(() => resolveSecretKey({ dataDir: dir, secretKey: undefined, databaseUrl: undefined }), /must hold 64 hex characters/)
  })
})
