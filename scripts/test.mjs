#!/usr/bin/env node
// Runs the whole suite on the embedded database, then again on the PostgreSQL server in
// DATABASE_URL when it is set. Each test platform makes its own database (PGlite in memory)
// or schema (PostgreSQL), so runs never share state. Extra arguments are test files or folders
// (a folder: every *.test.ts under it); `--backend=pglite` or `--backend=postgres` runs on that
// one backend only (postgres needs DATABASE_URL); `--list` prints the files each pass would run,
// and runs nothing.
//
// Files that touch no database (RUN_ONCE) run on the first backend only: a second pass would run
// the same code again. So do the CLI's suites (CLI_SUITES): the API suites check their server on
// both. Before the PGlite pass, the migrated image every PGlite test platform starts from is made
// once (test/helpers/pglite-image.ts) and named to the tests in PLINTH_PGLITE_IMAGE.
// The tests run compiled, from the mirror scripts/test-build.mjs makes, without a loader hook, and
// about FILES_PER_SHARD files of one backend share one process (a shard, a suite named
// `<backend>: shard i of n` in the report); CONCURRENCY shards run at a time.
import { spawn, spawnSync } from 'node:child_process'
import { readdirSync, statSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { join, relative, sep } from 'node:path'
import { buildTests, writeShards } from './test-build.mjs'

const BACKENDS = ['pglite', 'postgres']

/**
 * Test files and folders that start no platform, server or database, so their result cannot
 * depend on the backend: the unit tests, the examples suite (its suites start their own
 * in-memory Plinth through the package, whatever PLINTH_TEST_DB says), and the docs' snippets
 * (a server on the embedded database, as `npm start` runs it, and startPlinth() in memory). A file belongs here only
 * if it reads neither PLINTH_TEST_DB (TEST_DB) nor DATABASE_URL, directly or through a helper.
 */
const RUN_ONCE = ['test/unit/', 'test/integration/examples.test.ts', 'test/integration/doc-snippets.test.ts']
/**
 * The CLI's suites, which run in the first pass only too, though they start a platform on its
 * backend: `plinth` is a client of the HTTP API (and `plinth start` starts the server `npm start`
 * does), and what the server does on each backend is the API suites' to check, on both. The
 * PostgreSQL pass spawned the same commands against the same routes again (in CI, cli-fixtures
 * took 78 s of it and cli-start 53 s). What they reach that no API suite covers keeps both passes in a file of its own
 * (cli-snapshot-files.test.ts); the case that needs PostgreSQL (db:migrate, in cli-start) uses
 * the server itself in any pass.
 */
const CLI_SUITES = [
  'test/integration/cli.test.ts',
  'test/integration/cli-fixtures.test.ts',
  'test/integration/cli-start.test.ts',
  'test/integration/cli-portal.test.ts',
]
const runsOnce = (file) => [...RUN_ONCE, ...CLI_SUITES].some((entry) => (entry.endsWith('/') ? file.startsWith(entry) : file === entry))
const args = process.argv.slice(2)
const chosen = args.filter((arg) => arg.startsWith('--backend=')).map((arg) => arg.slice('--backend='.length))
const listOnly = args.includes('--list')
const given = args.filter((arg) => !arg.startsWith('--backend=') && arg !== '--list')
for (const backend of chosen) {
  if (!BACKENDS.includes(backend)) {
    console.error(`--backend=${backend}: expected one of ${BACKENDS.join(', ')}`)
    process.exit(2)
  }
}

const testsUnder = (dir) =>
  readdirSync(dir, { recursive: true })
    .map(String)
    .filter((f) => f.endsWith('.test.ts'))
    .map((f) => join(dir, f))
    .sort()
const files = (given.length > 0 ? given : ['test'])
  .flatMap((path) => (statSync(path).isDirectory() ? testsUnder(path) : [path]))
  .map((file) => relative('.', file).split(sep).join('/'))

let backends
if (chosen.length > 0) {
  backends = BACKENDS.filter((backend) => chosen.includes(backend))
  if (backends.includes('postgres') && !process.env.DATABASE_URL) {
    console.error('--backend=postgres needs DATABASE_URL')
    process.exit(2)
  }
} else {
  backends = ['pglite']
  if (process.env.DATABASE_URL) backends.push('postgres')
  else console.log('DATABASE_URL is not set: running on PGlite only')
}

const passes = backends.map((backend, index) => ({
  backend,
  files: index === 0 ? files : files.filter((file) => !runsOnce(file)),
}))
if (listOnly) {
  for (const { backend, files: pass } of passes)
    console.log(`${backend}: ${pass.length} files\n${pass.map((file) => `  ${file}\n`).join('')}`)
  process.exit(0)
}

const build = await buildTests()
/** About this many test files share one process (scripts/test-build.mjs: writeShards). */
const FILES_PER_SHARD = 8
/**
 * Shards running at once: one per core. One more was slower on 2 cores: the whole suite (both
 * backends at once, 3 at a time) took 428 s and 760 s of CPU, against 204 s + 190 s one backend
 * after the other, 2 at a time.
 */
const CONCURRENCY = Number(process.env.PLINTH_TEST_CONCURRENCY ?? availableParallelism())
/** Source maps: a stack trace names the `.ts` line. */
const NODE_FLAGS = ['--enable-source-maps']

/** The migrated PGlite image's path: made once here rather than by each test process. */
function pgliteImage() {
  const made = spawnSync(process.execPath, [...NODE_FLAGS, 'test/helpers/pglite-image.js'], {
    cwd: build,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  if (made.status !== 0) {
    console.error('could not make the PGlite test image')
    process.exit(1)
  }
  return made.stdout.trim()
}

let failed = false
for (const [index, { backend, files: pass }] of passes.entries()) {
  if (pass.length === 0) continue
  const shards = writeShards(build, pass, FILES_PER_SHARD, backend)
  console.log(
    `\n=== tests on ${backend}${index === 0 ? '' : ' (without the files that run once)'}: ${pass.length} files in ${shards.length} shards ===`,
  )
  const startedAt = performance.now()
  const env = { ...process.env }
  if (backend === 'pglite') env.PLINTH_PGLITE_IMAGE = pgliteImage()
  const result = await new Promise((resolve) =>
    spawn(process.execPath, [...NODE_FLAGS, '--test', `--test-concurrency=${CONCURRENCY}`, '--test-reporter=spec', ...shards], {
      cwd: build,
      stdio: 'inherit',
      env,
    }).on('close', (status) => resolve({ status })),
  )
  const took = `${Math.round((performance.now() - startedAt) / 1000)} s`
  if (result.status !== 0) {
    failed = true
    console.log(`=== tests on ${backend} FAILED (${took}) ===`)
  } else console.log(`=== tests on ${backend}: passed in ${took} ===`)
}
process.exit(failed ? 1 : 0)
