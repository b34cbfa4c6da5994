import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { createServer as createHttpServer } from 'node:http'
import { connect, createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { assertOneLine } from '../helpers/cli-process.js'
import { TEST_DB } from '../helpers/platform.js'
import { freePort, nodeArgs, PlinthProcess, REPO_ROOT, setUpBackend } from '../helpers/server-process.js'

/**
 * `plinth start` (src/cli/plinth.ts) against `npm start` (src/server.ts), the one-line errors and
 * exit codes of the CLI, and `npm run db:migrate` (src/cli/migrate.ts) on a database that does
 * not exist. Every command is spawned as a user runs it. The file runs in the first pass only
 * (scripts/test.mjs, CLI_SUITES): both starts load the same config and start the same server,
 * which the server's own suites check on each backend.
 */
interface Run {
  code: number
  stdout: string
  stderr: string
}

/** Runs a CLI entry in `cwd` with exactly the backend `env` says (this process's own does not leak in). */
function run(source: string, args: string[], options: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): Promise<Run> {
  const { DATABASE_URL: _url, PLINTH_DB_SCHEMA: _schema, PLINTH_SECRET_KEY: _key, PLINTH_DATA_DIR: _dir, ...inherited } = process.env
  return new Promise((resolve, reject) => {
    // tsx by its location: a child in another directory (cwd) could not find it by name.
    const node = nodeArgs(source).map((arg) => (arg === 'tsx' ? import.meta.resolve('tsx') : arg))
    const child = spawn(process.execPath, [...node, ...args], {
      cwd: options.cwd ?? REPO_ROOT,
      env: { ...inherited, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk) => {
      stdout += chunk
    })
    child.stderr.on('data', (chunk) => {
      stderr += chunk
    })
    child.on('error', reject)
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }))
  })
}

/** The banner out of a process's output (pino's lines around it left out), with what differs between two starts made alike. */
function bannerOf(output: string): string {
  const lines = output.split('\n')
  const first = lines.findIndex((line) => line.startsWith('Plinth '))
  const last = lines.findIndex((line) => line.startsWith('  then: curl'))
  assert.ok(first >= 0 && last > first, `no banner in:\n${output}`)
  return lines
    .slice(first, last + 1)
    .join('\n')
    .replace(/ready in \d+ ms/, 'ready in N ms')
    .replace(/embedded PostgreSQL in \S+/, 'embedded PostgreSQL in DIR')
    .replace(/127\.0\.0\.1:\d+/g, '127.0.0.1:PORT')
    .replace(/\bapp_[0-9a-f]{8,}/g, 'APP')
    .replace(/\busr_[0-9a-f]{8,}/g, 'USER')
}

const portListening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })

describe(`plinth start and the CLI's errors (${TEST_DB})`, () => {
  const cleanups: Array<() => unknown> = []
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup()
  })
  const emptyDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'plinth-cli-start-'))
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
    return dir
  }

  it('plinth start prints the banner npm start prints: demo app, user, URLs, the command to mint a key', async () => {
    const [forCli, forServer] = [await setUpBackend(TEST_DB), await setUpBackend(TEST_DB)]
    cleanups.push(
      () => forCli.cleanup(),
      () => forServer.cleanup(),
    )
    const port = await freePort()
    const { DATABASE_URL: _url, PLINTH_DB_SCHEMA: _schema, PLINTH_SECRET_KEY: _key, PLINTH_DATA_DIR: _dir, ...inherited } = process.env
    const child = spawn(process.execPath, [...nodeArgs('src/cli/plinth.ts'), 'start', '--port', String(port), '--host', '127.0.0.1'], {
      cwd: REPO_ROOT,
      env: { ...inherited, LOG_LEVEL: 'warn', ...forCli.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    child.stdout.on('data', (chunk) => {
      output += chunk
    })
    child.stderr.on('data', (chunk) => {
      output += chunk
    })
    const exited = new Promise<number>((resolve) => child.on('close', (code) => resolve(code ?? -1)))
    cleanups.push(() => child.kill('SIGKILL'))
    for (let i = 0; i < 1200 && !output.includes('  then: curl') && child.exitCode === null; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    const fromCli = bannerOf(output)
    assert.ok(await portListening(port))
    child.kill('SIGINT')
    assert.equal(await exited, 0, output)

    const { server } = await PlinthProcess.start(await freePort(), forServer.env)
    cleanups.push(() => server.stop())
    for (let i = 0; i < 100 && !server.output().includes('  then: curl'); i++) await new Promise((resolve) => setTimeout(resolve, 50))
    const fromServer = bannerOf(server.output())
    assert.equal(fromCli, fromServer)
    assert.match(fromCli, /Demo app {7}Plinth Demo, app_id APP/)
    assert.match(fromCli, /Demo user {6}demo_pioneer, user_id USER/)
    assert.match(fromCli, /printed only to a terminal; make one: curl -s -X POST http:\/\/127\.0\.0\.1:PORT\/sandbox\/apps\/APP\/keys/)
    assert.match(fromCli, /Console {8}http:\/\/127\.0\.0\.1:PORT\/console\//)
  })

  it('usage errors are one line and exit 2, and leave no .plinth directory behind: a port in use, --port abc, --seed weird', async () => {
    const taken: Server = createServer()
    const port = await new Promise<number>((resolve) =>
      taken.listen(0, '127.0.0.1', () => resolve((taken.address() as { port: number }).port)),
    )
    cleanups.push(() => new Promise((resolve) => taken.close(resolve)))
    const cases: Array<[string[], RegExp]> = [
      [
        ['start', '--port', String(port)],
        new RegExp(`^plinth: port ${port} on 127\\.0\\.0\\.1 is in use: stop what listens there, or pass --port`),
      ],
      [['start', '--port', 'abc'], /^plinth: --port takes 0 to 65535, got "abc"/],
      [['start', '--seed', 'weird'], /^plinth: --seed takes demo or empty, got "weird"/],
      [['start', '--mode', 'staging'], /^plinth: PLINTH_MODE must be/],
      [['start', '--host', 'no such host!'], /^plinth: HOST must be/],
    ]
    const dirs = cases.map(() => emptyDir())
    const runs = await Promise.all(cases.map(([args], i) => run('src/cli/plinth.ts', args, { cwd: dirs[i] })))
    for (const [i, result] of runs.entries()) {
      assert.equal(result.code, 2, `${cases[i]?.[0].join(' ')}: ${result.stderr}`)
      assertOneLine(result.stderr, cases[i]?.[1] ?? /./)
      assert.equal(existsSync(join(dirs[i] ?? '', '.plinth')), false, `${cases[i]?.[0].join(' ')} left .plinth/ behind`)
    }
  })

  it('an unexpected error is one line "plinth: <message>", exit 1; PLINTH_DEBUG=1 adds its stack', async () => {
    // A server that is not Plinth: 200 with a body that is not JSON.
    const impostor = createHttpServer((_request, response) => response.end('<html>not a platform</html>'))
    const port = await new Promise<number>((resolve) =>
      impostor.listen(0, '127.0.0.1', () => resolve((impostor.address() as { port: number }).port)),
    )
    cleanups.push(() => new Promise((resolve) => impostor.close(resolve)))
    const args = ['--url', `http://127.0.0.1:${port}`, 'clock', 'show']
    const [plain, debug] = await Promise.all([
      run('src/cli/plinth.ts', args),
      run('src/cli/plinth.ts', args, { env: { PLINTH_DEBUG: '1' } }),
    ])
    assert.equal(plain.code, 1)
    assertOneLine(plain.stderr, /^plinth: .*JSON/)
    assert.equal(debug.code, 1)
    assert.match(debug.stderr, /^plinth: .*JSON.*\n.*SyntaxError[\s\S]*\n\s+at /)
  })

  // PostgreSQL's own refusals: the case names the server on 127.0.0.1:5432 itself, whatever the
  // pass's backend, so it still runs with the file in the PGlite pass.
  it('npm run db:migrate on a database that does not exist: one line naming createdb, exit 2', async (t) => {
    if (!(await portListening(5432))) {
      t.skip('no PostgreSQL server on 127.0.0.1:5432')
      return
    }
    const name = `plinth_missing_${randomBytes(5).toString('hex')}`
    const migrate = await run('src/cli/migrate.ts', [], {
      env: { DATABASE_URL: `postgres://postgres@127.0.0.1:5432/${name}`, PLINTH_SECRET_KEY: randomBytes(32).toString('hex') },
    })
    assert.equal(migrate.code, 2, migrate.stderr)
    assertOneLine(
      migrate.stderr,
      new RegExp(`^db:migrate: database "${name}" does not exist on 127\\.0\\.0\\.1:5432: create it with createdb ${name}`),
    )
    const noServer = await run('src/cli/migrate.ts', [], {
      env: { DATABASE_URL: `postgres://postgres@127.0.0.1:${await freePort()}/x`, PLINTH_SECRET_KEY: randomBytes(32).toString('hex') },
    })
    assert.equal(noServer.code, 2, noServer.stderr)
    assertOneLine(noServer.stderr, /^db:migrate: no PostgreSQL server answers at 127\.0\.0\.1:\d+/)
  })
})
