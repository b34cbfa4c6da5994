import assert from 'node:assert/strict'
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { sql } from 'kysely'
import { DataDirInUseError, ensurePGliteDatabase, lockDataDir } from '../../src/db/data-dir.js'
import { openDatabase } from '../../src/db/database.js'
import { resolveSecretKey } from '../../src/lib/secret-key.js'
import { sandbox } from '../helpers/platform.js'
import { freePort, httpNode, LOADER_ARGS, PlinthProcess, REPO_ROOT, RUNS_COMPILED, scriptArgs, sleep } from '../helpers/server-process.js'

/** A dir-contender.ts process: one command at a time, one answer line each. */
class Contender {
  readonly child: ChildProcessWithoutNullStreams
  #lines: string[] = []
  #waiting: ((line: string) => void) | undefined
  #buffer = ''
  #stderr = ''

  constructor() {
    this.child = spawn(process.execPath, scriptArgs('test/chaos/dir-contender.ts'), { cwd: REPO_ROOT })
    this.child.stdout.on('data', (chunk: Buffer) => {
      this.#buffer += chunk.toString()
      for (let end = this.#buffer.indexOf('\n'); end >= 0; end = this.#buffer.indexOf('\n')) {
        this.#lines.push(this.#buffer.slice(0, end))
        this.#buffer = this.#buffer.slice(end + 1)
      }
      this.#deliver()
    })
    this.child.stderr.on('data', (chunk: Buffer) => {
      this.#stderr += chunk.toString()
    })
  }

  get pid(): number {
    return this.child.pid ?? 0
  }

  #deliver(): void {
    const line = this.#lines[0]
    if (line !== undefined && this.#waiting !== undefined) {
      this.#lines.shift()
      const resolve = this.#waiting
      this.#waiting = undefined
      resolve(line)
    }
  }

  send(command: string): void {
    this.child.stdin.write(`${command}\n`)
  }

  /** The next answer; rejects with what the process printed if it exits first. */
  next(): Promise<string> {
    return new Promise((resolve, reject) => {
      const exited = () => reject(new Error(`contender ${this.pid} exited; it printed:\n${this.#stderr}`))
      if (this.child.exitCode !== null || this.child.signalCode !== null) return exited()
      this.child.once('exit', exited)
      this.#waiting = (line) => {
        this.child.off('exit', exited)
        resolve(line)
      }
      this.#deliver()
    })
  }

  async stop(): Promise<void> {
    const exited = new Promise((resolve) => this.child.once('exit', resolve))
    this.child.stdin.end()
    await exited
  }
}

/** Starts `count` contenders and waits until each is loaded. */
async function contenders(count: number): Promise<Contender[]> {
  const all = Array.from({ length: count }, () => new Contender())
  for (const contender of all) assert.equal(await contender.next(), 'ready')
  return all
}

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

  it('takes over a stale lock whose takeover was cut short (a starter killed while claiming it), and clears such leftovers', async () => {
    const dir = newDir()
    // Stale: this process's pid with another start time (a reused pid).
    const dead = JSON.stringify({ pid: process.pid, started: '1' })
    writeFileSync(join(dir, 'plinth.lock'), dead)
    // The claim a starter makes before removing a stale lock (named after it), left by a starter that died too.
    const claim = `plinth.lock.takeover-${createHash('sha256').update(dead).digest('hex').slice(0, 16)}.0`
    writeFileSync(join(dir, claim), dead)
    // And one left behind for a lock long gone.
    writeFileSync(join(dir, 'plinth.lock.takeover-0123456789abcdef.3'), dead)
    const release = await lockDataDir(dir)
    assert.equal(JSON.parse(readFileSync(join(dir, 'plinth.lock'), 'utf8')).pid, process.pid)
    assert.deepEqual(readdirSync(dir), ['plinth.lock'])
    release()
    assert.deepEqual(readdirSync(dir), [])
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
    const module = RUNS_COMPILED ? './src/db/database.js' : './src/db/database.ts'
    const script = `import(${JSON.stringify(module)}).then((m) => m.openDatabase({ dataDir: ${JSON.stringify(dir)} })).then(() => setInterval(() => {}, 1000))`
    const child = spawn(process.execPath, [...LOADER_ARGS, '-e', script], {
      cwd: REPO_ROOT,
      stdio: 'ignore',
    })
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

  /** Rounds of the concurrent-start tests below (each a few hundred milliseconds). */
  const ROUNDS = 100

  it('gives every one of several simultaneous first starts the same secret key (rounds of 4 processes on a fresh directory)', {
    timeout: 180_000,
  }, async () => {
    const all = await contenders(4)
    try {
      for (let round = 0; round < ROUNDS; round++) {
        // A directory that does not exist yet, as on a very first start: the contenders race to create it too.
        const dir = join(newDir(), 'data')
        for (const contender of all) contender.send(`key ${dir}`)
        const answers = await Promise.all(all.map((contender) => contender.next()))
        const file = readFileSync(join(dir, 'secret.key'), 'utf8').trim()
        assert.match(file, /^[0-9a-f]{64}$/)
        assert.deepEqual(
          answers,
          all.map(() => `key ${file}`),
          `round ${round}: every start uses the key in the file`,
        )
        assert.deepEqual(readdirSync(dir), ['secret.key'], `round ${round}: no temporary file is left`)
      }
    } finally {
      await Promise.all(all.map((contender) => contender.stop()))
    }
  })

  it('lets exactly one of several simultaneous starters take over a stale lock; the others are refused, naming it (rounds of 4 processes)', {
    timeout: 180_000,
  }, async () => {
    const all = await contenders(4)
    try {
      for (let round = 0; round < ROUNDS; round++) {
        const dir = newDir()
        const lock = join(dir, 'plinth.lock')
        // Stale: this process's pid with another start time (a reused pid), so it stays stale however long the round takes.
        writeFileSync(lock, JSON.stringify({ pid: process.pid, started: '1' }))
        for (const contender of all) contender.send(`lock ${dir}`)
        const answers = await Promise.all(all.map((contender) => contender.next()))
        const winners = all.filter((_, i) => answers[i] === 'won')
        assert.equal(winners.length, 1, `round ${round}: exactly one starter wins: ${answers.join(' | ')}`)
        const winner = winners[0] as Contender
        assert.equal(JSON.parse(readFileSync(lock, 'utf8')).pid, winner.pid, `round ${round}: the lock file names the winner`)
        for (const answer of answers.filter((a) => a !== 'won')) {
          assert.match(answer, new RegExp(`^lost the embedded database in \\S+ is in use by process ${winner.pid};`), `round ${round}`)
        }
        winner.send('release')
        assert.equal(await winner.next(), 'released')
        assert.deepEqual(readdirSync(dir), [], `round ${round}: the released lock is gone and nothing else is left`)
      }
    } finally {
      await Promise.all(all.map((contender) => contender.stop()))
    }
  })

  it('serves from exactly one of several servers started at once on one directory, fresh or with a stale lock; the others exit naming it', {
    timeout: 240_000,
  }, async () => {
    const dir = join(newDir(), 'data')
    /** Starts 2 servers at once (each round of a server costs seconds); answers the one that became ready, after checking how the other stopped. */
    const startTogether = async (what: string) => {
      const ports = await Promise.all([freePort(), freePort()])
      const servers = ports.map((port) => PlinthProcess.spawn(port, { PLINTH_DATA_DIR: dir }))
      const ready = await Promise.all(
        servers.map((server) =>
          server.waitReady().then(
            () => true,
            () => false,
          ),
        ),
      )
      const winners = servers.filter((_, i) => ready[i])
      if (winners.length !== 1) await Promise.all(servers.map((server) => server.kill()))
      assert.equal(winners.length, 1, `${what}: exactly one server is ready:\n${servers.map((s) => s.output()).join('\n---\n')}`)
      const winner = winners[0] as PlinthProcess
      for (const loser of servers.filter((server) => server !== winner)) {
        assert.deepEqual(await loser.exited, { code: 1, signal: null }, `${what}: ${loser.output()}`)
        assert.match(loser.output(), new RegExp(`in use by process ${winner.pid}; two processes on one data directory corrupt it`), what)
      }
      return winner
    }

    // A very first start: no directory, no key, no database.
    const first = await startTogether('fresh directory')
    const node = httpNode(first.base)
    const sb = sandbox(node)
    const app = await sb.createApp()
    const user = await sb.createUser()
    const auth = await sb.authenticate(app.app_id, user.user_id, ['username', 'payments'])
    const created = await node.inject({
      method: 'POST',
      url: '/v2/client/payments',
      headers: { authorization: `Bearer ${auth.accessToken}` },
      payload: { amount: 1, memo: 'first start', metadata: {} },
    })
    assert.equal(created.statusCode, 201, created.body)
    const id = (created.json() as { identifier: string }).identifier
    const approved = await node.inject({
      method: 'POST',
      url: `/v2/payments/${id}/approve`,
      headers: { authorization: `Key ${app.api_key}` },
    })
    assert.equal(approved.statusCode, 200, approved.body)
    assert.deepEqual(await first.kill(), { code: null, signal: 'SIGKILL' })

    // SIGKILL left the lock behind: the next starters race to take it over.
    assert.equal(JSON.parse(readFileSync(join(dir, 'plinth.lock'), 'utf8')).pid, first.pid)
    const second = await startTogether('stale lock')
    // The platform signs the user's payment with the seed the first server sealed: the key is the same.
    const submitted = await httpNode(second.base).inject({
      method: 'POST',
      url: `/v2/client/payments/${id}/submit`,
      headers: { authorization: `Bearer ${auth.accessToken}` },
    })
    assert.equal(submitted.statusCode, 200, submitted.body)
    assert.equal((submitted.json() as { status: { transaction_verified: boolean } }).status.transaction_verified, true)
    assert.deepEqual(await second.stop(), { code: 0, signal: null })
    assert.equal(existsSync(join(dir, 'plinth.lock')), false)
  })
})
